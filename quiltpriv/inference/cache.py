"""What inference remembers about one Theta: an :class:`InferenceCache`, one named, typed
entry family per kind of result, behind one lock.

A :class:`~quiltpriv.model.network.Theta` is immutable, so anything computed from it (a node
order, a junction tree, a member's influence for a quilt) stays valid for its lifetime. Each
Theta gets one :class:`InferenceCache` (:meth:`InferenceCache.of`, created on first use and
never shipped to a joblib worker); the engines read and write it through its typed entries,
so every entry has a name, a key type and a value type, and no module spells storage keys.

Thread safety: the explorer serves requests from several threads over one Theta, so every read
and write takes the cache's lock (re-entrant; held for one dict operation, never while a
value is computed). Two threads that miss the same entry both compute it and store equal
values; nothing is ever half-written, and the least-recently-used bookkeeping of the
influences cannot be torn.

Bounds: influences, one per quilt a search evaluates, are kept for the
:data:`INFLUENCE_CACHE_SIZE` most recently used (:attr:`InferenceCache.influence_limit`), so a
long search cannot grow memory without bound; their keys include the table limit
(``max_table``) they were computed under, so a call with a smaller limit never reuses a
result that limit would have refused (a plan does not depend on what an earlier, more
generous call left behind). The other kinds are per member or per Theta, a handful each.

Kinds whose values are another module's types are declared by that module, as a
:class:`Kind` (the prepared models of :mod:`quiltpriv.inference.engines.bucket`, the junction
trees and their structures of :mod:`quiltpriv.inference.junction_tree`), and read through
:meth:`InferenceCache.entries` and :meth:`InferenceCache.value`: this module names no engine
and imports none, so the engines own what they keep. A kind may be *charged*
(:meth:`Entries.charge`): its entries together stay within a size the caller passes (the
calibrated junction trees, within the call's memory budget).

Benchmarks and tests look at it through :meth:`InferenceCache.clear`,
:meth:`InferenceCache.kinds` and each entry family's ``len``/``keys``/``clear``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from quiltpriv.inference.engines.base import EngineSettings
    from quiltpriv.model.network import Theta

__all__ = ["INFLUENCE_CACHE_SIZE", "Entries", "InferenceCache", "Kind", "Value"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Most influences one Theta's cache keeps (least recently used out first).
INFLUENCE_CACHE_SIZE = 2**16

# Creating a Theta's cache (two threads asking at once get the same one).
_CREATING = threading.Lock()


class Kind(Generic[K, V]):
    """One kind of cached value, declared by the module that computes it: its name (unique
    per cache), and whether reads keep it in least-recently-used order (``lru``: the
    influences, whose number is capped, and the charged junction trees).

    ``K`` is the key's type (None for a kind with one value per Theta, read through
    :meth:`InferenceCache.value`), ``V`` the value's.
    """

    __slots__ = ("lru", "name")

    def __init__(self, name: str, *, lru: bool = False) -> None:
        self.name = name
        self.lru = lru

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


class Entries(Generic[K, V]):
    """A family of cached values of one kind, keyed by ``K`` (a member, a query, ...)."""

    __slots__ = ("_cache", "_lru", "_name", "_store")

    def __init__(self, cache: InferenceCache, name: str, lru: bool = False) -> None:
        self._cache = cache
        self._name = name
        self._lru = lru or name == "influence"
        self._store = cache._family(name, self._lru)

    def get(self, key: K) -> V | None:
        """The cached value, or None when there is none (yet, or evicted)."""
        with self._cache._lock:
            value = self._store.get(key)
            if value is not None and self._lru:
                self._store.move_to_end(key)  # type: ignore[attr-defined]
            return value

    def charge(self, key: K, value: V, size: Callable[[V], int], limit: int) -> V:
        """Store ``value`` (unless ``key`` holds one already) and drop the least recently
        used other entries until the ``size`` of those kept sums to at most ``limit``; the
        value stored. ``key``'s own entry is always kept (the caller checked that it fits
        ``limit`` alone), so what is held never exceeds the largest limit in use."""
        with self._cache._lock:
            kept = self._store.setdefault(key, value)
            if self._lru:
                self._store.move_to_end(key)  # type: ignore[attr-defined]
            total = sum(size(v) for v in self._store.values())
            for other in list(self._store):
                if total <= limit:
                    break
                if other != key:
                    total -= size(self._store.pop(other))
            return kept

    def __contains__(self, key: K) -> bool:
        with self._cache._lock:
            return key in self._store

    def __getitem__(self, key: K) -> V:
        with self._cache._lock:
            return self._store[key]

    def __setitem__(self, key: K, value: V) -> None:
        with self._cache._lock:
            self._store[key] = value
            if self._name == "influence":
                self._cache._evict(self._store)

    def setdefault(self, key: K, default: V) -> V:
        """The cached value, storing ``default`` first when there is none."""
        with self._cache._lock:
            if key not in self._store:
                self[key] = default
            return self._store[key]

    def __len__(self) -> int:
        with self._cache._lock:
            return len(self._store)

    def keys(self) -> list[K]:
        """The keys held now (a copy), oldest first for influences."""
        with self._cache._lock:
            return list(self._store)

    def clear(self) -> None:
        """Forget every entry of this kind."""
        with self._cache._lock:
            self._store.clear()


class Value(Generic[V]):
    """One cached value of a kind that has a single instance per Theta."""

    __slots__ = ("_cache", "_store")

    def __init__(self, cache: InferenceCache, name: str) -> None:
        self._cache = cache
        self._store = cache._family(name, False)

    def get(self) -> V | None:
        with self._cache._lock:
            return self._store.get(None)

    def set(self, value: V) -> V:
        """Store ``value`` and return it."""
        with self._cache._lock:
            self._store[None] = value
            return value


class InferenceCache:
    """The typed entries of one Theta's inference cache (module text).

    Parameters
    ----------
    influence_limit : int
        Most influences kept (least recently used out first).

    Attributes
    ----------
    influence : Entries[(member, node, quilt, engine, settings, max_table),
                        (value, pair, arithmetic, engine that answered)]
        One member's max-influence of a quilt (the most recently used
        ``influence_limit`` only).
    log2_floors : Entries[member, tuple of int]
        Per node, ``floor(log2)`` of the least positive probability of its CPD.
    float_safe : Entries[(member, log2 floor), bool]
        Whether a whole-network float64 product cannot underflow (stays above the floor).
    rounding_depth : Entries[(inference method, merge limit), int]
        The operation depth bounding float64 rounding errors.
    exact_tables : Entries[member, dict]
        Per node, its CPD as exact integers and a power-of-two exponent.
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
    scopes_by_position, parent_indices, cardinalities : Value
        Structures of the DAG shared by every member.
    fill_structure_over : Value
        A clique size the min-fill triangulation is known to exceed (it was stopped there).

    Notes
    -----
    The kinds other modules declare (:class:`Kind`, read through :meth:`entries` and
    :meth:`value`): ``prepared``, everything bucket elimination reads for one member
    (:data:`quiltpriv.inference.engines.bucket.PREPARED`); ``junction_tree``, the members'
    calibrated junction trees, charged against the memory budget
    (:data:`quiltpriv.inference.junction_tree.TREES`); ``junction_structure`` and
    ``fill_structure``, the min-weight and min-fill junction trees' structures.
    """

    __slots__ = ("_families", "_lock", "influence_limit")

    def __init__(self, influence_limit: int = INFLUENCE_CACHE_SIZE) -> None:
        self.influence_limit = influence_limit
        self._lock = threading.RLock()
        self._families: dict[str, dict[Any, Any]] = {"influence": OrderedDict()}

    @classmethod
    def of(cls, theta: Theta) -> InferenceCache:
        """The cache of ``theta``, created on first use."""
        cache = theta._cache
        if cache is None:
            with _CREATING:
                cache = theta._cache
                if cache is None:
                    cache = theta._cache = cls()
        return cache

    def _family(self, name: str, lru: bool) -> dict[Any, Any]:
        with self._lock:
            store = self._families.get(name)
            if store is None:
                store = self._families[name] = OrderedDict() if lru else {}
            return store

    def entries(self, kind: Kind[K, V]) -> Entries[K, V]:
        """The entries of a kind declared elsewhere."""
        return Entries(self, kind.name, kind.lru)

    def value(self, kind: Kind[None, V]) -> Value[V]:
        """The single value of a kind declared elsewhere."""
        return Value(self, kind.name)

    def _evict(self, store: dict[Any, Any]) -> None:
        # the caller holds the lock; the influences' store is the OrderedDict, newest last
        while len(store) > self.influence_limit:
            store.popitem(last=False)  # type: ignore[call-arg]

    def kinds(self) -> list[str]:
        """The names of the kinds that hold entries now, sorted."""
        with self._lock:
            return sorted(name for name, store in self._families.items() if store)

    def clear(self) -> None:
        """Forget everything (the next query recomputes its structures too)."""
        with self._lock:
            for store in self._families.values():
                store.clear()

    @property
    def influence(self) -> Entries[tuple[int, str, tuple[str, ...], str, EngineSettings, int],
                                  tuple[float, Any, str, str]]:
        return Entries(self, "influence")

    @property
    def log2_floors(self) -> Entries[int, tuple[int, ...]]:
        return Entries(self, "log2_floor")

    @property
    def float_safe(self) -> Entries[tuple[int, int], bool]:
        return Entries(self, "float_safe")

    @property
    def rounding_depth(self) -> Entries[tuple[str, int], int]:
        return Entries(self, "rounding_depth")

    @property
    def exact_tables(self) -> Entries[int, dict[str, Any]]:
        return Entries(self, "exact_tables")

    @property
    def kernel(self) -> Entries[tuple[int, int, int], Any]:
        return Entries(self, "kernel")

    @property
    def kernel_unfolded(self) -> Entries[int, Any]:
        return Entries(self, "kernel_unfolded")

    @property
    def folded(self) -> Entries[tuple[int, int, int], tuple[Any, ...]]:
        return Entries(self, "folded")

    @property
    def sorted_tables(self) -> Entries[int, tuple[tuple[tuple[int, ...], ...],
                                                  tuple[np.ndarray, ...]]]:
        return Entries(self, "sorted_tables")

    @property
    def floating(self) -> Entries[int, bool]:
        return Entries(self, "floating")

    @property
    def scopes_by_position(self) -> Value[tuple[tuple[int, ...], ...]]:
        return Value(self, "scopes_by_position")

    @property
    def parent_indices(self) -> Value[tuple[tuple[int, ...], ...]]:
        return Value(self, "parent_indices")

    @property
    def cardinalities(self) -> Value[tuple[int, ...]]:
        return Value(self, "cardinalities")

    @property
    def fill_structure_over(self) -> Value[int]:
        return Value(self, "fill_structure_over")
