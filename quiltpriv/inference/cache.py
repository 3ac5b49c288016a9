"""What inference remembers about one Theta: one named, typed entry per kind of result.

A :class:`~quiltpriv.model.network.Theta` is immutable, so anything computed from it (a node
order, a junction tree, a member's influence for a quilt) stays valid for its lifetime. Theta
holds the storage (:class:`~quiltpriv.model.network.ThetaCache`, a dict that caps the number of
influences kept); :class:`InferenceCache` is the only way :mod:`quiltpriv.inference.influence`
and :mod:`quiltpriv.inference.junction_tree` read and write it, so every entry has a name, a key
type and a value type, and no module spells the storage's keys.

Thread safety is the dict's: each read and each write is one dict operation (atomic under the
GIL). Two threads that miss the same entry both compute it and store equal values; nothing is
ever half-written.
"""

from __future__ import annotations

from collections.abc import Hashable, MutableMapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from quiltpriv.inference.engines.base import EngineSettings
    from quiltpriv.inference.engines.bucket import _Prepared
    from quiltpriv.inference.junction_tree import JunctionTree, TreeStructure
    from quiltpriv.model.network import Theta

__all__ = ["Entries", "InferenceCache", "Value"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_Store = MutableMapping[Any, Any]


def _store_key(name: str, key: Hashable) -> tuple[Any, ...]:
    # The storage's key: the entry's name, then the key's parts (a tuple key is spread out),
    # e.g. ("influence", member, node, quilt, engine, settings). ThetaCache caps entries by
    # the name.
    return (name, *key) if type(key) is tuple else (name, key)


class Entries(Generic[K, V]):
    """A family of cached values of one kind, keyed by ``K`` (a member, a query, ...)."""

    __slots__ = ("_name", "_store")

    def __init__(self, store: _Store, name: str) -> None:
        self._store = store
        self._name = name

    def get(self, key: K) -> V | None:
        """The cached value, or None when there is none (yet, or evicted)."""
        return self._store.get(_store_key(self._name, key))

    def __contains__(self, key: K) -> bool:
        return _store_key(self._name, key) in self._store

    def __getitem__(self, key: K) -> V:
        return self._store[_store_key(self._name, key)]

    def __setitem__(self, key: K, value: V) -> None:
        self._store[_store_key(self._name, key)] = value

    def setdefault(self, key: K, default: V) -> V:
        """The cached value, storing ``default`` first when there is none (one dict step)."""
        return self._store.setdefault(_store_key(self._name, key), default)


class Value(Generic[V]):
    """One cached value of a kind that has a single instance per Theta."""

    __slots__ = ("_key", "_store")

    def __init__(self, store: _Store, name: str) -> None:
        self._store = store
        self._key = (name,)

    def get(self) -> V | None:
        return self._store.get(self._key)

    def set(self, value: V) -> V:
        """Store ``value`` and return it."""
        self._store[self._key] = value
        return value


class InferenceCache:
    """The typed entries of one Theta's inference cache.

    Attributes
    ----------
    influence : Entries[(member, node, quilt, engine, settings),
                        (value, pair, arithmetic, engine that answered)]
        One member's max-influence of a quilt (the store keeps the most recent ones only).
    log2_floors : Entries[member, tuple of int]
        Per node, ``floor(log2)`` of the least positive probability of its CPD.
    float_safe : Entries[(member, log2 floor), bool]
        Whether a whole-network float64 product cannot underflow (stays above the floor).
    rounding_depth : Entries[(inference method, merge limit), int]
        The operation depth bounding float64 rounding errors.
    exact_tables : Entries[member, dict]
        Per node, its CPD as exact integers and a power-of-two exponent.
    prepared : Entries[(member, fold limit, log2 floor), NamedTuple]
        Everything variable elimination reads for one member, in one entry (a named tuple of
        :mod:`quiltpriv.inference.engines.bucket`).
    kernel : Entries[(member, fold limit, log2 floor), compiled network]
        The compiled kernel's network of one member.
    kernel_unfolded : Entries[member, compiled network]
        The same without folded CPDs (tried when no order of the folded one fits).
    folded : Entries[(member, fold limit, log2 floor), tuple]
        Per node, its CPD with its private ancestors summed out (or None).
    sorted_tables : Entries[member, (scopes, tables)]
        Each CPD with its axes in increasing node index.
    floating : Entries[member, bool]
        Whether a member's CPDs are floating point.
    junction_tree : Entries[member, JunctionTree or None]
        One member's calibrated junction tree (None: too large, or not floating point).
    scopes_by_position, parent_indices, cardinalities, junction_structure : Value
        Structures of the DAG shared by every member.
    fill_structure : Value
        The junction tree of a greedy min-fill triangulation (the shared propagation's).
    fill_structure_over : Value
        A clique size that triangulation is known to exceed (it was stopped there).
    """

    __slots__ = ("_store",)

    def __init__(self, store: _Store) -> None:
        self._store = store

    @classmethod
    def of(cls, theta: Theta) -> InferenceCache:
        """The cache of ``theta`` (a view of the storage Theta holds)."""
        return cls(theta._cache)

    @property
    def influence(self) -> Entries[tuple[int, str, tuple[str, ...], str, EngineSettings],
                                  tuple[float, Any, str, str]]:
        return Entries(self._store, "influence")

    @property
    def log2_floors(self) -> Entries[int, tuple[int, ...]]:
        return Entries(self._store, "log2_floor")

    @property
    def float_safe(self) -> Entries[tuple[int, int], bool]:
        return Entries(self._store, "float_safe")

    @property
    def rounding_depth(self) -> Entries[tuple[str, int], int]:
        return Entries(self._store, "rounding_depth")

    @property
    def exact_tables(self) -> Entries[int, dict[str, Any]]:
        return Entries(self._store, "exact_tables")

    @property
    def prepared(self) -> Entries[tuple[int, int, int], _Prepared]:
        return Entries(self._store, "prepared")

    @property
    def kernel(self) -> Entries[tuple[int, int, int], Any]:
        return Entries(self._store, "kernel")

    @property
    def kernel_unfolded(self) -> Entries[int, Any]:
        return Entries(self._store, "kernel_unfolded")

    @property
    def folded(self) -> Entries[tuple[int, int, int], tuple[Any, ...]]:
        return Entries(self._store, "folded")

    @property
    def sorted_tables(self) -> Entries[int, tuple[tuple[tuple[int, ...], ...],
                                                  tuple[np.ndarray, ...]]]:
        return Entries(self._store, "sorted_tables")

    @property
    def floating(self) -> Entries[int, bool]:
        return Entries(self._store, "floating")

    @property
    def junction_tree(self) -> Entries[int, JunctionTree | None]:
        return Entries(self._store, "junction_tree")

    @property
    def scopes_by_position(self) -> Value[tuple[tuple[int, ...], ...]]:
        return Value(self._store, "scopes_by_position")

    @property
    def parent_indices(self) -> Value[tuple[tuple[int, ...], ...]]:
        return Value(self._store, "parent_indices")

    @property
    def cardinalities(self) -> Value[tuple[int, ...]]:
        return Value(self._store, "cardinalities")

    @property
    def junction_structure(self) -> Value[TreeStructure]:
        return Value(self._store, "junction_structure")

    @property
    def fill_structure(self) -> Value[TreeStructure]:
        return Value(self._store, "fill_structure")

    @property
    def fill_structure_over(self) -> Value[int]:
        return Value(self._store, "fill_structure_over")
