"""The typed per-Theta inference cache: every stored entry is one of its named kinds."""

import quiltpriv as qp
from quiltpriv.inference.cache import Entries, InferenceCache, Value
from quiltpriv.model.network import ThetaCache


def _names() -> set[str]:
    cache = InferenceCache(ThetaCache())
    names = set()
    for attr in dir(InferenceCache):
        if isinstance(getattr(InferenceCache, attr), property):
            entry = getattr(cache, attr)
            assert isinstance(entry, Entries | Value)
            names.add(entry._name if isinstance(entry, Entries) else entry._key[0])
    return names


def test_every_stored_entry_is_a_named_kind_and_reads_back():
    theta = qp.load_model("student")
    for method in ("elimination", "junction_tree"):
        qp.max_influence(theta, "income", ["gender"], inference=method)
        qp.plan(theta, qp.CountQuery(["height", "sat"], 100), ["income", "weight"], 1.0,
                inference=method)
    stored = list(theta._cache)
    assert {k[0] for k in stored} <= _names()
    cache = InferenceCache.of(theta)
    influences = [k for k in stored if k[0] == "influence"]
    assert influences
    for k in influences:
        assert cache.influence.get(k[1:]) is theta._cache[k]
    assert cache.cardinalities.get() == tuple(theta.cardinality[v] for v in theta.nodes)


def test_entries_and_values_write_through_to_the_store():
    store = ThetaCache(2)
    cache = InferenceCache(store)
    assert cache.floating.get(0) is None and 0 not in cache.floating
    cache.floating[0] = True
    assert store[("floating", 0)] is True and cache.floating[0] is True
    cache.junction_tree[1] = None  # None is a value: "too large", not "missing"
    assert 1 in cache.junction_tree and cache.junction_tree.get(1) is None
    assert cache.exact_tables.setdefault(3, {}) is cache.exact_tables.setdefault(3, {"x": 1})
    assert cache.parent_indices.set(((), (0,))) == ((), (0,))
    assert store[("parent_indices",)] == ((), (0,))
    for k in range(3):  # influences stay capped by the store
        cache.influence[(0, "a", (f"q{k}",), "auto")] = (float(k), None, "float64")
    assert [k for k in store if k[0] == "influence"] == [("influence", 0, "a", ("q1",), "auto"),
                                                         ("influence", 0, "a", ("q2",), "auto")]
