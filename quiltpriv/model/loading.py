"""Load hyperparameter networks: bundled models, BIF / XMLBIF files and Python modules.

A model *spec* is one of

- a bundled model name (a module in the repository's ``models/`` folder, installed as
  ``quiltpriv.models``): ``student``, ``example3``, ``chain``; ``name:function`` picks another
  function of the module (``student:theta`` gives a two-member Theta);
- a path to a ``.bif`` / ``.bif.gz`` file or an ``.xml`` / ``.xmlbif`` file (read by
  :mod:`quiltpriv.model.readers`, or with pgmpy's readers when ``reader="pgmpy"``);
- a path to a ``.py`` file defining ``model()`` (or ``path.py:function``), which returns a
  pgmpy network, a list of them (a Theta with several members) or a :class:`Theta`;
- a path to a ``.json`` (or gzip-compressed ``.json.gz``) file in quiltpriv's own format
  (:func:`theta_to_dict`): a shared DAG and one CPD set per member of Theta.

Every reader's failure becomes a :class:`~quiltpriv.errors.ModelError` naming the file.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import importlib.util
import math
import operator
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np

from quiltpriv.errors import ModelError, TimeLimitError
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE
from quiltpriv.model.json_format import (
    JSON_FORMAT,
    JSON_FORMAT_V2,
    _check_column,
    _decode_column,
    _table_shapes,
)
from quiltpriv.model.network import (  # theta_to_dict: re-exported, where it always was
    CPD,
    Theta,
    _theta_from_named_tables,
    _theta_from_pgmpy,
    _topological_order,
    theta_to_pgmpy,
)
from quiltpriv.model.network import theta_to_dict as theta_to_dict
from quiltpriv.model.readers import _TINY, MAX_STATES, check_probability_literal
from quiltpriv.utils.memory import DEFAULT_MAX_MEMORY, check_max_memory
from quiltpriv.utils.time_limit import LimitCheck, TimeLimit, check_time_limit

#: BIF and XMLBIF files above this size are refused before parsing (a BIF of the largest
#: bundled pgmpy network, munin, is about 1.5 MB uncompressed). JSON models are bounded by
#: :data:`JSON_MEMORY_BUDGET` instead.
MAX_MODEL_BYTES = 64 * 2**20



#: Memory a JSON model (quiltpriv's own format) may take to read: the package's one memory
#: budget, :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY` (half the machine's physical
#: memory), unless ``load_model(..., max_memory=...)`` says otherwise. JSON models have no
#: fixed size cap: what reading one costs grows with what it holds (nodes, parents, table
#: entries), and each of those is at least a few bytes of text, so the file's size times
#: :data:`JSON_BYTES_PER_TEXT_BYTE` bounds it; a file whose bound exceeds the budget is
#: refused before it is read.
JSON_MEMORY_BUDGET: int = DEFAULT_MAX_MEMORY

#: Peak memory of reading a JSON model per byte of its text, rounded up from the measured
#: peak (the text, the parsed document, the checked float64 tables and Theta): a 119.5 MB
#: model of 100,000 nodes and 5.1 million table entries peaked at 1.0 GB (8.3 bytes per
#: byte of text, the interpreter included).
JSON_BYTES_PER_TEXT_BYTE = 12


def _json_budget(max_memory: object) -> tuple[int, str]:
    """The memory budget of reading a JSON model, and what it is, for a message."""
    if max_memory is None:
        return JSON_MEMORY_BUDGET, "half the machine's memory"
    return check_max_memory(max_memory), "max_memory"


def _check_json_budget(path: Path, size: int, max_memory: object = None) -> None:
    """Refuse a JSON model whose reading would exceed the memory budget."""
    budget, what = _json_budget(max_memory)
    need = size * JSON_BYTES_PER_TEXT_BYTE
    if need > budget:
        raise ModelError(
            f"{path}: reading this {size}-byte JSON model needs about {need} bytes of memory "
            f"({JSON_BYTES_PER_TEXT_BYTE} per byte of text), over the {budget}-byte "
            f"budget ({what})")


_BIF_VARIABLE = re.compile(
    r"variable\s+([^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^}]*)\}")
_BIF_VARIABLE_NAME = re.compile(r"(?m)^\s*variable\s+([^\s{]+)")
_BIF_PROBABILITY = re.compile(r"probability\s*\(\s*([^\s|)]+)")
_BIF_BAD_NUMBER = re.compile(r"(?i)(?<![\w.])[-+]?(nan|inf(inity)?)(?![\w.])")


#: A decimal number as BIF and XMLBIF files write probabilities.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_PARENTHESISED = re.compile(r"\([^)]*\)")
_XML_TABLE = re.compile(r"(?is)<TABLE>(.*?)</TABLE>")

def _check_bif_numbers(text: str, path: Path) -> None:
    """Every probability of a BIF file passes :func:`check_probability_literal`."""
    for block in re.split(r"probability\s*\(", text)[1:]:
        head, _, rest = block.partition(")")
        var = head.split("|")[0].strip()
        body = _PARENTHESISED.sub(" ", rest.split("}", 1)[0])  # drop parent-state tuples
        for token in _NUMBER.findall(body):
            check_probability_literal(token, f"{path}: the CPD of {var!r}")


def _check_xmlbif_numbers(text: str, path: Path) -> None:
    """Every probability of an XMLBIF file passes :func:`check_probability_literal`."""
    for body in _XML_TABLE.findall(text):
        for token in _NUMBER.findall(body):
            check_probability_literal(token, f"{path}: a <TABLE>")


def _json_float(token: str) -> float:
    return check_probability_literal(token, "a CPD")


def _check_bif_text(text: str, path: Path) -> None:
    """Checks pgmpy's BIF reader does not make (it accepts or garbles these)."""
    names = _BIF_VARIABLE_NAME.findall(text)
    if not names:
        raise ModelError(f"{path}: the BIF file declares no variables")
    dup = sorted(n for n, c in Counter(names).items() if c > 1)  # linear, not quadratic
    if dup:
        raise ModelError(f"{path}: variable(s) declared twice: {', '.join(dup)}")
    for name, card, states in _BIF_VARIABLE.findall(text):
        declared = int(card)
        if declared > MAX_STATES:
            raise ModelError(f"{path}: variable {name!r} declares {declared} states "
                             f"(at most {MAX_STATES} are supported)")
        listed = [x.strip() for x in states.split(",") if x.strip()]
        if len(listed) != declared:
            raise ModelError(f"{path}: variable {name!r} declares {declared} states but lists "
                             f"{len(listed)}")
        if len(set(listed)) != len(listed):
            raise ModelError(f"{path}: variable {name!r} lists a state twice")
    probs = _BIF_PROBABILITY.findall(text)
    dup = sorted(n for n, c in Counter(probs).items() if c > 1)  # linear, not quadratic
    if dup:
        raise ModelError(f"{path}: more than one probability block for {', '.join(dup)}")
    for block in re.split(r"probability\s*\(", text)[1:]:
        body = block.split("}", 1)[0]
        if _BIF_BAD_NUMBER.search(body):
            var = block.split(")", 1)[0].split("|")[0].strip()
            raise ModelError(f"{path}: the CPD of {var!r} contains NaN or infinite probabilities")


def model_dirs() -> list[Path]:
    """The folders of the bundled models (installed, or the source checkout's models/)."""
    here = Path(__file__).resolve().parents[1]  # the quiltpriv package
    # Installed wheel: quiltpriv/models/. Source checkout or editable install: ../models/.
    return [d for d in (here / "models", here.parent / "models") if d.is_dir()]


def bundled_models() -> dict[str, str]:
    """Bundled model names and the first line of each module's docstring.

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> import quiltpriv as qp
    >>> sorted(qp.bundled_models())
    ['chain', 'example3', 'student']
    >>> qp.bundled_models()["example3"]
    'The two-attribute network of Example 3 (Zhang, Ohrimenko and Cummings, Section 6).'
    """
    out: dict[str, str] = {}
    for d in model_dirs():
        for f in sorted(d.glob("*.py")):
            if f.stem.startswith("_") or f.stem in out:
                continue
            doc = ""
            try:
                text = f.read_text(encoding="utf-8")
                start = text.find('"""')
                if start >= 0:
                    doc = text[start + 3:].strip().splitlines()[0]
            except OSError:
                pass
            out[f.stem] = doc
    return out


def _check_python_numbers(path: Path) -> None:
    """A model module's float literals pass :func:`check_probability_literal`.

    Python itself reads ``1e-400`` as 0.0 without a word; the module's source is scanned for
    such literals (and subnormal ones) before it runs.
    """
    import io
    import tokenize

    try:
        source = path.read_text(encoding="utf-8")
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (OSError, UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return  # importing it reports the problem
    for tok in tokens:
        if tok.type == tokenize.NUMBER and not tok.string.lower().startswith(("0x", "0o", "0b")):
            text = tok.string.replace("_", "").rstrip("jJ")
            if any(c in text.lower() for c in ".e"):
                check_probability_literal(text, f"{path}, line {tok.start[0]}")


def _import_file(path: Path) -> ModuleType:
    _check_python_numbers(path)
    name = f"_quiltpriv_model_{path.stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"cannot import model module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a module calling sys.exit() must not end the CLI
        sys.modules.pop(name, None)
        raise ModelError(f"model module {path} failed to import: {exc}") from exc
    return module


def _call_module(path: Path, function: str | None, args: Sequence[Any] = (),
                 kwargs: dict[str, Any] | None = None) -> Any:
    module = _import_file(path)
    fname = function or "model"
    fn = getattr(module, fname, None)
    if not callable(fn):
        raise ModelError(f"model module {path} defines no function {fname}()")
    try:
        return fn(*args, **(kwargs or {}))
    except (Exception, SystemExit) as exc:
        raise ModelError(f"{path.name}:{fname}() failed: {exc}") from exc


def _from_module(path: Path, function: str | None, tolerance: float,
                 check: LimitCheck | None = None) -> Theta:
    check = check or LimitCheck(None, "")
    built = _call_module(path, function)  # the module's own code: not interruptible
    check(f"after running {path.stem}:{function or 'model'}()")
    if isinstance(built, Theta):  # built without pgmpy (the bundled models are)
        return built
    nets = built if isinstance(built, Sequence) else [built]
    names = [getattr(n, "name", None) or f"{path.stem}[{k}]" for k, n in enumerate(nets)]
    return _theta_from_pgmpy(list(nets), names, tolerance=tolerance, check=check)


def bundled_network(name: str, *args: Any, function: str = "model", **kwargs: Any) -> Any:
    """The pgmpy network (or list of networks) a bundled model module builds.

    For inspecting or changing a bundled model before planning, e.g.
    ``net = bundled_network("chain", 24, stay=0.5, function="chain")`` then
    ``theta_from_pgmpy(net)``. Arguments go to the module's function. The bundled modules
    build a :class:`Theta` without pgmpy (what :func:`load_model` uses); here it becomes one
    pgmpy network per member of Theta (a list when there are several), which imports pgmpy.

    Parameters
    ----------
    name : str
        A bundled model (:func:`bundled_models`).
    *args, **kwargs
        Arguments of the module's function.
    function : str, default "model"
        The module's function to call.

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork or list of them

    Examples
    --------
    >>> import quiltpriv as qp
    >>> net = qp.bundled_network("chain", 4, stay=0.5, function="chain")
    >>> type(net).__name__, list(net.nodes())
    ('DiscreteBayesianNetwork', ['x01', 'x02', 'x03', 'x04'])
    >>> qp.theta_from_pgmpy(net)
    Theta(4 nodes, 3 edges, 1 member)
    """
    for d in model_dirs():
        candidate = d / f"{name}.py"
        if candidate.is_file() and not name.startswith("_"):
            return _as_pgmpy(_call_module(candidate, function, args, kwargs))
    names = ", ".join(bundled_models()) or "none found"
    raise ModelError(f"no bundled model named {name!r} (bundled: {names})")


def _as_pgmpy(built: Any) -> Any:
    """``built`` as pgmpy network(s) when it is a :class:`Theta` (one per member), else as is."""
    if not isinstance(built, Theta):
        return built
    return theta_to_pgmpy(built)


#: A model file reader's name (see :data:`READERS`).
ModelReader = Literal["quiltpriv", "pgmpy"]

#: The model file readers :func:`load_model` offers: quiltpriv's own
# (:mod:`quiltpriv.model.readers`)
#: and pgmpy's ``BIFReader``/``XMLBIFReader`` followed by :func:`theta_from_pgmpy` (slower; kept
#: as a cross-check and a fallback).
READERS: tuple[ModelReader, ...] = ("quiltpriv", "pgmpy")


def _file_kind(path: Path) -> str | None:
    """"BIF" or "XMLBIF" by the file's name (``.gz`` allowed), else None."""
    name = path.name.lower()
    inner = name[:-3] if name.endswith(".gz") else name
    if inner.endswith(".bif"):
        return "BIF"
    if inner.endswith((".xml", ".xmlbif")):
        return "XMLBIF"
    return None


#: Decompressed bytes read between two checks of the time limit (a few milliseconds' work).
READ_CHUNK = 8 * 2**20


def _read_model_text(path: Path, kind: str, limit: int = MAX_MODEL_BYTES,
                     why: str = "", check: LimitCheck | None = None) -> str:
    """The file's text, decompressed, size-checked and decoded as UTF-8, or ModelError.

    ``limit`` bounds the file's size and its decompressed size (``why`` says where it comes
    from, in the refusal). ``check`` sees the time limit between chunks of
    :data:`READ_CHUNK` decompressed bytes.
    """
    size = path.stat().st_size
    if size > limit:
        raise ModelError(f"{path}: {size} bytes is larger than the {limit} allowed{why}")
    try:
        if path.name.lower().endswith(".gz"):
            chunks: list[bytes] = []
            held = 0
            with gzip.open(path, "rb") as fh:
                while held <= limit:
                    if check is not None:
                        check(f"{held:,} bytes of its text decompressed")
                    chunk = fh.read(min(READ_CHUNK, limit + 1 - held))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    held += len(chunk)
            if held > limit:
                raise ModelError(f"{path}: uncompressed size exceeds {limit} bytes{why}")
            raw = b"".join(chunks)
            del chunks
            return raw.decode("utf-8")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"cannot read {kind} file {path}: not UTF-8 text ({exc.reason})") from exc
    except (OSError, EOFError) as exc:  # includes gzip.BadGzipFile and truncated archives
        raise ModelError(f"cannot read {kind} file {path}: {exc}") from exc


def _read_model_file(path: Path, reader: ModelReader, tolerance: float,
                     limit: TimeLimit | None = None) -> Theta:
    """Theta of a BIF or XMLBIF file, read by ``reader`` (one of :data:`READERS`)."""
    kind = _file_kind(path)
    if kind is None:
        raise ModelError(
            f"{path}: unknown model file type (use .bif, .bif.gz, .xml, .xmlbif, .json, .json.gz "
            "or .py)")
    check = _reading(limit, path)
    text = _read_model_text(path, kind, check=check)
    if reader == "pgmpy":
        check("its text read, before pgmpy parses it")
        net = _read_pgmpy_text(text, path, kind)  # pgmpy's parser: not interruptible
        check("after pgmpy parsed it")
        return _theta_from_pgmpy([net], [path.name], tolerance=tolerance, check=check)
    from quiltpriv.model.readers import read_bif, read_xmlbif

    read = read_bif if kind == "BIF" else read_xmlbif
    try:
        return read(text, str(path), name=path.name, tolerance=tolerance, time_limit=limit)
    except (ModelError, TimeLimitError):
        raise
    except Exception as exc:  # pragma: no cover - a reader's bug is still one line, not a trace
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"cannot read {kind} file {path}: {detail}") from exc


def _read_pgmpy_text(text: str, path: Path, kind: str) -> Any:
    """pgmpy's reading of the model ``text``, after the checks pgmpy does not make."""
    from quiltpriv.utils.progress import quiet_tqdm_auto

    quiet_tqdm_auto()
    from pgmpy.readwrite import BIFReader, XMLBIFReader

    try:
        if kind == "BIF":
            _check_bif_text(text, path)
            _check_bif_numbers(text, path)
        else:
            _check_xmlbif_numbers(text, path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "BIF":
                return BIFReader(string=text).get_model()
            return XMLBIFReader(string=text).get_model()
    except ModelError:
        raise
    except Exception as exc:  # the readers raise anything from pyparsing to KeyError
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"cannot read {kind} file {path}: {detail}") from exc


def _reject_constant(name: str) -> Any:
    raise ModelError(f"the JSON model contains {name}; probabilities must be finite numbers")


#: The longest integer a JSON model may spell (its numbers are probabilities, 0 or 1 when
#: whole); Python's own reader stops at 4300 digits with a ValueError, and any integer beyond
#: a float's range would overflow later.
MAX_JSON_INT_DIGITS = 20


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise ModelError(f"the JSON model contains an integer of {digits} digits; its numbers "
                         f"are probabilities (at most {MAX_JSON_INT_DIGITS} digits allowed)")
    return int(text)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # counted, not searched: linear in a large model's objects
        counts = Counter(k for k, _ in pairs)
        dup = sorted(k for k, c in counts.items() if c > 1)
        raise ModelError(f"the JSON model names {', '.join(map(repr, dup))} twice")
    return out


#: A JSON number literal with an exponent of three or more digits, or a run of 200 digits, is
#: the only kind that can overflow a float or fall below float64's normal range: with at most
#: 199 digits on either side of the point and an exponent below 100, a literal is 0 or between
#: 1e-299 and 1e298. Text without either is parsed by the C float reader directly.
_JSON_RISKY_EXPONENT = re.compile(r"[eE][-+]?\d{3}")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _json_numbers_plain(text: str) -> bool:
    """Whether every number ``text`` can hold passes :func:`check_probability_literal` as is."""
    if _JSON_RISKY_EXPONENT.search(text):
        return False
    return b"0" * 200 not in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (restored after, whatever happens).

    Parsing a large model creates millions of containers and no reference cycles; each full
    collection the allocations trigger walks all of them again. Paused, parsing a 100,000-node
    model took a third of the CPU time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _theta_from_json(text: str, path: Path, tolerance: float,
                     check: LimitCheck | None = None) -> Theta:
    with _gc_paused():
        return _theta_from_json_document(text, path, tolerance,
                                         check or LimitCheck(None, ""))


def _theta_from_json_document(text: str, path: Path, tolerance: float,
                              check: LimitCheck) -> Theta:
    """Theta from a JSON model's text, every literal and table checked.

    Fast path: numbers through the C float reader and keys without a Python hook. Every
    literal :func:`check_probability_literal` refuses becomes, through the float reader, an
    infinite float or one in ``[0, 2**-1022)``; so when the tables hold none of those (and no
    other float sits outside them), no literal could have failed and the result stands. Else,
    and on any error, the text is scanned for such literals (:func:`_json_numbers_plain`) and,
    if it holds one, read again with every literal checked, which refuses it with the same
    message as before. ``check`` sees the time limit between the passes (and refuses the
    whole reading once it has passed).
    """
    check(f"its {len(text):,} characters of text read, not yet parsed")
    try:
        theta, risky = _theta_from_doc(_json_document(text, path, check, checked=False), path,
                                       tolerance, text, check)
    except ModelError:
        if _json_numbers_plain(text):
            raise
        risky = True
    if risky and not _json_numbers_plain(text):
        check("its text read again, every number checked")
        theta, _ = _theta_from_doc(_json_document(text, path, check, checked=True), path, tolerance,
                                   text, check)
    return theta


def _theta_from_doc(doc: dict[str, Any], path: Path, tolerance: float,
                    text: str, check: LimitCheck) -> tuple[Theta, bool]:
    """Theta from a parsed JSON model, and whether a float in it might come from a literal
    the float reader could not check (see :func:`_theta_from_json_document`)."""
    nodes = doc.get("nodes")
    members = doc.get("members")
    if not isinstance(nodes, dict) or not nodes:
        raise ModelError(f"{path}: 'nodes' must be a non-empty object")
    if not isinstance(members, list) or not members:
        raise ModelError(f"{path}: 'members' must be a non-empty list (Theta is empty)")
    check(f"its text parsed, 0 of {len(nodes):,} nodes checked")
    states, parents = _json_nodes(nodes, path, check)
    check(f"{len(nodes):,} nodes' states and parents checked, not yet their tables")
    # a node entry with other keys than states and parents: read its numbers checked
    risky = sum(map(len, nodes.values())) != len(nodes) + sum(
        map(operator.contains, nodes.values(), repeat("parents")))
    columns = doc["format"] == JSON_FORMAT_V2
    key = "tables" if columns else "cpds"
    tables, names = [], []
    for k, m in enumerate(members):
        if not isinstance(m, dict) or key not in m or not columns and \
                not isinstance(m["cpds"], dict):
            raise ModelError(f"{path}: member {k} must be an object with {key!r}")
        names.append(str(m.get("name") or f"{path.stem}[{k}]"))
        tables.append(m[key])
        risky = risky or _holds_float({name: x for name, x in m.items() if name != key})
    provenance = doc.get("provenance")
    if provenance is not None and not isinstance(provenance, dict):
        raise ModelError(f"{path}: 'provenance' must be an object")
    risky = risky or _holds_float({key: x for key, x in doc.items()
                                   if key not in ("nodes", "members")})
    if columns:  # binary tables: no literal to check; only the metadata's floats are
        theta = _theta_from_columns(states, parents, tables, names, tolerance=tolerance,
                                    check=check)
    else:
        _check_table_leaves(doc, tables, names, text, path)
        theta = _theta_from_named_tables(states, parents, tables, names, tolerance=tolerance,
                                         check=check)
        risky = risky or any(_tiny_or_infinite(m) for m in theta.members)
    # Metadata only (shown in plans and reports, escaped there); not part of the fingerprint.
    return (theta if provenance is None else theta.with_provenance(provenance)), risky


def _theta_from_columns(states: Mapping[str, list[str]], parents: Mapping[str, list[str]],
                        columns: Sequence[object], names: Sequence[str], *,
                        tolerance: float, check: LimitCheck | None = None) -> Theta:
    """Theta from a format ``/2`` model's checked nodes (as the JSON reader checks them:
    each node's states a non-empty list of distinct ``str``, its parents distinct known
    nodes) and each member's ``tables`` column (untrusted: decoded and checked here).
    ``check`` sees the time limit between the passes over the nodes."""
    check = check or LimitCheck(None, "")
    order = list(states)
    n = len(order)
    topo = order if _in_topological_order(order, parents) else \
        _topological_order(order, parents)
    check(f"{n:,} nodes ordered, not yet their tables")
    shapes = _table_shapes(order, states, parents)
    entries = sum(map(math.prod, shapes))
    members = []
    for k, (data, name) in enumerate(zip(columns, names, strict=True)):
        def what(i: int, name: str = name) -> str:
            return f"{name}: CPD of {order[i]!r}"

        check(f"{k} of {len(names)} members' tables of {n:,} nodes checked")
        tables = _check_column(_decode_column(data, entries, name), shapes, what, tolerance)
        check(f"{k} of {len(names)} members' tables of {n:,} nodes made, one checked")
        cpds = dict(zip(order, map(CPD, order, map(tuple, map(parents.__getitem__, order)),
                                   tables), strict=True))
        members.append({v: cpds[v] for v in topo} if topo != order else cpds)
    check(f"every table of {n:,} nodes checked, Theta not yet built")
    return Theta._from_named(topo, states, parents, members, names, check=check)


def _in_topological_order(order: list[str], parents: Mapping[str, Sequence[str]]) -> bool:
    """Whether every node's parents come before it in ``order`` (decided in numpy)."""
    pos = dict(zip(order, range(len(order)), strict=True))
    lists = list(map(parents.__getitem__, order))
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(order))
    before = np.fromiter(map(pos.__getitem__, chain.from_iterable(lists)), dtype=np.int64,
                         count=int(counts.sum()))
    return bool(np.all(before < np.repeat(np.arange(len(order)), counts)))


def _check_table_leaves(doc: dict[str, Any], tables: Sequence[Any], names: Sequence[str],
                        text: str, path: Path) -> None:
    """Refuse a format ``/1`` table holding a string or a boolean where a number belongs.

    numpy reads ``"0.5"`` and ``"1e-400"`` as numbers and ``true`` as 1.0, which would let a
    table through that is not made of JSON numbers (and a literal past the per-literal check).
    Cheaply first: without ``true`` or ``false`` anywhere in the text, no table holds a
    boolean; and when the text's double quotes are exactly those of the strings found
    outside the tables (:func:`_strings_outside_tables`, never an over-count), no table holds
    a string. Only otherwise is every table walked (:func:`_non_numbers`).
    """
    if "true" not in text and "false" not in text and \
            text.count('"') == 2 * _strings_outside_tables(doc):
        return
    for m, name in zip(tables, names, strict=True):
        for v, values in m.items():
            bad = _non_numbers(values)
            if bad is not None:
                raise ModelError(f"{path}: {name}: the CPD of {v!r} holds {bad!r}, not a number")


def _non_numbers(values: object) -> object:
    """The first leaf of a (nested-list) table that is not an int or a float, else None."""
    stack = [values]
    while stack:
        x = stack.pop()
        if type(x) is list:
            if all(type(y) is float or type(y) is int for y in x):
                continue
            stack.extend(reversed(x))
        elif type(x) is not float and type(x) is not int:
            return x
    return None


def _strings_outside_tables(doc: dict[str, Any]) -> int:
    """Strings (keys included) of a parsed format ``/1`` model outside its tables' values:
    exact for nodes whose entries hold lists of strings, else fewer (never more)."""
    n = len(doc)
    for key, x in doc.items():
        if key == "nodes" and type(x) is dict and all(type(s) is dict for s in x.values()):
            specs = list(x.values())
            n += len(x) + sum(map(len, specs))
            for field in ("states", "parents"):
                lists = [s[field] for s in specs if field in s]
                if all(type(a) is list for a in lists):
                    every = list(chain.from_iterable(lists))
                    n += sum(type(a) is str for a in every) if len(every) < 64 else \
                        (len(every) if set(map(type, every)) <= {str} else 0)
        elif key == "members" and type(x) is list:
            for m in x:
                if type(m) is dict:
                    n += len(m) + sum(len(y) if k == "cpds" and type(y) is dict
                                      else 0 if k == "cpds" else _n_strings(y)
                                      for k, y in m.items())
        else:
            n += _n_strings(x)
    return n


def _n_strings(x: object) -> int:
    """Strings (keys included) in a small parsed JSON value."""
    if isinstance(x, str):
        return 1
    if isinstance(x, dict):
        return len(x) + sum(_n_strings(v) for v in x.values())
    if isinstance(x, list):
        return sum(_n_strings(v) for v in x)
    return 0


def _holds_float(x: object) -> bool:
    """Whether a parsed JSON value holds a float anywhere (metadata: small)."""
    if isinstance(x, float):
        return True
    if isinstance(x, dict):
        return any(_holds_float(v) for v in x.values())
    if isinstance(x, list):
        return any(_holds_float(v) for v in x)
    return False


def _tiny_or_infinite(member: Mapping[str, Any]) -> bool:
    """Whether a member's tables hold an entry that is 0, subnormal or not finite (what the
    float reader makes of a literal the checked reader refuses, and of a plain 0)."""
    flat = np.concatenate([cpd.table.ravel() for cpd in member.values()])
    return bool(np.any(~(np.abs(flat) >= _TINY)))


def _count_pairs(doc: object) -> int:
    """Key-value pairs of the model's objects: the document, its nodes and their entries,
    its members and their tables' objects, and any object in the rest (metadata, small).
    Objects elsewhere (in a node's entry, in a table) are not counted: a count that falls
    short only sends the text to the per-object duplicate check."""
    if not isinstance(doc, dict):
        return 0
    n = len(doc)
    for key, x in doc.items():
        if key == "nodes" and isinstance(x, dict):
            n += len(x) + sum(map(len, [s for s in x.values() if type(s) is dict]))
        elif key == "members" and isinstance(x, list):
            for m in x:
                if isinstance(m, dict):
                    n += len(m) + sum(_count_pairs_any(y) if k != "cpds" else
                                      len(y) if isinstance(y, dict) else 0
                                      for k, y in m.items())
        else:
            n += _count_pairs_any(x)
    return n


def _count_pairs_any(x: object) -> int:
    """Key-value pairs of every object in a (small) parsed JSON value."""
    if isinstance(x, dict):
        return len(x) + sum(_count_pairs_any(v) for v in x.values())
    if isinstance(x, list):
        return sum(_count_pairs_any(v) for v in x)
    return 0


def _json_document(text: str, path: Path, check: LimitCheck | None = None, *,
                   checked: bool = True) -> dict[str, Any]:
    """The JSON model's top-level object, of the expected format.

    ``checked``: every float literal through :func:`check_probability_literal`; otherwise
    through the C float reader (the caller decides whether that was enough). Duplicate keys
    are refused either way: without the per-object hook, the text's colons are counted
    against the pairs parsed (each pair has its colon; a colon inside a string only adds),
    and only where they differ is the text read again with the hook, which names the key.
    """
    from quiltpriv.utils.serialize import load_json

    def parse(parse_float: Any, hook: Any) -> Any:
        try:
            return load_json(text, "the JSON model", error=ModelError,
                             parse_constant=_reject_constant, parse_float=parse_float,
                             parse_int=_parse_int, object_pairs_hook=hook)
        except ModelError as exc:  # neither the hooks nor the reader know the path
            raise ModelError(f"{path}: {exc}") from None

    doc = parse(_json_float if checked else float, None)  # one C call: not interruptible
    if check is not None:
        check("its text parsed, its keys not yet checked")
    if text.count(":") != _count_pairs(doc):
        doc = parse(_json_float if checked else float, _no_duplicate_keys)
        if check is not None:
            check("its text parsed again, each key checked")
    if not isinstance(doc, dict):
        raise ModelError(f"{path}: a JSON model must be an object")
    if doc.get("format") not in (JSON_FORMAT, JSON_FORMAT_V2):
        raise ModelError(f"{path}: unknown JSON model format {doc.get('format')!r} "
                         f"(expected {JSON_FORMAT_V2!r} or {JSON_FORMAT!r})")
    return doc


def _json_nodes(nodes: dict[str, Any], path: Path, check: LimitCheck | None = None,
                ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every node's states and parents, checked as :func:`_json_node` checks them: all at
    once (a handful of passes over all nodes in C), and node by node, which names the first
    offending node, only when the passes find something wrong. ``check`` sees the time
    limit between the passes."""
    check = check or LimitCheck(None, "")
    specs = list(nodes.values())
    stage = f"checking the states and parents of {len(specs):,} nodes"
    if set(map(type, specs)) == {dict}:
        st: list[Any] = list(map(dict.get, specs, repeat("states")))
        pa: list[Any] = list(map(dict.get, specs, repeat("parents"), repeat([])))  # read only
        check(stage)
        if set(map(type, st)) == {list} and set(map(type, pa)) == {list}:
            every_st = list(chain.from_iterable(st))
            every_pa = list(chain.from_iterable(pa))
            lengths = list(map(len, st))
            check(stage)
            if (min(lengths) > 0 and max(lengths) <= MAX_STATES
                    and set(map(type, every_st)) <= {str} and set(map(type, every_pa)) <= {str}
                    and sum(map(len, map(set, st))) == len(every_st)  # distinct per node
                    and _checked(check, stage)
                    and sum(map(len, map(set, pa))) == len(every_pa)
                    and nodes.keys() >= set(every_pa)):
                check(stage)
                return dict(zip(nodes, st, strict=True)), dict(zip(nodes, pa, strict=True))
    items = list(nodes.items())
    checked = {v: _json_node(v, spec, nodes, path)
               for v, spec in check.paced(items, "{done:,} of {total:,} nodes checked one by one")}
    return {v: c[0] for v, c in checked.items()}, {v: c[1] for v, c in checked.items()}


def _checked(check: LimitCheck, stage: str) -> bool:
    """True, after ``check(stage)`` (a check of the time limit inside a chain of ``and``)."""
    check(stage)
    return True


def _json_node(v: str, spec: object, nodes: Mapping[str, object],
               path: Path) -> tuple[list[str], list[str]]:
    """A node's entry (untrusted: any JSON value) as its states and parents, checked."""
    if not isinstance(spec, dict):
        raise ModelError(f"{path}: node {v!r} must be an object with states and parents")
    st, pa = spec.get("states"), spec.get("parents", [])
    if not isinstance(st, list) or not st or not all(isinstance(x, str) for x in st):
        raise ModelError(f"{path}: node {v!r} needs a non-empty list of state names")
    if len(st) > MAX_STATES:
        raise ModelError(f"{path}: node {v!r} has {len(st)} states (at most {MAX_STATES})")
    if len(set(st)) != len(st):
        raise ModelError(f"{path}: node {v!r} lists a state twice")
    if not isinstance(pa, list) or not all(isinstance(x, str) for x in pa):
        raise ModelError(f"{path}: the parents of {v!r} must be a list of node names")
    unknown = [x for x in pa if x not in nodes]
    if unknown:
        raise ModelError(f"{path}: node {v!r} has unknown parent(s) {unknown}")
    if len(set(pa)) != len(pa):
        raise ModelError(f"{path}: node {v!r} lists a parent twice")
    return st, pa


def load_model(spec: str | os.PathLike[str], *, tolerance: float = CPD_SUM_TOLERANCE,
               reader: ModelReader = "quiltpriv", max_memory: int | str | None = None,
               time_limit: TimeLimit | float | None = None) -> Theta:
    """Load a hyperparameter network (or a Theta) from a bundled name, a file or a module.

    A model whose states do not look like distribution parameters (not numbers, like the
    ``yes`` / ``no`` of a record-level network) is loaded with a
    :class:`~quiltpriv.errors.ParameterStatesWarning`.

    Parameters
    ----------
    spec : str or path
        See the module docstring.
    tolerance : float
        How far a CPD column may be from summing to one (rounded files); columns within it are
        renormalised, columns beyond it are an error.
    reader : {"quiltpriv", "pgmpy"}
        Who reads BIF and XMLBIF files: :mod:`quiltpriv.model.readers` (default; one pass over the
        text) or pgmpy's readers followed by :func:`theta_from_pgmpy`. Both give the same
        Theta on every file pgmpy reads correctly.
    max_memory : int or str, optional
        Memory budget of reading a JSON model, in bytes or as a size (``"4G"``); default
        :data:`JSON_MEMORY_BUDGET`, the package's one budget
        (:data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory).
    time_limit : float or TimeLimit, optional
        Seconds reading may take, or a :class:`~quiltpriv.utils.time_limit.TimeLimit` that
        started earlier (the command line's ``--time-limit``, counted from the command's
        start). Reading checks it between its passes over the model (about every
        16,384 nodes, or each pass); there is nothing to answer with before reading ends, so
        once it has passed reading stops with a :class:`~quiltpriv.errors.TimeLimitError`.
        A Python model module's own code, pgmpy's parser and the JSON text's parse are each
        one step the check comes before and after. Default: no limit.

    Returns
    -------
    Theta

    Raises
    ------
    ModelError
        Unknown name, missing or unreadable file, malformed model (cycle, bad CPD, ...).
    TimeLimitError
        ``time_limit`` passed before the model was read (the message says how far it got).

    Examples
    --------
    A bundled model, and the same model saved to a JSON file and read back:

    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> theta
    Theta(5 nodes, 5 edges, 1 member)
    >>> path = theta.save("student.json")
    >>> qp.load_model("student.json").nodes == theta.nodes
    True
    >>> qp.load_model("student:theta")  # another function of the bundled module
    Theta(5 nodes, 5 edges, 2 members)
    """
    if not isinstance(reader, str) or reader not in READERS:
        raise ModelError(f"unknown model reader {reader!r} (use {' or '.join(READERS)})")
    if isinstance(spec, bytes) or not isinstance(spec, str | os.PathLike):
        raise ModelError(f"a model is given by a bundled name, a file or a module spec "
                         f"(str or path), got {type(spec).__name__}")
    from quiltpriv.model.provenance import check_parameter_states

    if max_memory is not None:
        check_max_memory(max_memory)
    limit = check_time_limit(time_limit)
    check = _reading(limit, spec)
    check("before it was opened")
    theta = _load_model(spec, tolerance, reader, max_memory, limit)
    check(f"{len(theta.nodes):,} nodes read, their states not yet looked at")
    check_parameter_states(theta, os.fspath(spec))
    return theta


def _reading(limit: TimeLimit | None, spec: str | os.PathLike[str]) -> LimitCheck:
    """The check of ``limit`` while reading the model ``spec`` (which its refusal names)."""
    return LimitCheck(limit, f"reading the model {os.fspath(spec)}")


def _load_model(spec: str | os.PathLike[str], tolerance: float, reader: ModelReader,
                max_memory: object = None, limit: TimeLimit | None = None) -> Theta:
    text = os.fspath(spec)
    function = None
    base = text
    # "name:function" / "file.py:function" (a Windows drive letter is not a function).
    if ":" in text and not Path(text).exists():
        base, _, function = text.rpartition(":")
        if not function.isidentifier():
            base, function = text, None
    path = Path(base)
    if path.suffix == "" and not path.exists():
        for d in model_dirs():
            candidate = d / f"{base}.py"
            if candidate.is_file():
                return _from_module(candidate, function, tolerance, _reading(limit, spec))
        names = ", ".join(bundled_models()) or "none found"
        raise ModelError(f"no bundled model named {base!r} (bundled: {names}) and no such file")
    if not path.exists():
        raise ModelError(f"model file {base} does not exist")
    if not path.is_file():
        raise ModelError(f"model path {base} is not a file")
    check = _reading(limit, path)
    if path.suffix == ".py":
        return _from_module(path, function, tolerance, check)
    if path.name.lower().endswith(".json.gz") and function is None:
        # compressed JSON (a long series' model): the memory budget bounds the text
        budget, what = _json_budget(max_memory)
        cap = budget // JSON_BYTES_PER_TEXT_BYTE
        why = (f" (reading takes {JSON_BYTES_PER_TEXT_BYTE} bytes of memory per byte of text; "
               f"the budget is {budget} bytes, {what})")
        return _theta_from_json(_read_model_text(path, "JSON", cap, why, check), path,
                                tolerance, check)
    if path.suffix.lower() == ".json" and function is None:
        _check_json_budget(path, path.stat().st_size, max_memory)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ModelError(f"cannot read JSON model {path}: not UTF-8 text") from exc
        return _theta_from_json(text, path, tolerance, check)
    if function is not None:
        raise ModelError(f"{text}: ':function' applies to Python model modules only")
    return _read_model_file(path, reader, tolerance, limit)


def load_theta(
    specs: Sequence[str | os.PathLike[str]], *, tolerance: float = CPD_SUM_TOLERANCE,
    reader: ModelReader = "quiltpriv", max_memory: int | str | None = None,
    time_limit: TimeLimit | float | None = None,
) -> Theta:
    """Load several specs and join them into one Theta (they must share one DAG).

    Parameters
    ----------
    specs : sequence of str or path
        Model specs, as :func:`load_model` reads them; each gives one or more members.
    tolerance : float
        How far a CPD column may be from summing to one.
    reader : {"quiltpriv", "pgmpy"}
        Who reads BIF and XMLBIF files (see :func:`load_model`).
    max_memory : int or str, optional
        The memory budget each JSON model is read within (see :func:`load_model`).
    time_limit : float or TimeLimit, optional
        One limit for reading them all, started when this is called (or earlier, a
        :class:`~quiltpriv.utils.time_limit.TimeLimit`); see :func:`load_model`.

    Returns
    -------
    Theta

    Examples
    --------
    >>> import quiltpriv as qp
    >>> path = qp.load_model("student").save("student.json")
    >>> theta = qp.load_theta(["student", "student.json"])
    >>> theta, theta.names
    (Theta(5 nodes, 5 edges, 2 members), ('student', 'student'))
    """
    if isinstance(specs, str | os.PathLike) or not isinstance(specs, Sequence):
        raise ModelError(f"specs must be a list of model specs, got {type(specs).__name__}")
    if not specs:
        raise ModelError("Theta is empty: give at least one model")
    limit = check_time_limit(time_limit)
    theta = load_model(specs[0], tolerance=tolerance, reader=reader, max_memory=max_memory,
                       time_limit=limit)
    for s in specs[1:]:
        theta = theta.with_members(load_model(s, tolerance=tolerance, reader=reader,
                                              max_memory=max_memory, time_limit=limit))
    return theta
