"""The one release flow: from a checked query value to a booked release record.

Every mechanism's release ends the same way, whatever checked its query and data first
(:meth:`quiltpriv.mechanisms.protocol.QueryMechanism.release` for every registered mechanism,
:func:`quiltpriv.mechanisms.apmqm_release.release` for an APMQM plan): the data's record
(hashes, never the data), the warning for a repeated release on the same data, the plain-words
warnings of what the guarantee does not cover, the record before drawing (for a ledger's
budget), the noise from :mod:`quiltpriv.mechanisms.noise` (exact, on a grid, from the secure
generator unless seeded), the ledger's append before the value is returned, and the warnings
after. :func:`release_flow` is that ending, written once, so that the two callers cannot drift
apart (tests/mechanisms/test_release_flow.py: the same plan released both ways on the same seed
gives the same record). The low-level ``result.release(value)`` of every mechanism
(:func:`quiltpriv.mechanisms.protocol.release_value`) ends the same way, with no data (a value
the caller computed: nothing to hash, no repeated-release check) and, where its noise is not
one Laplace scale per coordinate or a scalar Gaussian, its own ``draw`` from the noise module.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Drawn", "release_flow"]

#: The sampler text of the record before the noise is drawn (the budget check reads it).
NOT_DRAWN = "not drawn yet"


class _Record(Protocol):
    """What the flow reads of the record its caller builds."""

    @property
    def timestamp(self) -> str: ...

    @property
    def secure(self) -> bool: ...

    @property
    def noise_scale_used(self) -> float: ...

    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Record)


@dataclass(frozen=True)
class Drawn:
    """The noise of one release, for its record (or the placeholder before drawing).

    Attributes
    ----------
    values : tuple of float
        The noisy value of each coordinate (zeros before drawing).
    noise_scale_used : float
        The scale drawn (the calibrated one, or more to pay for the grid).
    granularity : float
        The grid step (0 before drawing).
    sampler : str
        The sampler, or why there is none.
    secure : bool
        Whether the noise came from the secure generator.
    """

    values: tuple[float, ...]
    noise_scale_used: float
    granularity: float
    sampler: str
    secure: bool


class _Noisy(Protocol):
    """What :func:`drawn_values` reads of a :class:`~quiltpriv.mechanisms.noise.NoisyValue`."""

    @property
    def value(self) -> float: ...

    @property
    def noise_scale_used(self) -> float: ...

    @property
    def granularity(self) -> float: ...

    @property
    def sampler(self) -> str: ...

    @property
    def secure(self) -> bool: ...


def drawn_values(draws: Sequence[_Noisy], *, divide: Sequence[float] | None = None) -> Drawn:
    """The :class:`Drawn` of the noise module's ``NoisyValue`` of each coordinate (one grid,
    one scale, one generator: the first one's are the record's), each value divided by
    ``divide``'s entry when given (a power of two: exact, post-processing)."""
    first = draws[0]
    values = tuple(float(d.value) for d in draws)
    if divide is not None:
        values = tuple(v / float(w) for v, w in zip(values, divide, strict=True))
    return Drawn(values, float(first.noise_scale_used), float(first.granularity),
                 str(first.sampler), bool(first.secure))


def release_flow(
    value: float | np.ndarray,
    data: pd.DataFrame | None,
    *,
    attributes: Sequence[str],
    dataset: str | None,
    query_fingerprint: str,
    model_fingerprint: str,
    booked: Any,
    seed: int | random.Random | None,
    ledger: Any,
    budget: float | None,
    allow_unproved: bool,
    noise: str,
    scale: float,
    sensitivity: float,
    guarantee_kind: str,
    provenance: Any,
    no_noise: str,
    record: Callable[[Drawn, Mapping[str, Any] | None, tuple[str, ...]], R],
    draw: Callable[[random.Random], Drawn] | None = None,
) -> R:
    """Release ``value`` (``F(data)``, already checked) with ``noise`` of ``scale``.

    Parameters
    ----------
    value : float or numpy.ndarray
        The query's value on the data; every check of the data is the caller's, done before.
    data : pandas.DataFrame or None
        The data (hashed into the record's ``data``; never kept). None for a value the caller
        computed (the low-level ``result.release(value)``): the record's ``data`` is null and
        there is nothing to recognise a repeated release by.
    attributes : sequence of str
        The columns the query read.
    dataset : str or None
        A checked declared name of the data set.
    query_fingerprint, model_fingerprint : str
        What a repeated release is recognised by (with the data's SHA-256).
    booked
        The ledger's verified entries (:func:`quiltpriv.releases.ledger.ledger_entries`),
        read by the caller before any work.
    seed : int, random.Random or None
        A checked seed (:func:`quiltpriv.releases.records.check_seed`).
    ledger, budget, allow_unproved
        As :func:`quiltpriv.releases.ledger.book` takes them.
    noise : {"laplace", "gaussian"}
        Laplace noise per coordinate (one scale, an L1 sensitivity), or Gaussian noise on a
        scalar.
    scale, sensitivity : float
        The calibrated scale (or sigma) and the sensitivity the grid is paid for.
    guarantee_kind : str
        The guarantee's kind (its plain-words warnings).
    provenance
        Where the model came from, if there is one.
    no_noise : str
        The sampler text of a release whose scale is 0.
    record : callable
        ``record(drawn, data_record, warnings)`` builds the mechanism's record.
    draw : callable, optional
        ``draw(rng)`` draws the noise from :mod:`quiltpriv.mechanisms.noise` with the one
        generator ``rng`` and returns the :class:`Drawn` values, for noise that is not one
        Laplace scale per coordinate or a scalar Gaussian (a vector's Gaussian, directional
        Laplace, per-coordinate weights). Default: ``noise`` of ``scale`` as above.

    Returns
    -------
    The record, returned only after the ledger (if any) has it.
    """
    from quiltpriv.mechanisms import noise as noise_mod
    from quiltpriv.releases import ledger as ledger_mod
    from quiltpriv.releases import records
    from quiltpriv.utils.stack import user_stacklevel

    data_record = (None if data is None
                   else records.query_data(data, attributes, dataset=dataset))
    fingerprints = (None if data_record is None
                    else (data_record["sha256"], query_fingerprint, model_fingerprint))
    # every warning (issued by the functions called below) names the user's line
    stacklevel = user_stacklevel(extra=1)
    if fingerprints is not None:
        ledger_mod.warn_repeats(booked, fingerprints, stacklevel=stacklevel)
    vec = np.atleast_1d(np.asarray(value, dtype=float))
    said = tuple(records.release_warnings(
        scale=scale, kind=guarantee_kind, provenance=provenance,
        table_sha256=None if data_record is None else data_record["table_sha256"]))

    def make(drawn: Drawn) -> R:
        if scale == 0:
            drawn = replace(drawn, sampler=no_noise, secure=seed is None)
        return record(drawn, data_record, said)

    def draw_default(rng: random.Random) -> Drawn:
        if noise == "gaussian":
            draws = [noise_mod.gaussian_release(float(vec[0]), scale, sensitivity, seed=rng)]
        else:
            # One scale for every coordinate and an L1 sensitivity: the grid's rounding is paid
            # once per coordinate (dimension=).
            draws = [noise_mod.laplace_release(float(v), scale, sensitivity, seed=rng,
                                               dimension=len(vec)) for v in vec]
        return drawn_values(draws)

    def drawn() -> R:
        rng = noise_mod.make_rng(seed)  # one generator: seeded coordinates get independent noise
        return make((draw or draw_default)(rng))

    pending = Drawn(tuple(0.0 for _ in vec), scale, 0.0, NOT_DRAWN, seed is None)
    out: R = ledger_mod.book(ledger, lambda: make(pending).to_dict(), drawn,
                             lambda r: r.to_dict(), budget=budget,
                             allow_unproved=allow_unproved)
    if fingerprints is not None:
        records.remember_release(*fingerprints, f"released in this session at {out.timestamp}")
    records.warn_release(said, secure=out.secure, scale=out.noise_scale_used,
                         stacklevel=stacklevel)
    return out
