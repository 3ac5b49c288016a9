"""The package's import structure, read from the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` of every module under quiltpriv/ counts, those inside
functions (lazy imports) included. Imports under ``if TYPE_CHECKING:`` do not run: the layering
leaves them out, the cycle check counts them (issue 32). A ``_repr_html_`` method's import of
its view from ``quiltpriv.reporting.notebook`` is a presentation hook, the one import allowed
up the layers and left out of the cycle check (:func:`test_presentation_hooks`). No module has
more than 1,000 lines. Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``;
those implicit edges are left out (the package ``__init__`` files import nothing but
``errors``, ``_version`` and ``_compat``, which sit below everything).

The layering (lower first; a unit may import units of lower layers and modules of its own):

0. ``_frames`` -- the frame walker that picks the line a warning names (``_compat`` uses it);
1. ``errors``, ``_version``, ``_compat``, ``data`` -- the error hierarchy, the version, old module
   paths, bundled data files;
2. ``utils`` -- validation, files, progress bars, text and HTML formatting, distances;
3. ``model`` -- Theta, its CPD checks, files, builders, learning and provenance;
4. ``graph`` -- d-separation and Markov quilts;
5. ``inference`` -- max-influence, elimination, the junction tree and their cache;
6. ``queries`` -- the query classes, the predicate language, count laws;
7. ``releases`` -- release records and the privacy ledger;
8. ``mechanisms`` -- APMQM (planner, verification, release) and every sibling mechanism;
9. ``distribution`` -- mechanisms of distribution privacy;
10. ``audit`` -- exact auditors and the adversary scorecard;
11. ``gap`` -- generative adversarial privacy (scored by ``audit.adversary``);
12. ``reporting`` -- audit reports, the DAG drawing, the Jupyter views and plots;
13. ``frontend`` -- the query options the command line and the explorer share;
14. ``explorer`` -- the local browser explorer;
15. ``cli`` -- the command line (the only user of ``argparse``);
16. ``quiltpriv`` itself -- the package's lazy top-level names; ``__main__`` -- ``python -m
    quiltpriv``, which runs the command line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "quiltpriv"

#: The layers, lowest first (see the module docstring).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_frames",),
    ("errors", "_version", "_compat", "data"),
    ("utils",),
    ("model",),
    ("graph",),
    ("inference",),
    ("queries",),
    ("releases",),
    ("mechanisms",),
    ("distribution",),
    ("audit",),
    ("gap",),
    ("reporting",),
    ("frontend",),
    ("explorer",),
    ("cli",),
    ("quiltpriv", "__main__"),
)
RANK = {unit: k for k, layer in enumerate(LAYERS) for unit in layer}

#: Imports against the layering that are known and waiting for their fix, each with the reason.
#: The test fails when one of them is gone, so that the list only ever shrinks.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}

#: The units each unit may import (every lower layer): the table the layering test asserts.
ALLOWED: dict[str, frozenset[str]] = {
    unit: frozenset(u for u in RANK if RANK[u] < RANK[unit]) for unit in RANK}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module ``name`` names, or the innermost module holding it (``a.b.func`` -> ``a.b``)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in MODULES:
            return ".".join(parts)
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
    return name.lstrip("_") == "TYPE_CHECKING"


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                continue
            stack.append(child)


def _type_only_nodes(tree: ast.AST) -> set[int]:
    """The ids of the nodes of ``tree`` inside ``if TYPE_CHECKING:`` blocks."""
    blocks = [node.body for node in ast.walk(tree)
              if isinstance(node, ast.If) and _is_type_checking(node.test)]
    return {id(n) for body in blocks for stmt in body for n in ast.walk(stmt)}


def _hook_nodes(tree: ast.AST) -> set[int]:
    """The ids of the nodes of ``tree`` inside a method called ``_repr_html_``."""
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_"
            for n in ast.walk(node)}


class Import:
    """One imported name: ``source`` imports ``name`` from module ``target`` at ``line``.

    ``type_only`` if it is under ``if TYPE_CHECKING:``; ``hook`` if it is a presentation hook:
    an import from ``quiltpriv.reporting`` inside a ``_repr_html_`` method, run only when a
    notebook shows the object (see :func:`test_presentation_hooks`).
    """

    def __init__(self, source: str, target: str, name: str | None, line: int,
                 type_only: bool = False, hook: bool = False) -> None:
        self.source, self.target, self.name, self.line = source, target, name, line
        self.type_only = type_only
        self.hook = hook and target.startswith("quiltpriv.reporting.")

    def __repr__(self) -> str:
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{MODULES[self.source].relative_to(ROOT)}:{self.line}: {what}"


def _imports() -> list[Import]:
    """Every import of the package, type-only ones included (flagged)."""
    out = []
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only, hooks = _type_only_nodes(tree), _hook_nodes(tree)
        for node in ast.walk(tree):
            flags = {"type_only": id(node) in type_only, "hook": id(node) in hooks}
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _resolve(alias.name) if alias.name.startswith("quiltpriv") else None
                    if target is not None:
                        out.append(Import(module, target, None, node.lineno, **flags))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                if base != "quiltpriv" and not base.startswith("quiltpriv."):
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in MODULES:  # a submodule
                        out.append(Import(module, full, None, node.lineno, **flags))
                    else:
                        target = _resolve(base)
                        assert target is not None, f"{path}:{node.lineno}: no module {base}"
                        out.append(Import(module, target, alias.name, node.lineno, **flags))
    return out


ALL_IMPORTS = _imports()
#: The imports that run (type-only ones left out), presentation hooks included.
IMPORTS = [imp for imp in ALL_IMPORTS if not imp.type_only]


def _graph(imports: list[Import] | None = None) -> dict[str, set[str]]:
    """The module import graph: every import (type-only ones too) but the presentation hooks."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in ALL_IMPORTS if imports is None else imports:
        if imp.target != imp.source and not imp.hook:
            graph[imp.source].add(imp.target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None (iterative DFS)."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    for start in sorted(graph):
        if start in state:
            continue
        path, iters = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(graph[nxt])))
    return None


def unit(module: str) -> str:
    """The layering unit of a module: its subpackage, or its own name for a top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_the_parser_sees_the_package():
    # The checks below are only as good as the graph: it must hold the known edges.
    graph = _graph()
    assert len(MODULES) > 50
    assert "quiltpriv.model.network" in graph["quiltpriv.graph.quilts"]
    assert "quiltpriv.inference.junction_tree" in graph["quiltpriv.inference.influence"]
    assert "quiltpriv.errors" in graph["quiltpriv"]


def test_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"a"}}) == ["a", "a"]


def test_no_import_cycle_lazy_imports_included():
    cycle = _cycle(_graph(IMPORTS))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_lazy_and_type_only_imports_included():
    # Issue 32: no import cycle, counting the imports under ``if TYPE_CHECKING:`` (mypy follows
    # them) and those inside functions, with no exception (the last one, the inference cache
    # naming the engines' types, went when the engines declared their own cache kinds).
    # Only the presentation hooks are left out.
    cycle = _cycle(_graph(ALL_IMPORTS))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_graph_counts_type_only_imports():
    # reporting.drawing names Quilt in annotations only: the edge is in the graph all the same.
    type_only = {(imp.source, imp.target) for imp in ALL_IMPORTS if imp.type_only}
    assert ("quiltpriv.reporting.drawing", "quiltpriv.graph.quilts") in type_only
    assert "quiltpriv.graph.quilts" in _graph()["quiltpriv.reporting.drawing"]
    assert _cycle(_graph([Import("quiltpriv.errors", "quiltpriv.utils", None, 1),
                          Import("quiltpriv.utils", "quiltpriv.errors", None, 1,
                                 type_only=True)])) is not None


#: The most lines a module of the package may have (issue 32).
MAX_MODULE_LINES = 1000

#: Modules over the limit that are being split, each with the reason; the test fails when one
#: of them is back under the limit, so that the list only ever shrinks.
MODULES_BEING_SPLIT: dict[str, str] = {}


def test_no_module_over_a_thousand_lines():
    sizes = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
             for path in MODULES.values()}
    over = {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES}
    bad = sorted(f"{p}: {n} lines" for p, n in over.items() if p not in MODULES_BEING_SPLIT)
    assert not bad, f"modules over {MAX_MODULE_LINES} lines: {bad}"
    done = sorted(set(MODULES_BEING_SPLIT) - set(over))
    assert not done, f"back under {MAX_MODULE_LINES} lines, remove from MODULES_BEING_SPLIT: {done}"


#: Modules a presentation hook may import: the Jupyter views and nothing else of reporting.
HOOK_TARGETS = frozenset({"quiltpriv.reporting.notebook"})


def test_presentation_hooks():
    # A ``_repr_html_`` method of a lower layer imports its fragment from reporting.notebook
    # when a notebook shows the object: the one way up the layers. It runs after both modules
    # are loaded (never at import), so it is left out of the cycle check; nothing else may go
    # up this way.
    hooks = [imp for imp in IMPORTS if imp.hook]
    sources = {imp.source for imp in hooks}
    assert {"quiltpriv.model.network", "quiltpriv.graph.quilts",
            "quiltpriv.mechanisms.compare", "quiltpriv.mechanisms.apmqm_release"} <= sources
    bad = [imp for imp in hooks if imp.target not in HOOK_TARGETS or imp.name is None
           or not imp.name.endswith("_html")]
    assert not bad, "presentation hooks must import an *_html view of reporting.notebook:\n" + (
        "\n".join(map(repr, bad)))
    upward_elsewhere = [imp for imp in IMPORTS if not imp.hook and imp.target in HOOK_TARGETS
                        and RANK[unit(imp.source)] < RANK["reporting"]]
    assert not upward_elsewhere, "\n".join(map(repr, upward_elsewhere))


def test_no_private_name_imported_from_another_subpackage():
    bad = [imp for imp in IMPORTS
           if imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__")
           and unit(imp.source) != unit(imp.target)]
    assert not bad, "private names imported across subpackages:\n" + "\n".join(map(repr, bad))


def test_argparse_only_in_the_command_line():
    bad = []
    for module, path in MODULES.items():
        if unit(module) == "cli":
            continue
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names
                    if n.split(".")[0] == "argparse"]
    assert not bad, "argparse outside quiltpriv/cli/: " + ", ".join(bad)


def test_library_modules_do_not_import_the_command_line():
    # ``python -m quiltpriv`` (quiltpriv/__main__.py) is the command line's other entry point.
    bad = [imp for imp in IMPORTS
           if unit(imp.target) == "cli" and unit(imp.source) not in ("cli", "__main__")]
    assert not bad, "\n".join(map(repr, bad))


def test_every_unit_has_a_layer():
    units = {unit(m) for m in MODULES}
    assert units == set(RANK), f"not in LAYERS: {units - set(RANK)}; gone: {set(RANK) - units}"


def test_imports_flow_down_the_layers():
    against = [imp for imp in IMPORTS
               if unit(imp.target) != unit(imp.source) and not imp.hook
               and unit(imp.target) not in ALLOWED[unit(imp.source)]]
    bad = [f"{imp!r} ({unit(imp.source)} is in layer {RANK[unit(imp.source)]}, "
           f"{unit(imp.target)} in layer {RANK[unit(imp.target)]})"
           for imp in against if (imp.source, imp.target) not in KNOWN_EXCEPTIONS]
    assert not bad, "imports against the layering:\n" + "\n".join(bad)
    gone = set(KNOWN_EXCEPTIONS) - {(imp.source, imp.target) for imp in against}
    assert not gone, f"fixed, remove from KNOWN_EXCEPTIONS: {sorted(gone)}"


@pytest.mark.parametrize("package", sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
def test_every_subpackage_says_its_role(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text("utf-8")))
    assert doc and len(doc.split()) >= 5, f"quiltpriv/{package}/__init__.py: no docstring"


def test_the_layering_is_documented():
    # docs/architecture.md shows the same layers as LAYERS, lowest first.
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    where = [text.find(f"`{layer[0]}`") for layer in LAYERS]
    assert -1 not in where, [layer[0] for layer, w in zip(LAYERS, where, strict=True) if w == -1]
    assert where == sorted(where)
