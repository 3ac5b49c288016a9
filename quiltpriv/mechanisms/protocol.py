"""One shape for every mechanism: its guarantee, its calibration and one ``release``.

As OpenDP's measurements give one shape to every mechanism, every mechanism of quiltpriv that
releases a query on a dataset exposes

* ``name`` -- what the release record calls it (``"APMQM"``, ``"Wasserstein"``, ...);
* ``guarantee`` -- a :class:`Guarantee`: the privacy notion (``kind``), ``epsilon``,
  ``delta``, the attributes it protects and its assumptions in plain words;
* ``calibration`` -- a :class:`Calibration`: the noise law, its scale, the sensitivity (or the
  quantity) the scale is derived from, and ``why``, one sentence citing the paper's formula;
* ``release(data, *, seed=None)`` -- checks ``data`` against the query's DECLARED domain (the
  query's own checks: bounds, declared values, record bound; a domain is never read off the
  data), draws exact noise (:mod:`quiltpriv.mechanisms.noise`; secure unless ``seed`` is
  given, which warns with :class:`~quiltpriv.errors.SeededNoiseWarning`) and returns one
  :class:`ReleaseRecord`, whose ``to_dict`` is the versioned release record
  (:data:`quiltpriv.releases.records.RELEASE_FORMAT`, ``docs/release-record.schema.json``).

:class:`Mechanism` is the protocol (a :class:`typing.Protocol`, checkable with
``isinstance``); :class:`QueryMechanism` implements ``release`` once for every mechanism whose
release is "query value plus calibrated noise". The mechanisms themselves are built from a
model, a query and epsilon by :mod:`quiltpriv.mechanisms.registry` (``build_mechanism``), which
``quiltpriv release --mechanism NAME`` and ``quiltpriv compare`` use.

Each mechanism module keeps its low-level form (``plan.release(value)``,
``result.release(value)``): noise for a value you computed yourself, with no data checks.
It returns a :class:`ReleaseRecord` too (a :class:`VectorRelease` for a vector), made by
:func:`release_value` through the same release flow (same noise module, seed flag and ledger),
whose ``data`` is null and whose ``query`` is ``{"kind": "value", "dimension": m}``. Prefer the
protocol's ``release(data)``.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.releases import records
from quiltpriv.releases.release_record import (  # re-exported: their home is releases/
    GUARANTEE_KINDS,
    NOISE_KINDS,
    Calibration,
    Guarantee,
    GuaranteeKind,
    NoiseKind,
    ReleaseRecord,
    VectorRelease,
)
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.validation import check_instance

if TYPE_CHECKING:
    import pandas as pd

    from quiltpriv.mechanisms.release_flow import Drawn
    from quiltpriv.queries.query import Query

__all__ = [
    "GUARANTEE_KINDS",
    "NOISE_KINDS",
    "Calibration",
    "Guarantee",
    "GuaranteeKind",
    "Mechanism",
    "NoiseKind",
    "QueryMechanism",
    "ReleaseRecord",
    "VectorRelease",
    "release_value",
]


@runtime_checkable
class Mechanism(Protocol):
    """The protocol every mechanism implements (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def guarantee(self) -> Guarantee: ...

    @property
    def calibration(self) -> Calibration: ...

    def release(self, data: pd.DataFrame, *,
                seed: int | random.Random | None = None) -> ReleaseRecord: ...


#: The sampler text of a release without noise.
NO_NOISE = "none: the calibrated scale is 0 (the guarantee holds without noise)"


@renamed_fields(model="theta_identity")
@dataclass(frozen=True)
class QueryMechanism:
    """A mechanism releasing ``F(X) + noise`` of a :class:`Calibration`: :class:`Mechanism`.

    Build one with :func:`quiltpriv.mechanisms.registry.build_mechanism` (or the constructors
    there); the fields are the mechanism's claims, computed by its own module.

    Attributes
    ----------
    name : str
    query : Query
        ``F``, with its declared domain.
    guarantee : Guarantee
    calibration : Calibration
        ``noise`` is ``"laplace"`` or ``"gaussian"`` (a Gaussian mechanism releases scalar
        queries only).
    query_fingerprint : str
        :func:`quiltpriv.mechanisms.apmqm.query_fingerprint` of the query.
    theta_identity : mapping or None
        ``{"fingerprint", "theta_size", "provenance"}`` when the mechanism uses Theta
        (``model`` is its deprecated name; the JSON key stays ``"model"``).
    details : mapping or None
        The mechanism's own result as JSON (recorded with each release).
    rows : int or None
        The data must have exactly this many rows (the original MQM releases a query on ONE
        realisation of its network: one row).
    """

    name: str
    query: Query
    guarantee: Guarantee
    calibration: Calibration
    query_fingerprint: str
    theta_identity: Mapping[str, Any] | None = None
    details: Mapping[str, Any] | None = None
    rows: int | None = None

    def __post_init__(self) -> None:
        from quiltpriv.queries.query import Query

        check_instance(self.name, str, "name")
        check_instance(self.query, Query, "query", error=QueryError)
        check_instance(self.guarantee, Guarantee, "guarantee")
        check_instance(self.calibration, Calibration, "calibration")
        check_instance(self.query_fingerprint, str, "query_fingerprint")
        if self.calibration.noise not in ("laplace", "gaussian"):
            raise ParameterError(f"{self.name}: a query mechanism adds Laplace or Gaussian "
                                 f"noise, not {self.calibration.noise!r}")

    def to_dict(self) -> dict[str, Any]:
        """The mechanism as JSON: name, guarantee, calibration, query, model, details."""
        from quiltpriv.utils.serialize import jsonable

        return {"name": self.name, "guarantee": self.guarantee.to_dict(),
                "calibration": self.calibration.to_dict(),
                "query": {"definition": self.query.to_dict(),
                          "fingerprint": self.query_fingerprint},
                "model": (None if self.theta_identity is None
                          else jsonable(self.theta_identity)),
                "details": None if self.details is None else jsonable(self.details),
                "rows": self.rows}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def check_data(self, data: pd.DataFrame) -> float | np.ndarray:
        """``F(data)`` after every check of the query's declared domain; refuses bad data.

        Raises
        ------
        QueryError
            ``data`` is not a DataFrame, lacks a column, holds a value outside the query's
            declared domain (bounds, declared values), has more records than the query was
            calibrated for, or (``rows``) not the number of rows the mechanism releases on.
        """
        import pandas as pd

        if not isinstance(data, pd.DataFrame):
            raise QueryError(f"data must be a pandas DataFrame, got {type(data).__name__}")
        if self.rows is not None and len(data) != self.rows:
            raise QueryError(f"{self.name} releases a query on {self.rows} row(s) of data (one "
                             f"realisation of its network), got {len(data)}")
        self.query.check_records(len(data))
        value = self.query.evaluate(data)
        if self.calibration.noise == "gaussian" and np.ndim(value) != 0:
            raise QueryError(f"{self.name} releases scalar queries only")
        return value

    def release(self, data: pd.DataFrame, *, seed: int | random.Random | None = None,
                ledger: str | os.PathLike[str] | None = None,
                command: Any = None, dataset: str | None = None,
                budget: float | None = None, allow_unproved: bool = False) -> ReleaseRecord:
        """Release ``F(data)`` plus the calibrated noise (see the module docstring).

        Parameters
        ----------
        data : pandas.DataFrame
            Checked against the query's declared domain before anything is drawn.
        seed : int or random.Random, optional
            Reproducible, NOT secure noise (experiments only; warns).
        ledger : str or path, optional
            A privacy ledger (:mod:`quiltpriv.releases.ledger`): the record is appended before
            the value is returned; if it cannot be written nothing is returned.
        command : sequence of str, optional
            The command line that asked for the release.
        dataset : str, optional
            A declared name of the data set (recorded; releases with the same name are on the
            same data whatever columns they read).
        budget : float, optional
            With ``ledger``: refuse, before drawing, a release whose proved total epsilon on
            the same data would exceed it, or cannot be proved
            (:func:`quiltpriv.releases.composition.budget_check`).
        allow_unproved : bool
            With ``budget``: release even when no published result proves a total.

        Raises
        ------
        QueryError
            The data break the query's declared domain (:meth:`check_data`).
        ParameterError
            A bad seed, dataset name or budget, or a scale too large to draw.
        LedgerError
            ``ledger`` is not a ledger or cannot be written.
        BudgetError
            The budget refuses the release (nothing drawn, nothing written).
        """
        from quiltpriv.mechanisms import noise
        from quiltpriv.mechanisms.release_flow import release_flow
        from quiltpriv.queries.query import histogram_cells
        from quiltpriv.releases import ledger as ledger_mod

        seed = records.check_seed(seed)
        dataset = records.check_dataset(dataset)
        budget = records.check_budget(budget, ledger)
        cal = self.calibration
        noise.check_noise_scale(cal.scale, f"the {self.name} scale")
        booked = ledger_mod.ledger_entries(ledger)  # verified now, before any work
        value = self.check_data(data)
        definition = self.query.to_dict()

        def record(drawn: Drawn, data_record: Mapping[str, Any] | None,
                   said: tuple[str, ...]) -> ReleaseRecord:
            out = drawn.values
            return ReleaseRecord(
                mechanism=self.name, value=out if np.ndim(value) else out[0],
                guarantee=self.guarantee, calibration=cal,
                noise_scale_used=drawn.noise_scale_used, granularity=drawn.granularity,
                secure=drawn.secure, sampler=drawn.sampler,
                seed=seed if isinstance(seed, int) else None, query=definition,
                query_fingerprint=self.query_fingerprint, data=data_record,
                theta_identity=self.theta_identity,
                command=None if command is None else tuple(str(c) for c in command),
                timestamp=records.utc_timestamp(), version=records.quiltpriv_version(),
                details=self.details, cells=histogram_cells(definition), warnings=said)

        ident = self.theta_identity
        return release_flow(
            value, data, attributes=self.query.attributes, dataset=dataset,
            query_fingerprint=self.query_fingerprint,
            model_fingerprint=(self.query_fingerprint if ident is None
                               else ident["fingerprint"]),
            booked=booked, seed=seed, ledger=ledger, budget=budget,
            allow_unproved=allow_unproved, noise=cal.noise, scale=cal.scale,
            sensitivity=_sampler_sensitivity(cal), guarantee_kind=self.guarantee.kind,
            provenance=None if ident is None else ident.get("provenance"),
            no_noise=NO_NOISE, record=record)


def _sampler_sensitivity(cal: Calibration) -> float:
    """The sensitivity the noise sampler pays the grid's snapping against.

    The calibration's own ``sensitivity``, or a smaller ``details["sampler_sensitivity"]``:
    the inflation ``(Delta + g) / Delta`` of :func:`quiltpriv.mechanisms.noise.laplace_release`
    is largest for the least ``Delta``, so a mechanism whose secrets have different
    sensitivities (MQM: ``L |N_i & A|`` for each protected entry ``i``) names the least one
    there. A larger or malformed value is ignored: this can only add noise.
    """
    given = (cal.details or {}).get("sampler_sensitivity")
    if (isinstance(given, (int, float)) and not isinstance(given, bool)
            and math.isfinite(given) and 0 < given < cal.sensitivity):
        return float(given)
    return cal.sensitivity


#: The query definition's ``kind`` of a low-level release (a value the caller computed).
VALUE_KIND = "value"


def release_value(
    value: Any, *, mechanism: str, guarantee: Guarantee, calibration: Calibration,
    details: Mapping[str, Any] | None = None, seed: Any = None,
    ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
    allow_unproved: bool = False, sampler_sensitivity: float | None = None,
    draw: Callable[[random.Random], Drawn] | None = None,
) -> ReleaseRecord:
    """The low-level release of every mechanism: a value the caller computed, plus noise.

    ``result.release(value)`` of each mechanism's result (group DP, Wasserstein, MQM, APGM,
    APGMnG, distribution privacy) ends here, and from here in the one release flow
    (:func:`quiltpriv.mechanisms.release_flow.release_flow`): the noise of
    :mod:`quiltpriv.mechanisms.noise` (the value snapped to a grid, exact discrete noise,
    the secure generator unless ``seed`` is given, which warns and is recorded), the
    plain-words warnings, and the ledger's append before the record is returned. No data
    are checked or hashed: the record's ``data`` is None and its ``query`` is
    ``{"kind": "value", "dimension": m}``.

    Parameters
    ----------
    value : float or array_like
        ``F(X)``, computed by the caller: a scalar gives a :class:`ReleaseRecord` whose
        ``value`` is a float, a vector a :class:`VectorRelease`.
    mechanism : str
        The record's mechanism name.
    guarantee, calibration : Guarantee, Calibration
        The result's claims (``calibration.scale`` is the scale drawn, before the grid's
        inflation).
    details : mapping, optional
        The result as JSON (``result.to_dict()``), recorded.
    seed : int or random.Random, optional
        Reproducible, NOT secure noise (experiments only; warns, recorded).
    ledger, budget, allow_unproved
        As :meth:`QueryMechanism.release`.
    sampler_sensitivity : float, optional
        The sensitivity the sampler pays the grid against, when it is not
        ``calibration.sensitivity`` (recorded as ``calibration.sampler_sensitivity``).
    draw : callable, optional
        ``draw(rng)`` for noise that is not one Laplace scale per coordinate or a scalar
        Gaussian (:func:`~quiltpriv.mechanisms.release_flow.release_flow`).

    Raises
    ------
    ParameterError
        A bad seed or budget, a value that is not a number or a vector, or a scale too large
        to draw.
    LedgerError, BudgetError
        As :meth:`QueryMechanism.release`.
    """
    import hashlib

    from quiltpriv.mechanisms.release_flow import release_flow
    from quiltpriv.releases import ledger as ledger_mod
    from quiltpriv.utils.serialize import canonical_json

    check_instance(mechanism, str, "mechanism")
    check_instance(guarantee, Guarantee, "guarantee")
    check_instance(calibration, Calibration, "calibration")
    seed = records.check_seed(seed)
    budget = records.check_budget(budget, ledger)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{mechanism}: the value must be a number or a vector of numbers, "
                             f"got {type(value).__name__}") from None
    if arr.ndim > 1 or arr.size == 0:  # the noise module refuses a value that is not finite
        raise ParameterError(f"{mechanism}: the value must be a number or a non-empty vector, "
                             f"got shape {arr.shape}")
    vector = arr.ndim == 1
    booked = ledger_mod.ledger_entries(ledger)  # verified now, before any work
    definition = {"kind": VALUE_KIND, "dimension": int(arr.size)}
    fingerprint = hashlib.sha256(canonical_json({**definition, "mechanism": mechanism}
                                                ).encode()).hexdigest()
    sens = calibration.sensitivity if sampler_sensitivity is None else sampler_sensitivity
    if sampler_sensitivity is not None:
        calibration = Calibration(calibration.noise, calibration.scale, calibration.sensitivity,
                                  calibration.why, {**calibration.details,
                                                    "sampler_sensitivity": float(sens)})

    def record(drawn: Drawn, data_record: Mapping[str, Any] | None,
               said: tuple[str, ...]) -> ReleaseRecord:
        cls = VectorRelease if vector else ReleaseRecord
        return cls(
            mechanism=mechanism, value=drawn.values if vector else drawn.values[0],
            guarantee=guarantee, calibration=calibration,
            noise_scale_used=drawn.noise_scale_used, granularity=drawn.granularity,
            secure=drawn.secure, sampler=drawn.sampler,
            seed=seed if isinstance(seed, int) else None, query=definition,
            query_fingerprint=fingerprint, data=data_record,
            timestamp=records.utc_timestamp(), version=records.quiltpriv_version(),
            details=details, warnings=said)

    noise_kind = "gaussian" if "gaussian" in calibration.noise else "laplace"
    return release_flow(
        arr if vector else float(arr), None, attributes=(), dataset=None,
        query_fingerprint=fingerprint, model_fingerprint=fingerprint, booked=booked,
        seed=seed, ledger=ledger, budget=budget, allow_unproved=allow_unproved,
        noise=noise_kind, scale=calibration.scale, sensitivity=sens,
        guarantee_kind=guarantee.kind, provenance=None, no_noise=NO_NOISE, record=record,
        draw=draw)
