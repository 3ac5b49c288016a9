"""quiltpriv 0.1's flat module paths still import, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import quiltpriv
from quiltpriv._compat import MOVED, RENAMED_IN_PLACE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _forget_old_paths():
    """Leave the package as a program that never used an old path sees it (other tests list
    ``dir(quiltpriv)``)."""
    yield
    for old in MOVED:
        sys.modules.pop(f"quiltpriv.{old}", None)
        parent, _, name = f"quiltpriv.{old}".rpartition(".")
        if parent in sys.modules:
            sys.modules[parent].__dict__.pop(name, None)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_module_path_is_the_new_module_with_a_warning(old):
    new = importlib.import_module(f"quiltpriv.{MOVED[old]}")
    sys.modules.pop(f"quiltpriv.{old}", None)  # a fresh alias import, as in a new program
    with pytest.warns(DeprecationWarning, match=rf"quiltpriv\.{old} moved to "
                                                rf"quiltpriv\.{MOVED[old]};") as caught:
        alias = importlib.import_module(f"quiltpriv.{old}")
    assert alias is new  # one module object: monkeypatching and isinstance see the same thing
    assert alias.__name__ == alias.__spec__.name == f"quiltpriv.{MOVED[old]}"
    assert caught[0].filename == __file__  # the warning points at the importing line


def test_old_attribute_access_and_from_imports_resolve(recwarn):
    warnings.simplefilter("always")
    for old in ("sensitivity", "influence"):  # as in a program that has not imported them yet
        sys.modules.pop(f"quiltpriv.{old}", None)
        quiltpriv.__dict__.pop(old, None)
    from quiltpriv.sensitivity import CountQuery  # noqa: F401  (old path)

    assert CountQuery is quiltpriv.CountQuery
    assert quiltpriv.influence.max_influence is quiltpriv.max_influence
    messages = [str(w.message) for w in recwarn if w.category is DeprecationWarning]
    assert any("quiltpriv.sensitivity moved to quiltpriv.queries.query" in m for m in messages)
    assert any("quiltpriv.influence moved to quiltpriv.inference.influence" in m
               for m in messages)


@pytest.mark.parametrize(("package", "name"), [("mechanisms", "plan"), ("mechanisms", "release"),
                                               ("gap", "BinaryModel"), ("audit", "audit_plan")])
def test_names_of_the_old_flat_modules_forward_from_their_subpackage(package, name):
    with pytest.warns(DeprecationWarning, match=rf"quiltpriv\.{package}\.{name} moved to"):
        value = getattr(importlib.import_module(f"quiltpriv.{package}"), name)
    assert value is not None and package in RENAMED_IN_PLACE


def test_subpackage_submodules_are_never_forwarded():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation on the new paths
        from quiltpriv.mechanisms import noise

    assert noise.__name__ == "quiltpriv.mechanisms.noise"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        quiltpriv.mechanisms.nope  # noqa: B018


def test_the_new_paths_import_without_any_warning():
    code = ("import warnings; warnings.simplefilter('error')\n"
            "import pkgutil, importlib, quiltpriv\n"
            "for m in pkgutil.walk_packages(quiltpriv.__path__, 'quiltpriv.'):\n"
            "    if m.name.split('.')[1] in ('explorer',) or m.name.endswith('__main__'):\n"
            "        continue\n"
            "    importlib.import_module(m.name)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_old_paths_go_in_the_release_the_changelog_names():
    # The deprecation names its removal release; once the package reaches it, this fails until
    # the forwarding layer (quiltpriv._compat and its callers) is deleted.
    from quiltpriv._compat import REMOVED_IN

    def parts(v):
        return tuple(int(x) for x in v.split(".")[:3])

    assert parts(quiltpriv.__version__) < parts(REMOVED_IN)
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"removed in {REMOVED_IN}" in changelog
    sys.modules.pop("quiltpriv.influence", None)
    with pytest.warns(DeprecationWarning, match=rf"removed in quiltpriv {REMOVED_IN}"):
        importlib.import_module("quiltpriv.influence")


#: Names moved out of a module that still defines ``__getattr__`` for them: old module, name,
#: new module (issue 32: every Jupyter view moved to the reporting layer).
MOVED_ATTRIBUTES = [
    ("quiltpriv.model.network", "theta_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.graph.quilts", "quilt_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.compare", "comparison_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.apmqm_release", "release_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.apmqm", "plan_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.apmqm", "sensitive_plan_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.apmqm.plan_types", "plan_html", "quiltpriv.reporting.notebook"),
    ("quiltpriv.mechanisms.apmqm.sensitive_plan", "sensitive_plan_html",
     "quiltpriv.reporting.notebook"),
    ("quiltpriv.inference.result", "influence_html", "quiltpriv.reporting.notebook"),
    # issue 32: the Wasserstein mechanism on a network's count laws is a mechanism
    ("quiltpriv.queries.network_laws", "network_wasserstein",
     "quiltpriv.mechanisms.network_wasserstein"),
    ("quiltpriv.queries.network_laws", "NetworkWassersteinResult",
     "quiltpriv.mechanisms.network_wasserstein"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED_ATTRIBUTES)
def test_every_moved_name_still_imports_from_its_old_module_with_a_warning(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new}\.{name};"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new path warns of nothing
        assert getattr(importlib.import_module(new), name) is value


#: Module constants that became EngineSettings fields (issue 32: tuning thresholds are
#: documented settings, not module constants patched by tests): module, name, field, value.
SETTINGS_CONSTANTS = [
    ("quiltpriv.mechanisms.apmqm", "SHARED_WORK_RATIO", "shared_work_ratio", 100),
    ("quiltpriv.mechanisms.apmqm", "SHARED_MIN_SENSITIVE", "shared_min_sensitive", 256),
    ("quiltpriv.mechanisms.apmqm", "SHARED_MAX_ATTRIBUTES", "shared_max_attributes", 16),
    ("quiltpriv.mechanisms.apmqm", "SHARED_PRICE_SAMPLE", "shared_price_sample", 8),
    ("quiltpriv.mechanisms.apmqm.shared", "SHARED_WORK_RATIO", "shared_work_ratio", 100),
    ("quiltpriv.inference.attribute_joints", "DEFAULT_MAX_WORK", "max_propagation_work",
     2**32),
    ("quiltpriv.inference.attribute_joints", "DEFAULT_MAX_HELD", "max_propagation_held",
     2**27),
]


@pytest.mark.parametrize(("module", "name", "field", "value"), SETTINGS_CONSTANTS)
def test_every_constant_that_became_a_setting_reads_with_a_warning(module, name, field, value):
    from quiltpriv.inference.engines.base import DEFAULT_SETTINGS

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning,
                      match=rf"{module}\.{name} is deprecated: the code reads "
                            rf"EngineSettings\.{field}") as caught:
        got = getattr(mod, name)
    assert got == value
    assert caught[0].filename == __file__  # the warning names the reading line
    if field != "max_propagation_held":  # its default is the memory budget (None)
        assert getattr(DEFAULT_SETTINGS, field) == value
    assert name in vars(importlib.import_module(module)).get("__all__", [name])
    with pytest.raises(AttributeError):
        getattr(mod, name + "_NOT_A_NAME")
