"""``hmm_order`` (C-level passes over the nodes) against the per-node definition it
replaced, on random hidden Markov models and near misses (an edge added or removed, an
extra leaf, a leaf with two parents)."""

from __future__ import annotations

import random

import numpy as np

import quiltpriv as qp
from quiltpriv.mechanisms.hmm_quilts import HMMOrder, hmm_order


def _reference(theta) -> HMMOrder | None:
    """The definition: leaves with one parent are the observations, the rest a directed
    path, each with exactly one observation child."""
    parents, children = theta.parents, theta.children
    leaves = {v for v in theta.nodes if not children[v] and len(parents[v]) == 1}
    hidden = tuple(v for v in theta.nodes if v not in leaves)
    if len(hidden) < 2 or len(leaves) != len(hidden) or parents[hidden[0]]:
        return None
    observed = []
    for t, h in enumerate(hidden):
        if t and parents[h] != (hidden[t - 1],):
            return None
        kids = children[h]
        obs = [c for c in kids if c in leaves]
        if len(obs) != 1 or len(kids) != (1 if t == len(hidden) - 1 else 2):
            return None
        observed.append(obs[0])
    return HMMOrder(hidden, tuple(observed))


def _theta(edges: list[tuple[str, str]], nodes: list[str]):
    parents = {v: [a for a, b in edges if b == v] for v in nodes}
    tables = {v: np.full((2,) * (1 + len(parents[v])), 0.5) for v in nodes}
    return qp.theta_from_tables(edges, {v: ["0", "1"] for v in nodes}, tables,
                                parents_order=parents)


def test_hmm_order_matches_its_definition():
    rng = random.Random(36)
    outcomes = {"hmm": 0, "not": 0}
    for _ in range(300):
        n = rng.randint(1, 6)
        hidden = [f"H{t}" for t in range(1, n + 1)]
        observed = [f"X{t}" for t in range(1, n + 1)]
        nodes = [v for pair in zip(hidden, observed, strict=True) for v in pair]
        edges = [(hidden[t], hidden[t + 1]) for t in range(n - 1)]
        edges += list(zip(hidden, observed, strict=True))
        kind = rng.choice(["none", "none", "add", "remove", "leaf", "two parents"])
        if kind == "add":  # an edge forward in the node order (acyclic)
            i, j = sorted(rng.sample(range(len(nodes)), 2))
            if (nodes[i], nodes[j]) not in edges:
                edges.append((nodes[i], nodes[j]))
        elif kind == "remove" and edges:
            edges.remove(rng.choice(edges))
        elif kind == "leaf":
            nodes.append("Y")
            edges.append((rng.choice(hidden), "Y"))
        elif kind == "two parents" and n > 1:
            t = rng.randrange(1, n)
            edges.append((hidden[t - 1], observed[t]))
        rng.shuffle(edges)
        theta = _theta(edges, nodes)
        want = _reference(theta)
        assert hmm_order(theta) == want, (edges, theta.nodes)
        outcomes["hmm" if want is not None else "not"] += 1
    assert min(outcomes.values()) >= 50, outcomes
    big = qp.hidden_markov(2000, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]],
                           [0.5, 0.5])
    assert hmm_order(big) == _reference(big) is not None
