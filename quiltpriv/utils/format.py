"""How quiltpriv writes numbers, sets and tables for people: text, JSON values and HTML pieces.

Every text view (``Plan.explain()``, ``quiltpriv quilts``, ``quiltpriv ledger show``), every
JSON report and every Jupyter ``_repr_html_`` fragment formats with these functions, so a
number or a set reads the same everywhere. They know nothing of models or plans; the views
themselves live beside the classes they show.

Every value that came from a user (a node name, a state, a file name, a query field) goes
through :func:`escape` before it enters HTML.
"""

from __future__ import annotations

import decimal
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "badge",
    "describe_query",
    "escape",
    "fmt_number",
    "fmt_set",
    "html_set",
    "inline_style",
    "json_number",
    "kv_table",
    "query_html",
    "text_table",
]


# -- text -------------------------------------------------------------------------------------


def fmt_number(x: float | None, digits: int = 6, *,
               rounding: Literal["nearest", "up", "down"] = "nearest") -> str:
    """A number in ``digits`` significant digits (``inf``/``-inf`` for infinities, ``-`` for
    None, ``nan`` for NaN): the one number format of every table and message of the package.

    Parameters
    ----------
    x : float or None
    digits : int
        Significant digits (1 to 15).
    rounding : {"nearest", "up", "down"}
        ``"nearest"`` (Python's ``g`` format) for values; ``"up"`` for a number that states an
        upper bound or a noise scale (the text, read back as a float, is never below ``x``: a
        printed scale never looks smaller than the one drawn), ``"down"`` for a lower bound
        or an allowance that must not look larger than it is.

    Examples
    --------
    >>> fmt_number(2 / 3), fmt_number(2 / 3, rounding="up"), fmt_number(2 / 3, rounding="down")
    ('0.666667', '0.666667', '0.666666')
    >>> fmt_number(0.1234565, 6, rounding="up"), fmt_number(None), fmt_number(float("inf"))
    ('0.123457', '-', 'inf')
    """
    if x is None:
        return "-"
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if math.isnan(x):
        return "nan"
    text = f"{x:.{digits}g}"
    if rounding == "nearest" or x == 0:
        return text
    # the text read back as a float is the number a reader (or a script) gets: it must not be
    # below x (above, for "down"); 0.1 prints as 0.1 although the float is 0.1000...0055
    shown = float(text)
    if (shown >= x) if rounding == "up" else (shown <= x):
        return text
    exact = decimal.Decimal(x)
    mode = decimal.ROUND_CEILING if rounding == "up" else decimal.ROUND_FLOOR
    directed = decimal.Context(prec=digits, rounding=mode).plus(exact)
    # directed has at most ``digits`` significant digits and lies on the right side of x; the
    # nearest float to it is on that side too (rounding is monotone, x is a float) and prints
    # back as those digits (digits <= 15)
    return f"{float(directed):.{digits}g}"


def fmt_set(xs: Iterable[str]) -> str:
    """Names as a set, in the order given: ``{a, b}`` (``{}`` when empty)."""
    xs = list(xs)
    return "{" + ", ".join(xs) + "}" if xs else "{}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns under a header and a rule, one string per line."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


#: How many attribute names a one-line query description shows before counting the rest (a
#: fraction of time over 10,000 steps would otherwise print 10,000 names).
DESCRIBED_NAMES = 6


def _names(names: Any) -> str:
    names = [str(x) for x in names] if isinstance(names, list | tuple | Mapping) else [str(names)]
    if len(names) <= DESCRIBED_NAMES:
        return ", ".join(names)
    return f"{', '.join(names[:DESCRIBED_NAMES - 1])}, ..., {names[-1]} ({len(names)} in all)"


def describe_query(q: Mapping[str, Any]) -> str:
    """A query's JSON definition (``Query.to_dict()``) in one line: its kind, attributes, n."""
    kind = q.get("kind", "query")
    for key in ("attributes", "attribute", "steps", "weights"):
        if key in q:
            attrs = _names(q[key])
            break
    else:
        attrs = "?"
    extra = f", n = {q['records']}" if "records" in q else ""
    if "state" in q:
        extra += f", state {q['state']!r}"
    return f"{kind} over {attrs}{extra}"


# -- JSON -------------------------------------------------------------------------------------


def json_number(x: float | None) -> float | str | None:
    """A float for JSON: a non-finite one as the text ``"inf"``, ``"-inf"`` or ``"nan"`` (JSON
    has no such numbers), as :func:`quiltpriv.utils.serialize.jsonable` writes it."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else str(x)


# -- HTML -------------------------------------------------------------------------------------


def escape(x: Any) -> str:
    """Escape any user-provided value for HTML text and attribute values."""
    return html.escape(str(x), quote=True)


def html_set(xs: Iterable[str]) -> str:
    """:func:`fmt_set`, escaped for HTML."""
    return escape(fmt_set(xs))


def kv_table(rows: Iterable[tuple[str, str]], cls: str = "kv") -> str:
    """A two-column table of (already escaped) label and value HTML."""
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="{cls}">{body}</table>'


def badge(ok: bool, yes: str, no: str) -> str:
    """A green badge with ``yes`` or an orange one with ``no`` (both already escaped)."""
    return f'<span class="badge ok">{yes}</span>' if ok else f'<span class="badge warn">{no}</span>'


def query_html(query: Mapping[str, Any]) -> str:
    """A query's JSON definition, one line: its kind and every field as JSON (escaped)."""
    fields = ", ".join(f"{escape(k)} = <code>{escape(json.dumps(v, ensure_ascii=False))}</code>"
                       for k, v in query.items() if k != "kind")
    return f"<b>{escape(query.get('kind', 'query'))}</b> ({fields})"


def inline_style() -> str:
    """The colours of a DAG drawing's classes, for fragments without a stylesheet (Jupyter)."""
    return ("<style>.quiltpriv-theta .node rect,.quiltpriv-plan .node rect{fill:#fff;"
            "stroke:#333}.quiltpriv-theta .edge{fill:none;stroke:#555}</style>")
