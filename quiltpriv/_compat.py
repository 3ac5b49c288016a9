"""Old module paths of quiltpriv 0.1's flat layout, kept until :data:`REMOVED_IN` with a warning.

quiltpriv 0.1 had one flat package (``quiltpriv.mechanisms``, ``quiltpriv.influence``, ...).
Its modules now live in subpackages by role. ``import quiltpriv.influence`` still works: a
finder on ``sys.meta_path`` maps the old name to the module's new home, returns that very
module (so monkeypatching and ``isinstance`` see one object) and emits a
:class:`DeprecationWarning` naming the new path. Three old modules share their name with a new
subpackage (``mechanisms``, ``gap``, ``audit``): those subpackages forward the old module's
names, with the same warning, through :func:`forward_attribute`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from pathlib import Path
from types import ModuleType

#: The release that removes every old path and old name this module forwards (the changelog's
#: "Deprecated" section says so too; a test fails once the package's version reaches it).
REMOVED_IN = "0.3.0"

#: Old module path -> new module path (both relative to ``quiltpriv``).
MOVED: dict[str, str] = {
    "_validation": "utils.validation", "_io": "utils.io", "_progress": "utils.progress",
    "network": "model.network", "readers": "model.readers", "loading": "model.loading",
    "builder": "model.builder", "learning": "model.learning", "provenance": "model.provenance",
    "datasets": "model.datasets",
    "quilts": "graph.quilts",
    "influence": "inference.influence", "junction_tree": "inference.junction_tree",
    "sensitivity": "queries.query", "predicate": "queries.predicate",
    "network_laws": "queries.network_laws", "law_bounds": "queries.law_bounds",
    "markov_quilt_mechanism": "mechanisms.mqm", "gaussian_mechanism": "mechanisms.apgm",
    "wasserstein": "mechanisms.wasserstein", "group_privacy": "mechanisms.group_dp",
    "noise": "mechanisms.noise", "compare": "mechanisms.compare",
    "verification": "mechanisms.verification",
    "distribution_privacy": "distribution.distribution_privacy",
    "local_distribution_privacy": "distribution.local_distribution_privacy",
    "tupling": "distribution.tupling", "property_model": "distribution.property_model",
    "gap_learning": "gap.learning",
    "gaussian_audit": "audit.gaussian", "joint_audit": "audit.joint",
    "adversary": "audit.adversary",
    "records": "releases.records", "ledger": "releases.ledger",
    "report": "reporting.report", "drawing": "reporting.drawing", "plots": "reporting.plots",
    "_cli_core": "cli.core",
    # moved in 0.2.0 (issue 32: presentation out of the model layer)
    "model.drawing": "reporting.drawing",
    # moved in 0.2.0 (issue 32: no top-level module but the package's own)
    "distances": "utils.distances", "subset_privacy": "mechanisms.subset_privacy",
    "queries.options": "frontend.options",
}

#: Files whose frames a deprecation warning skips (this module, the package and the forwarding
#: subpackages).
_FORWARDING_FILES: set[str] = set()

#: Old modules whose name is now a subpackage: subpackage -> the module that holds their names.
RENAMED_IN_PLACE: dict[str, str] = {
    "mechanisms": "mechanisms.apmqm", "gap": "gap.privatizers", "audit": "audit.exact",
}

#: Names of an old module that now live in another module than :data:`RENAMED_IN_PLACE`'s.
MOVED_NAMES: dict[str, dict[str, str]] = {
    "mechanisms": {"Release": "mechanisms.apmqm_release", "release": "mechanisms.apmqm_release"},
}


def _forwarding(filename: str) -> bool:
    """Whether a frame of ``filename`` is forwarding code a deprecation warning steps over."""
    return filename in _FORWARDING_FILES


def _stacklevel() -> int:
    """The level naming the first frame above the caller outside the forwarding code
    (:func:`quiltpriv.utils.stack.caller_stacklevel`; imported here: ``import quiltpriv``
    loads nothing beyond this module)."""
    from quiltpriv._frames import caller_stacklevel

    return caller_stacklevel(_forwarding, frame=sys._getframe(1))


def _warn(old: str, new: str) -> None:
    warnings.warn(f"quiltpriv.{old} moved to quiltpriv.{new}; the old path will be removed in "
                  f"quiltpriv {REMOVED_IN}", DeprecationWarning, stacklevel=_stacklevel())


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``quiltpriv.<old>`` to the module now at ``quiltpriv.<new>``."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        prefix, _, old = fullname.partition(".")
        if prefix != "quiltpriv" or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        old = spec.name.partition(".")[2]
        _warn(old, MOVED[old])
        module = importlib.import_module(f"quiltpriv.{MOVED[old]}")
        # The import system stamps the alias's spec on the module it gets back; the alias
        # spec carries the real one, put back by exec_module, so that the module still knows
        # its own (new) name (per spec, not on this shared finder: imports may run in threads).
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__
        if alias is not None and alias.loader_state is not None:
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    package_init = str(Path(__file__).with_name("__init__.py"))  # quiltpriv/__init__.py
    _FORWARDING_FILES.update({__file__, package_init, importlib.__file__ or ""})
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())


def forward_attribute(package: str, submodules: frozenset[str], name: str) -> object:
    """A name of the old flat module that a subpackage replaced, with a deprecation warning.

    Parameters
    ----------
    package : str
        The subpackage (``"quiltpriv.mechanisms"``).
    submodules : frozenset of str
        Its submodules: those names are never forwarded, so ``from quiltpriv.mechanisms
        import noise`` imports the submodule.
    name : str
        The attribute asked for.
    """
    _FORWARDING_FILES.add(sys.modules[package].__file__ or "")
    old = package.partition(".")[2]
    if name in submodules or name.startswith("__"):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    new = MOVED_NAMES.get(old, {}).get(name, RENAMED_IN_PLACE[old])
    target = importlib.import_module(f"quiltpriv.{new}")
    try:
        value = getattr(target, name)
    except AttributeError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    _warn(f"{old}.{name}", f"{new}.{name}")
    return value


def renamed_attribute(module: str, renamed: dict[str, tuple[str, str]], name: str) -> object:
    """A class of ``module`` under the name it had before, with a deprecation warning.

    Parameters
    ----------
    module : str
        The module (``"quiltpriv.subset_privacy"``).
    renamed : dict of str to (str, str)
        Old name -> (its new name in the same module, why it was renamed).
    name : str
        The attribute asked for.
    """
    if name not in renamed:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    _FORWARDING_FILES.add(sys.modules[module].__file__ or "")
    new, why = renamed[name]
    warnings.warn(f"{module}.{name} is renamed {new} ({why}); the old name will be removed in "
                  f"quiltpriv {REMOVED_IN}",
                  DeprecationWarning, stacklevel=_stacklevel())
    return getattr(sys.modules[module], new)


def moved_attribute(module: str, moved: dict[str, str], name: str) -> object:
    """A public name that moved out of ``module`` (for its ``__getattr__``), with a warning.

    Parameters
    ----------
    module : str
        The module that used to define it (``"quiltpriv.distribution.tupling"``).
    moved : dict of str to str
        Moved name -> the module that defines it now.
    name : str
        The attribute asked for.
    """
    if name not in moved:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    _FORWARDING_FILES.add(sys.modules[module].__file__ or "")
    new = moved[name]
    _warn(f"{module.partition('.')[2]}.{name}", f"{new.partition('.')[2]}.{name}")
    return getattr(importlib.import_module(new), name)
