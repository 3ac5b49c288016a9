"""The max-influence result (:class:`Influence`) and how it is shown to people."""

from __future__ import annotations

import math
from dataclasses import dataclass

from quiltpriv.inference.methods import FLOAT64
from quiltpriv.inference.rounding import ROUNDING_MARGIN
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.validation import check_scalar


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class Influence:
    """A max-influence value with the member of Theta and the pair that attain it.

    Parameters
    ----------
    sensitive : str
        The sensitive attribute ``i`` (``node`` is its deprecated name).
    quilt : tuple of str
        The quilt ``Q``.
    value : float
        ``e_Theta(Q | i)`` [ZOC22, Def. 8], rounded up.
    member : int or None
        The member of Theta that attains it.
    pair : (state, state) or None
        The two values of ``phi_i`` that attain it.
    bound_via : tuple of str, optional
        None when exact; else the separator whose exact influence bounds this one.
    arithmetic : {"float64", "exact"}
        How the joints were computed.
    engine : str or None
        The engine(s) that answered (``engine=`` of :func:`~quiltpriv.max_influence`); None
        for an empty quilt.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> influence = qp.max_influence(qp.load_model("chain"), "x01", ["x07"])
    >>> round(influence.value, 6), influence.pair, influence.exact
    (0.336478, ('0.2', '0.5'), True)
    >>> qp.max_influence(qp.load_model("chain"), "x01", ["x07"], engine="exact").engine
    'exact'
    """

    sensitive: str
    quilt: tuple[str, ...]
    value: float
    member: int | None
    pair: tuple[object, object] | None
    bound_via: tuple[str, ...] | None = None
    """``None`` when exact; else the separator ``S`` whose exact influence bounds this one."""
    arithmetic: str = FLOAT64
    """``"float64"``, or ``"exact"`` when some member's joint was computed in exact integer
    arithmetic: the model's probabilities are too small for float64 (an intermediate could
    underflow), or float64 found the conditionals equal and exactness had to decide."""
    engine: str | None = None
    """The engine(s) that answered (:mod:`quiltpriv.inference.engines.base`), in member order
    and comma-separated when members differ: ``"kernel"``, ``"python"``, ``"elimination"``,
    ``"junction_tree"``, ``"exact"``, ``"cutset+kernel"``, ``"cutset+python"`` or
    ``"junction_tree_batched"``; None when nothing was computed (an empty quilt)."""

    @property
    def exact(self) -> bool:
        return self.bound_via is None

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import influence_html  # a presentation hook

        return influence_html(self)


def fmt_influence(value: float) -> str:
    """An influence for people: ``0 (+1e-10 rounding margin)`` for a quilt found independent.

    Every computed influence is raised by :data:`ROUNDING_MARGIN` (module docstring), so an
    influence computed as exactly 0 is stored and used as the margin itself; a person reading
    ``1e-10`` would look for a dependence that is not there. The value used for calibration is
    unchanged: only its text says what it is.
    """
    from quiltpriv.utils.format import fmt_number

    if not (isinstance(value, float) and value == math.inf):  # inf: no quilt keeps i apart
        value = check_scalar(value, "influence", min_val=0.0)
    if value == ROUNDING_MARGIN:
        return f"0 (+{_fmt(ROUNDING_MARGIN)} rounding margin)"
    return fmt_number(value)


def __getattr__(name: str) -> object:
    # The Jupyter view moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"influence_html": "quiltpriv.reporting.notebook"}, name)
