"""quiltpriv: attribute privacy with Markov quilts over attribute hyperparameter networks.

Quick start::

    import quiltpriv as qp
    theta = qp.load_model("student")
    plan = qp.plan(theta, qp.CountQuery(["height"], records=1000), "income", epsilon=1.0)
    print(plan)                      # quilt chosen per sensitive attribute, and why
    rel = qp.release(plan, query, df)   # F(X) + exact discrete Laplace noise (secure)
"""

from .builder import NetworkBuilder
from .errors import (
    DataError,
    ModelError,
    ParameterError,
    ParameterStatesWarning,
    PlanError,
    QueryError,
    QuiltPrivError,
    QuiltPrivWarning,
)
from .influence import Influence, InfluenceTooExpensive, joint_marginal, max_influence
from .learning import discretise, learn_theta, population_parameters
from .loading import (
    bundled_models,
    bundled_network,
    load_model,
    load_theta,
    theta_to_dict,
)
from .mechanisms import Plan, Release, SensitivePlan, plan, release
from .network import Theta, theta_from_pgmpy, theta_from_tables
from .predicate import Predicate, parse_predicate
from .quilts import Quilt, enumerate_quilts, least_influence_quilt, markov_quilt, trivial_quilt
from .sensitivity import (
    CountQuery,
    CustomQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    Query,
    SumQuery,
)
from .verification import PlanVerification, check_plan, verify_plan

__version__ = "0.1.0"

__all__ = [
    "CountQuery", "CustomQuery", "DataError", "HistogramQuery", "Influence",
    "InfluenceTooExpensive", "LinearQuery", "MeanQuery", "ModelError", "NetworkBuilder",
    "ParameterError", "ParameterStatesWarning", "Plan", "PlanError", "PlanVerification",
    "Predicate", "Query", "QueryError", "Quilt", "QuiltPrivError", "QuiltPrivWarning", "Release",
    "SensitivePlan", "SumQuery", "Theta", "bundled_models", "bundled_network", "check_plan",
    "discretise", "enumerate_quilts", "joint_marginal", "learn_theta", "least_influence_quilt",
    "load_model", "load_theta", "markov_quilt", "max_influence", "parse_predicate", "plan",
    "population_parameters", "release", "theta_from_pgmpy", "theta_from_tables",
    "theta_to_dict", "trivial_quilt", "verify_plan",
]
