"""What a release claims and what it released: :class:`Guarantee`, :class:`Calibration` and
the :class:`ReleaseRecord` every mechanism returns (a :class:`VectorRelease` for a vector).

A record's ``to_dict`` is the versioned release record
(:data:`quiltpriv.releases.records.RELEASE_FORMAT`, ``docs/release-record.schema.json``). The
mechanisms build these (:mod:`quiltpriv.mechanisms.protocol`, which re-exports them); the
record and the ledger sit below the mechanisms, so the ledger, the composition and any reader
of records need nothing from the mechanisms' layer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.releases import records
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import mul_up, sqrt_up

__all__ = [
    "GUARANTEE_KINDS",
    "NOISE_KINDS",
    "Calibration",
    "Guarantee",
    "GuaranteeKind",
    "NoiseKind",
    "ReleaseRecord",
    "VectorRelease",
]

#: The privacy notions quiltpriv's mechanisms provide (a guarantee's ``kind``).
GuaranteeKind = Literal[
    "distributional attribute privacy",  # [ZOC22, Def. 4]: APMQM, Wasserstein on a network
    "dataset attribute privacy",  # [ZOC22, Def. 3]: APGM
    "pufferfish (Markov quilt)",  # [SWC17], [KM14]: the original Markov Quilt Mechanism
    "differential privacy (group)",  # [DR14]: group privacy over every record
    "distribution privacy",  # [CO23]
    "local distribution privacy",  # [KM19]
    "subset privacy",  # [Tan]
]
GUARANTEE_KINDS: tuple[str, ...] = get_args(GuaranteeKind)

#: The noise laws a calibration may name (the samplers are exact discrete versions of them on
#: a fine grid, :mod:`quiltpriv.mechanisms.noise`).
NoiseKind = Literal["laplace", "discrete laplace", "gaussian", "discrete gaussian", "none"]
NOISE_KINDS: tuple[str, ...] = get_args(NoiseKind)


def _finite(x: Any, what: str, *, positive: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise ParameterError(f"{what} must be a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ParameterError(f"{what} must be finite and {'> 0' if positive else '>= 0'}, "
                             f"got {v!r}")
    return v


def _texts(xs: Any, what: str) -> tuple[str, ...]:
    if isinstance(xs, str) or not all(isinstance(x, str) for x in xs):
        raise ParameterError(f"{what} must be a sequence of texts, got {xs!r}")
    return tuple(xs)


@dataclass(frozen=True)
class Guarantee:
    """What a release guarantees, and under which assumptions.

    Attributes
    ----------
    kind : GuaranteeKind
        The privacy notion (one of :data:`GUARANTEE_KINDS`).
    epsilon : float
        Finite and > 0.
    delta : float
        In ``[0, 1)``; 0 for a pure guarantee.
    assumptions : tuple of str
        In plain words, what must hold for the guarantee (the model is right, records are
        independent, ...).
    sensitive : tuple of str
        The attributes (or entries) it protects; empty when it protects any property of the
        dataset (group differential privacy over every record).
    """

    kind: GuaranteeKind
    epsilon: float
    delta: float = 0.0
    assumptions: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in GUARANTEE_KINDS:
            raise ParameterError(f"guarantee kind must be one of {', '.join(GUARANTEE_KINDS)}; "
                                 f"got {self.kind!r}")
        object.__setattr__(self, "epsilon", _finite(self.epsilon, "epsilon", positive=True))
        delta = _finite(self.delta, "delta")
        if delta >= 1:
            raise ParameterError(f"delta must be < 1, got {delta}")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "assumptions", _texts(self.assumptions, "assumptions"))
        object.__setattr__(self, "sensitive", _texts(self.sensitive, "sensitive"))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": self.epsilon, "delta": self.delta,
                "sensitive": list(self.sensitive), "assumptions": list(self.assumptions)}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def describe(self) -> str:
        """One line: ``(eps, delta)-<kind>``."""
        return f"({_fmt(self.epsilon)}, {_fmt(self.delta)})-{self.kind}"


@dataclass(frozen=True)
class Calibration:
    """How a mechanism's noise is calibrated.

    Attributes
    ----------
    noise : NoiseKind
        The noise law (one of :data:`NOISE_KINDS`).
    scale : float
        The Laplace scale ``b`` or the Gaussian standard deviation ``sigma`` (>= 0; 0: the
        value is released without noise because the guarantee holds without it).
    sensitivity : float
        The sensitivity (or the quantity) the scale is derived from: ``Delta_{A&N} F`` of the
        binding attribute (APMQM), ``W`` (Wasserstein), ``n Delta`` (group DP), ...
    why : str
        One sentence citing the paper's formula, e.g. ``"[ZOC22, Alg. 4]: b = W / eps"``.
    details : mapping
        Mechanism-specific numbers (APMQM: the binding attribute, its influence and
        sensitivity); they become fields of the record's ``calibration``.
    """

    noise: NoiseKind
    scale: float
    sensitivity: float
    why: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.noise not in NOISE_KINDS:
            raise ParameterError(f"noise must be one of {', '.join(NOISE_KINDS)}; got "
                                 f"{self.noise!r}")
        object.__setattr__(self, "scale", _finite(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", _finite(self.sensitivity, "sensitivity"))
        if not isinstance(self.why, str) or not self.why:
            raise ParameterError("a calibration says why (one sentence citing the paper)")
        object.__setattr__(self, "details", dict(self.details))

    @property
    def std(self) -> float:
        """Standard deviation of the noise: ``sqrt(2) b`` (Laplace) or ``sigma``, never
        rounded below the exact value."""
        if "laplace" in self.noise:
            if not self.scale or math.isinf(self.scale):
                return self.scale  # 0 or inf
            return mul_up(sqrt_up(2), self.scale)
        return self.scale

    def to_dict(self) -> dict[str, Any]:
        from quiltpriv.utils.serialize import jsonable

        return {"noise": self.noise, "scale": self.scale, "sensitivity": self.sensitivity,
                "why": self.why, **{str(k): jsonable(v) for k, v in self.details.items()}}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)


@renamed_fields(model="theta_identity")
@dataclass(frozen=True)
class ReleaseRecord:
    """One release of any mechanism: the value and everything needed to audit it.

    :meth:`to_dict` is the release record of format
    :data:`~quiltpriv.releases.records.RELEASE_FORMAT` (``docs/release-record.schema.json``,
    ``docs/ledger.md``). The true value of the query is deliberately not kept.

    Attributes
    ----------
    mechanism : str
        The mechanism's ``name``.
    value : float or tuple of float
        The released value (one number per cell of a histogram).
    guarantee, calibration
        The mechanism's :class:`Guarantee` and :class:`Calibration`.
    noise_scale_used, granularity, secure, sampler, seed
        The noise actually drawn: its scale (>= the calibrated one: it pays for the grid),
        the grid step, whether it came from the secure generator, the sampler, and the integer
        seed of a seeded release (None otherwise).
    query, query_fingerprint
        The query's definition (``Query.to_dict()``) and its fingerprint.
    data : mapping or None
        SHA-256, row count and columns of the data the query read (never the data).
    theta_identity : mapping or None
        ``{"fingerprint", "theta_size", "provenance"}`` of Theta, for mechanisms that use one
        (``model`` is its deprecated name; the record's JSON key stays ``"model"``).
    command, timestamp, version
        The command line of a command-line release, the UTC time, quiltpriv's version.
    plan : mapping or None
        An APMQM release's plan (format ``quiltpriv-plan/4``, or ``/3`` held as runs).
    details : mapping or None
        Another mechanism's own result (``MQMPlan``, ``WassersteinResult``, ... as JSON).
    cells : tuple or None
        A histogram's cell labels.
    warnings : tuple of str
        What the release does not protect, in plain words (no noise; a Theta learned from
        private data): :func:`quiltpriv.releases.records.release_warnings`.
    postprocess : mapping or None
        When the value was post-processed (:mod:`quiltpriv.releases.postprocess`): the steps,
        the clamping range and the noisy value before them.
    """

    mechanism: str
    value: float | tuple[float, ...]
    guarantee: Guarantee
    calibration: Calibration
    noise_scale_used: float
    granularity: float
    secure: bool
    sampler: str
    seed: int | None
    query: Mapping[str, Any]
    query_fingerprint: str
    data: Mapping[str, Any] | None
    theta_identity: Mapping[str, Any] | None = None
    command: tuple[str, ...] | None = None
    timestamp: str = ""
    version: str = ""
    plan: Mapping[str, Any] | None = None
    details: Mapping[str, Any] | None = None
    cells: tuple[tuple[Any, ...], ...] | None = None
    warnings: tuple[str, ...] = ()
    postprocess: Mapping[str, Any] | None = None

    @property
    def source(self) -> str:
        """``"secure"``, ``"seeded"`` or ``"none"`` (released without noise)."""
        return records.noise_source(self.secure, self.noise_scale_used, self.seed)

    def to_dict(self) -> dict[str, Any]:
        """The release record (:data:`~quiltpriv.releases.records.RELEASE_FORMAT`)."""
        from quiltpriv.utils.serialize import jsonable

        ident = self.theta_identity
        model = None if ident is None else {
            "fingerprint": ident["fingerprint"], "theta_size": ident["theta_size"],
            "provenance": records.provenance_json(ident.get("provenance"))}
        record: dict[str, Any] = {
            "format": records.RELEASE_FORMAT,
            "timestamp": self.timestamp,
            "quiltpriv_version": self.version,
            "mechanism": self.mechanism,
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "guarantee": self.guarantee.to_dict(),
            "calibration": {**self.calibration.to_dict(),
                            "noise_scale_used": self.noise_scale_used,
                            "granularity": self.granularity},
            "noise": {"source": self.source, "seed": self.seed, "secure": self.secure,
                      "sampler": self.sampler},
            "model": model,
            "query": {"definition": dict(self.query), "fingerprint": self.query_fingerprint},
            "data": None if self.data is None else dict(self.data),
            "command": None if self.command is None else list(self.command),
            # The flat fields of records written before the format was versioned: the noise
            # actually drawn.
            "scale": self.noise_scale_used,
            "granularity": self.granularity,
            "secure": self.secure,
            "sampler": self.sampler,
            "seed": self.seed,
            "plan": None if self.plan is None else dict(self.plan),
            "details": None if self.details is None else jsonable(self.details),
            "warnings": list(self.warnings),
        }
        if self.cells is not None:
            record["cells"] = [list(c) for c in self.cells]
        if self.postprocess is not None:
            record["postprocess"] = dict(self.postprocess)
        return record

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)


class ReleasedCoordinate(float):
    """One released number of a :class:`VectorRelease` (a float).

    ``APGMResult.release(vector)`` returned a tuple of
    :class:`~quiltpriv.mechanisms.noise.NoisyValue`; their attributes still work on each
    coordinate, with a :class:`DeprecationWarning` naming the record's field that replaces them.
    """

    __slots__ = ("_record",)
    _record: ReleaseRecord

    def __new__(cls, x: float, record: ReleaseRecord) -> ReleasedCoordinate:
        out = super().__new__(cls, x)
        out._record = record
        return out

    def _old(self, name: str, new: str) -> Any:
        from quiltpriv.utils.deprecation import deprecated_name

        deprecated_name("a coordinate of a vector release", name, new)
        return float(self) if name == "value" else getattr(self._record, name)

    @property
    def value(self) -> float:
        """Deprecated: the coordinate is the number (the record's ``value[i]``)."""
        return float(self._old("value", "the coordinate itself (record.value[i])"))

    @property
    def noise_scale_used(self) -> float:
        """Deprecated: the record's ``noise_scale_used`` (one scale for every coordinate)."""
        return float(self._old("noise_scale_used", "record.noise_scale_used"))

    @property
    def granularity(self) -> float:
        """Deprecated: the record's ``granularity`` (one grid for every coordinate)."""
        return float(self._old("granularity", "record.granularity"))

    @property
    def secure(self) -> bool:
        """Deprecated: the record's ``secure``."""
        return bool(self._old("secure", "record.secure"))

    @property
    def sampler(self) -> str:
        """Deprecated: the record's ``sampler``."""
        return str(self._old("sampler", "record.sampler"))


@dataclass(frozen=True)
class VectorRelease(ReleaseRecord):
    """The release of a vector value: a :class:`ReleaseRecord` (``value`` a tuple) that also
    reads as the array of released numbers, as the low-level vector releases returned before
    (``np.asarray(rec)``, ``rec[k]``, ``len(rec)``, iteration). Every coordinate shares the
    record's grid, scale, sampler and generator.

    Examples
    --------
    >>> import warnings
    >>> from quiltpriv.distribution import distribution_privacy as dp
    >>> res = dp.expm_laplace({1: [0.15, 1.0], 2: [0.25, 1.0]}, 1.0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: for examples only
    ...     rec = res.release([0.2, 1.0], seed=3)
    >>> type(rec).__name__, rec.mechanism, len(rec), rec.seed, rec.data is None
    ('VectorRelease', 'distribution privacy', 2, 3, True)
    >>> bool((np.asarray(rec) == np.array(rec.value)).all())
    True
    """

    def _numbers(self) -> tuple[float, ...]:
        v = self.value
        return v if isinstance(v, tuple) else (v,)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self._numbers(), dtype=float if dtype is None else dtype)

    def __len__(self) -> int:
        return len(self._numbers())

    @property
    def values(self) -> np.ndarray:
        """The released numbers as a new numpy array (``np.asarray(record)``)."""
        return np.asarray(self)

    @property
    def shape(self) -> tuple[int]:
        """``(m,)``, as the array these releases returned before."""
        return (len(self),)

    def __iter__(self) -> Any:
        return (ReleasedCoordinate(x, self) for x in self._numbers())

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, int | np.integer):
            return ReleasedCoordinate(self._numbers()[int(k)], self)
        return np.asarray(self)[k]
