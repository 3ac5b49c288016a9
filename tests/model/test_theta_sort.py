"""``Theta.sort``: its one-pass path for nodes already in order gives what the set-and-sort
definition gives, on random lists and tuples (repeats, any order, ordered runs)."""

from __future__ import annotations

import random

import pytest

import quiltpriv as qp

FLIP = [[0.9, 0.1], [0.1, 0.9]]


def test_sort_matches_its_definition_on_random_inputs():
    theta = qp.hidden_markov(30, FLIP, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
    rng = random.Random(36)
    nodes = list(theta.nodes)
    tried = 0
    for _ in range(400):
        k = rng.randint(0, len(nodes))
        pick = rng.sample(nodes, k) if rng.random() < 0.5 else sorted(
            rng.sample(nodes, k), key=theta.index.__getitem__)  # half of them in order
        if pick and rng.random() < 0.2:
            pick.insert(rng.randrange(len(pick) + 1), rng.choice(pick))  # a repeat
        for given in (pick, tuple(pick), iter(pick), set(pick)):
            want = tuple(sorted(set(pick), key=theta.index.__getitem__))
            assert theta.sort(given) == want
            tried += 1
    assert tried == 1600
    with pytest.raises(KeyError):
        theta.sort(["H1", "nope"])
