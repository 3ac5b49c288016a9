"""The error contract: every public function refuses bad input with a QuiltPrivError.

quiltpriv.errors promises that every error a user can cause by bad input is a
:class:`~quiltpriv.errors.QuiltPrivError` (ModelError, QueryError, ParameterError, ...) with a
message naming the problem -- never a bare ``ValueError``, ``TypeError``, ``KeyError``,
``IndexError``, ``AttributeError`` or ``ZeroDivisionError`` from deep inside. This test walks
every public module of the package (``pkgutil``), takes each public callable (the module's
``__all__``, else the public callables defined in it) and calls it with bad arguments built
from a small table of generators (wrong type, NaN, negative, unknown attribute name, chosen by
parameter name), asserting that a QuiltPrivError is raised.

Two variants per kind of bad value: every required argument bad, and -- for functions taking
a network -- a valid network with every other argument bad (so that unknown attribute names
reach the code that must refuse them).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import warnings
from collections.abc import Callable, Iterator

import pytest

import quiltpriv
from quiltpriv.errors import QuiltPrivError

#: Not walked, with the reason. Each of these has its own boundary and its own tests.
EXCLUDED_MODULES = {
    # decorators applied to the package's own functions and classes at import (old names of
    # renamed parameters): their arguments are code, not input
    "quiltpriv.utils.deprecation": "decorators of the package's own code",
    # argv is the boundary: one line "quiltpriv: error: ..." and exit status 2 for every bad
    # option (tests/cli/test_cli_hostile.py); its functions take parsed argparse namespaces.
    "quiltpriv.cli": "argv boundary, tested by test_cli_hostile",
    "quiltpriv.cli.core": "argv boundary, tested by test_cli_hostile",
    "quiltpriv.cli.__main__": "argv boundary, tested by test_cli_hostile",
    # HTTP requests are the boundary: parsed into checked forms by the server and answered
    # with a JSON error (tests/explorer/test_explorer_api.py); serve() would start a server.
    "quiltpriv.explorer": "HTTP boundary, tested by test_explorer_api",
    "quiltpriv.explorer.server": "HTTP boundary, tested by test_explorer_api",
    "quiltpriv.explorer.state": "HTTP boundary, tested by test_explorer_api",
    "quiltpriv.explorer.compute": "HTTP boundary, tested by test_explorer_api",
    "quiltpriv.explorer.jobs": "HTTP boundary, tested by test_explorer_api",
    "quiltpriv.explorer.published": "HTTP boundary, tested by test_explorer_audit",
    # How a number, set, table or HTML fragment is written, shared by every layer; its callers
    # pass values they have already checked.
    "quiltpriv.utils.format": "formatting primitives, fed only checked values by their callers",
    # The per-Theta cache object, built by InferenceCache.of(theta); keys and values come
    # from the inference functions, after their checks.
    "quiltpriv.inference.cache": "Theta's own cache object, built by InferenceCache.of",
    # The factor algebra of the engines: tables and scopes built by the engines themselves
    # from a checked Theta and query (tests/inference/test_factors.py).
    "quiltpriv.inference.factors": "engine internals, fed the engines' own tables",
    # Elimination orders of graphs the engines and the junction tree build from a checked
    # Theta (tests/inference/test_deadlines.py checks them against a from-scratch reference).
    "quiltpriv.inference.orders": "engine internals, fed the engines' own graphs",
    # Which frame a warning names: their arguments are code (a predicate over file names, a
    # frame), given by the package's own warnings (tests/integration/test_warning_lines.py).
    "quiltpriv.utils.stack": "frame walkers for the package's own warnings",
}

#: Public names that are not input paths, with the reason.
EXCLUDED_NAMES = {
    # adds a command to the CLI's own argparse parser (wiring, called once by quiltpriv.cli)
    "register_cli": "CLI wiring",
    # a validator's ``kind`` argument is code (a class), not input
    "check_instance": "its kind argument is code",
    # a result record whose __post_init__ only fills defaults (no input of its own)
    "AuditResult": "result record",
    # a result record the planner (or the strict plan parser) builds; its __post_init__ only
    # derives the status from optimal (no input of its own)
    "SensitivePlan": "result record",
    # the planner's comparison of two computed scales or influences (shared with verification
    # and the report): no input of its own
    "is_tie": "planner internal, compares computed floats",
    # the planner's order of computed candidates (shared with the report): no input of its own
    "candidate_key": "planner internal, orders computed candidates",
    # candidate_key for the report's and the CLI's listed quilts: no input of its own
    "price_order": "planner internal, orders computed candidates",
    # the engines' request record, built by the inference functions from checked input
    "JointQuery": "engine interface record, built from checked input",
    # an engine's answer record, built by the engines from their own computed tables
    "Answer": "engine interface record, built by the engines",
    # total by design: every Python value has a JSON form (repr as the last resort, "nan" text)
    "jsonable": "total: every value has a JSON form",
}

BARE = (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError,
        LookupError, ArithmeticError)


def _wrong_type() -> object:
    return object()


#: kind -> a bad value. "unknown" is an attribute/option name nobody declared.
KINDS: dict[str, Callable[[], object]] = {
    "type": _wrong_type,
    "nan": lambda: math.nan,
    "negative": lambda: -1,
    "unknown": lambda: "no_such_attribute",
}

#: Parameters for which some kinds are valid input, by name -> the kinds that are valid.
#: A valid kind is replaced by a wrong type, so every call still has only bad arguments.
VALID_KINDS = {
    # any string is a file name: it would create a file (that is not bad input)
    "path": {"unknown"},
    "text": {"unknown"},
    "data": {"unknown"},
}

#: Functions for which some kinds are valid values of every argument, by name.
VALID_KINDS_BY_FUNCTION = {
    "canonical_json": {"negative", "unknown"},  # any JSON value has a canonical text
    "state_name": {"negative", "unknown"},  # any number or string names a state
    "label": {"unknown"},  # any string is a node label
    "line_metric": {"negative"},  # -1 is a point on the line
    "check_seed": {"negative"},  # any integer seeds a generator
    "check_scalar": {"negative"},  # -1 is a number (no range given)
    "check_vector": {"negative"},  # (-1,) is a vector
    "check_array": {"negative"},  # -1 is an array of numbers
    "check_square_matrix": {"negative"},  # -1 is a 1x1 matrix
    "check_n_jobs": {"negative"},  # -1 means every core
    "progress_bar": {"unknown"},  # a string is iterable (its characters)
    # directed rounding of any number: -1 is rounded like any other
    "round_up": {"negative"},
    "round_down": {"negative"},
    "exp_up": {"negative"},
    "check_finite_noise": {"negative"},
}


def _theta():
    from quiltpriv.model.loading import load_model

    return load_model("student")


#: Valid values for the second variant, by parameter name.
GOOD: dict[str, Callable[[], object]] = {"theta": _theta}


def _public_modules() -> Iterator[str]:
    yield "quiltpriv"
    for info in pkgutil.walk_packages(quiltpriv.__path__, "quiltpriv."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or info.name in EXCLUDED_MODULES:
            continue
        yield info.name


def _is_record(obj: object) -> bool:
    """A frozen result dataclass the library builds (no checks of its own to honour)."""
    if not isinstance(obj, type):
        return False
    if issubclass(obj, BaseException | Warning):
        return True
    return dataclasses.is_dataclass(obj) and not hasattr(obj, "__post_init__")


def _public_callables() -> list[tuple[str, Callable]]:
    seen: set[int] = set()
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _public_modules():
            mod = importlib.import_module(name)
            names = getattr(mod, "__all__", None)
            if names is None:
                names = [n for n, v in vars(mod).items()
                         if not n.startswith("_") and callable(v)
                         and getattr(v, "__module__", None) == name]
            for n in names:
                obj = getattr(mod, n, None)
                if (obj is None or not callable(obj) or n in EXCLUDED_NAMES or _is_record(obj)
                        or id(obj) in seen):
                    continue
                if getattr(obj, "__module__", "").startswith(tuple(EXCLUDED_MODULES)):
                    continue
                seen.add(id(obj))
                home = getattr(obj, "__module__", None) or name
                out.append((f"{home}.{getattr(obj, '__qualname__', n)}", obj))
    return out


def _required(func: Callable) -> list[inspect.Parameter]:
    sig = inspect.signature(func)
    return [p for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                   p.KEYWORD_ONLY)]


def _bad(param: str, kind: str) -> object:
    if kind in VALID_KINDS.get(param, ()):
        return _wrong_type()
    return KINDS[kind]()


def _skipped(func: Callable, kind: str) -> bool:
    return kind in VALID_KINDS_BY_FUNCTION.get(getattr(func, "__name__", ""), ())


def _cases() -> list[tuple[str, Callable, str, bool]]:
    cases = []
    for qual, func in _public_callables():
        try:
            params = _required(func)
        except (TypeError, ValueError):  # builtins without a signature
            continue
        if not params:
            continue  # nothing to get wrong (optional arguments are checked where used)
        for kind in KINDS:
            if _skipped(func, kind):
                continue
            cases.append((qual, func, kind, False))
            if any(p.name in GOOD for p in params) and any(p.name not in GOOD for p in params):
                cases.append((qual, func, kind, True))
    return cases


CASES = _cases()


def _call(func: Callable, kind: str, with_good: bool) -> object:
    args, kwargs = [], {}
    for p in _required(func):
        value = GOOD[p.name]() if with_good and p.name in GOOD else _bad(p.name, kind)
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    result = func(*args, **kwargs)
    if inspect.isgenerator(result) or isinstance(result, Iterator):
        result = list(result)  # lazy functions check on the first step
    return result


def test_the_walk_finds_the_public_api():
    names = {q for q, *_ in CASES}
    for expected in ("quiltpriv.graph.quilts.markov_quilt", "quiltpriv.inference.influence."
                     "max_influence", "quiltpriv.graph.quilts.least_influence_quilt",
                     "quiltpriv.inference.influence.joint_marginal",
                     "quiltpriv.mechanisms.calibration.gaussian_sigma"):
        assert expected in names
    assert len(names) > 150


@pytest.mark.parametrize(("qual", "func", "kind", "with_good"), CASES,
                         ids=[f"{q}-{k}{'-good-theta' if g else ''}" for q, _, k, g in CASES])
def test_bad_input_raises_a_quiltprivs_error(qual, func, kind, with_good, tmp_path,
                                              monkeypatch):
    monkeypatch.chdir(tmp_path)  # a function that writes would write here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _call(func, kind, with_good)
        except QuiltPrivError as err:
            assert str(err), f"{qual}: empty message"
            return
        except BARE as err:
            pytest.fail(f"{qual} raised a bare {type(err).__name__} on {kind} input: {err}")
    pytest.fail(f"{qual} accepted {kind} input without an error")
