"""The release step of APMQM: a verified plan's query on the data, plus Laplace noise.

:func:`release` is the last line of [ZOC22, Alg. 3]: ``F(X) + Lap(b)`` with the scale ``b`` of a
plan made by :func:`quiltpriv.mechanisms.apmqm.plan` (or verified by
:func:`quiltpriv.mechanisms.verification.verify_plan`), and :class:`Release` its record. It sits
above the planner and the verifier: a plan read from a file is verified here before it is used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import ModelError, ParameterError, PlanError, QueryError
from quiltpriv.mechanisms.apmqm import Plan, query_mismatch
from quiltpriv.mechanisms.protocol import ReleaseRecord
from quiltpriv.mechanisms.release_flow import Drawn, release_flow
from quiltpriv.mechanisms.verification import verify_plan
from quiltpriv.model.network import as_theta, model_mismatch
from quiltpriv.queries.query import Query, check_query, histogram_cells
from quiltpriv.releases.postprocess import postprocess_for
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords

if TYPE_CHECKING:  # pandas is imported by release(), not by planning
    import pandas as pd

__all__ = ["Release", "release"]


@renamed_fields(model="theta_identity")
@dataclass(frozen=True, kw_only=True)
class Release(ReleaseRecord):
    """A released value and its audit record (the plan it used and how noise was drawn).

    The one release shape: a :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` (what every
    mechanism's ``release`` returns), whose ``plan`` is the APMQM :class:`Plan` itself rather
    than its JSON. The true value of the query is deliberately not kept. :meth:`to_dict` is
    the release record (format ``"quiltpriv-release/4"``, :mod:`quiltpriv.releases.records`):
    time, version, model, query, data hash and row count, guarantee, calibration, noise source
    and seed, command line.

    Built by :func:`quiltpriv.release`, not by hand.

    Parameters
    ----------
    mechanism : str
        ``"APMQM"``.
    value : float or tuple of float
        The released value (one number per cell of a histogram).
    guarantee, calibration
        The plan's :class:`~quiltpriv.mechanisms.protocol.Guarantee` and
        :class:`~quiltpriv.mechanisms.protocol.Calibration`.
    noise_scale_used, granularity, secure, sampler, seed
        The noise actually drawn: its scale (``scale``; the plan's, or more to pay for the
        grid), the grid step, whether it came from the secure generator, the sampler, and
        the integer seed of a seeded release (None otherwise).
    query, query_fingerprint
        The query's definition and the plan's query fingerprint.
    data : mapping or None
        SHA-256, row count and columns of the data the query read (never the data).
    theta_identity : mapping or None
        ``{"fingerprint", "theta_size", "provenance"}`` of Theta (``model`` is its deprecated
        name; the record's JSON key stays ``"model"``).
    command, timestamp, version
        The command line of a command-line release, the UTC time, quiltpriv's version.
    details : mapping or None
        None for APMQM (another mechanism's own result in a plain record).
    cells : tuple or None
        A histogram's cell labels.
    warnings : tuple of str
        What the release does not protect, in plain words.
    postprocess : mapping or None
        The post-processing steps, when the value was post-processed.
    plan : Plan
        The plan released (``to_dict`` writes its JSON).
    sensitivity : float
        The least positive sensitivity of the plan's sensitive attributes (0 without one).
    provenance
        Where Theta came from (the record's ``theta_identity["provenance"]``).

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> query = qp.CountQuery(["height"], records=4, where="height == 1",
    ...                       domain={"height": (0, 1)})
    >>> plan = qp.plan(theta, query, "income", epsilon=1.0)
    >>> data = pd.DataFrame({"height": [0, 1, 1, 0]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: for examples only
    ...     rel = qp.release(plan, query, data, seed=3)
    >>> isinstance(rel, qp.Release), rel.plan is plan, rel.scale >= plan.scale
    (True, True, True)
    >>> rel.to_dict()["plan"]["format"], rel.seed
    ('quiltpriv-plan/4', 3)
    """

    plan: Plan  # type: ignore[assignment]  # the Plan itself; the record's JSON holds its dict
    sensitivity: float = 0.0
    provenance: Any = None

    @property
    def scale(self) -> float:
        """The noise scale actually drawn (:attr:`noise_scale_used`; the plan's, or more)."""
        return self.noise_scale_used

    @property
    def series(self) -> pd.Series:
        """The released value as a labelled pandas Series.

        A histogram's cells are the index (one level per attribute, named after it, in the
        declared order of the categories); any other query gives a one-entry Series indexed
        by its kind. The record's JSON is unchanged (:meth:`to_dict`).
        """
        import pandas as pd

        values = list(self.value) if isinstance(self.value, tuple) else [self.value]
        query = self.plan.query
        cells = self.cells
        if cells is None:
            return pd.Series(values, index=[str(query.get("kind", "value"))], name="released")
        attrs = list(query["attributes"])
        index = (pd.Index([c[0] for c in cells], name=attrs[0]) if len(attrs) == 1
                 else pd.MultiIndex.from_tuples(cells, names=attrs))
        return pd.Series(values, index=index, name="released")

    def to_record(self) -> ReleaseRecord:
        """This release as a plain :class:`ReleaseRecord` (the plan as its JSON)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(ReleaseRecord)}
        return ReleaseRecord(**{**fields, "plan": self.plan.to_dict()})

    def to_dict(self) -> dict[str, Any]:
        """The release record (:meth:`to_record`)."""
        return self.to_record().to_dict()

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import release_html  # a presentation hook

        return release_html(self)


@renamed_keywords(model="theta")
def release(
    plan_: Plan, query: Query, data: pd.DataFrame, *, seed: int | random.Random | None = None,
    theta: Any = None, ledger: str | os.PathLike[str] | None = None,
    command: Sequence[str] | None = None, dataset: str | None = None,
    budget: float | None = None, allow_unproved: bool = False,
    postprocess: str | Sequence[str] | None = None,
) -> Release:
    """Release ``F(X) + Lap(b)`` with the plan's scale ``b`` (Algorithm 3, last line).

    Noise comes from :mod:`quiltpriv.mechanisms.noise`: an exact discrete Laplace on a fine
    power-of-two grid, drawn from the operating system's secure generator. ``seed`` switches to a
    reproducible, NOT secure generator for experiments: the record says so and a
    :class:`~quiltpriv.errors.SeededNoiseWarning` is issued.

    A release that reads the same data columns (same SHA-256) as an earlier release of this
    process or of ``ledger``, with the same query or the same model, issues a
    :class:`~quiltpriv.errors.RepeatedReleaseWarning` before its noise is drawn: guarantees of
    attribute privacy do not add up in general (:func:`quiltpriv.releases.ledger.composition`).

    Parameters
    ----------
    plan_ : Plan
        A plan made by :func:`~quiltpriv.mechanisms.apmqm.plan`, or a verified one
        (:func:`quiltpriv.mechanisms.verification.verify_plan`). A plan read from a file is verified
        against ``theta`` first, and refused when ``theta`` is not given.
    query : Query
        The query the plan was made for: its definition and every sensitivity the plan used
        are recomputed and must match the plan's query fingerprint.
    data : pandas.DataFrame
    seed : int or random.Random, optional
        Any integer type (``np.int64(3)`` is recorded as 3); other types are refused.
    theta : Theta, pgmpy network or sequence of them, optional
        The model: needed to verify a plan that is not verified; for a verified plan its
        fingerprint must be the plan's.
    ledger : str or path, optional
        A privacy ledger (:mod:`quiltpriv.releases.ledger`, created if missing): the release record
        is appended to it before the value is returned; if it cannot be written, the release
        fails and its value is never returned.
    command : sequence of str, optional
        The command line that asked for this release (the command line passes its own).
    dataset : str, optional
        A declared name of the data set, recorded beside the data's hashes: releases with the
        same name, or on the same whole table (``data.table_sha256``), are releases on the
        same data whatever columns they read (:mod:`quiltpriv.releases.composition`).
    budget : float, optional
        With ``ledger``: refuse, before the noise is drawn, a release whose total epsilon on
        the same data, proved by a published result over the ledger's releases and this one,
        would exceed ``budget``, or cannot be proved at all
        (:func:`quiltpriv.releases.composition.budget_check`). The check and the append are
        one ledger transaction, so concurrent releases cannot both pass it.
    allow_unproved : bool
        With ``budget``: release even when no published result proves a total (a total that
        is proved is still held to the budget).
    postprocess : str or sequence of str, optional
        ``"round"`` (counts and histograms: the nearest integer) and/or ``"clamp"`` (into the
        range the query can take, ``[0, records]`` for a count): a function of the noisy value
        and public facts, so it costs no privacy (:mod:`quiltpriv.releases.postprocess`). The
        record's ``postprocess`` keeps the steps, the range and the noisy value.

    Raises
    ------
    PlanError
        If the plan is not verified and ``theta`` is not given, or it does not verify.
    ModelError
        If ``theta`` is given and the plan was made for another model.
    QueryError
        If ``query`` is not the query the plan was made for, the data lack a column, hold
        values outside the declared bounds, or have more records than planned.
    ParameterError
        If the plan's scale is not finite or too large to draw
        (:data:`quiltpriv.mechanisms.noise.MAX_NOISE_SCALE`), or ``seed`` is not an integer, None
        or a ``random.Random``; refused before the data are read.
    LedgerError
        If ``ledger`` is not a ledger, fails verification, or cannot be written.
    BudgetError
        If the budget refuses the release (nothing drawn, nothing written).

    Warns
    -----
    ZeroNoiseWarning
        A release without noise publishes the exact value, which protects only the declared
        states of the sensitive attributes and gives no record-level privacy.
    PrivateModelWarning
        Theta was learned from the released data, or from data not declared public. Both
        warnings also go into the record's ``warnings``.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> plan = qp.plan(theta, query, "x01", epsilon=1.0)
    >>> data = pd.DataFrame({v: [0.2, 0.5, 0.8] for v in theta.nodes})
    >>> released = qp.release(plan, query, data)  # secure noise: a different value every time
    >>> released.secure, released.seed
    (True, None)
    >>> record = released.to_dict()  # the release record; the true value is not kept
    >>> record["format"], record["data"]["rows"], record["noise"]["source"]
    ('quiltpriv-release/4', 3, 'secure')

    A plan read from a file is verified against the model first:

    >>> qp.release(qp.Plan.from_json(plan.to_json()), query, data)
    Traceback (most recent call last):
    ...
    quiltpriv.errors.PlanError: this plan was not made by plan() in this process ...
    """
    import pandas as pd

    from quiltpriv.mechanisms import noise
    from quiltpriv.releases import ledger as ledger_mod
    from quiltpriv.releases import records

    seed = records.check_seed(seed)
    dataset = records.check_dataset(dataset)
    budget = records.check_budget(budget, ledger)
    if not isinstance(plan_, Plan):
        raise ParameterError(f"plan must be a quiltpriv Plan, got {type(plan_).__name__}")
    noise.check_noise_scale(plan_.scale, "the plan's Laplace scale")
    check_query(query)
    post = postprocess_for(postprocess, query.to_dict())  # before any work
    booked = ledger_mod.ledger_entries(ledger)  # verified now, before any work
    theta = None if theta is None else as_theta(theta)
    if not plan_.verified:
        if theta is None:
            raise PlanError(
                "this plan was not made by plan() in this process (it was read from a file or "
                "built by hand) and is not verified; verify it against the model first: "
                "quiltpriv.verify_plan(plan, theta, query), or release(..., theta=theta)")
        plan_ = verify_plan(plan_, theta, query)
    elif theta is not None and (
            mismatch := model_mismatch(plan_.model_fingerprint, theta)) is not None:
        raise ModelError(f"the plan does not match the model: {mismatch}")
    why = query_mismatch(plan_, query)
    if why is not None:
        raise QueryError(f"this query is not the one the plan was made for: {why}; "
                         "plan it again")
    if not isinstance(data, pd.DataFrame):
        raise QueryError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    query.check_records(len(data))
    value = query.evaluate(data)
    positive = [sp.sensitivity for sp in plan_.sensitive if sp.sensitivity > 0]
    sensitivity = min(positive) if positive else 0.0
    provenance = getattr(plan_, "provenance", None)
    if provenance is None and theta is not None:
        provenance = getattr(theta, "provenance", None)
    plan_done = plan_  # the verified plan, as the closure below sees it (mypy's narrowing)

    def record(drawn: Drawn, data_record: Mapping[str, Any] | None,
               said: tuple[str, ...]) -> Release:
        out, done = drawn.values, None
        if post is not None:
            done = post.to_dict(out if np.ndim(value) else out[0])
            out = tuple(post.apply(v) for v in out)
        return Release(
            mechanism=plan_done.mechanism, value=out if np.ndim(value) else out[0],
            guarantee=plan_done.guarantee, calibration=plan_done.calibration,
            noise_scale_used=drawn.noise_scale_used, granularity=drawn.granularity,
            secure=drawn.secure, sampler=drawn.sampler,
            seed=seed if isinstance(seed, int) else None, query=dict(plan_done.query),
            query_fingerprint=plan_done.query_fingerprint, data=data_record,
            theta_identity={"fingerprint": plan_done.model_fingerprint,
                            "theta_size": plan_done.theta_size, "provenance": provenance},
            command=None if command is None else tuple(str(c) for c in command),
            timestamp=records.utc_timestamp(), version=records.quiltpriv_version(),
            plan=plan_done, cells=histogram_cells(plan_done.query), warnings=said,
            postprocess=done, sensitivity=float(sensitivity), provenance=provenance,
        )

    # Private without noise (scale 0): every sensitive attribute has a quilt with
    # Delta_{A&N} F = 0.
    return release_flow(
        value, data, attributes=query.attributes, dataset=dataset,
        query_fingerprint=plan_.query_fingerprint, model_fingerprint=plan_.model_fingerprint,
        booked=booked, seed=seed, ledger=ledger, budget=budget, allow_unproved=allow_unproved,
        noise="laplace", scale=plan_.scale, sensitivity=float(sensitivity),
        guarantee_kind=plan_.guarantee.kind, provenance=provenance,
        no_noise=("none: the plan needs no noise (Delta_{A&N} F = 0 for every sensitive "
                  "attribute)"), record=record)


def __getattr__(name: str) -> object:
    # release_html moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"release_html": "quiltpriv.reporting.notebook"}, name)
