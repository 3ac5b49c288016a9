"""Distribution privacy: the mechanisms of [CO23] (Wasserstein, ExpM, DirM, EigM, DauM:
``distribution_privacy``, their results: ``results``; Gaussian models of the property from
data: ``property_model``) and
local distribution privacy [KM19] (DistP, XDistP, PDistP of local mechanisms:
``local_distribution_privacy``; the tupling mechanism: ``tupling``; location obfuscation on a
grid: ``location``); their compositions and interpretation
([KM19, Table III, Sec. III-E/F]: :mod:`quiltpriv.distribution.composition`) and the vector
forms of the [CO23] Wasserstein and directional mechanisms
(:mod:`quiltpriv.distribution.vector_mechanisms`).
"""

from quiltpriv.distribution.composition import (
    BayesFactorBound,
    DistPGuarantee,
    bayes_factor_bound,
    close_beliefs_bound,
    close_beliefs_xdistp,
    compose_independent_inputs,
    compose_same_input,
    independent_inputs_mechanism,
    post_process,
    pre_process,
    product_distribution,
    same_input_mechanism,
)
from quiltpriv.distribution.vector_mechanisms import (
    DirectionsLaplaceResult,
    approximate_wasserstein_mechanism,
    closeness,
    dirm_gaussian_directions,
    dirm_laplace_directions,
    l1_cost_matrix,
    wasserstein_inf_l1,
    wasserstein_mechanism,
)

__all__ = [
    "BayesFactorBound",
    "DistPGuarantee",
    "bayes_factor_bound",
    "close_beliefs_bound",
    "close_beliefs_xdistp",
    "compose_independent_inputs",
    "compose_same_input",
    "independent_inputs_mechanism",
    "post_process",
    "pre_process",
    "product_distribution",
    "same_input_mechanism",
    "DirectionsLaplaceResult",
    "approximate_wasserstein_mechanism",
    "closeness",
    "dirm_gaussian_directions",
    "dirm_laplace_directions",
    "l1_cost_matrix",
    "wasserstein_inf_l1",
    "wasserstein_mechanism",
]
