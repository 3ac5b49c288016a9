"""Distribution privacy: the mechanisms of [CO23] (Wasserstein, Gaussian, property models) and
local distribution privacy with tupling [KM19].
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
]
