"""Where a Theta came from, and whether its states look like distribution parameters.

Every guarantee quiltpriv gives is relative to Theta, so an audit record must say where Theta
came from. A Theta built by :mod:`quiltpriv.model.builder` or learned by
:mod:`quiltpriv.model.learning`
carries a *provenance* record (a JSON-ready mapping,
:attr:`quiltpriv.model.network.Theta.provenance`)
that plans (``Plan.to_dict()["provenance"]``) and audit reports copy. For learned models it
holds the SHA-256 of a canonical CSV of the input data (never the data), the bins, the
estimator settings and the seed, so a reviewer can check that a model was learned from the
data it claims, with the settings it claims.

The second concern is the states themselves. A hyperparameter network's states are values of a
distribution parameter (a share, a mean). A network whose states are ``yes`` / ``no`` (pgmpy's
record-level ``asia``) is a model of one record, not of a population's parameters; planning on
it protects something else than the user may think. :func:`state_problems` lists such states,
:func:`check_parameter_states` turns them into a :class:`~quiltpriv.errors.ParameterStatesWarning`
(raised by :func:`quiltpriv.load_model` and the builder), and :func:`quiltpriv.plan` adds them to
the plan's notes.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from quiltpriv.errors import DataError, ParameterStatesWarning
from quiltpriv.model.network import Theta, _thawed, check_theta

if TYPE_CHECKING:  # pandas is imported when data are hashed, not when a plan is made
    import pandas as pd

__all__ = ["PARAMETER_KINDS", "check_parameter_states", "data_sha256", "parameter_kinds",
           "provenance_dict", "state_problems"]

#: Kinds of distribution parameter a node may carry: a share (a probability, in [0, 1]) or a
#: mean (any finite number).
PARAMETER_KINDS = ("share", "mean")


def data_sha256(frame: pd.DataFrame) -> str:
    """SHA-256 of a canonical CSV of ``frame`` (the data are hashed, never stored).

    Canonical: columns sorted by name, rows in the given order (the bootstrap depends on it),
    no index, ``\\n`` line ends, floats written with 17 significant digits (so the hash changes
    whenever a value does), missing values as the empty string.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(frame).__name__}")
    from quiltpriv.utils.tabular_csv import canonical_csv_text

    # one pass with numpy where the columns are of the usual kinds (the same text: the tests
    # compare the two), pandas' writer otherwise (column by column: 41 s for a 500,000-column
    # trace)
    text = canonical_csv_text(frame)
    if text is None:
        canonical = frame[sorted(frame.columns, key=str)]
        text = canonical.to_csv(index=False, lineterminator="\n", float_format="%.17g")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def provenance_dict(theta: Theta) -> dict[str, Any] | None:
    """Theta's provenance record as plain JSON-ready dicts and lists (or None)."""
    theta = check_theta(theta)
    return None if theta.provenance is None else _thawed(theta.provenance)


def parameter_kinds(theta: Theta) -> dict[str, str]:
    """The declared kind (``share`` / ``mean``) of each node, where the provenance says it."""
    prov = check_theta(theta).provenance or {}
    params = prov.get("parameters") if isinstance(prov, Mapping) else None
    out: dict[str, str] = {}
    if isinstance(params, Mapping):
        for v, spec in params.items():
            kind = spec.get("kind") if isinstance(spec, Mapping) else None
            if v in theta.index and kind in PARAMETER_KINDS:
                out[v] = kind
    return out


def _as_number(state: Any) -> float | None:
    if isinstance(state, bool):
        return None
    try:
        x = float(state)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def state_problems(theta: Theta, kinds: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Sentences naming the nodes whose states do not look like parameter values.

    Parameters
    ----------
    theta : Theta
        The network.
    kinds : mapping of str to {"share", "mean"}, optional
        Declared kinds; default: those in Theta's provenance. A ``share`` must lie in [0, 1].

    Returns
    -------
    tuple of str
        Empty when every state is a finite number (and every share in [0, 1]).
    """
    theta = check_theta(theta)
    kinds = parameter_kinds(theta) if kinds is None else dict(kinds)
    text_nodes: list[str] = []
    out: list[str] = []
    # Each distinct state name converted once (a large model repeats a few names); only nodes
    # that can have a problem are visited (every node when some name is not a number).
    as_number = {s: _as_number(s) for s in set().union(*theta.states.values())}
    visit = theta.nodes if None in as_number.values() else [
        v for v in theta.nodes if kinds.get(v) == "share"] if kinds else []
    for v in visit:
        values = [as_number[s] for s in theta.states[v]]
        if any(x is None for x in values):
            shown = ", ".join(repr(str(s)) for s in theta.states[v][:4])
            more = ", ..." if len(theta.states[v]) > 4 else ""
            text_nodes.append(f"{v!r} ({shown}{more})")
        elif kinds.get(v) == "share" and any(not 0.0 <= x <= 1.0 for x in values):  # type: ignore[operator]
            out.append(f"the states of {v!r} are declared shares but some lie outside [0, 1] "
                       f"({', '.join(map(str, theta.states[v]))})")
    if text_nodes:
        shown = "; ".join(text_nodes[:5]) + ("; ..." if len(text_nodes) > 5 else "")
        out.insert(0, (
            f"{len(text_nodes)} node(s) have states that are not numbers: {shown}. A "
            "hyperparameter network's states are values of a distribution parameter (a share, "
            "a mean); this looks like a record-level network, whose secrets are one record's "
            "values, not a population's parameters"))
    return tuple(out)


def check_parameter_states(theta: Theta, label: str | None = None, *,
                           stacklevel: int = 3) -> tuple[str, ...]:
    """Warn (:class:`~quiltpriv.errors.ParameterStatesWarning`) if :func:`state_problems`
    finds any; return them."""
    problems = state_problems(theta)
    if problems:
        where = f"{label}: " if label else ""
        warnings.warn(where + "; ".join(problems), ParameterStatesWarning, stacklevel=stacklevel)
    return problems
