"""The engine interface: which engine computes a joint, and the settings every engine reads.

An *engine* computes the exact joint marginal ``P(phi_nodes)`` of a query on one member of
Theta. The public functions that compute joints and influences
(:func:`quiltpriv.inference.influence.joint_marginal`,
:func:`~quiltpriv.inference.influence.max_influence`,
:func:`~quiltpriv.inference.influence.influence_upper_bound`) take ``engine=`` (one of
:data:`ENGINES`) and ``settings=`` (an :class:`EngineSettings`), and every
:class:`~quiltpriv.inference.result.Influence` records which engine answered.

============================  ==================================================================
``engine=``                   what runs
============================  ==================================================================
``"auto"`` (default)          ``"kernel"`` when the compiled kernel is loaded
                              (:func:`~quiltpriv.inference.compiled.compiled_kernel`), else
                              ``"python"``
``"kernel"``                  bucket elimination and Definition 8 in the compiled kernel
                              (:mod:`quiltpriv.inference.engines.kernel`), in the cheapest of
                              its priced orders; refused (ParameterError) when the kernel is
                              not loaded
``"python"``                  bucket elimination in numpy
                              (:mod:`quiltpriv.inference.engines.bucket`)
``"elimination"``             variable elimination in a greedy min-size order of the query's
                              own (:mod:`quiltpriv.inference.engines.elimination`)
``"junction_tree"``           the member's calibrated junction tree
                              (:mod:`quiltpriv.inference.engines.junction`), elimination where
                              the tree is too large
``"exact"``                   exact integer elimination
                              (:mod:`quiltpriv.inference.engines.exact`) for every
                              floating-point member, whatever its magnitudes
``"cutset"``                  conditioning on a small cutset, one elimination per state
                              (:mod:`quiltpriv.inference.engines.cutset`), each by the kernel
                              when it is loaded (``"cutset+kernel"``), else by the Python
                              order (``"cutset+python"``)
``"junction_tree_batched"``   one batched propagation per member over the min-fill junction
                              tree, ``P(phi_v, phi_A)`` for every node ``v`` at once
                              (:mod:`quiltpriv.inference.engines.batched`); what the
                              planner's ``"auto"`` uses for plans of many sensitive attributes
============================  ==================================================================

Every engine is exact; they differ in speed and rounding only. Where float64 could have
underflowed, the float engines hand the query to ``"exact"``, and ``"kernel"`` and ``"python"``
hand a query no order fits to ``"cutset"`` before refusing it; the result then names the
engine that answered (``"exact"``, ``"cutset+kernel"``, ``"cutset+python"``). Each answer
(:class:`Answer`) carries the rounding depth its engine proves, from which the influence's
upward rounding is computed (:mod:`quiltpriv.inference.rounding`).
``QUILTPRIV_NO_KERNEL=1`` in the environment keeps the kernel from loading, so ``"auto"`` is
``"python"``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, runtime_checkable

from quiltpriv.errors import ParameterError
from quiltpriv.inference.methods import check_inference

if TYPE_CHECKING:
    import numpy as np

    from quiltpriv.model.network import Theta

__all__ = ["DEFAULT_SETTINGS", "ENGINES", "Answer", "Engine", "EngineName", "EngineSettings",
           "JointQuery", "check_engine", "check_settings", "choose_engine"]

#: The engines a caller may ask for (see the module text).
EngineName = Literal["auto", "kernel", "python", "elimination", "junction_tree", "exact",
                     "cutset", "junction_tree_batched"]
ENGINES: tuple[EngineName, ...] = (
    "auto", "kernel", "python", "elimination", "junction_tree", "exact", "cutset",
    "junction_tree_batched")

#: The least ``safe_log2_floor``: ``2**-1000`` is 22 binary orders above the subnormal range
#: (which starts at ``2**-1022``), the margin that absorbs the rounding of the products.
LEAST_SAFE_LOG2_FLOOR = -1000


@dataclass(frozen=True)
class EngineSettings:
    """The tuning of the engines and of the planner's shared work: each field trades time for
    memory or speed, none changes a result beyond rounding (the planner's choice of quilt
    only among ties), and none can make float64 trusted where it could underflow.

    Parameters
    ----------
    bucket_limit : int
        ``"python"``: a query whose bucket elimination in the network's global order would
        build a table above this many entries is redone in a greedy order of its own (measured
        on the bundled networks: the restricted global order is cheapest for most queries, but
        on some munin queries it builds tables the query-specific order avoids).
    greedy_from : int
        ``"python"``: queries with at least this many (folded) factors are ordered greedily
        from the start (andes: slowest query 5x -> 11x faster than pgmpy; smaller networks:
        unchanged).
    merge_limit : int
        ``"python"``: consecutive elimination steps whose intermediate feeds the next step are
        done in one einsum while their product has at most this many entries. It also bounds
        the terms one step sums, so the rounding bound grows with it.
    fold_limit : int
        Largest table (entries, counting the summed-out variable) a per-Theta fold of private
        ancestors into their child's CPD may build (``"python"`` and ``"kernel"``).
    small_joint : int
        Joint tables up to this many entries take the pure-Python path of Definition 8 (a
        dozen numpy calls on a tiny array cost more than the loop); without the kernel only.
    exact_max_table : int
        Largest intermediate table (entries) of ``"exact"``: Python integers cost far more
        than floats, so it refuses sooner (the planner then bounds or skips the quilt, which
        only adds noise).
    max_cutset_states : int
        Most joint states of the cutset a query no order fits is conditioned on (each one
        elimination).
    max_cutset_work : int
        Most table entries the conditioned eliminations may build in all, by the Python order
        (``2**31``: about 20 s of numpy on the 2-core test machine).
    max_cutset_kernel_work : int
        The same by the compiled kernel (``2**34``: 20-35 s there, measured at 1.1-2 ns an
        entry on diabetes).
    max_tree : int
        ``"junction_tree"``: most entries (cliques plus separators) one member's calibrated
        tree may hold (``2**26``: 512 MiB of float64); a larger tree is not built and the
        query is eliminated instead. The trees kept for a Theta are also charged against the
        call's memory budget (``max_table``, :func:`quiltpriv.inference.junction_tree.
        junction_tree`).
    max_chunks : int
        The batched junction-tree propagation
        (:func:`quiltpriv.inference.attribute_joints.attribute_joints`): most chunks the joint
        states of the query's attributes are split into to fit its memory cap; each chunk is a
        whole propagation, whose fixed cost per clique (Python and numpy calls, about 10
        microseconds) is paid once per chunk, so beyond this the planner eliminates per
        attribute.
    max_propagation_work : int
        The batched junction-tree propagation: most table entries it may touch (twice the
        tree's size times the joint states of the query's attributes,
        :func:`quiltpriv.inference.attribute_joints.propagation_work`; ``2**32``); beyond it
        each influence is computed on its own.
    max_propagation_held : int or None
        The batched junction-tree propagation: most table entries it may hold at once (its
        messages, a clique's tables and its result). None (the default): as many as the
        call's memory budget holds (``max_table``, :func:`quiltpriv.utils.memory.table_limit`:
        ``max_memory`` at :data:`~quiltpriv.utils.memory.BYTES_PER_TABLE_ENTRY` bytes an
        entry, four times the float64 it holds); a number lowers that, never raises it. A
        propagation that does not fit, even split into ``max_chunks`` chunks, is not run and
        each influence is computed on its own (never refused for it).
    shared_min_sensitive : int
        The planner (:func:`quiltpriv.plan`) shares its graph walks across the sensitive
        attributes, and with ``engine="auto"`` one batched junction-tree propagation per
        member, when a plan has at least this many sensitive attributes (and its query at
        most ``shared_max_attributes`` attributes). Its verification must be given the same
        settings to recompute the plan's own numbers (as for every ``shared_*`` setting).
    shared_max_attributes : int
        The planner shares its work only for a query of at most this many attributes (the
        propagation's tables grow with the joint states of the query's attributes).
    shared_work_ratio : int
        The planner runs the shared propagation where its work is at most this many times the
        number of sensitive attributes times the network's size (and at most
        ``max_propagation_work``), a cheap stand-in for what eliminating per attribute would
        cost (measured: on the long benchmark networks with a 3-attribute query the ratio is
        0.7-73 and sharing is 10-1000x faster; on pgmpy's pigs it is 230, and the propagation,
        0.8 s, would cost more than every elimination, 0.16 s). 0 never takes this rule.
    shared_price_sample : int
        Where ``shared_work_ratio`` refuses, the planner prices eliminating per attribute on
        this many sensitive attributes evenly spaced in the network's order (scaled to all of
        them) and runs the propagation when its work is at most that price. At least 1.
    safe_log2_floor : int
        float64 is trusted without the kernel's IEEE flag only where the product of the least
        positive CPD entries of the query's ancestral set is at least ``2**safe_log2_floor``.
        At least :data:`LEAST_SAFE_LOG2_FLOOR` (-1000): it may be raised (more queries computed
        in exact integers), never lowered.
    """

    bucket_limit: int = 2**16
    greedy_from: int = 30
    merge_limit: int = 256
    fold_limit: int = 2**12
    small_joint: int = 32
    exact_max_table: int = 2**16
    max_cutset_states: int = 256
    max_cutset_work: int = 2**31
    max_cutset_kernel_work: int = 2**34
    max_tree: int = 2**26
    max_chunks: int = 64
    max_propagation_work: int = 2**32
    max_propagation_held: int | None = None
    shared_min_sensitive: int = 256
    shared_max_attributes: int = 16
    shared_work_ratio: int = 100
    shared_price_sample: int = 8
    safe_log2_floor: int = LEAST_SAFE_LOG2_FLOOR

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "max_propagation_held":
                continue
            if type(value) is not int:
                raise ParameterError(f"EngineSettings.{f.name} must be an int, got {value!r}")
            if f.name != "safe_log2_floor" and value < 0:
                raise ParameterError(
                    f"EngineSettings.{f.name} must be non-negative, got {value!r}")
        if self.shared_price_sample < 1:
            raise ParameterError("EngineSettings.shared_price_sample must be at least 1, got "
                                 f"{self.shared_price_sample!r}")
        if self.safe_log2_floor < LEAST_SAFE_LOG2_FLOOR:
            raise ParameterError(
                f"EngineSettings.safe_log2_floor must be at least {LEAST_SAFE_LOG2_FLOOR} (a "
                f"lower floor could trust float64 where it underflows); got "
                f"{self.safe_log2_floor}")


#: The settings used when none are given.
DEFAULT_SETTINGS = EngineSettings()


class JointQuery(NamedTuple):
    """One joint marginal asked of an engine: ``P(phi_nodes)`` under ``theta.members[member]``
    (a floating-point member), its intermediates within ``max_table`` entries, by
    ``deadline`` (``time.monotonic()``, or None)."""

    theta: Theta
    nodes: tuple[str, ...]
    member: int
    max_table: int
    settings: EngineSettings = DEFAULT_SETTINGS
    deadline: float | None = None


class Answer(NamedTuple):
    """An engine's answer to a :class:`JointQuery`."""

    table: np.ndarray
    """``P(phi_nodes)``, axes in the order of the query's nodes."""
    engine: str
    """The engine that answered: the one asked, or the one it handed the query to (the
    kernel to ``"elimination"``, the junction tree to ``"elimination"``, ``"cutset"`` as
    ``"cutset+kernel"`` or ``"cutset+python"``)."""
    depth: int
    """``K``: every entry of ``table`` errs by at most ``gamma_K = K u / (1 - K u)``
    relative to the exact joint (``u = 2**-53``; Higham, *Accuracy and Stability of Numerical
    Algorithms*, Section 3.1), as the engine proves it for its own arithmetic
    (:mod:`quiltpriv.inference.rounding`)."""


@runtime_checkable
class Engine(Protocol):
    """The interface every engine implements (one class per module of
    :mod:`quiltpriv.inference.engines`; :mod:`quiltpriv.inference.influence` holds one
    instance of each, chosen by ``engine=``).

    ``name`` is the engine's name in :data:`ENGINES`. ``joint`` answers a :class:`JointQuery`
    with an :class:`Answer`: the table (axes in the order of ``query.nodes``), the name of the
    engine that answered (an engine may hand a query it cannot order to another: the kernel
    to the Python order, ``"elimination"``; the junction trees to elimination), and the
    rounding depth it proves. It returns None where float64 could have underflowed (the caller
    then asks ``"exact"``), and raises
    :class:`~quiltpriv.inference.budget.InfluenceTooExpensive` when no order fits
    ``max_table`` or the deadline passed. Every engine is exact up to float64 rounding.
    """

    name: str

    def joint(self, query: JointQuery) -> Answer | None: ...


def check_engine(engine: object) -> EngineName:
    """``engine`` if it names an engine of :data:`ENGINES`, else ParameterError.

    ``engine`` is untrusted (any object): this is the check that makes it an engine name.
    """
    for name in ENGINES:
        if engine == name and isinstance(engine, str):
            return name
    raise ParameterError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")


def choose_engine(engine: object, inference: object = "auto") -> EngineName:
    """The engine named by ``engine=`` and the older ``inference=`` together; ParameterError
    when either is not a name or they name different engines.

    ``inference="elimination"`` and ``"junction_tree"`` name the engines of the same name;
    ``"auto"`` (either) defers to the other. ``"auto"`` is returned unresolved: which engine it
    is depends on whether the kernel is loaded where the work runs.
    """
    name = check_engine(engine)
    method = check_inference(inference)
    if method == "auto":
        return name
    if name not in ("auto", method):
        raise ParameterError(f"inference={method!r} and engine={name!r} disagree "
                             "(inference= names an engine too: give engine= alone)")
    return method


def check_settings(settings: object) -> EngineSettings:
    """``settings``, or :data:`DEFAULT_SETTINGS` for None; ParameterError for anything else."""
    if settings is None:
        return DEFAULT_SETTINGS
    if not isinstance(settings, EngineSettings):
        raise ParameterError(
            f"settings must be an EngineSettings, got {type(settings).__name__}")
    return settings
