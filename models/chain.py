"""A Markov chain: one attribute observed over time (the original Markov Quilt setting).

``x01 -> x02 -> ... -> xT``: phi_t is the attribute's parameter (e.g. the share of active users)
in period t, taking values {0.2, 0.5, 0.8}. Each period keeps the previous value with
probability ``stay`` and otherwise moves to one of the others uniformly, so dependence decays
with distance: quilts far from the sensitive period have small max-influence. This is the
setting in which Song, Wang and Chaudhuri's Markov Quilt Mechanism shines, here with
hyperparameters as nodes.

The tables are declared with :class:`quiltpriv.NetworkBuilder`, so loading the model does not
import pgmpy; ``network()`` gives the same chain as a pgmpy ``DiscreteBayesianNetwork``.
"""

from __future__ import annotations

from typing import Any

from quiltpriv.model.builder import NetworkBuilder
from quiltpriv.model.network import Theta

STATES = ["0.2", "0.5", "0.8"]


def _builder(length: int, stay: float) -> NetworkBuilder:
    if length < 2:
        raise ValueError("a chain needs at least two periods")
    if not 0 < stay < 1:
        raise ValueError("stay must be in (0, 1)")
    names = [f"x{t:02d}" for t in range(1, length + 1)]
    b = NetworkBuilder(f"chain{length}")
    for v in names:
        b.attribute(v, STATES, kind="share")
    move = (1 - stay) / 2
    b.table(names[0], [1 / 3] * 3)
    for prev, cur in zip(names[:-1], names[1:], strict=True):
        b.edge(prev, cur)
        # Given the previous value s, keep it with probability stay, else move uniformly.
        b.table(cur, {s: [stay if r == s else move for r in STATES] for s in STATES})
    return b


def chain(length: int = 12, stay: float = 0.8) -> Theta:
    """A chain of ``length`` periods with persistence ``stay`` (in [1/3, 1))."""
    # A bundled example: no provenance record, as for a model read from a file.
    return _builder(length, stay).to_theta().with_provenance(None)


def model() -> Theta:
    """The default chain: 12 periods, persistence 0.8."""
    return chain()


def network(length: int = 12, stay: float = 0.8) -> Any:
    """:func:`chain` as a pgmpy ``DiscreteBayesianNetwork`` (imports pgmpy)."""
    return _builder(length, stay).to_pgmpy()
