"""The two-attribute network of Example 3 (Zhang, Ohrimenko and Cummings, Section 6).

Two binary attributes: X2 is sensitive, X1 is released. Records follow
P(X1 = 1 | X2 = 1) = p1 = 0.4 and P(X1 = 1 | X2 = 0) = p2 = 0.6, so the Bernoulli parameters
satisfy phi1 = 0.4 phi2 + 0.6 (1 - phi2) = 0.6 - 0.2 phi2: phi1 is a deterministic function of
phi2. The paper lets phi2 range over [0.2, 0.8]; this network discretises it to
{0.2, 0.5, 0.8} (uniform prior), so phi1 takes {0.56, 0.5, 0.44}.

Because phi1 determines phi2, the max-influence of ``x1`` on ``x2`` is infinite and APMQM can
only use quilts that keep ``x1`` nearby: a count over ``x1`` gets the full Laplace(n / eps).
That is the honest answer for this model; the Wasserstein mechanism does better here
(W_inf = 1 for n = 4 records).
"""

from __future__ import annotations

from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork

PHI2 = [0.2, 0.5, 0.8]


def model() -> DiscreteBayesianNetwork:
    """phi2 -> phi1 with phi1 = 0.6 - 0.2 phi2 (a deterministic CPD)."""
    net = DiscreteBayesianNetwork([("x2", "x1")])
    net.name = "example3"
    phi1 = [round(0.6 - 0.2 * p, 10) for p in PHI2]
    net.add_cpds(
        TabularCPD("x2", 3, [[1 / 3], [1 / 3], [1 / 3]],
                   state_names={"x2": [str(p) for p in PHI2]}),
        TabularCPD("x1", 3, [[1, 0, 0], [0, 1, 0], [0, 0, 1]], evidence=["x2"], evidence_card=[3],
                   state_names={"x1": [f"{p:g}" for p in phi1], "x2": [str(p) for p in PHI2]}),
    )
    net.check_model()
    return net
