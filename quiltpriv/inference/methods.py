"""The names of the ways to compute a joint marginal, and of the arithmetic that computed an
influence."""

from __future__ import annotations

from typing import Literal

from quiltpriv.errors import ParameterError

#: Arithmetic that computed an influence (``Influence.arithmetic``).
FLOAT64 = "float64"
EXACT = "exact"

#: Ways to compute a joint marginal (see :func:`joint_marginal`).
InferenceMethod = Literal["auto", "junction_tree", "elimination"]
INFERENCE_METHODS: tuple[InferenceMethod, ...] = ("auto", "junction_tree", "elimination")


def check_inference(inference: object) -> InferenceMethod:
    """``inference`` if it names a method of :data:`INFERENCE_METHODS`, else ParameterError.

    ``inference`` is untrusted (any object): this is the check that makes it a method name.
    """
    for method in INFERENCE_METHODS:
        if inference == method:
            return method
    raise ParameterError(f"inference must be one of {', '.join(INFERENCE_METHODS)}; "
                         f"got {inference!r}")
