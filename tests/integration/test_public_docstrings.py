"""The public API documents its parameters and shows an example, and every example runs.

The public API is what ``quiltpriv`` exports (``quiltpriv.__all__``) and what its subpackages
export by ``__all__``. Each public class and function has a numpydoc ``Parameters`` section
naming exactly the parameters of its signature (none when it takes none) and an ``Examples``
section with at least one doctest, as networkx documents its API. The examples run here as
doctests, in the default tests: every doctest of every module of the package, so an example
on a method or a private helper runs too.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import quiltpriv

#: The modules whose ``__all__`` is the public API.
PUBLIC_MODULES = ("quiltpriv", "quiltpriv.distribution", "quiltpriv.explorer")
_SECTION = re.compile(r"^(?P<name>[A-Z][A-Za-z ]+)\n-{3,}\n", re.M)
_PARAM = re.compile(r"^(?P<names>\*{0,2}[A-Za-z_][\w, *]*?)(?: : .*)?$")
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def public_objects() -> dict[str, object]:
    """Qualified export name -> object, each object once (the first module exporting it)."""
    out: dict[str, object] = {}
    seen: set[int] = set()
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if id(obj) not in seen:
                seen.add(id(obj))
                out[f"{name}.{attr}"] = obj
    return out


def sections(doc: str) -> dict[str, str]:
    """The numpydoc sections of a cleaned docstring: title -> body."""
    marks = list(_SECTION.finditer(doc))
    return {m["name"]: doc[m.end():(marks[k + 1].start() if k + 1 < len(marks) else len(doc))]
            for k, m in enumerate(marks)}


def documented_parameters(body: str) -> list[str]:
    """The names a ``Parameters`` section documents (``a, b : int`` documents two)."""
    names = []
    for line in body.splitlines():
        if not line or line[0].isspace():
            continue
        m = _PARAM.match(line)
        if m:
            names += [n.strip() for n in m["names"].split(",") if n.strip()]
    return names


def signature_parameters(obj: object) -> list[str] | None:
    """The parameters a caller passes (``*args`` written with its star); None if unknown."""
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return []  # raised by the package, never built by a caller
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [stars.get(p.kind, "") + p.name for p in sig.parameters.values()
            if p.name not in ("self", "cls")]


def missing(name: str, obj: object) -> list[str]:
    """What the docstring of one public object lacks."""
    doc = inspect.getdoc(obj) or ""
    found = sections(doc)
    out = []
    params = signature_parameters(obj)
    if params:
        if "Parameters" not in found:
            out.append(f"{name}: no Parameters section")
        else:
            documented = documented_parameters(found["Parameters"])
            out += [f"{name}: parameter {p!r} not documented" for p in params
                    if p not in documented]
            out += [f"{name}: documents {p!r}, which is not a parameter" for p in documented
                    if p not in params]
    if ">>>" not in found.get("Examples", ""):
        out.append(f"{name}: no Examples section with a doctest")
    return out


#: Public names whose docstrings are still being written (issue 32, part 6); this list only
#: shrinks, and a name on it that is complete fails the test.
NOT_YET: frozenset[str] = frozenset({
})


def test_every_public_name_documents_its_parameters_and_shows_an_example():
    problems = [p for name, obj in public_objects().items() if name not in NOT_YET
                for p in missing(name, obj)]
    assert not problems, "\n".join(problems)
    done = sorted(name for name in NOT_YET if not missing(name, public_objects()[name]))
    assert not done, f"complete now, take them off NOT_YET: {done}"


def test_the_checks_find_what_is_missing():
    def documented(a: int, *rest: int, b: int = 0) -> int:
        """Add.

        Parameters
        ----------
        a, b : int
            Two numbers.
        *rest : int
            More.

        Examples
        --------
        >>> documented(1)
        1
        """
        return a + b + sum(rest)

    def undocumented(a: int, c: int) -> int:
        """Add.

        Parameters
        ----------
        a : int
            A number.
        b : int
            Gone.
        """
        return a + c

    assert missing("documented", documented) == []
    assert missing("undocumented", undocumented) == [
        "undocumented: parameter 'c' not documented",
        "undocumented: documents 'b', which is not a parameter",
        "undocumented: no Examples section with a doctest"]
    assert missing("bare", lambda: None) == ["bare: no Examples section with a doctest"]


def package_modules() -> Iterator[str]:
    """Every module of the package but the command line's ``__main__`` entry points."""
    yield "quiltpriv"
    for info in pkgutil.walk_packages(quiltpriv.__path__, "quiltpriv."):
        if not info.name.endswith("__main__"):
            yield info.name


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    for name in package_modules():
        module = importlib.import_module(name)
        # The globals of its module, and ``qp`` as after ``import quiltpriv as qp``.
        tests += [t for t in finder.find(module, name, extraglobs={"qp": quiltpriv})
                  if t.examples]
    return sorted(tests, key=lambda t: t.name)


DOCTESTS = _doctests()


def test_every_public_example_is_collected():
    # Guards the runner below: each public object's examples are among the doctests it runs.
    names = {t.name for t in DOCTESTS}
    for obj in public_objects().values():
        qualified = f"{obj.__module__}.{obj.__qualname__}"  # type: ignore[attr-defined]
        if ">>>" in (inspect.getdoc(obj) or ""):
            assert qualified in names, qualified


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_example_runs(test: doctest.DocTest, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Each example runs in an empty folder: a file it writes is left there.
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    out: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an example must not warn unless it says so
        runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
