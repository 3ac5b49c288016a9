"""A Markov chain: one attribute observed over time (the original Markov Quilt setting).

``x01 -> x02 -> ... -> xT``: phi_t is the attribute's parameter (e.g. the share of active users)
in period t, taking values {0.2, 0.5, 0.8}. Each period keeps the previous value with
probability ``stay`` and otherwise moves to one of the others uniformly, so dependence decays
with distance: quilts far from the sensitive period have small max-influence. This is the
setting in which Song, Wang and Chaudhuri's Markov Quilt Mechanism shines, here with
hyperparameters as nodes.
"""

from __future__ import annotations

from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork

STATES = ["0.2", "0.5", "0.8"]


def chain(length: int = 12, stay: float = 0.8) -> DiscreteBayesianNetwork:
    """A chain of ``length`` periods with persistence ``stay`` (in [1/3, 1))."""
    if length < 2:
        raise ValueError("a chain needs at least two periods")
    if not 0 < stay < 1:
        raise ValueError("stay must be in (0, 1)")
    names = [f"x{t:02d}" for t in range(1, length + 1)]
    net = DiscreteBayesianNetwork(list(zip(names[:-1], names[1:], strict=True)))
    net.name = f"chain{length}"
    move = (1 - stay) / 2
    trans = [[stay if r == c else move for c in range(3)] for r in range(3)]
    cpds = [TabularCPD(names[0], 3, [[1 / 3]] * 3, state_names={names[0]: STATES})]
    for prev, cur in zip(names[:-1], names[1:], strict=True):
        cpds.append(TabularCPD(cur, 3, trans, evidence=[prev], evidence_card=[3],
                               state_names={cur: STATES, prev: STATES}))
    net.add_cpds(*cpds)
    net.check_model()
    return net


def model() -> DiscreteBayesianNetwork:
    """The default chain: 12 periods, persistence 0.8."""
    return chain()
