"""The APMQM planner against exhaustive search on random networks of 12, 13 and 14 nodes.

Exactness: on every random network of up to 14 nodes the planner, which searches the
candidate quilts ``Q*(T)``, ``T`` a subset of the query attributes (docs/concepts.md), returns
the scale of exhaustive search. Here the least scale of [ZOC22, Alg. 3] is recomputed
over EVERY subset ``Q`` of ``V - {i}`` (2048-8192 quilts per sensitive attribute, past the 11
nodes of tests/mechanisms/test_bruteforce.py) and compared with ``plan(...).sensitive[k].scale``
for every sensitive attribute, for four queries per network (a count over 1-4 attributes, a weighted
linear query, a histogram, and a linear query that reads a sensitive attribute, where influence
is traded against sensitivity), eps in {0.5, 1, 2}, and every inference method ``plan`` offers
("auto" by default, "junction_tree", "elimination"). Every plan must say ``optimal=True``; the
chosen quilt must be valid (its R d-separated from i by networkx) and carry its brute-force
influence and its sensitivity.

Networks (``CONFIGS``, seeded): 45 of 12, 13 and 14 nodes, chains, trees, sparse, medium
and dense DAGs (up to 3 parents) and disconnected ones; binary and ternary nodes mixed (full
joint <= 2e5 entries); weak, mixed and strong CPDs from ``reference.random_tables`` plus
forced exact zeros, so that infinite influences occur; |Theta| = 2 or 3 on 12 of them;
every node sensitive on three networks (one of each size), three random nodes on the rest.

The exhaustive search reuses tests/reference.py: each member's full joint (the product of
all CPDs, once per network member), Definition 8 on its marginal
(``reference.influence_from_joint``), [ZOC22, Alg. 3]'s scale (``reference.algorithm3_scale``)
and the count/linear sensitivities. Marginals are summed out of the full joint in two stages
(the second half of the other nodes first, shared between quilts), which is the same sum.
Only ``A & N(Q)`` enters the scale, so only query attributes are classified, by networkx's
d-separation test (``nx.is_d_separator``) unless a collider-free path settles it. Exact
pruning keeps it fast:

* a collider-free path from ``i`` with no node in ``Q`` is active, so its end is in ``N(Q)``;
  with ``A & N(Q) <= A - Q`` this brackets ``Delta_{A&N}`` (Delta is monotone), and since
  ``e >= 0`` a ``Q`` whose ``Delta / eps`` is not below the best scale so far is skipped;
* a ``Q`` with ``e(Q|i) > eps`` has scale ``+inf``, and so (monotonicity of the influence)
  does every superset; more generally ``e(Q) >= e(Q - {v})`` bounds the scale from below.
  Fact 1 is re-checked by brute force on a sample of the pruned quilts of every network, the
  collider-free-path rule against networkx on sampled quilts, and the whole pruned search
  against reference.py's unpruned scan (``all_quilts``) on 8-node networks.

Tolerances as in tests/mechanisms/test_bruteforce.py: the planner rounds every computed influence up
by ``ROUNDING_MARGIN`` (1e-10 relative and absolute), so its scale must lie between the
exhaustive optimum with the influences shifted down by 1e-12 and with them rounded up as
the planner does; where that bracket is tighter than 1e-9 relative (all but 9 of 5940
comparisons: the chosen quilt has ``e`` close to ``eps``) the scale must equal the
exhaustive optimum to 1e-9 relative. Zero scales are compared exactly (the trivial quilt
makes every optimum finite).

Measured (every network: ``pytest -m "slow or not slow" tests/mechanisms/test_exhaustive_14.py
--durations=5``, 2 cores): 45 networks, 1620 plans, 5940 sensitive-attribute comparisons (3498
zero scales, 1122 positive scales below the trivial quilt's, 1320 trivial-quilt scales), 1371
infinite influences met by the exhaustive search; 17 s of CPU for the whole file (19 s wall
with other sessions loading the 2 cores; the slowest network ~1 s). ``pytest -s`` prints these
counts (``test_summary``). No disagreement was found. The default run checks eight of the
networks (``FAST``), ``pytest -m slow`` the other 37.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

import networkx as nx
import numpy as np
import pytest
import reference as ref
from marks import fast_sample

from quiltpriv.inference.influence import ROUNDING_MARGIN
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.queries.query import CountQuery, HistogramQuery, LinearQuery

EPSILONS = (0.5, 1.0, 2.0)
ABS = 1e-12
#: Largest full joint (entries) a network may have; the brute force sums it once per quilt.
MAX_STATES = 200_000

#: Inference methods to plan with: the default ("auto", no keyword) and both explicit ones.
INFERENCE = ("default", "junction_tree", "elimination")

STATS: dict[str, int] = {}


def _bump(key: str, by: int = 1) -> None:
    STATS[key] = STATS.get(key, 0) + by


# -- networks -----------------------------------------------------------------------------------


def _dag(rng: np.random.Generator, order: list[str], shape: str) -> list[tuple[str, str]]:
    """Edges of a DAG on ``order`` (a topological order) of the given shape."""
    n = len(order)
    edges: list[tuple[str, str]] = []
    if shape == "chain":
        return [(order[k], order[k + 1]) for k in range(n - 1)]
    if shape == "tree":  # one parent each: an arborescence
        return [(order[int(rng.integers(k))], order[k]) for k in range(1, n)]
    if shape == "disconnected":  # 2-3 components of mixed shapes, sometimes an isolated node
        cuts = sorted(rng.choice(np.arange(2, n - 1), size=int(rng.integers(1, 3)),
                             replace=False).tolist())
        parts = [order[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        for part in parts:
            if len(part) > 1:
                sub = str(rng.choice(["chain", "tree", "sparse", "dense"]))
                edges += _dag(rng, part, sub)
        if rng.random() < 0.5:  # cut one node loose
            v = str(rng.choice(order))
            edges = [e for e in edges if v not in e]
        return edges
    p = {"sparse": 0.15, "medium": 0.3, "dense": 0.6}[shape]
    parents: dict[str, int] = {v: 0 for v in order}
    for a in range(n):
        for b in range(a + 1, n):
            # At most 3 parents keeps every CPD small; "dense" still has ~3n edges.
            if rng.random() < p and parents[order[b]] < 3:
                edges.append((order[a], order[b]))
                parents[order[b]] += 1
    return edges


def make_network(seed: int, n: int, shape: str, theta_size: int, ternary: int,
                 style: str, zeros: int) -> ref.RandomNetwork:
    """A seeded hyperparameter network: DAG ``shape``, ``ternary`` nodes of 3 states (the rest
    binary), CPDs from ``reference.random_tables`` (``style``) for ``theta_size`` members, and
    ``zeros`` extra exact zeros put into child CPDs so that infinite influences occur."""
    rng = np.random.default_rng(seed)
    names = [f"X{k}" for k in range(n)]
    order = [names[k] for k in rng.permutation(n)]
    edges = _dag(rng, order, shape)
    parents = {v: [a for a, b in edges if b == v] for v in names}
    parents_t = {v: tuple(parents[v][k] for k in rng.permutation(len(parents[v])))
                 for v in names}
    tern = set(rng.choice(names, size=ternary, replace=False).tolist()) if ternary else set()
    card = {v: 3 if v in tern else 2 for v in names}
    assert math.prod(card.values()) <= MAX_STATES
    members = []
    for _ in range(theta_size):
        tables = ref.random_tables(rng, names, parents_t, card, style)
        children = [v for v in names if parents_t[v]]
        for _ in range(zeros if children else 0):
            v = str(rng.choice(children))
            t = tables[v].reshape(card[v], -1).copy()
            col = int(rng.integers(t.shape[1]))
            row = int(rng.integers(card[v]))
            t[row, col] = 0.0
            if t[:, col].sum() == 0:
                t[(row + 1) % card[v], col] = 1.0
            t[:, col] /= t[:, col].sum()
            tables[v] = t.reshape(tables[v].shape)
        members.append(tables)
    states = {v: tuple(range(card[v])) for v in names}
    shuffled = tuple(names[k] for k in rng.permutation(n))  # not topological
    return ref.RandomNetwork(shuffled, tuple(edges), parents_t, states, tuple(members), seed)


# -- exhaustive search --------------------------------------------------------------------------


@dataclass
class Exhaustive:
    """Every quilt of one sensitive node, with influences and d-separations computed lazily
    (each at most once) and shared between queries and epsilons."""

    net: ref.RandomNetwork
    graph: nx.DiGraph
    joints: list[np.ndarray]
    node: str
    influences: dict[int, float] = field(default_factory=dict)
    separated: dict[tuple[int, str], bool] = field(default_factory=dict)
    pruned: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = self.net.nodes
        self.bit = {v: 1 << k for k, v in enumerate(names)}
        others = [v for v in names if v != self.node]
        # Every subset of V - {i}, smallest first (small quilts tend to win early).
        self.quilts = [sum(self.bit[v] for v in q) for k in range(len(others) + 1)
                       for q in combinations(others, k)]
        assert len(self.quilts) == 2 ** len(others)
        self.parents = {self.bit[v]: sum(self.bit[u] for u in self.graph.pred[v])
                        for v in names}
        self.children = {self.bit[v]: sum(self.bit[u] for u in self.graph.succ[v])
                         for v in names}
        self.treks: dict[int, int] = {}
        # Each member's joint with axes (i, H1, H2): the other nodes split in two halves.
        half = len(others) // 2
        self.h1, self.h2 = others[:half], others[half:]
        self.h2_mask = sum(self.bit[v] for v in self.h2)
        pos = {v: k for k, v in enumerate(names)}
        axes = [pos[v] for v in (self.node, *self.h1, *self.h2)]
        self.ordered = [np.transpose(j, axes) for j in self.joints]
        self.half_marginals: dict[tuple[int, int], np.ndarray] = {}

    def names(self, mask: int) -> list[str]:
        return [v for v in self.net.nodes if mask & self.bit[v]]

    def _closure(self, start: int, step: dict[int, int], blocked: int) -> int:
        """Nodes reachable from ``start`` (a mask) by ``step`` edges avoiding ``blocked``."""
        seen, frontier = start, start
        while frontier:
            nxt = 0
            for b in self.bit.values():
                if frontier & b:
                    nxt |= step[b]
            frontier = nxt & ~blocked & ~seen
            seen |= frontier
        return seen

    def trek(self, q: int) -> int:
        """Nodes joined to i by a collider-free path with no node of Q on it: ancestors of i,
        and their descendants, through nodes outside Q. Such a path is active given Q, so
        every one of them is in N(Q) (d-separation needs no test; sampled against networkx)."""
        if q not in self.treks:
            up = self._closure(self.bit[self.node], self.parents, q)
            self.treks[q] = self._closure(up, self.children, q)
        return self.treks[q]

    def _halves(self, member: int, s2: int) -> np.ndarray:
        """``P(phi_i, phi_H1, phi_S2)`` for ``S2`` a subset of the second half ``H2`` of the
        other nodes: the full joint with ``H2 - S2`` summed out (kept per ``S2``)."""
        key = (member, s2)
        if key not in self.half_marginals:
            drop = tuple(1 + len(self.h1) + k for k, v in enumerate(self.h2)
                         if not s2 & self.bit[v])
            self.half_marginals[key] = self.ordered[member].sum(axis=drop)
        return self.half_marginals[key]

    def joint_with(self, member: int, q: int) -> np.ndarray:
        """``P(phi_i, phi_Q)`` (axis 0 = i, then Q in network order split by half): the full
        joint with every other axis summed out, in two stages (``H2 - Q``, then ``H1 - Q``)
        so that the large first stage is shared by every Q with the same ``Q & H2``."""
        base = self._halves(member, q & self.h2_mask)
        drop = tuple(1 + k for k, v in enumerate(self.h1) if not q & self.bit[v])
        return base.sum(axis=drop) if drop else base

    def influence(self, q: int) -> float:
        """``e_Theta(Q | i)``: Definition 8 (``reference.influence_from_joint``) on the
        marginal of each member's full joint, maximised over members."""
        if q not in self.influences:
            self.influences[q] = 0.0 if not q else max(
                ref.influence_from_joint(self.joint_with(k, q))
                for k in range(len(self.joints)))
            _bump("influences computed")
            if math.isinf(self.influences[q]):
                _bump("infinite influences")
        return self.influences[q]

    def is_remote(self, q: int, v: str) -> bool:
        key = (q, v)
        if key not in self.separated:
            self.separated[key] = nx.is_d_separator(self.graph, {self.node}, {v},
                                                    set(self.names(q)))
            _bump("d-separation tests")
        return self.separated[key]

    def least_scales(self, attrs, delta, eps: float) -> tuple[float, float, float, int]:
        """[ZOC22, Alg. 3]'s least scale over the trivial quilt and every Q, with the influences
        shifted down by 1e-12, exact, and rounded up as the planner does; and the best Q."""
        amask = sum(self.bit[v] for v in attrs)
        deltas: dict[int, float] = {}

        def d(mask: int) -> float:
            if mask not in deltas:
                deltas[mask] = delta(self.names(mask))
            return deltas[mask]

        trivial = d(amask) / eps  # Q = R = {}, N = V
        best = [trivial, trivial, trivial]
        arg = -1  # -1: the trivial quilt
        infeasible: list[int] = []  # quilts with e > eps even shifted down
        for q in self.quilts:
            lower = amask & self.trek(q)
            upper = amask & ~q
            # e >= 0, so Delta_lower / eps bounds every shifted scale from below; best[2] is
            # the largest of the three bests.
            if d(lower) / eps >= best[2]:
                continue
            # Monotonicity of the influence (checked below by brute force): a superset of
            # an infeasible quilt is infeasible.
            sub = next((m for m in infeasible if q & m == m), None)
            if sub is not None:
                self.pruned.append((q, sub))
                continue
            # A & N(Q): classify the undetermined attributes one by one (largest Delta
            # first), stopping as soon as the nearby ones found already cost too much.
            near = lower
            if d(lower) != d(upper):
                for v in sorted(self.names(upper & ~lower),
                                key=lambda v: -d(lower | self.bit[v])):
                    if not self.is_remote(q, v):
                        near |= self.bit[v]
                        if d(near) / eps >= best[2]:
                            break
            else:
                near = upper
            dn = d(near)
            if dn / eps >= best[2]:  # with the rest of A & N(Q) it can only cost more
                continue
            # Fact 1 again: e(Q) >= e(Q - {v}) for every Q - {v} whose influence is known
            # (lowered by 1e-9 against rounding; the scale is increasing in e).
            if q not in self.influences:
                sub = max((q & ~b for b in self.bit.values() if q & b and q & ~b in
                           self.influences), key=self.influences.__getitem__, default=None)
                if sub is not None:
                    lb = self.influences[sub]
                    lb = max(lb - 1e-9 - 1e-9 * lb, 0.0) if math.isfinite(lb) else lb
                    if ref.algorithm3_scale(dn, lb, eps) >= best[2]:
                        self.pruned.append((q, sub))
                        continue
            e = self.influence(q)
            # The bracket: e shifted down for summation order; e rounded up as the planner
            # does (a true zero of a non-empty Q may be computed as ~1e-16, then rounded up).
            es = [max(e - ABS - 1e-12 * e, 0.0) if math.isfinite(e) else e, e,
                  e * (1 + ROUNDING_MARGIN) + ROUNDING_MARGIN + ABS if q and e < math.inf
                  else e]
            if es[0] > eps:  # infeasible for all three (Delta = 0 needs e <= eps)
                infeasible.append(q)
                continue
            for k in range(3):
                s = ref.algorithm3_scale(dn, es[k], eps)
                if s < best[k]:
                    best[k] = s
                    if k == 1:
                        arg = q
            if best[2] == 0.0:
                break  # nothing beats zero
        return best[0], best[1], best[2], arg


# -- the comparison -----------------------------------------------------------------------------


def histogram_sensitivity(attributes, records: int):
    """``Delta_B`` of a histogram over ``attributes`` (L1): 2n if B meets A, else 0."""
    a = set(attributes)
    return lambda b: 2.0 * records if a & set(b) else 0.0


def _linear(rng: np.random.Generator, attrs: list[str], zero_weights: bool):
    weights = {a: float(rng.choice([rng.normal(0, 2), -rng.random(), 0.0],
                                   p=[0.6, 0.3, 0.1] if zero_weights else [0.7, 0.3, 0.0]))
               for a in attrs}
    bounds = {}
    for a in attrs:
        lo = float(rng.normal(0, 5))
        bounds[a] = (lo, lo + float(rng.exponential(3.0)) + 1e-3)
    return LinearQuery(weights, bounds), ref.linear_sensitivity(weights, bounds), attrs


def _queries(rng: np.random.Generator, nodes, sensitive) -> list:
    """A count over 1-4 attributes, a weighted linear query and a histogram over random
    attributes, and a linear query over 2-5 attributes that reads a sensitive one (where
    [ZOC22, Alg. 3] trades influence against sensitivity: a quilt can remove every attribute but
    the sensitive one from N, at a price)."""
    nodes = sorted(nodes)

    def pick(lo, hi, pool=nodes):
        return [str(x) for x in rng.choice(pool, size=int(rng.integers(lo, hi + 1)),
                                           replace=False)]

    out = []
    attrs = pick(1, 4)
    n = int(rng.integers(1, 1000))
    out.append((CountQuery(tuple(attrs), n), ref.count_sensitivity(attrs, n), attrs))
    out.append(_linear(rng, pick(1, 4), True))
    attrs = pick(1, 3)
    n = int(rng.integers(1, 1000))
    out.append((HistogramQuery(tuple(attrs), n, categories={a: (0, 1) for a in attrs}),
                histogram_sensitivity(attrs, n), attrs))
    i = str(rng.choice(sorted(sensitive)))
    out.append(_linear(rng, [i] + pick(1, 4, [v for v in nodes if v != i]), False))
    return out


def _configs() -> list[tuple]:
    """(seed, nodes, shape, |Theta|, ternary nodes, CPD style, forced zeros, all sensitive)."""
    rng = np.random.default_rng(7_140_000)
    shapes = ("chain", "tree", "sparse", "medium", "dense", "disconnected")
    styles = ("weak", "mixed", "strong")
    out = []
    for k in range(NETWORK_COUNT):
        n = 12 + k % 3
        cap = int(math.log(MAX_STATES / 2**n) / math.log(1.5))  # 3**t * 2**(n-t) <= MAX
        ternary = int(rng.integers(0, cap + 1))
        theta_size = 1 if k % 4 else int(rng.integers(2, 4))
        out.append((7_140_000 + k, n, shapes[k % len(shapes)], theta_size, ternary,
                    styles[(k // len(shapes)) % len(styles)], int(rng.integers(0, 3)),
                    k in ALL_SENSITIVE))
    return out


NETWORK_COUNT = 45
#: Networks (indices into CONFIGS) on which every node is sensitive: one each of 12, 13, 14 nodes.
ALL_SENSITIVE = (3, 22, 38)
CONFIGS = _configs()


def _check_chosen_quilt(sp, net, g, joints, eps, delta, attrs, where) -> None:
    """The planner's quilt is a valid quilt with its own numbers (networkx, brute force)."""
    q = set(sp.quilt)
    assert sp.sensitive not in q, where
    assert q | set(sp.nearby) | set(sp.remote) == set(net.nodes), where
    assert len(sp.quilt) + len(sp.nearby) + len(sp.remote) == len(net.nodes), where
    for v in sp.remote:
        assert nx.is_d_separator(g, {sp.sensitive}, {v}, q), where
    e_ref = ref.reference_influence(net, sp.sensitive, q, joints)
    if math.isinf(e_ref):
        assert math.isinf(sp.influence), where
    else:
        assert e_ref - ABS <= sp.influence <= e_ref * (1 + 1e-9) + 1e-9, (where, e_ref)
    assert sp.sensitivity == pytest.approx(delta(set(attrs) & set(sp.nearby)), rel=1e-12,
                                           abs=0), where
    assert sp.scale == ref.algorithm3_scale(sp.sensitivity, sp.influence, eps), where


#: The networks of the default run: every shape, size, |Theta|, CPD style, forced zeros and an
#: every-node-sensitive one (~3 s of the file's ~19 s); the other 37 are marked slow.
FAST = (0, 3, 7, 8, 10, 11, 15, 17)


@pytest.mark.parametrize("config", fast_sample(CONFIGS, FAST),
                         ids=[f"{c[0]}-{c[1]}{c[2]}" for c in CONFIGS])
def test_planner_equals_exhaustive_search(config):
    seed, n, shape, theta_size, ternary, style, zeros, all_sensitive = config
    net = make_network(seed, n, shape, theta_size, ternary, style, zeros)
    theta = net.to_theta_from_tables()
    g = net.graph()
    joints = [ref.full_joint(net, k) for k in range(len(net.members))]
    rng = np.random.default_rng(seed)
    sensitive = list(net.nodes) if all_sensitive else [
        str(x) for x in rng.choice(net.nodes, size=3, replace=False)]
    searches = {i: Exhaustive(net, g, joints, i) for i in sensitive}
    _bump("networks")
    for query, delta, attrs in _queries(rng, net.nodes, sensitive):
        for eps in EPSILONS:
            exact = {i: searches[i].least_scales(attrs, delta, eps) for i in sensitive}
            for inference in INFERENCE:
                kw = {} if inference == "default" else {"inference": inference}
                p = plan(theta, query, sensitive, eps, **kw)
                _bump("plans")
                where = (f"seed={seed} n={n} {shape} |Theta|={theta_size} "
                         f"query={query.to_dict()} eps={eps} inference={inference}")
                assert p.optimal is True, where
                assert sorted(sp.sensitive for sp in p.sensitive) == sorted(sensitive), where
                for sp in p.sensitive:
                    low, mid, high, arg = exact[sp.sensitive]
                    w = (f"{where} node={sp.sensitive} exhaustive best Q="
                         f"{searches[sp.sensitive].names(arg) if arg >= 0 else 'trivial'}")
                    assert sp.optimal is True, w
                    if mid == 0.0:
                        assert sp.scale == 0.0, (w, sp.scale)
                        _bump("zero scales")
                    else:
                        _bump("positive scales below the trivial quilt's"
                              if mid < delta(attrs) / eps else "trivial-quilt scales")
                        assert low * (1 - 1e-15) <= sp.scale <= high * (1 + 1e-15), (
                            w, sp.scale, mid)
                        if high <= mid * (1 + 1e-9):
                            assert sp.scale == pytest.approx(mid, rel=1e-9, abs=0), w
                        else:  # e of the best quilt close to eps: the bracket only
                            _bump("bracket-only comparisons")
                    _check_chosen_quilt(sp, net, g, joints, eps, delta, attrs, w)
                    _bump("node comparisons")
                assert p.scale == max(sp.scale for sp in p.sensitive), where
    for i, ex in searches.items():
        # Fact 1 (monotonicity), on which the pruning relies, on a sample of pruned quilts.
        for k in rng.permutation(len(ex.pruned))[:10]:
            q, m = ex.pruned[int(k)]
            e_q, e_m = ex.influence(q), ex.influence(m)
            assert e_q >= e_m * (1 - 1e-12) - 1e-12, (seed, i, ex.names(q), ex.names(m))
            _bump("monotonicity checks")
        # The collider-free-path rule against networkx on a sample of quilts.
        for k in rng.choice(len(ex.quilts), size=10, replace=False):
            q = ex.quilts[int(k)]
            for v in ex.names(ex.trek(q) & ~ex.bit[i]):
                assert not nx.is_d_separator(g, {i}, {v}, set(ex.names(q))), (seed, i, v)
                _bump("collider-free paths checked by networkx")


@pytest.mark.parametrize("seed", fast_sample(range(6), 3))
def test_pruned_search_equals_unpruned_reference(seed):
    """The pruned exhaustive search above equals reference.py's unpruned scan of every quilt
    (``all_quilts`` + ``reference_scale``) on smaller networks of the same generator."""
    shape = ("chain", "tree", "sparse", "medium", "dense", "disconnected")[seed]
    net = make_network(8_000 + seed, 8, shape, 1 + seed % 3, seed % 4, ("mixed", "strong")[
        seed % 2], 1 + seed % 2)
    g = net.graph()
    joints = [ref.full_joint(net, k) for k in range(len(net.members))]
    rng = np.random.default_rng(seed)
    for node in net.nodes:
        ex = Exhaustive(net, g, joints, node)
        records = ref.all_quilts(net, node)
        for _ in range(3):
            for _query, delta, attrs in _queries(rng, net.nodes, [node]):
                for eps in EPSILONS:
                    want = ref.reference_scale(records, attrs, delta, eps)
                    got = ex.least_scales(attrs, delta, eps)[1]
                    assert got == pytest.approx(want, rel=1e-12, abs=0), (seed, node, attrs,
                                                                          eps)
                    _bump("pruning self-checks")


def test_coverage_of_the_configurations():
    """The network list covers 12-14 nodes, >= 40 networks (checked on the configurations, so it
    holds whichever tests are selected)."""
    assert len(CONFIGS) >= 40
    assert {c[1] for c in CONFIGS} == {12, 13, 14}
    assert {c[2] for c in CONFIGS} >= {"chain", "tree", "sparse", "dense", "disconnected"}
    assert {c[3] for c in CONFIGS} >= {1, 2, 3}
    assert {c[1] for c in CONFIGS if c[7]} == {12, 13, 14}  # every node sensitive
    assert sum(c[6] > 0 for c in CONFIGS) >= 20  # forced zeros
    for c in CONFIGS:
        net = make_network(*c[:7])
        assert len(net.nodes) == c[1]
        assert math.prod(net.card.values()) <= MAX_STATES
        assert nx.is_directed_acyclic_graph(net.graph())
        if c[2] == "disconnected":
            assert not nx.is_weakly_connected(net.graph())
    assert any({2, 3} <= set(make_network(*c[:7]).card.values()) for c in CONFIGS)


def test_summary():
    """Print what the run covered (run with -s); asserts coverage over the networks that ran
    (the default run's eight already meet infinite influences and every kind of scale)."""
    print("\nexhaustive-14 summary:", dict(sorted(STATS.items())))
    if not STATS.get("networks"):
        pytest.skip("no network ran in this session")
    assert STATS["infinite influences"] > 0
    assert STATS["zero scales"] > 0
    assert STATS["positive scales below the trivial quilt's"] > 0
    assert STATS["node comparisons"] >= STATS["networks"] * 3 * 4 * len(INFERENCE) * 3
