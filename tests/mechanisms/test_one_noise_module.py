"""Every release goes through one noise module (quiltpriv.mechanisms.noise).

This test walks the package's source (ast) and fails on any use of a random generator outside
``quiltpriv/mechanisms/noise.py``: calls into ``random``, ``secrets``, ``numpy.random`` or
``os.urandom``, and generator-style method calls (``rng.random()``, ``.choice``,
``.randrange``, ``.integers``, ``.normal``, ...) on anything but the noise module. Randomness
that is not a release is allowed only where listed below, per function, with the reason; an
entry that no longer matches anything fails too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
from pathlib import Path

import quiltpriv

PACKAGE = Path(quiltpriv.__file__).parent
NOISE_MODULE = "mechanisms/noise.py"

#: Modules whose calls are randomness: ``random.x(...)``, ``secrets.x(...)``, ...
RANDOM_MODULES = {"random", "secrets"}
#: ``np.random.x`` / ``numpy.random.x`` and ``os.urandom``.
NUMPY_NAMES = {"np", "numpy"}
#: Method names of random generators (stdlib ``random.Random``, numpy ``Generator``,
#: scipy ``rvs``, pandas ``sample``).
GENERATOR_METHODS = {
    "random", "choice", "choices", "randrange", "randint", "shuffle", "integers", "normal",
    "standard_normal", "laplace", "uniform", "getrandbits", "randbits", "permutation",
    "exponential", "gauss", "normalvariate", "binomial", "multinomial", "poisson", "geometric",
    "sample", "rvs", "default_rng", "token_hex", "token_urlsafe", "token_bytes", "urandom",
}
#: Receivers whose methods are the noise module's own API.
NOISE_RECEIVERS = {"noise"}

#: (module path, enclosing function, what is called): randomness that is NOT a release.
#: Keep this minimal; every entry says why it cannot leak a private value.
ALLOWED = {
    # Model learning: bootstrap resampling of the user's own records to give a learned
    # network's CPTs uncertainty intervals; it builds the (public) model, releases nothing.
    ("model/learning.py", "_bootstrap_members", "np.random.default_rng"),
    ("model/learning.py", "_bootstrap_members", "rng.integers"),
    # Model diagnostics: within-population permutations of the user's own records estimate the
    # G-test's null law (seeded, reproducible; nothing is released, no noise is drawn).
    ("model/diagnostics.py", "record_diagnostics", "np.random.default_rng"),
    ("model/diagnostics.py", "_g_test", "rng.random"),
    # GAP [HKCSR17]: privatizer training (minibatches, the privatizer's own simulated noise)
    # and synthetic data for experiments; the package releases nothing with a GAP privatizer
    # (no epsilon guarantee), see docs/noise.md.
    ("gap/learning.py", "_resolve_seed", "secrets.randbits"),
    ("gap/learning.py", "sample_binary", "np.random.default_rng"),
    ("gap/learning.py", "sample_binary", "rng.choice"),
    ("gap/learning.py", "sample_gaussian", "np.random.default_rng"),
    ("gap/learning.py", "sample_gaussian", "rng.random"),
    ("gap/learning.py", "sample_gaussian", "rng.standard_normal"),
    ("gap/learning.py", "learn_binary_privatizer", "np.random.default_rng"),
    ("gap/learning.py", "learn_binary_privatizer", "rng.integers"),
    ("gap/learning.py", "learn_gaussian_privatizer", "np.random.default_rng"),
    ("gap/learning.py", "learn_gaussian_privatizer", "rng.integers"),
    ("gap/learning.py", "learn_gaussian_privatizer", "rng.standard_normal"),
    # Distribution privacy's property model [CO23, App. C.1]: resampling subsets of a public
    # data set to estimate the moments of F under each proportion (an experiment's input).
    ("distribution/property_model.py", "estimate_property_model", "np.random.default_rng"),
    ("distribution/property_model.py", "estimate_property_model", "rng.choice"),
    # The explorer's session token and job ids: access control, not data.
    ("explorer/server.py", "__init__", "secrets.token_urlsafe"),
    ("explorer/jobs.py", "__init__", "secrets.token_hex"),
    # The noise module's own generator (make_rng) is the only release source.
}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> module for ``import random``, ``import numpy as np``, ... anywhere."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name
    return out


def _is_random_call(call: ast.Call, modules: dict[str, str]) -> str | None:
    """The call's dotted name if it draws randomness, else None."""
    func = call.func
    name = _dotted(func)
    if name is not None:
        head = name.split(".")
        module = modules.get(head[0])  # None: a local variable (e.g. a dict named secrets)
        if module in RANDOM_MODULES and len(head) > 1:
            return name
        if module in NUMPY_NAMES | {"numpy.random"} and len(head) > 2 and head[1] == "random":
            return ".".join(head[:2] + [head[-1]])
        if module == "os" and head[-1] == "urandom":
            return name
    if isinstance(func, ast.Attribute) and func.attr in GENERATOR_METHODS:
        receiver = _dotted(func.value)
        if receiver in NOISE_RECEIVERS:
            return None
        if receiver is None:
            receiver = "<expr>"
        return f"{receiver.split('.')[-1]}.{func.attr}"
    if isinstance(func, ast.Name) and func.id in GENERATOR_METHODS:
        return func.id  # e.g. ``from random import choice``
    return None


def _uses(path: Path) -> list[tuple[str, str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules = _module_aliases(tree)
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Call):
                what = _is_random_call(child, modules)
                if what is not None:
                    found.append((function, what, child.lineno))
            if isinstance(child, ast.ImportFrom) and child.module in (
                    "random", "secrets", "numpy.random"):
                for alias in child.names:
                    if alias.name not in ("Random", "SystemRandom"):  # types, for annotations
                        found.append((function, f"from {child.module} import {alias.name}",
                                      child.lineno))
            visit(child, function)

    visit(tree, "<module>")
    return found


def _all_uses():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == NOISE_MODULE:
            continue
        for function, what, line in _uses(path):
            yield rel, function, what, line


def test_no_randomness_outside_the_noise_module_except_the_allow_list():
    offending = [f"quiltpriv/{rel}:{line} in {function}(): {what}"
                 for rel, function, what, line in _all_uses()
                 if (rel, function, what) not in ALLOWED]
    assert not offending, ("randomness outside quiltpriv/mechanisms/noise.py (a release must "
                           "draw through the noise module; non-release randomness needs an "
                           "allow-list entry with its reason):\n" + "\n".join(offending))


def test_every_allow_list_entry_is_still_used():
    used = {(rel, function, what) for rel, function, what, _ in _all_uses()}
    assert not ALLOWED - used, f"stale allow-list entries: {sorted(ALLOWED - used)}"


def test_the_walker_catches_each_kind_of_use(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import random, secrets, os\n"
        "secrets_of = {}\n"
        "import numpy as np\n"
        "from random import choice\n"
        "def f(rng, x):\n"
        "    a = random.random()\n"
        "    b = np.random.default_rng(0).laplace(0, 1)\n"
        "    c = rng.random() * x\n"
        "    d = secrets.randbelow(3)\n"
        "    e = os.urandom(4)\n"
        "    g = rng.randrange(5)\n"
        "    h = noise.laplace(1.0)\n"  # the noise module: allowed
        "    s = {'a': 1}.items(); t = secrets_of.items()\n"  # not randomness
        "    return np.cumsum([a, b, c, d, g, h])\n")
    whats = sorted(w for _, w, _ in _uses(src))
    assert whats == sorted(["from random import choice", "random.random", "np.random.default_rng",
                            "<expr>.laplace", "rng.random", "secrets.randbelow", "os.urandom",
                            "rng.randrange"])
