"""Independent, slow, obviously-correct references for the APMQM core ([ZOC22, Def. 8, Alg. 3]).

Nothing here calls :mod:`quiltpriv.graph.quilts` or :mod:`quiltpriv.inference.influence`: the
references
enumerate the full joint distribution of every node (a product of all CPDs in one dense
table), read Definition 8 off it literally, take remote sets from networkx's
``is_d_separator`` and scan EVERY subset ``Q`` of ``V - {i}`` ([ZOC22, Alg. 3]), so that the
planner's one-candidate-per-target search can be checked against the definition itself.

The random generator builds hyperparameter networks as pgmpy ``DiscreteBayesianNetwork``
objects: random DAGs, cardinalities 2-4, CPD columns from Dirichlet laws of very different
concentration (near-deterministic columns included), exact zeros in some columns, and
Theta = several CPD draws on one DAG.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import networkx as nx
import numpy as np

#: Entries below this are set to exactly zero: a Dirichlet with tiny alpha otherwise produces
#: numbers like 1e-300 whose products underflow, and then "zero" depends on evaluation order.
ZERO_FLOOR = 1e-9


@dataclass(frozen=True)
class RandomNetwork:
    """A random hyperparameter network with one or several CPD sets (Theta) on one DAG.

    ``members[k][v]`` has axes ``(v, *parents[v])`` (``parents[v]`` in the order given here).
    """

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    parents: dict[str, tuple[str, ...]]
    states: dict[str, tuple]
    members: tuple[dict[str, np.ndarray], ...]
    seed: int

    @property
    def card(self) -> dict[str, int]:
        return {v: len(self.states[v]) for v in self.nodes}

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from(self.edges)
        return g

    def to_pgmpy(self, shuffle_evidence: int | None = None) -> list:
        """One pgmpy ``DiscreteBayesianNetwork`` per member of Theta.

        ``shuffle_evidence`` (a seed) gives every member's CPDs its own random evidence order,
        so that members of one Theta disagree on the table layout.
        """
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        models = []
        rng = None if shuffle_evidence is None else np.random.default_rng(shuffle_evidence)
        for k, tables in enumerate(self.members):
            model = DiscreteBayesianNetwork()
            model.add_nodes_from(self.nodes)
            model.add_edges_from(self.edges)
            cpds = []
            for v in self.nodes:
                ps = self.parents[v]
                t = tables[v]
                if rng is not None and len(ps) > 1:
                    perm = [int(x) for x in rng.permutation(len(ps))]
                    ps = tuple(ps[x] for x in perm)
                    t = np.transpose(t, [0] + [1 + x for x in perm])
                # pgmpy: values shape (card, prod(evidence cards)), columns in evidence order
                # with the LAST evidence varying fastest = C-order reshape of (v, *ps).
                values = t.reshape(t.shape[0], -1)
                cpds.append(TabularCPD(
                    v, self.card[v], values,
                    evidence=list(ps) or None,
                    evidence_card=[self.card[p] for p in ps] or None,
                    state_names={u: list(self.states[u]) for u in (v, *ps)},
                ))
            model.add_cpds(*cpds)
            model.name = f"net{self.seed}[{k}]"
            models.append(model)
        return models

    def to_theta(self):
        """The network as quiltpriv's Theta (through the public pgmpy entry point)."""
        from quiltpriv.model.network import theta_from_pgmpy

        return theta_from_pgmpy(self.to_pgmpy())

    def to_theta_from_tables(self):
        """The network as quiltpriv's Theta straight from its tables (no pgmpy models: faster
        for the 12-19 node networks of the exhaustive and planner-search tests)."""
        from quiltpriv.model.network import theta_from_tables

        return theta_from_tables(self.edges, {v: self.states[v] for v in self.nodes},
                                 list(self.members), parents_order=self.parents)


def _random_column(rng: np.random.Generator, card: int, style: str) -> np.ndarray:
    if style == "weak":
        # Close to uniform: small influences, so large quilts can still be under eps.
        col = 0.9 / card + 0.1 * rng.dirichlet(np.ones(card))
    elif style == "peaked":
        col = rng.dirichlet(np.full(card, 0.03))  # near-deterministic
    else:
        col = rng.dirichlet(np.full(card, float(rng.choice([0.3, 1.0, 3.0]))))
    if style != "weak" and card > 1 and rng.random() < 0.15:
        # Exact zeros in some rows (at least one state keeps positive mass).
        keep = rng.integers(card)
        zero = rng.random(card) < 0.5
        zero[keep] = False
        col = np.where(zero, 0.0, col)
    col = np.where(col < ZERO_FLOOR, 0.0, col)
    if col.sum() == 0:
        col[rng.integers(card)] = 1.0
    return col / col.sum()


def random_tables(
    rng: np.random.Generator,
    nodes: Sequence[str],
    parents: dict[str, tuple[str, ...]],
    card: dict[str, int],
    style: str,
) -> dict[str, np.ndarray]:
    """One CPD per node, axes ``(node, *parents)``; ``style`` in weak/mixed/strong."""
    tables = {}
    for v in nodes:
        pcards = [card[p] for p in parents[v]]
        ncols = math.prod(pcards)
        cols = []
        for _ in range(ncols):
            if style == "weak":
                s = "weak"
            elif style == "strong":
                s = str(rng.choice(["peaked", "dirichlet"]))
            else:
                s = str(rng.choice(["weak", "dirichlet", "peaked"], p=[0.4, 0.45, 0.15]))
            cols.append(_random_column(rng, card[v], s))
        t = np.stack(cols, axis=1).reshape([card[v], *pcards])
        tables[v] = t
    return tables


def random_network(
    seed: int,
    *,
    n_nodes: int | None = None,
    min_nodes: int = 1,
    max_nodes: int = 8,
    theta_size: int | None = None,
    max_card: int = 4,
    edge_prob: float | None = None,
) -> RandomNetwork:
    """A seeded random hyperparameter network (random DAG, random CPDs, |Theta| in 1..3)."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(min_nodes, max_nodes + 1)) if n_nodes is None else n_nodes
    names = [f"X{k}" for k in range(m)]
    order = list(rng.permutation(m))  # random topological order, not the name order
    p = float(rng.choice([0.2, 0.35, 0.5, 0.7])) if edge_prob is None else edge_prob
    edges = []
    parents: dict[str, list[str]] = {v: [] for v in names}
    for a in range(m):
        for b in range(a + 1, m):
            if rng.random() < p and len(parents[names[order[b]]]) < 3:
                u, v = names[order[a]], names[order[b]]
                edges.append((u, v))
                parents[v].append(u)
    for v in names:  # random parent (axis) order
        perm = rng.permutation(len(parents[v]))
        parents[v] = [parents[v][k] for k in perm]
    card = {v: int(rng.integers(2, max_card + 1)) for v in names}
    states = {}
    for v in names:
        kind = rng.integers(3)
        if kind == 0:
            states[v] = tuple(round(0.1 + 0.8 * j / (card[v] - 1), 3) for j in range(card[v]))
        elif kind == 1:
            states[v] = tuple(f"s{j}" for j in range(card[v]))
        else:
            states[v] = tuple(range(card[v]))
    size = int(rng.integers(1, 4)) if theta_size is None else theta_size
    style = str(rng.choice(["weak", "mixed", "strong"], p=[0.3, 0.5, 0.2]))
    parents_t = {v: tuple(parents[v]) for v in names}
    members = tuple(random_tables(rng, names, parents_t, card, style) for _ in range(size))
    # Node order given to pgmpy: names in a shuffled order (not topological).
    shuffled = tuple(names[k] for k in rng.permutation(m))
    return RandomNetwork(shuffled, tuple(edges), parents_t, states, members, seed)


# -- brute force ---------------------------------------------------------------------------


def full_joint(net: RandomNetwork, member: int = 0) -> np.ndarray:
    """The full joint ``P(phi_V)`` as a dense table with axes in ``net.nodes`` order.

    Literally the product of all CPDs (chain rule of the Bayesian network), no elimination.
    """
    nodes = net.nodes
    pos = {v: k for k, v in enumerate(nodes)}
    shape = [net.card[v] for v in nodes]
    joint = np.ones(shape)
    for v in nodes:
        t = net.members[member][v]
        axes = [pos[v]] + [pos[p] for p in net.parents[v]]
        # Put the table's axes into the joint's axis order, then broadcast.
        order = np.argsort(axes)
        t_sorted = np.transpose(t, order)
        bshape = [1] * len(nodes)
        for a in axes:
            bshape[a] = shape[a]
        joint = joint * t_sorted.reshape(bshape)
    return joint


def marginal(net: RandomNetwork, joint: np.ndarray, keep: Sequence[str]) -> np.ndarray:
    """Marginal of ``joint`` (axes ``net.nodes``) on ``keep``, axes in the order of ``keep``."""
    others = tuple(k for k, v in enumerate(net.nodes) if v not in set(keep))
    m = joint.sum(axis=others) if others else joint
    remaining = [v for v in net.nodes if v in set(keep)]
    return np.transpose(m, [remaining.index(v) for v in keep]) if keep else m


def influence_from_joint(pq: np.ndarray) -> float:
    """Definition 8 for one theta, from the joint table ``P(phi_i, phi_Q)`` (axis 0 = i).

    max over a, b with P(a) > 0 and over states q of log P(q|a)/P(q|b); +inf when
    P(q|a) > 0 = P(q|b); 0 when Q is empty.
    """
    if pq.ndim == 1:
        return 0.0
    flat = pq.reshape(pq.shape[0], -1)
    p_i = flat.sum(axis=1)
    best = 0.0  # a = b gives log 1 = 0
    for a in range(flat.shape[0]):
        if not p_i[a] > 0:
            continue
        pa = flat[a] / p_i[a]
        for b in range(flat.shape[0]):
            if b == a or not p_i[b] > 0:
                continue
            pb = flat[b] / p_i[b]
            support = pa > 0
            if np.any(support & (pb == 0)):
                return math.inf
            if np.any(support):
                r = float(np.max(np.log(pa[support]) - np.log(pb[support])))
                best = max(best, r)
    return best


def reference_influence(
    net: RandomNetwork, node: str, quilt: Iterable[str], joints: Sequence[np.ndarray] | None = None
) -> float:
    """``e_Theta(Q | node)``: max over members of Definition 8 on the full joint."""
    quilt = [v for v in net.nodes if v in set(quilt)]
    if not quilt:
        return 0.0
    if joints is None:
        joints = [full_joint(net, k) for k in range(len(net.members))]
    return max(influence_from_joint(marginal(net, j, [node, *quilt])) for j in joints)


def remote_set(g: nx.DiGraph, node: str, quilt: Iterable[str]) -> frozenset[str]:
    """Largest R: every v outside Q + {i} that Q d-separates from i (networkx)."""
    q = set(quilt)
    return frozenset(
        v for v in g.nodes
        if v != node and v not in q and nx.is_d_separator(g, {node}, {v}, q)
    )


@dataclass(frozen=True)
class QuiltRecord:
    quilt: frozenset[str]
    remote: frozenset[str]
    nearby: frozenset[str]
    influence: float


def all_quilts(net: RandomNetwork, node: str) -> list[QuiltRecord]:
    """Every subset Q of V - {node} with its largest R, its N and its influence."""
    g = net.graph()
    joints = [full_joint(net, k) for k in range(len(net.members))]
    others = [v for v in net.nodes if v != node]
    out = []
    for k in range(len(others) + 1):
        for q in combinations(others, k):
            r = remote_set(g, node, q)
            n = frozenset(net.nodes) - frozenset(q) - r
            out.append(QuiltRecord(frozenset(q), r, n, reference_influence(net, node, q, joints)))
    return out


def algorithm3_scale(delta: float, e: float, eps: float) -> float:
    """Laplace scale of one quilt per [ZOC22, Alg. 3]: the exact quotient, rounded up to a float
    (never below the need; round-to-nearest gave fl(1/3) < 1/3)."""
    if e < eps:
        q = Fraction(delta) / (Fraction(eps) - Fraction(e))
        if q > Fraction(sys.float_info.max):
            return math.inf
        f = float(q)
        while Fraction(f) < q:
            f = math.nextafter(f, math.inf)
        return f
    if delta == 0 and e <= eps:
        return 0.0
    return math.inf


def count_sensitivity(attributes: Iterable[str], records: int) -> Callable[[Iterable[str]], float]:
    """``Delta_B`` of a count over ``attributes``: n if B meets A, else 0."""
    a = set(attributes)
    return lambda b: float(records) if a & set(b) else 0.0


def linear_sensitivity(
    weights: dict[str, float], bounds: dict[str, tuple[float, float]]
) -> Callable[[Iterable[str]], float]:
    """``Delta_B`` of ``sum_j w_j mean_j``: sum over j in B of |w_j| (hi_j - lo_j)."""
    def delta(b: Iterable[str]) -> float:
        b = set(b)
        return float(sum(abs(w) * (bounds[j][1] - bounds[j][0])
                         for j, w in sorted(weights.items()) if j in b))
    return delta


def reference_scale(
    records: Sequence[QuiltRecord],
    attributes: Iterable[str],
    delta: Callable[[Iterable[str]], float],
    eps: float,
    *,
    influence_shift: Callable[[float], float] = lambda e: e,
) -> float:
    """[ZOC22, Alg. 3]'s ``b_i``: min of the trivial quilt and of every quilt in ``records``.

    ``influence_shift`` lets a caller bracket the answer (e.g. the influence rounded up).
    """
    a = set(attributes)
    best = delta(a) / eps  # trivial quilt: Q = R = {}, N = V
    for rec in records:
        s = algorithm3_scale(delta(a & rec.nearby), influence_shift(rec.influence), eps)
        best = min(best, s)
    return best


def random_node_sets(nodes: Sequence[str], rng: np.random.Generator, count: int,
                     most: int = 5) -> list[list[str]]:
    """``count`` seeded sets of 1..``most`` distinct nodes (marginal queries for the tests)."""
    nodes = list(nodes)
    out = []
    for _ in range(count):
        k = int(rng.integers(1, min(len(nodes), most) + 1))
        out.append([str(x) for x in rng.choice(nodes, size=k, replace=False)])
    return out


def lattice(n: int, width: int, seed: int = 1):
    """A grid ``width`` nodes wide (``n`` nodes): each node's parents are its upper and left
    neighbours; binary states, CPD columns Dirichlet(1). Its treewidth, about ``width``, puts
    exact optimality out of reach: the planner's time limit is what ends its plans."""
    from quiltpriv.model.network import theta_from_tables

    rng = np.random.default_rng(seed)
    names = [f"v{k}" for k in range(n)]
    pa = [([j - width] if j >= width else []) + ([j - 1] if j % width else []) for j in range(n)]
    tables = {v: rng.dirichlet(np.ones(2), size=2 ** len(pa[j])).T.reshape(
        [2] * (1 + len(pa[j]))) for j, v in enumerate(names)}
    edges = [(names[p], names[j]) for j in range(n) for p in pa[j]]
    return theta_from_tables(edges, {v: [0, 1] for v in names}, tables,
                             parents_order={names[j]: [names[p] for p in pa[j]]
                                            for j in range(n)})


def student_ensemble(n: int, seed: int, *, concentration: float = 100.0,
                     prefix: str = "bootstrap-"):
    """The student model and ``n - 1`` members drawn around it (each CPD column from a Dirichlet
    centred on the point estimate's, ``concentration`` its strength): a stand-in for a learned
    Theta (a point estimate and its bootstrap resamples) whose members disagree on every
    entry. Members are named ``point``, then ``prefix`` 1, 2, ..."""
    import quiltpriv as qp
    from quiltpriv.model.network import CPD, Theta

    base = qp.load_model("student")
    rng = np.random.default_rng(seed)
    members = [dict(base.members[0])]
    for _ in range(n - 1):
        m = {}
        for v in base.nodes:
            t = base.members[0][v].table
            flat = t.reshape(t.shape[0], -1)
            new = np.stack([rng.dirichlet(concentration * flat[:, c] + 1)
                            for c in range(flat.shape[1])], axis=1)
            m[v] = CPD(v, base.parents[v], new.reshape(t.shape))
        members.append(m)
    return Theta(base.nodes, base.states, base.parents, members,
                 ["point"] + [f"{prefix}{k}" for k in range(1, n)])


#: The count the published-files fixtures plan and release on the student model (CLI options).
PUBLISHED_QUERY = ["--query", "count", "--attributes", "income", "--where", "income == 1",
                   "--domain", "income=0|1", "--records", "1000", "--epsilon", "1"]


def publish_student_files(folder):
    """A publisher's files in ``folder``: ``plan.json`` and ``record.json`` (a release of the
    students data through ``ledger.db``), made with the command line; returns ``folder``."""
    from pathlib import Path

    from quiltpriv.cli import main

    data = Path(__file__).resolve().parents[1] / "examples" / "data" / "students.csv"
    sensitive = ["--sensitive", "gender,income", *PUBLISHED_QUERY]
    assert main(["plan", "student", *sensitive, "--json", "-o", str(folder / "plan.json")]) == 0
    assert main(["release", "student", *sensitive, "--data", str(data),
                 "--ledger", str(folder / "ledger.db"), "-o", str(folder / "record.json")]) == 0
    return folder
