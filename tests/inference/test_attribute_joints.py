"""The batched propagation of ``P(phi_v, phi_A)`` for every node against the full joint."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import numpy as np
import pytest
from marks import fast_sample
from reference import full_joint, marginal, random_network, reference_influence

from quiltpriv.errors import ParameterError
from quiltpriv.inference.attribute_joints import (
    _finer,
    _split,
    _visit,
    attribute_joints,
    joint_influence,
    propagation_work,
)
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, EngineSettings
from quiltpriv.inference.influence import max_influence, subnormals_kept
from quiltpriv.inference.junction_tree import TreeStructure, cardinalities, fill_tree_structure
from quiltpriv.model.network import Theta, theta_from_tables

T = TypeVar("T")
MAX_CHUNKS = DEFAULT_SETTINGS.max_chunks


def _attributes(net, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + 1000)
    k = int(rng.integers(1, min(3, len(net.nodes)) + 1))
    return [str(v) for v in rng.choice(list(net.nodes), k, replace=False)]


@pytest.mark.parametrize("seed", fast_sample(range(60), 15))
def test_every_node_joint_equals_the_full_joint(seed):
    net = random_network(seed, min_nodes=2, max_nodes=8)
    theta = net.to_theta()
    attrs = theta.sort(_attributes(net, seed))
    for m in range(len(theta.members)):
        aj = attribute_joints(theta, attrs, m)
        assert aj is not None  # the reference networks have no tiny entries
        joint = full_joint(net, m)
        for v in theta.nodes:
            if v in attrs:  # the table keeps v's own axis among A's: its diagonal
                got = aj.tables[theta.index[v]]
                k = attrs.index(v)
                want = marginal(net, joint, list(attrs))
                diag = np.moveaxis(np.diagonal(got, axis1=0, axis2=1 + k), -1, k)
                np.testing.assert_allclose(diag, want, rtol=1e-12, atol=1e-300)
                continue
            want = marginal(net, joint, [v, *attrs])
            np.testing.assert_allclose(aj.tables[theta.index[v]], want, rtol=1e-12,
                                       atol=1e-300)


@pytest.mark.parametrize("seed", fast_sample(range(60), 15))
def test_joint_influence_is_never_below_the_definition(seed):
    net = random_network(seed, min_nodes=2, max_nodes=8)
    theta = net.to_theta()
    attrs = theta.sort(_attributes(net, seed))
    joints = [attribute_joints(theta, attrs, m) for m in range(len(theta.members))]
    exact = [full_joint(net, m) for m in range(len(theta.members))]
    checked = 0
    for v in theta.nodes:
        q = [a for a in attrs if a != v]
        if not q:
            continue
        got = joint_influence(theta, joints, v, q)
        ref = reference_influence(net, v, q, exact)
        one = max_influence(theta, v, q)
        checked += 1
        if math.isinf(ref):
            assert math.isinf(got.value) and math.isinf(one.value)
            continue
        assert ref <= got.value <= ref + 1e-6 * (1 + ref)
        assert got.value == pytest.approx(one.value, rel=1e-6, abs=1e-6)
        assert got.member is not None and got.pair is not None
    assert checked or len(attrs) == 1


def _tiny_chain(p: float):
    """i -> a -> b with P(a=1 | i) = p * (1, 2) and P(b=1 | a=1) = p: ``P(a=1, b=1)`` is about
    ``p**2``, which underflows for tiny ``p``."""
    edges = [("i", "a"), ("a", "b")]
    states = {"i": [0, 1], "a": [0, 1], "b": [0, 1]}
    tables = {"i": np.array([0.5, 0.5]),
              "a": np.array([[1 - p, 1 - 2 * p], [p, 2 * p]]),
              "b": np.array([[0.5, 1 - p], [0.5, p]])}
    return theta_from_tables(edges, states, tables)


def test_an_underflow_stops_the_propagation():
    # P(a=1, b=1) = 1.5 p^2 (~1e-400) is below float64's range: the IEEE flag stops it
    assert subnormals_kept()
    assert attribute_joints(_tiny_chain(1e-200), ["a", "b"], 0) is None
    # the same network with moderate numbers propagates, and agrees with elimination
    theta = _tiny_chain(1e-3)
    aj = attribute_joints(theta, ["a", "b"], 0)
    assert aj is not None
    got = joint_influence(theta, [aj], "i", ["a", "b"])
    assert got.value == pytest.approx(max_influence(theta, "i", ["a", "b"]).value, rel=1e-9)
    assert got.value >= math.log(2)  # P(a=1|i=1) / P(a=1|i=0) = 2, and b adds to it


def test_budgets_refuse_rather_than_grow():
    theta = _tiny_chain(1e-3)
    assert attribute_joints(theta, ["a", "b"], 0, max_work=10) is None
    assert attribute_joints(theta, ["a", "b"], 0, max_held=10) is None
    assert attribute_joints(theta, ["a", "b"], 0, deadline=time.monotonic() - 1) is None
    assert attribute_joints(theta, ["a", "b"], 0, deadline=time.monotonic() + 60) is not None


def _chain(n: int, seed: int) -> Theta:
    names = [f"x{k}" for k in range(n)]
    rng = np.random.default_rng(seed)
    tables = {names[0]: np.array([0.3, 0.7])}
    for k in range(1, n):
        tables[names[k]] = rng.dirichlet(np.ones(2), size=2).T
    return theta_from_tables([(names[k - 1], names[k]) for k in range(1, n)],
                             {v: [0, 1] for v in names}, tables)


class _Needs(NamedTuple):
    """What the unsplit propagation of ``attrs`` holds, as ``max_held`` counts it."""

    structure: TreeStructure
    cards: list[int]
    idx: tuple[int, ...]
    batch: int
    result: int  # the result: card(v) x the joint states of A, per node
    working: int  # the messages at their peak and one clique's visit


def _needs(theta: Theta, attrs: Sequence[str]) -> _Needs:
    structure, cards = fill_tree_structure(theta), cardinalities(theta)
    idx = tuple(sorted(theta.index[a] for a in attrs))
    batch = math.prod(cards[a] for a in idx)
    whole = _split(structure, idx, cards, 2**40)
    assert whole is not None and whole[0] == tuple(cards[a] for a in idx)  # not split
    return _Needs(structure, cards, idx, batch, sum(cards) * batch,
                  whole[1].held + _visit(structure, cards, batch))


def _least_budget(structure: TreeStructure, idx: tuple[int, ...], cards: list[int],
                  result: int) -> int:
    """The least ``max_held`` any split fits: at least the result and one clique's visit."""
    base = result + _visit(structure, cards, 1)
    return next(b for b in range(base, base + 4096) if _split(structure, idx, cards, b))


def test_the_result_counts_against_max_held():
    """The result (one table of card(v) x joint states of A per node) is held whole whatever
    the split: on a long chain it outweighs the messages, and a budget below it plus one
    clique's visit refuses; one entry more is answered (in single joint states)."""
    theta = _chain(300, 5)
    attrs = ["x10", "x150", "x290"]
    structure, cards, idx, batch, result, working = _needs(theta, attrs)  # not split
    assert batch == 8 and result == sum(cards) * 8
    assert propagation_work(theta, attrs) == 2 * structure.size * 8
    assert working < result  # the case this test is for
    least = result + _visit(structure, cards, 1)
    assert attribute_joints(theta, attrs, 0, max_held=least - 1) is None
    if _split(structure, idx, cards, least) is not None:  # the messages of one state fit
        assert attribute_joints(theta, attrs, 0, max_held=least) is not None
    aj = attribute_joints(theta, attrs, 0, max_held=working + result)
    assert aj is not None
    assert sum(t.size for t in aj.tables) == result


@pytest.mark.parametrize("seed", fast_sample(range(24), 8))
def test_a_split_propagation_gives_the_whole_ones_tables(seed):
    """Below the memory the whole propagation needs, the joint states of A are split into
    chunks: every table equals the unsplit propagation's (the same arithmetic per joint
    state, up to the order numpy sums in) and the full joint's, and the split fits the
    budget it was made for."""
    net = random_network(8100 + seed, n_nodes=9, edge_prob=0.3, max_card=3)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = theta.sort([str(v) for v in rng.choice(list(net.nodes), 3, replace=False)])
    structure, cards, idx, _, result, working = _needs(theta, attrs)
    budget = result + working // 3  # a third of the working memory
    split = _split(structure, idx, cards, budget)
    if split is None:  # not even single joint states fit: refused, as documented
        assert attribute_joints(theta, attrs, 0, max_held=budget) is None
        return
    sizes, rooting = split
    assert sizes != tuple(cards[a] for a in idx)  # it did split
    assert rooting.held + _visit(structure, cards, math.prod(sizes)) + result <= budget
    for m in range(len(theta.members)):
        one = attribute_joints(theta, attrs, m)
        parts = attribute_joints(theta, attrs, m, max_held=budget)
        assert one is not None and parts is not None
        joint = full_joint(net, m)
        for v in theta.nodes:
            k = theta.index[v]
            np.testing.assert_allclose(parts.tables[k], one.tables[k], rtol=1e-13, atol=0)
            if v not in attrs:
                np.testing.assert_allclose(parts.tables[k], marginal(net, joint, [v, *attrs]),
                                           rtol=1e-12, atol=1e-300)
        assert parts.depth == one.depth


def test_a_split_is_refused_beyond_max_chunks():
    """Below the least budget that a split into at most ``max_chunks`` chunks fits, the
    propagation is refused, although single joint states of its eight binary attributes (256
    chunks) would fit: refused for the number of chunks alone, not run chunk by chunk. With
    ``EngineSettings(max_chunks=256)`` the same budget is split and gives the same tables."""
    theta = _chain(40, 6)
    attrs = [f"x{k}" for k in range(0, 40, 5)]
    structure, cards, idx, _, result, _ = _needs(theta, attrs)
    assert 2 ** len(attrs) > MAX_CHUNKS
    least = _least_budget(structure, idx, cards, result)
    whole = attribute_joints(theta, attrs, 0, max_held=least)
    assert whole is not None
    assert _split(structure, idx, cards, least - 1) is None
    assert attribute_joints(theta, attrs, 0, max_held=least - 1) is None
    more = EngineSettings(max_chunks=2 ** len(attrs))
    assert _split(structure, idx, cards, least - 1, more.max_chunks) is not None
    finer = attribute_joints(theta, attrs, 0, max_held=least - 1, settings=more)
    assert finer is not None
    for a, b in zip(finer.tables, whole.tables, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    fewer = EngineSettings(max_chunks=1)  # no split at all: the least budget is refused too
    assert attribute_joints(theta, attrs, 0, max_held=least, settings=fewer) is None


@pytest.mark.parametrize(("cards", "sizes", "cut"), [
    ((3,), (3,), (0, 1)),  # thirds: 3 chunks of a third, not 2 of which one is two thirds
    ((4,), (4,), (0, 2)),  # halves before quarters (as even, fewer chunks)
    ((6,), (6,), (0, 3)),
    ((6,), (3,), (0, 2)),
    ((5,), (5,), (0, 1)),  # 5 = 3 + 2 or 2 + 2 + 1 would leave chunks of 3 or 2 values
    ((2, 3, 4), (2, 3, 4), (0, 1)),  # even cuts first, the least growth among them
    ((2, 3, 4), (1, 3, 4), (2, 2)),
    ((1, 2), (1, 1), None),
])
def test_the_finest_cut_is_the_most_even(cards, sizes, cut):
    assert _finer(cards, list(sizes)) == cut


def test_bad_arguments_are_refused():
    theta = _tiny_chain(1e-3)
    aj = attribute_joints(theta, ["a"], 0)
    with pytest.raises(ParameterError):
        joint_influence(theta, [aj], "i", ["b"])  # b is not among the joints' attributes
    with pytest.raises(ParameterError):
        joint_influence(theta, [aj], "a", ["a"])
    with pytest.raises(ParameterError):
        joint_influence(theta, [], "i", ["a"])


def test_progress_is_reported_per_pass():
    from quiltpriv.utils.progress import observe

    theta = _tiny_chain(1e-3)
    seen = []
    with observe(lambda done, total: seen.append((done, total))):
        assert attribute_joints(theta, ["a", "b"], 0, progress=True) is not None
    cliques = len(fill_tree_structure(theta).cliques)
    assert seen.count((cliques, cliques)) == 2 and seen.count((0, cliques)) == 2


def test_progress_covers_every_chunk():
    """A split propagation shows both passes of every chunk."""
    from quiltpriv.utils.progress import observe

    theta = _chain(40, 6)
    attrs = [f"x{k}" for k in range(0, 40, 8)]
    structure, cards, idx, _, result, _ = _needs(theta, attrs)
    budget = _least_budget(structure, idx, cards, result)
    sizes = _split(structure, idx, cards, budget)[0]  # type: ignore[index]
    chunks = math.prod(-(-cards[a] // s) for a, s in zip(idx, sizes, strict=True))
    assert 1 < chunks <= MAX_CHUNKS
    seen = []
    with observe(lambda done, total: seen.append((done, total))):
        assert attribute_joints(theta, attrs, 0, max_held=budget, progress=True) is not None
    cliques = len(structure.cliques)
    assert seen.count((cliques, cliques)) == 2 * chunks


def _traced_peak(run: Callable[[], T]) -> tuple[T, int]:
    """``run()`` and the most bytes it held at once beyond what was held before it, as
    tracemalloc sees them (numpy reports its allocations to it)."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = run()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("seed", range(6))
def test_the_memory_estimate_bounds_what_the_propagation_allocates(seed):
    """numpy reports its allocations to tracemalloc: the propagation's peak stays within the
    entries ``max_held`` is compared with (messages up and down, a clique's visit, the
    result), eight bytes each, plus the fixed cost of the Python objects around them."""
    net = random_network(7700 + seed, n_nodes=60, edge_prob=0.08, max_card=3)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = theta.sort([str(v) for v in rng.choice(list(net.nodes), 4, replace=False)])
    needs = _needs(theta, attrs)
    estimate = needs.working + needs.result
    aj, peak = _traced_peak(lambda: attribute_joints(theta, attrs, 0))
    assert aj is not None
    assert peak <= 8 * estimate + 2**20, (peak, 8 * estimate)


def _banded(n: int, seed: int):
    """Node j draws 2-4 parents among the 8 before it, 2-3 states each: the benchmarks'
    banded family, whose wide cliques make the propagation's messages outweigh its result."""
    rng = np.random.default_rng(seed)
    names = [f"X{k}" for k in range(n)]
    card = [int(rng.integers(2, 4)) for _ in range(n)]
    parents: list[list[int]] = [[]]
    for j in range(1, n):
        lo = max(0, j - 8)
        k = min(j - lo, int(rng.integers(2, 5)))
        parents.append(sorted(int(a) for a in rng.choice(np.arange(lo, j), k, replace=False)))
    tables = {}
    for j, v in enumerate(names):
        cols = rng.dirichlet(np.ones(card[j]), size=math.prod(card[p] for p in parents[j])).T
        tables[v] = cols.reshape([card[j], *(card[p] for p in parents[j])])
    return theta_from_tables([(names[p], names[j]) for j in range(n) for p in parents[j]],
                             {v: list(range(card[j])) for j, v in enumerate(names)}, tables,
                             parents_order={names[j]: [names[p] for p in parents[j]]
                                            for j in range(n)})


def test_a_split_propagation_stays_within_its_budget():
    """On a banded network whose messages and cliques hold far more than the result, a budget
    of a quarter of the working memory splits the joint states; tracemalloc's peak stays
    within that budget (eight bytes an entry, plus the Python objects around them), and the
    tables equal the unsplit propagation's."""
    theta = _banded(300, 3)
    attrs = theta.sort([f"X{j}" for j in (0, 74, 149, 224, 299)])
    structure, cards, idx, batch, result, working = _needs(theta, attrs)
    assert working > 4 * result  # the case this test is for
    budget = result + working // 4
    split = _split(structure, idx, cards, budget)
    assert split is not None and math.prod(split[0]) < batch
    one = attribute_joints(theta, attrs, 0)
    parts, peak = _traced_peak(lambda: attribute_joints(theta, attrs, 0, max_held=budget))
    assert one is not None and parts is not None
    assert peak <= 8 * budget + 2**20, (peak, 8 * budget)
    assert peak < 8 * (result + working) / 2  # the split saved memory
    for a, b in zip(parts.tables, one.tables, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
