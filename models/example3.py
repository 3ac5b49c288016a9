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

The tables are declared with :class:`quiltpriv.NetworkBuilder`, so loading the model does not
import pgmpy; ``network()`` gives the same network as a pgmpy ``DiscreteBayesianNetwork``.
"""

from __future__ import annotations

from typing import Any

from quiltpriv.model.builder import NetworkBuilder
from quiltpriv.model.network import Theta

PHI2 = [0.2, 0.5, 0.8]


def _builder() -> NetworkBuilder:
    x2 = [str(p) for p in PHI2]
    x1 = [f"{round(0.6 - 0.2 * p, 10):g}" for p in PHI2]
    b = NetworkBuilder("example3")
    b.attribute("x2", x2, kind="share").attribute("x1", x1, kind="share")
    b.edge("x2", "x1")
    b.table("x2", [1 / 3] * 3)
    # phi1 = 0.6 - 0.2 phi2: the k-th value of phi2 gives the k-th value of phi1.
    b.table("x1", {s: [1 if j == k else 0 for j in range(3)] for k, s in enumerate(x2)})
    return b


def model() -> Theta:
    """phi2 -> phi1 with phi1 = 0.6 - 0.2 phi2 (a deterministic CPD)."""
    # A bundled example: no provenance record, as for a model read from a file.
    return _builder().to_theta().with_provenance(None)


def network() -> Any:
    """:func:`model` as a pgmpy ``DiscreteBayesianNetwork`` (imports pgmpy)."""
    return _builder().to_pgmpy()
