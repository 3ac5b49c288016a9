"""The release record: what was released, when, by which tool, from which data and model.

Every mechanism's release (:class:`quiltpriv.releases.release_record.ReleaseRecord`, and
:meth:`quiltpriv.mechanisms.apmqm_release.Release.to_dict`) is one JSON object of the stable,
versioned format :data:`RELEASE_FORMAT` (``"quiltpriv-release/4"``; the JSON Schema is
``docs/release-record.schema.json``, described in ``docs/ledger.md``). Besides the released
value it records the UTC time, the quiltpriv version, the model's fingerprint and provenance
(null for a mechanism without a model), the query's definition and fingerprint, the SHA-256
and row count of the data columns the query read (never the data), the mechanism, its
guarantee and calibration, the noise source (secure, seeded with the seed, or none) and, for a
command-line release, the command line.

Formats 1 to 3 are still read (:data:`READABLE_FORMATS`). Version 4 adds ``postprocess`` (a
value rounded or clamped after the noise, with the noisy value;
:mod:`quiltpriv.releases.postprocess`); version 3 added the data set's identity
(``data.table_sha256``, ``data.dataset``) and ``warnings``; version 2 (from version 1, APMQM
only) names any mechanism, adds ``guarantee.assumptions``, ``calibration.noise``,
``calibration.why``, ``calibration.sampler_sensitivity`` and ``details``, allows ``delta > 0``
and a null ``model`` and ``plan``, and ``calibration.sensitivity`` is now the sensitivity the
scale is derived from (for APMQM the binding attribute's ``Delta_{A&N}``; version 1 recorded
there the sensitivity given to the sampler, now ``sampler_sensitivity``).

This module also keeps the process's memory of earlier releases, so that a release repeating a
query on the same data warns (:class:`~quiltpriv.errors.RepeatedReleaseWarning`) even without
a ledger.
"""

from __future__ import annotations

import math
import operator
import random
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from numbers import Integral
from typing import TYPE_CHECKING, Any, Protocol

from quiltpriv.errors import ParameterError

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["READABLE_FORMATS", "RELEASE_FORMAT", "check_seed", "query_data", "release_record",
           "utc_timestamp"]

#: The ``"format"`` of the release records written now.
RELEASE_FORMAT = "quiltpriv-release/4"

#: The formats a reader accepts (a ledger keeps the records of older versions as written).
READABLE_FORMATS = ("quiltpriv-release/1", "quiltpriv-release/2", "quiltpriv-release/3",
                    RELEASE_FORMAT)

#: Longest declared data-set name (``dataset=``, ``--dataset``).
MAX_DATASET_NAME = 200

#: What a release without noise protects, in the words plan, release, ledger and report use.
ZERO_NOISE_MESSAGE = ("no noise: exact value; protects only the declared states of the "
                      "sensitive attributes; no record-level privacy")

#: The warning of a release with seeded noise (the command line prints the same words).
SEEDED_MESSAGE = ("seeded noise is reproducible and NOT secure; use it only for experiments")


def utc_timestamp() -> str:
    """The current UTC time in ISO 8601 with microseconds: ``2026-01-31T12:00:00.000001Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def quiltpriv_version() -> str:
    """The running quiltpriv's version (``quiltpriv.__version__``)."""
    from quiltpriv._version import __version__

    return str(__version__)


def check_seed(seed: object) -> int | random.Random | None:
    """A release's ``seed`` in checked form: None, a plain ``int``, or a ``random.Random``.

    Every integer type is accepted and recorded as the number it is (``np.int64(3)`` is 3);
    booleans, floats (even ``3.0``), strings and other objects are refused, so a record never
    says ``seed: null`` for a release that was seeded.

    Raises
    ------
    ParameterError
        ``seed`` is of another type.
    """
    import numpy as np

    if seed is None or isinstance(seed, random.Random):
        return seed
    if isinstance(seed, bool | np.bool_):
        raise ParameterError(f"seed must be None (secure noise), an integer or a random.Random, "
                             f"got the boolean {seed!r}")
    if isinstance(seed, Integral | np.integer):
        return int(operator.index(seed))
    raise ParameterError(f"seed must be None (secure noise), an integer or a random.Random, got "
                         f"{type(seed).__name__} {seed!r}; a seed is recorded exactly, so "
                         "convert it to an int yourself")


def noise_source(secure: bool, scale: float, seed: int | random.Random | None) -> str:
    """``"secure"``, ``"seeded"`` or ``"none"`` (the plan needed no noise)."""
    if scale == 0:
        return "none"
    return "secure" if secure else "seeded"


def check_dataset(name: object) -> str | None:
    """A declared data-set name in checked form (None: not declared).

    Raises
    ------
    ParameterError
        Not a string, empty or blank, longer than :data:`MAX_DATASET_NAME`, or holding a
        control character.
    """
    if name is None:
        return None
    if not isinstance(name, str):
        raise ParameterError(f"dataset must be a name (str), got {type(name).__name__}")
    text = name.strip()
    if not text or len(text) > MAX_DATASET_NAME or not text.isprintable():
        raise ParameterError(f"dataset must be a printable name of 1 to {MAX_DATASET_NAME} "
                             f"characters, got {name!r}")
    return text


def query_data(data: pd.DataFrame, columns: Iterable[str], *,
               dataset: str | None = None) -> dict[str, Any]:
    """The record's ``data`` object: what identifies the data, never the data.

    ``sha256`` and ``rows`` cover exactly ``columns`` (the columns the query read);
    ``table_sha256`` covers the whole table as given (every column), so that releases reading
    different columns of one table are seen as releases on the same data; ``dataset`` is the
    declared name, if any. Both hashes are :func:`quiltpriv.model.provenance.data_sha256`: a
    canonical CSV (columns sorted by name, rows in the given order, no index, ``\\n`` line
    ends, floats with 17 significant digits, missing values empty), the same form as a learned
    model's data hash.
    """
    import pandas as pd

    from quiltpriv.errors import DataError
    from quiltpriv.model.provenance import (
        data_sha256,  # the canonical form a learned model's hash uses
    )

    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if isinstance(columns, str) or not isinstance(columns, Iterable):
        raise ParameterError(f"columns must be a list of column names, got {columns!r}")
    cols = sorted(dict.fromkeys(columns), key=str)
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise DataError(f"the data have no column {', '.join(map(repr, missing))}")
    whole = data_sha256(data)
    # the same columns (the hash sorts them): the same text, hashed once
    same = len(cols) == data.shape[1] and sorted(map(str, data.columns)) == list(map(str, cols))
    return {"sha256": whole if same else data_sha256(data[cols]), "rows": int(len(data)),
            "columns": cols, "table_sha256": whole, "dataset": check_dataset(dataset)}


def learned_from(provenance: Any, table_sha256: str | None = None) -> str | None:
    """Why Theta's parameters may be private data, or None.

    A learned Theta (provenance ``source == "learned"``) read its tables (and, with quantile
    bins, its states and bin edges) off the data it was learned from. That is a problem when
    those data are the data being released (``data_sha256`` equals ``table_sha256``), or when
    they were not declared public (``data_public`` not true): then plans and release records,
    which print those parameters without noise, disclose something about private data.
    """
    if not isinstance(provenance, Mapping) or provenance.get("source") != "learned":
        return None
    digest = provenance.get("data_sha256")
    if table_sha256 is not None and digest == table_sha256:
        where = "the very data being released (the hashes match)"
    elif provenance.get("data_public") is not True:
        where = "data not declared public"
    else:
        return None
    return (f"Theta was learned from {where}: its tables (and any bins at the data's "
            "quantiles, with their midpoint states) were read off those data without noise "
            "and appear in every plan and release record; learn Theta on public or earlier "
            "data (learn_theta(..., data_public=True)) to protect these data")


def release_warnings(*, scale: float, kind: str | None, provenance: Any,
                     table_sha256: str | None) -> list[str]:
    """The warnings a release record carries (``"warnings"``), in plain words.

    * zero noise for an attribute-privacy mechanism: :data:`ZERO_NOISE_MESSAGE`;
    * a Theta learned from the released data, or from data not declared public
      (:func:`learned_from`);
    * what the diagnostics of the records Theta was learned from flagged
      (:func:`assumption_warnings`).
    """
    out = []
    if scale == 0 and kind != "differential privacy (group)":
        out.append(ZERO_NOISE_MESSAGE)
    learned = learned_from(provenance, table_sha256)
    if learned is not None:
        out.append(learned)
    out += assumption_warnings(provenance)
    return out


def assumption_warnings(provenance: Any) -> list[str]:
    """What the record-level diagnostics of a Theta learned from records flagged
    (:mod:`quiltpriv.model.diagnostics`, provenance ``diagnostics``), in plain words."""
    diagnostics = provenance.get("diagnostics") if isinstance(provenance, Mapping) else None
    if not isinstance(diagnostics, Mapping):
        return []
    from quiltpriv.model.diagnostics import diagnostics_warnings

    return [f"the records Theta was learned from: {w}"
            for w in diagnostics_warnings(diagnostics)]


def provenance_json(provenance: Any) -> Any:
    """A model's provenance (whatever Theta or the plan carries) as plain JSON, or None: the
    package's one converter, :func:`quiltpriv.utils.serialize.jsonable` (this module had its own,
    which wrote a set as its ``str`` and a ``Fraction`` as ``"7/20"`` only by accident)."""
    from quiltpriv.utils.serialize import jsonable

    return None if provenance is None else jsonable(provenance)


class RecordedRelease(Protocol):
    """What :func:`release_record` reads of a release (an APMQM
    :class:`~quiltpriv.mechanisms.apmqm_release.Release`): named structurally, so that this
    layer, below the mechanisms, does not import them even for its annotations."""

    def to_record(self) -> Any: ...


def release_record(r: RecordedRelease) -> dict[str, Any]:
    """The JSON record of an APMQM release (:data:`RELEASE_FORMAT`; see ``docs/ledger.md``):
    ``r.to_record().to_dict()``."""
    if not all(hasattr(r, a) for a in ("plan", "value", "scale", "timestamp", "to_record")):
        raise ParameterError(f"release_record takes a Release (quiltpriv.release), got "
                             f"{type(r).__name__}")
    record: dict[str, Any] = r.to_record().to_dict()
    return record


# -- the process's memory of earlier releases -------------------------------------------------

#: Most releases the process remembers for the repeated-release warning (oldest forgotten).
SESSION_MEMORY = 4096

_session: OrderedDict[tuple[str, str, str], str] = OrderedDict()
_session_lock = threading.Lock()


def _keys(data_sha: str, query_fp: str, model_fp: str) -> tuple[tuple[str, str, str], ...]:
    return (("query", data_sha, query_fp), ("model", data_sha, model_fp))


def session_repeats(data_sha: str, query_fp: str, model_fp: str) -> list[str]:
    """Descriptions of earlier releases in this process on the same data columns with the same
    query or the same model."""
    with _session_lock:
        for k in _keys(data_sha, query_fp, model_fp):  # the same query first
            if k in _session:
                return [f"{_session[k]}, same {k[0]}"]
    return []


def remember_release(data_sha: str, query_fp: str, model_fp: str, when: str) -> None:
    """Note a release made in this process (bounded memory: :data:`SESSION_MEMORY`)."""
    with _session_lock:
        for k in _keys(data_sha, query_fp, model_fp):
            _session[k] = when
            _session.move_to_end(k)
        while len(_session) > SESSION_MEMORY:
            _session.popitem(last=False)


def forget_releases() -> None:
    """Forget every release this process made (for tests and long-running services)."""
    with _session_lock:
        _session.clear()


def repeat_message(earlier: Sequence[str]) -> str:
    """The one-line warning for a release that repeats earlier ones."""
    shown = "; ".join(dict.fromkeys(earlier))
    return (f"this release reads the same data as an earlier one ({shown}): attribute-privacy "
            "guarantees do not add up in general; 'quiltpriv ledger show' "
            "(quiltpriv.releases.composition) says what the releases guarantee together, if "
            "anything")


# -- the steps every mechanism's release shares -----------------------------------------------


def check_budget(budget: object, ledger: object) -> float | None:
    """A release's ``budget`` in checked form: None, or a finite epsilon > 0 with a ledger.

    Raises
    ------
    ParameterError
        Not a finite number > 0, or given without a ledger (a budget counts the ledger's
        releases).
    """
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int | float) or \
            not math.isfinite(float(budget)) or float(budget) <= 0:
        raise ParameterError(f"budget must be a finite epsilon > 0, got {budget!r}")
    if ledger is None:
        raise ParameterError("a budget counts the releases of a ledger: give ledger= (the "
                             "command line: --ledger PATH) with budget=")
    return float(budget)


def warn_release(said: Iterable[str], *, secure: bool, scale: float,
                 stacklevel: int = 2) -> None:
    """Issue a release's warnings from Python (the command line prints each as one line
    ``quiltpriv: warning: ...``): what it does not protect (``said``, the record's
    ``warnings``), and seeded noise, naming the frame ``stacklevel`` (as
    :func:`warnings.warn` counts it from here)."""
    import warnings

    from quiltpriv.errors import PrivateModelWarning, SeededNoiseWarning, ZeroNoiseWarning

    for text in said:
        kind = ZeroNoiseWarning if text == ZERO_NOISE_MESSAGE else PrivateModelWarning
        warnings.warn(text, kind, stacklevel=stacklevel)
    if not secure and scale > 0:
        warnings.warn(SEEDED_MESSAGE, SeededNoiseWarning, stacklevel=stacklevel)
