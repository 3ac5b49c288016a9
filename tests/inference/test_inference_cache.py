"""The per-Theta inference cache: an explicit object of named, typed entry families behind one
lock, its influences capped and keyed by the table limit they were computed under."""

import threading

import pytest

import quiltpriv as qp
from quiltpriv.inference.cache import (
    INFLUENCE_CACHE_SIZE,
    Entries,
    InferenceCache,
    Kind,
    Value,
)


def _names() -> set[str]:
    cache = InferenceCache()
    names = set()
    for attr in dir(InferenceCache):
        if isinstance(getattr(InferenceCache, attr), property):
            entry = getattr(cache, attr)
            assert isinstance(entry, Entries | Value)
            names.add(attr)
    return names


def test_every_stored_entry_is_a_named_kind_and_reads_back():
    theta = qp.load_model("student")
    assert theta._cache is None  # created on first use
    for method in ("elimination", "junction_tree"):
        qp.max_influence(theta, "income", ["gender"], inference=method)
        qp.plan(theta, qp.CountQuery(["height", "sat"], 100), ["income", "weight"], 1.0,
                inference=method)
    cache = InferenceCache.of(theta)
    assert cache is InferenceCache.of(theta) is theta._cache
    stored = {name for name in cache.kinds()}
    # each kind is stored under its attribute's name (log2_floors under log2_floor), or is
    # declared by the module that owns it
    assert stored <= _names() | {"log2_floor", "prepared", "junction_tree",
                                 "junction_structure", "fill_structure"}
    assert len(cache.influence) > 0
    for key in cache.influence.keys():
        member, node, quilt, engine, settings, max_table = key
        assert engine in ("elimination", "junction_tree") and max_table > 0
        assert cache.influence[key][3] == engine
    assert cache.cardinalities.get() == tuple(theta.cardinality[v] for v in theta.nodes)
    cache.clear()
    assert cache.kinds() == [] and len(cache.influence) == 0
    qp.max_influence(theta, "income", ["gender"])  # recomputed after a clear
    assert len(cache.influence) == 1


def test_entries_and_values():
    cache = InferenceCache(influence_limit=2)
    assert cache.influence_limit == 2 and InferenceCache().influence_limit == INFLUENCE_CACHE_SIZE
    assert cache.floating.get(0) is None and 0 not in cache.floating
    cache.floating[0] = True
    assert cache.floating[0] is True and cache.floating.keys() == [0]
    trees = cache.entries(Kind[int, str]("junction_tree"))  # a kind declared elsewhere
    trees[1] = "tree"
    assert 1 in trees and trees.get(1) == "tree" and cache.entries(Kind("junction_tree"))[1]
    assert cache.exact_tables.setdefault(3, {}) is cache.exact_tables.setdefault(3, {"x": 1})
    assert cache.parent_indices.set(((), (0,))) == ((), (0,))
    assert cache.parent_indices.get() == ((), (0,))
    for k in range(3):  # influences stay capped
        cache.influence[(0, "a", (f"q{k}",), "python", None, 8)] = (float(k), None, "float64",
                                                                      "python")
    assert [k[2] for k in cache.influence.keys()] == [("q1",), ("q2",)]
    assert cache.kinds() == ["exact_tables", "floating", "influence", "junction_tree",
                             "parent_indices"]


def test_a_smaller_table_limit_does_not_reuse_a_larger_ones_result():
    """The planner's result must not depend on what an earlier call left in the cache: an
    influence computed under a larger limit is not an answer under a smaller one."""
    theta = qp.load_model("student")
    big = qp.max_influence(theta, "income", ["gender", "height"], max_table=10**6)
    assert big.value > 0
    with pytest.raises(qp.InfluenceTooExpensive):
        qp.max_influence(theta, "income", ["gender", "height"], max_table=4)
    assert {k[-1] for k in InferenceCache.of(theta).influence.keys()} == {10**6}


def test_threads_sharing_a_theta_share_one_cache_and_agree():
    """Many threads on one Theta (the explorer's case) with a tiny influence cap, so that
    evictions race with reads: one cache object, every answer equal to the serial one."""
    theta = qp.load_model("student")
    nodes = theta.nodes
    queries = [(nodes[i], [nodes[j]]) for i in range(len(nodes)) for j in range(len(nodes))
               if i != j]
    serial = {(n, tuple(q)): qp.max_influence(qp.load_model("student"), n, q).value
              for n, q in queries}
    caches: list[InferenceCache] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def work(offset: int) -> None:
        try:
            start.wait()
            cache = InferenceCache.of(theta)
            caches.append(cache)
            cache.influence_limit = 3
            for k in range(3 * len(queries)):
                n, q = queries[(k + offset) % len(queries)]
                assert qp.max_influence(theta, n, q).value == serial[(n, tuple(q))]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len({id(c) for c in caches}) == 1
    assert len(caches[0].influence) <= 3


def test_charged_entries_stay_within_the_limit_most_recent_kept():
    cache = InferenceCache()
    sized = cache.entries(Kind[int, str]("sized", lru=True))
    for k, value in enumerate(("aa", "bbb", "c")):
        assert sized.charge(k, value, len, 4) == value
    assert sized.keys() == [1, 2]  # "aa" dropped: 2 + 3 + 1 > 4
    assert sized.get(1) == "bbb"  # a read makes it the most recent
    assert sized.charge(3, "dd", len, 4) == "dd"
    assert sized.keys() == [3]  # the least recent first: "c", then "bbb"
    assert sized.charge(3, "other", len, 4) == "dd"  # a key's value is kept, not replaced
    assert sized.charge(4, "eeeee", len, 4) == "eeeee"  # its own entry is always kept
    assert sized.keys() == [4]


def test_the_junction_trees_are_charged_against_the_memory_budget():
    """Each member's calibrated tree is kept as long as the Theta: the trees together stay
    within the call's budget (the least recently used others dropped), a tree above it is not
    built (elimination answers instead), and the answers are those of the exact engine."""
    import reference as ref

    from quiltpriv.inference.engines.base import EngineSettings
    from quiltpriv.inference.junction_tree import TREES, junction_tree, tree_structure
    from quiltpriv.utils.memory import BYTES_PER_TABLE_ENTRY

    theta = ref.random_network(15_600, n_nodes=7, edge_prob=0.4, theta_size=3).to_theta()
    structure = tree_structure(theta)
    size = structure.size
    # a query inside one clique: the tree answers it without a contraction step
    clique = max(structure.cliques, key=len)
    node, quilt = theta.nodes[clique[0]], [theta.nodes[v] for v in clique[1:]]
    want = qp.max_influence(theta, node, quilt, engine="exact").value
    trees = InferenceCache.of(theta).entries(TREES)
    one_tree = (size + size // 2) * BYTES_PER_TABLE_ENTRY  # room for one tree, not two
    for m in range(3):
        assert junction_tree(theta, m, max_memory=one_tree) is not None
        assert trees.keys() == [m]
    got = qp.max_influence(theta, node, quilt, engine="junction_tree", max_memory=one_tree)
    assert got.engine == "junction_tree" and len(trees) == 1
    assert want - 1e-12 <= got.value <= want + 1e-9
    InferenceCache.of(theta).clear()
    assert junction_tree(theta, 0, max_memory=(size - 1) * BYTES_PER_TABLE_ENTRY) is None
    assert junction_tree(theta, 0, max_tree=size - 1) is None and len(trees) == 0
    below = qp.max_influence(theta, node, quilt, engine="junction_tree",
                             max_memory=(size - 1) * BYTES_PER_TABLE_ENTRY)
    assert below.engine == "elimination" and len(trees) == 0
    assert want - 1e-12 <= below.value <= want + 1e-9
    small = EngineSettings(max_tree=size - 1)
    assert qp.max_influence(theta, node, quilt, engine="junction_tree",
                            settings=small).engine == "elimination"
    assert len(trees) == 0
    assert qp.max_influence(theta, node, quilt, engine="junction_tree").engine == "junction_tree"
    assert len(trees) == 3  # under the default budget every member's tree is kept
