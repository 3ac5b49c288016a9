"""quiltpriv: attribute privacy with Markov quilts over attribute hyperparameter networks.

Quick start::

    import pandas as pd
    import quiltpriv as qp

    theta = qp.load_model("student")
    query = qp.CountQuery(["height", "sat"], records=1000, where="height > 66 and sat > 1300")
    plan = qp.plan(theta, query, "income", epsilon=1.0)
    print(plan)                      # quilt chosen per sensitive attribute, and why
    data = pd.DataFrame({"height": [58 + k % 20 for k in range(1000)],   # 1,000 students
                         "sat": [400 + 7 * k % 1200 for k in range(1000)]})
    rel = qp.release(plan, query, data)   # F(X) + exact discrete Laplace noise (secure)

The names below are imported on first use (PEP 562), so ``import quiltpriv`` (and the command
line's start-up) loads no module a program does not use.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING

from quiltpriv.errors import (
    DataError,
    ModelError,
    ParameterError,
    ParameterStatesWarning,
    PlanError,
    QueryError,
    QuiltPrivError,
    QuiltPrivWarning,
    SearchStoppedWarning,
)

from . import _compat
from ._version import __version__ as __version__

#: Public name -> the submodule that defines it; imported on first attribute access.
_EXPORTS = {
    **dict.fromkeys(["Influence", "InfluenceTooExpensive", "joint_marginal", "max_influence"],
                    "inference.influence"),
    **dict.fromkeys(["bundled_models", "bundled_network", "load_model", "load_theta",
                     "theta_to_dict"], "model.loading"),
    **dict.fromkeys(["Plan", "SensitivePlan", "plan"], "mechanisms.apmqm"),
    **dict.fromkeys(["Release", "release"], "mechanisms.apmqm_release"),
    **dict.fromkeys(["Theta", "theta_from_pgmpy", "theta_from_tables"], "model.network"),
    **dict.fromkeys(["Predicate", "parse_predicate"], "queries.predicate"),
    **dict.fromkeys(["Quilt", "enumerate_quilts", "least_influence_quilt", "markov_quilt",
                     "trivial_quilt"], "graph.quilts"),
    **dict.fromkeys(["CountQuery", "CustomQuery", "HistogramQuery", "LinearQuery", "MeanQuery",
                     "Query", "SumQuery"], "queries.query"),
    "NetworkBuilder": "model.builder",
    "FractionQuery": "queries.fraction",
    **dict.fromkeys(["ShareOf", "share_of"], "queries.share_of"),
    **dict.fromkeys(["hidden_markov", "markov_chain"], "model.time_series"),
    **dict.fromkeys(["discretise", "learn_theta", "population_parameters"], "model.learning"),
    **dict.fromkeys(["PlanVerification", "check_plan", "verify_plan"], "mechanisms.verification"),
}

#: The subpackages, one per role; ``quiltpriv.<name>`` imports one on first use.
_SUBMODULES = ("audit", "cli", "distribution", "errors", "explorer", "frontend", "gap", "graph",
               "inference", "mechanisms", "model", "queries", "releases", "reporting", "utils")

_compat.install()  # quiltpriv 0.1's flat module paths, for one release, with a warning

__all__ = [
    "CountQuery", "CustomQuery", "DataError", "FractionQuery", "HistogramQuery", "Influence",
    "InfluenceTooExpensive", "LinearQuery", "MeanQuery", "ModelError", "NetworkBuilder",
    "ParameterError", "ParameterStatesWarning", "Plan", "PlanError", "PlanVerification",
    "Predicate", "Query", "QueryError", "Quilt", "QuiltPrivError", "QuiltPrivWarning", "Release",
    "SearchStoppedWarning",
    "SensitivePlan", "ShareOf", "SumQuery", "Theta", "bundled_models", "bundled_network",
    "check_plan",
    "discretise", "enumerate_quilts", "hidden_markov", "joint_marginal", "learn_theta",
    "least_influence_quilt", "load_model", "load_theta", "markov_chain", "markov_quilt",
    "max_influence", "parse_predicate", "plan",
    "population_parameters", "release", "share_of", "theta_from_pgmpy", "theta_from_tables",
    "theta_to_dict", "trivial_quilt", "verify_plan",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(_importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBMODULES or name in _compat.MOVED:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Module-level helpers of this file, left out of ``dir(quiltpriv)``.
_HIDDEN = frozenset({"_compat", "_importlib", "_TYPE_CHECKING", "_EXPORTS", "_SUBMODULES",
                     "_HIDDEN", "_version",
                     "__getattr__", "__dir__"})


def __dir__() -> list[str]:
    return sorted((set(globals()) - _HIDDEN) | set(_EXPORTS) | set(_SUBMODULES))


if _TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from quiltpriv.graph.quilts import (
        Quilt,
        enumerate_quilts,
        least_influence_quilt,
        markov_quilt,
        trivial_quilt,
    )
    from quiltpriv.inference.influence import (
        Influence,
        InfluenceTooExpensive,
        joint_marginal,
        max_influence,
    )
    from quiltpriv.mechanisms.apmqm import Plan, SensitivePlan, plan
    from quiltpriv.mechanisms.apmqm_release import Release, release
    from quiltpriv.mechanisms.verification import PlanVerification, check_plan, verify_plan
    from quiltpriv.model.builder import NetworkBuilder
    from quiltpriv.model.learning import discretise, learn_theta, population_parameters
    from quiltpriv.model.loading import (
        bundled_models,
        bundled_network,
        load_model,
        load_theta,
        theta_to_dict,
    )
    from quiltpriv.model.network import Theta, theta_from_pgmpy, theta_from_tables
    from quiltpriv.model.time_series import hidden_markov, markov_chain
    from quiltpriv.queries.fraction import FractionQuery
    from quiltpriv.queries.predicate import Predicate, parse_predicate
    from quiltpriv.queries.query import (
        CountQuery,
        CustomQuery,
        HistogramQuery,
        LinearQuery,
        MeanQuery,
        Query,
        SumQuery,
    )
    from quiltpriv.queries.share_of import ShareOf, share_of
