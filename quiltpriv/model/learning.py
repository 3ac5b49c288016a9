"""Learn Theta from data: one row per population, or records with a population column.

A hyperparameter network models how the *parameters* of attributes (the share of low-income
students, the mean score) vary together across populations (school districts, hospitals,
months). So the unit of learning is a population, not a record:

1. **Per-population parameters.** Give a table with one row per population holding its shares
   (numbers in [0, 1]) and means, or a record-level table and the name of its population
   column: :func:`population_parameters` computes each population's shares (the mean of a 0/1
   column) and means.
2. **Bins.** Each parameter is cut into bins, declared (``bins={"lowinc": [0, .3, .6, 1]}``) or,
   only when asked for, at the data's quantiles (``quantiles=3``). A bin's state, the value of
   the parameter the network reasons about, is the **midpoint** of its edges. Why the midpoint
   and not the mean of the populations in the bin: it depends on the edges only, so every
   bootstrap member has the same states (Theta's members must share one state space), and it
   reads the domain from the declaration rather than from the data. APMQM's influences do not
   depend on state values at all (only on probabilities); mechanisms that read a state as a
   Bernoulli parameter (the exact count laws) read the midpoint. A value outside a declared
   bin range is an error, never clipped.
3. **Structure.** pgmpy's score-based hill climbing (``method="hill_climb"``, BDeu or BIC score)
   or the PC algorithm (``method="pc"``, chi-square tests), honouring the user's required and
   forbidden edges, bounded by ``max_indegree``, ``max_iter``, a work budget and a time limit
   (a search they stop returns its best DAG so far, flagged), and deterministic: nodes are
   handed to pgmpy as integers in the declared order, so ties are broken the same way in every
   process (string hashing is randomised per process).
4. **Tables.** Bayesian estimation with the BDeu prior (Dirichlet pseudo-counts
   ``equivalent_sample_size / (r q)`` per cell): the posterior mean, so no state is impossible
   merely because no population was seen in it.
5. **Uncertainty.** ``n_bootstrap=B`` resamples the populations with replacement ``B`` times
   and re-estimates the tables on the learned DAG: Theta then holds ``B + 1`` members (the
   point estimate first), and every influence is the maximum over them.

The result is a :class:`~quiltpriv.model.network.Theta` whose ``provenance`` records the SHA-256 of
a canonical CSV of the input (never the data), the bins, the estimator settings and the seed;
plans and audit reports carry it.

The guarantee then holds for adversaries whose beliefs are in this Theta: learning from data
says nothing about adversaries outside it (see ``docs/assumptions.md``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from quiltpriv.errors import DataError, ParameterError
from quiltpriv.model.builder import state_name
from quiltpriv.model.network import Theta, theta_from_tables
from quiltpriv.model.provenance import PARAMETER_KINDS, data_sha256
from quiltpriv.model.structure_learning import (
    LearningMethod,
    Score,
    _bdeu_tables,
    _edge_list,
    _learn_structure,
    _SearchBound,
)
from quiltpriv.utils.format import fmt_number as _fmt

__all__ = ["Bins", "MAX_PARAMETERS", "MAX_PC_PARAMETERS", "MAX_SCORE_EVALUATIONS",
           "MIN_POPULATIONS", "discretise", "learn_theta",
           "population_parameters", "record_weights", "RecordShare"]

#: Fewest populations a network may be learned from (each population is one observation of
#: the parameters; fewer make every table mostly prior).
MIN_POPULATIONS = 10

#: Most parameters (nodes) a network may be learned over: a hard bound, refused in one line.
#: Hill climbing scores about ``n (n - 1)`` candidate moves per step (one step at 300 nodes is
#: about 90,000 score evaluations), bounded further by :data:`MAX_SCORE_EVALUATIONS` and the
#: time limit.
MAX_PARAMETERS = 300

#: Most parameters the PC algorithm accepts: its conditional-independence tests cannot be
#: stopped part way, so its work is bounded by the network's size only.
MAX_PC_PARAMETERS = 40

#: The hill-climbing work budget: most candidate moves scored in one search (each is one
#: local-score evaluation). When it, or the time limit, runs out, the best structure so far is
#: returned, flagged in the provenance and warned about.
MAX_SCORE_EVALUATIONS = 5_000_000

#: Default wall-clock limit of structure learning, seconds.
DEFAULT_LEARNING_TIME_LIMIT = 60.0

#: Most bins one parameter may have.
MAX_BINS = 50

#: Most bootstrap resamples.
MAX_BOOTSTRAP = 1000

METHODS: tuple[LearningMethod, ...] = ("hill_climb", "pc")
SCORES: tuple[Score, ...] = ("bdeu", "bic", "k2")


@dataclass(frozen=True)
class Bins:
    """How one parameter is discretised.

    Attributes
    ----------
    parameter : str
        The parameter (a column of the per-population table).
    kind : {"share", "mean"}
        A share lies in [0, 1]; a mean may be any finite number.
    edges : tuple of float
        Increasing bin edges; bin ``k`` is ``[edges[k], edges[k+1])``, the last bin closed.
    how : {"declared", "quantile"}
        Whether the edges were declared or taken at the data's quantiles.
    """

    parameter: str
    kind: str
    edges: tuple[float, ...]
    how: str

    @property
    def values(self) -> tuple[float, ...]:
        """The state of each bin: the midpoint of its edges (10 significant digits)."""
        pairs = zip(self.edges, self.edges[1:], strict=False)
        return tuple(float(f"{(a + b) / 2:.10g}") for a, b in pairs)

    @property
    def states(self) -> tuple[str, ...]:
        """The state names (:func:`quiltpriv.model.builder.state_name` of :attr:`values`)."""
        return tuple(state_name(x) for x in self.values)

    def assign(self, x: np.ndarray) -> np.ndarray:
        """The bin index of each value (all must lie within the outer edges)."""
        lo, hi = self.edges[0], self.edges[-1]
        bad = (x < lo) | (x > hi)
        if np.any(bad):
            raise DataError(
                f"parameter {self.parameter!r}: {int(bad.sum())} value(s) outside the declared "
                f"bins [{_fmt(lo)}, {_fmt(hi)}] (e.g. {_fmt(float(x[bad][0]))}); widen the bins "
                "(values "
                "are never clipped)")
        idx = np.searchsorted(np.asarray(self.edges), x, side="right") - 1
        return np.minimum(idx, len(self.edges) - 2)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "binning": self.how, "edges": list(self.edges),
                "states": list(self.states), "representative": "midpoint"}


# -- input checks --------------------------------------------------------------------------------


def _check_frame(data: Any, what: str) -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"{what} must be a pandas DataFrame, got {type(data).__name__}")
    if data.columns.duplicated().any():
        dup = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
        raise DataError(f"{what} has duplicate column(s) {', '.join(dup)}")
    return data


@runtime_checkable
class RecordShare(Protocol):
    """A share parameter defined on the records rather than by a 0/1 column (the kind
    :func:`quiltpriv.queries.share_of.share_of` builds): each record's 0/1 value, and what the
    provenance records about it."""

    kind: str

    def indicator(self, records: pd.DataFrame) -> np.ndarray:
        """Each record's 0/1 value; package errors for records it cannot read."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (its condition and declared domain)."""
        ...


def _record_shares(parameters: Any) -> tuple[Any, dict[str, RecordShare]]:
    """``parameters`` with every :class:`RecordShare` kind as ``"share"``, and those shares."""
    if not isinstance(parameters, Mapping):
        return parameters, {}
    kinds: dict[Any, Any] = {}
    shares: dict[str, RecordShare] = {}
    for name, kind in parameters.items():
        if isinstance(kind, RecordShare) and not isinstance(kind, str):
            if kind.kind != "share":
                raise ParameterError(f"parameter {name!r}: a record-level kind must be a share")
            shares[name] = kind
            kind = "share"
        elif isinstance(kind, str) and kind.strip().startswith("share of"):
            raise ParameterError(
                f"parameter {name!r}: give a share of records meeting a condition as "
                f"qp.share_of({kind.strip()[len('share of'):].strip()!r}, domain={{...}}) (the "
                "text form 'share of CONDITION' is the command line's)")
        kinds[name] = kind
    return kinds, shares


def _check_parameters(parameters: Any) -> dict[str, str]:
    if not isinstance(parameters, Mapping) or not parameters:
        raise ParameterError("parameters must be a non-empty mapping {column: 'share' or "
                             "'mean'}")
    out: dict[str, str] = {}
    for col, kind in parameters.items():
        if not isinstance(col, str) or not col:
            raise ParameterError(f"parameter names must be non-empty strings, got {col!r}")
        if kind not in PARAMETER_KINDS:
            raise ParameterError(f"parameter {col!r}: kind must be one of {PARAMETER_KINDS}, "
                                 f"got {kind!r}")
        out[col] = kind
    if len(out) > MAX_PARAMETERS:
        raise ParameterError(f"{len(out)} parameters; learning a network is bounded to "
                             f"{MAX_PARAMETERS}")
    return out


def _numeric_column(frame: pd.DataFrame, col: str, what: str) -> np.ndarray:
    if col not in frame.columns:
        raise DataError(f"{what} has no column {col!r} (columns: "
                        f"{', '.join(map(str, frame.columns))})")
    s = frame[col]
    if s.dtype == bool:
        s = s.astype(int)
    if not pd.api.types.is_numeric_dtype(s):
        # An object column is accepted when every entry is a number (not a string: a text
        # "0.5" is a sign the table was read wrongly, and is refused like any text).
        bad = [v for v in s if not (_is_number(v) or v is None)]
        if bad:
            raise DataError(f"{what}: column {col!r} is not numeric (e.g. {bad[0]!r})")
        s = pd.Series([np.nan if v is None else v for v in s], dtype=float)
    x = s.to_numpy(dtype=float)
    bad = ~np.isfinite(x)
    if np.any(bad):
        raise DataError(f"{what}: column {col!r} has {int(bad.sum())} missing, NaN or "
                        "infinite value(s)")
    return x


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return not isinstance(v, bool | str)


def population_parameters(records: pd.DataFrame, population: str,
                          parameters: Mapping[str, str], *,
                          weights: str | None = None) -> pd.DataFrame:
    """Per-population shares and means from a record-level table.

    Parameters
    ----------
    records : pandas.DataFrame
        One row per record.
    population : str
        The column naming each record's population.
    parameters : mapping of str to {"share", "mean"}
        ``share``: the column holds 0/1 (or booleans) and the parameter is the population's
        share of 1s. ``mean``: the column is numeric and the parameter is its mean.
    weights : str, optional
        A column of survey weights (positive finite numbers): the shares and means are
        weighted.

    Returns
    -------
    pandas.DataFrame
        One row per population (sorted by population), one column per parameter.

    Raises
    ------
    DataError
        A missing column, a non-numeric or missing value, a share column with values other
        than 0 and 1.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> rng = np.random.default_rng(0)
    >>> school = np.repeat(np.arange(40), 25)        # 40 schools of 25 pupils
    >>> share = rng.uniform(0.2, 0.8, 40)[school]    # each school's share of women
    >>> records = pd.DataFrame({"school": school,
    ...                         "woman": (rng.random(1000) < share).astype(int),
    ...                         "high_income": (rng.random(1000) < 0.2 + 0.6 * share).astype(int)})
    >>> kinds = {"woman": "share", "high_income": "share"}
    >>> qp.population_parameters(records, "school", kinds).round(2).head(3)
            woman  high_income
    school
    0        0.72         0.64
    1        0.12         0.36
    2        0.20         0.56
    """
    records = _check_frame(records, "the records")
    params = _check_parameters(parameters)
    if population not in records.columns:
        raise DataError(f"the records have no population column {population!r}")
    if records[population].isna().any():
        raise DataError(f"population column {population!r} has missing values")
    if population in params:
        raise ParameterError(f"{population!r} is the population column, not a parameter")
    cols = {}
    for col, kind in params.items():
        x = _numeric_column(records, col, "the records")
        if kind == "share" and not np.all((x == 0) | (x == 1)):
            bad = x[(x != 0) & (x != 1)]
            raise DataError(f"the records: share column {col!r} must hold 0/1 values (whether "
                            f"each record has the property), found {_fmt(bad[0])}")
        cols[col] = x
    frame = pd.DataFrame(cols)
    frame[population] = records[population].to_numpy()
    if weights is None:
        return frame.groupby(population, sort=True)[list(params)].mean()
    w = record_weights(records, weights, population, params)
    grouped = frame[list(params)].mul(w, axis=0)
    grouped[population] = frame[population]
    sums = grouped.groupby(population, sort=True)[list(params)].sum()
    totals = pd.Series(w).groupby(frame[population].to_numpy(), sort=True).sum()
    return sums.div(totals.to_numpy(), axis=0)


def record_weights(records: pd.DataFrame, column: Any, population: str,
                   params: Mapping[str, str]) -> np.ndarray:
    """The survey weights column ``column`` of ``records`` (untrusted): positive finite
    numbers, not the population column nor a parameter."""
    if not isinstance(column, str) or not column:
        raise ParameterError(f"weights must name a column of the records, got {column!r}")
    if column == population or column in params:
        raise ParameterError(f"weights column {column!r} is also the population column or a "
                             "parameter")
    w = _numeric_column(records, column, "the records")
    if np.any(w <= 0):
        raise DataError(f"the records: weights column {column!r} must hold positive numbers, "
                        f"found {_fmt(float(w[w <= 0][0]))}")
    return w


def _quantile_edges(x: np.ndarray, q: int, kind: str, parameter: str) -> tuple[float, ...]:
    inner = np.quantile(x, np.arange(1, q) / q)
    # Three significant digits: readable states; the bins remain valid whatever the rounding.
    inner = [float(f"{v:.3g}") for v in inner]
    lo, hi = (0.0, 1.0) if kind == "share" else (float(x.min()), float(x.max()))
    edges = [lo, *inner, hi]
    if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise DataError(
            f"parameter {parameter!r}: {q} quantile bins collapse (the data have too few "
            f"distinct values: {len(np.unique(x))}); declare bins or ask for fewer")
    return tuple(edges)


def _declared_edges(spec: Any, kind: str, parameter: str) -> tuple[float, ...]:
    if isinstance(spec, str) or not isinstance(spec, Sequence | np.ndarray):
        raise ParameterError(f"bins of {parameter!r}: give a list of increasing edges, or an "
                             f"integer number of quantile bins, got {spec!r}")
    try:
        edges = tuple(float(e) for e in spec)
    except (TypeError, ValueError):
        raise ParameterError(f"bins of {parameter!r}: edges must be numbers, got "
                             f"{list(spec)!r}") from None
    if len(edges) < 3:
        raise ParameterError(f"bins of {parameter!r}: give at least 3 edges (2 bins), got "
                             f"{len(edges)}")
    if len(edges) - 1 > MAX_BINS:
        raise ParameterError(f"bins of {parameter!r}: {len(edges) - 1} bins (at most "
                             f"{MAX_BINS})")
    if not all(math.isfinite(e) for e in edges):
        raise ParameterError(f"bins of {parameter!r}: edges must be finite")
    if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ParameterError(f"bins of {parameter!r}: edges must increase strictly, got "
                             f"{list(edges)}")
    if kind == "share" and (edges[0] < 0 or edges[-1] > 1):
        raise ParameterError(f"bins of {parameter!r}: a share's edges lie in [0, 1], got "
                             f"{list(edges)}")
    return edges


def discretise(populations: pd.DataFrame, parameters: Mapping[str, str], *,
               bins: Mapping[str, Any] | None = None, quantiles: int | None = None
               ) -> tuple[pd.DataFrame, dict[str, Bins]]:
    """Bin each parameter of a per-population table.

    Parameters
    ----------
    populations : pandas.DataFrame
        One row per population; a column per parameter.
    parameters : mapping of str to {"share", "mean"}
        The parameters to bin and their kinds. Shares must lie in [0, 1].
    bins : mapping, optional
        Per parameter, a list of increasing edges, or an integer number of quantile bins.
    quantiles : int, optional
        The number of quantile bins of every parameter not in ``bins``. Without it, every
        parameter needs declared bins (quantile bins read the domain off the data, so they
        are used only when asked for). Quantile bins of a share span [0, 1]; of a mean, the
        data's range.

    Returns
    -------
    (pandas.DataFrame, dict of str to Bins)
        The bin index (0, 1, ...) of each population and parameter, and the bins.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> schools = pd.DataFrame({"woman": [0.72, 0.12, 0.5], "high_income": [0.64, 0.36, 0.5]})
    >>> binned, bins = qp.discretise(schools, {"woman": "share", "high_income": "share"},
    ...                              bins={"woman": [0, 0.4, 0.6, 1],
    ...                                    "high_income": [0, 0.4, 0.6, 1]})
    >>> binned["woman"].tolist(), binned["high_income"].tolist()
    ([2, 0, 1], [2, 0, 1])
    >>> bins["woman"].edges
    (0.0, 0.4, 0.6, 1.0)
    """
    populations = _check_frame(populations, "the population table")
    params = _check_parameters(parameters)
    bins = dict(bins or {})
    unknown = sorted(set(bins) - set(params))
    if unknown:
        raise ParameterError(f"bins given for {', '.join(map(repr, unknown))}, which are not "
                             "parameters")
    if quantiles is not None and (isinstance(quantiles, bool) or not isinstance(quantiles, int)
                                  or not 2 <= quantiles <= MAX_BINS):
        raise ParameterError(f"quantiles must be an integer from 2 to {MAX_BINS}, got "
                             f"{quantiles!r}")
    values = {col: _numeric_column(populations, col, "the population table") for col in params}
    out: dict[str, Bins] = {}
    codes: dict[str, np.ndarray] = {}
    for col, kind in params.items():
        x = values[col]
        if kind == "share":
            bad = (x < 0) | (x > 1)
            if np.any(bad):
                raise DataError(
                    f"the population table: share {col!r} has {int(bad.sum())} value(s) "
                    f"outside [0, 1] (e.g. {_fmt(float(x[bad][0]))}); a share is a proportion "
                    "(divide percentages by 100)")
        spec = bins.get(col, quantiles)
        if spec is None:
            raise ParameterError(
                f"parameter {col!r} has no declared bins: give bins={{{col!r}: [edges]}}, or "
                "quantiles=K to bin every undeclared parameter at the data's quantiles")
        if isinstance(spec, int) and not isinstance(spec, bool):
            if not 2 <= spec <= MAX_BINS:
                raise ParameterError(f"bins of {col!r}: {spec} quantile bins (2 to "
                                     f"{MAX_BINS})")
            b = Bins(col, kind, _quantile_edges(x, spec, kind, col), "quantile")
        else:
            b = Bins(col, kind, _declared_edges(spec, kind, col), "declared")
        out[col] = b
        codes[col] = b.assign(x)
    return pd.DataFrame(codes, index=populations.index), out


def learn_theta(
    data: pd.DataFrame,
    parameters: Mapping[str, str],
    *,
    population: str | None = None,
    bins: Mapping[str, Any] | None = None,
    quantiles: int | None = None,
    method: LearningMethod = "hill_climb",
    score: Score = "bdeu",
    required_edges: Iterable[tuple[str, str]] | None = None,
    forbidden_edges: Iterable[tuple[str, str]] | None = None,
    edges: Iterable[tuple[str, str]] | None = None,
    max_indegree: int = 2,
    max_iter: int = 1000,
    time_limit: float | None = DEFAULT_LEARNING_TIME_LIMIT,
    equivalent_sample_size: float = 5.0,
    significance_level: float = 0.01,
    n_bootstrap: int = 0,
    seed: int = 0,
    name: str = "learned",
    data_public: bool = False,
    min_records: int | None = None,
    weights: str | None = None,
) -> Theta:
    """Learn a hyperparameter network (and a bootstrap Theta) from per-population parameters.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per population holding its parameters, or (with ``population``) one row per
        record.
    parameters : mapping of str to {"share", "mean"} or RecordShare
        The attributes whose parameters the network models, and their kinds. In a population
        table a share is a number in [0, 1]; in a record table a 0/1 column, or the share of
        records meeting a condition: ``{"high": qp.share_of('income == "high"',
        domain={"income": ["low", "mid", "high"]})}`` (:mod:`quiltpriv.queries.share_of`;
        the parameter is named by its key).
    population : str, optional
        The population column of a record-level table (see :func:`population_parameters`).
    bins, quantiles
        How each parameter is binned (:func:`discretise`): declared edges per parameter, or
        ``quantiles=K`` for every parameter without declared edges.
    method : {"hill_climb", "pc"}
        pgmpy's hill climbing on ``score``, or the PC algorithm (chi-square tests at
        ``significance_level``).
    score : {"bdeu", "bic", "k2"}
        The hill-climbing score.
    required_edges, forbidden_edges : iterable of (parent, child)
        Edges the learned DAG must contain / must not contain.
    edges : iterable of (parent, child), optional
        A DAG you already have: no structure is learned, only its tables (BDeu, and the
        bootstrap members) are estimated from the data. An empty list is the DAG without
        edges. Excludes ``required_edges``/``forbidden_edges``; ``max_indegree`` does not
        apply (the tables of a node with many parents are large: every parent state
        combination is a column). The provenance records ``structure.method = "given"``.
    max_indegree : int
        Most parents per node (bounds the tables and the search; the PC algorithm's largest
        conditioning set).
    max_iter : int
        Most hill-climbing steps.
    time_limit : float or None
        Seconds hill climbing may take (default 60; None: no limit). Together with the work
        budget :data:`MAX_SCORE_EVALUATIONS` (scored candidate moves), checked at every scored
        move. When either runs out, or ``max_iter`` steps are taken, the DAG of the last
        completed step is used: the best found so far, *not* a local optimum of the score. The
        provenance says so (``structure.search_end``) and a
        :class:`~quiltpriv.errors.SearchStoppedWarning` is raised. The PC algorithm cannot be
        stopped part way and accepts at most :data:`MAX_PC_PARAMETERS` parameters instead.
    equivalent_sample_size : float
        The BDeu prior's weight (for the hill-climbing score and the tables), > 0.
    significance_level : float
        The PC algorithm's test level.
    n_bootstrap : int
        Bootstrap resamples of the populations; Theta gets ``n_bootstrap + 1`` members.
    seed : int
        Seeds the bootstrap (structure learning itself is deterministic).
    name : str
        The point estimate's member name.
    data_public : bool
        Declare that ``data`` are public (or earlier data that are not the data to be
        protected). Recorded in the provenance; when false (the default), every plan made with
        this Theta and every release warns (:class:`~quiltpriv.errors.PrivateModelWarning`):
        Theta's tables, and bins at the data's quantiles, were read off ``data`` without noise
        and are printed in plans and release records. A release on the very data Theta was
        learned from warns whatever this says.
    min_records : int, optional
        With ``population``: leave out populations with fewer records (their parameters are
        estimated from a handful of records). Recorded in the provenance.
    weights : str, optional
        With ``population``: a column of survey weights (positive finite numbers, one per
        record). The populations' shares and means are weighted means, and the diagnostics
        weight their tests (:mod:`quiltpriv.model.diagnostics`). Recorded in the provenance.

    With ``population``, the record-level assumptions are diagnosed while the records are in
    hand (:mod:`quiltpriv.model.diagnostics`): within-population dependence between every
    pair of attributes (a correlation t-test and a conditional G-test that sees non-linear
    dependence, each with its p-value and effect size) and tiny populations. The result goes into
    the provenance as ``diagnostics``, and an :class:`~quiltpriv.errors.AssumptionWarning`
    says what was flagged; Theta is never changed by it.

    Returns
    -------
    Theta
        With ``provenance``: data hash, bins, settings, learned edges, seed.

    Raises
    ------
    DataError, ParameterError, ModelError
        Missing columns, non-numeric or missing values, shares outside [0, 1], too few
        populations, parameters without declared bins (and no ``quantiles``), bad settings,
        contradictory edges.

    Examples
    --------
    Pupils of 40 schools; a school's share of women drives its share of high-income homes:

    >>> import numpy as np
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> rng = np.random.default_rng(0)
    >>> school = np.repeat(np.arange(40), 25)        # 40 schools of 25 pupils
    >>> share = rng.uniform(0.2, 0.8, 40)[school]    # each school's share of women
    >>> records = pd.DataFrame({"school": school,
    ...                         "woman": (rng.random(1000) < share).astype(int),
    ...                         "high_income": (rng.random(1000) < 0.2 + 0.6 * share).astype(int)})
    >>> kinds = {"woman": "share", "high_income": "share"}
    >>> theta = qp.learn_theta(records, kinds, population="school",
    ...                        bins={"woman": [0, 0.4, 0.6, 1],
    ...                              "high_income": [0, 0.4, 0.6, 1]},
    ...                        data_public=True)
    >>> theta, theta.parents["high_income"]
    (Theta(2 nodes, 1 edges, 1 member), ('woman',))
    >>> theta.states["woman"]  # the middle of each bin
    ('0.2', '0.5', '0.8')
    """
    data = _check_frame(data, "the data")
    if not isinstance(data_public, bool):
        raise ParameterError(f"data_public must be True or False, got {data_public!r}")
    kinds, conditions = _record_shares(parameters)
    params = _check_parameters(kinds)
    if conditions and population is None:
        raise ParameterError("a share of records meeting a condition needs the records and "
                             "their population column (population=...)")
    ess, alpha = _check_settings(method, score, max_indegree, max_iter, n_bootstrap, seed,
                                 equivalent_sample_size, significance_level)
    limit = _check_search(method, edges is None, len(params), time_limit)
    names = list(params)
    required = _edge_list(required_edges, names, "required_edges")
    forbidden = _edge_list(forbidden_edges, names, "forbidden_edges")
    clash = sorted(set(required) & set(forbidden))
    if clash:
        raise ParameterError(f"edge {clash[0][0]!r} -> {clash[0][1]!r} is both required and "
                             "forbidden")
    given = None if edges is None else _given_dag(edges, names)
    if given is not None and (required or forbidden):
        raise ParameterError("edges= gives the whole DAG: required_edges and forbidden_edges "
                             "apply only when the structure is learned")

    digest = data_sha256(data)
    data, table, diagnostics = _population_table(data, population, params, conditions,
                                                 min_records, weights)
    if len(table) < MIN_POPULATIONS:
        raise DataError(f"{len(table)} population(s): at least {MIN_POPULATIONS} are needed to "
                        "learn a network (each population is one observation of the "
                        "parameters)")
    codes_frame, binning = discretise(table, params, bins=bins, quantiles=quantiles)
    codes = codes_frame[names].to_numpy(dtype=np.int64)
    cards = [len(binning[p].edges) - 1 for p in names]
    idx = {p: k for k, p in enumerate(names)}
    as_int = [(idx[a], idx[b]) for a, b in required]
    bound = _SearchBound(MAX_SCORE_EVALUATIONS,
                         None if limit is None else time.monotonic() + limit)
    if given is None:
        edges_int = _learn_structure(codes, cards, method, score, ess, max_indegree,
                                     max_iter, as_int,
                                     [(idx[a], idx[b]) for a, b in forbidden], alpha, bound)
    else:
        edges_int = [(idx[a], idx[b]) for a, b in given]
    parents_int = _parents_of(edges_int, len(names))
    members = _bootstrap_members(codes, cards, parents_int, ess, names, n_bootstrap, seed)
    member_names = [name] + [f"{name}-bootstrap-{b}" for b in range(1, n_bootstrap + 1)]
    dag = [(names[a], names[b]) for a, b in edges_int]
    states = {p: binning[p].states for p in names}
    parents_order = {names[k]: [names[p] for p in pa] for k, pa in parents_int.items()}
    theta = theta_from_tables(dag, states, members, member_names,
                              parents_order=parents_order)
    prov = _provenance(
        digest, data, table, population, binning, method, score, ess, max_indegree, max_iter,
        alpha, required, forbidden, dag, n_bootstrap, seed, data_public)
    if given is not None:
        prov["structure"] = {"method": "given", "edges": [list(e) for e in dag]}
    elif method == "hill_climb":
        prov["structure"].update(_record_search(bound, limit, max_iter))
    if diagnostics is not None:
        prov["diagnostics"] = diagnostics
        prov["min_records"] = min_records
        prov["weights"] = weights
    for p, cond in conditions.items():
        prov["parameters"][p].update(cond.to_dict())
    return theta.with_provenance(prov)


def _population_table(
    data: pd.DataFrame, population: str | None, params: dict[str, str],
    conditions: Mapping[str, RecordShare], min_records: int | None, weights: str | None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any] | None]:
    """The records (with each condition's 0/1 column), the per-population table and the
    record diagnostics; without ``population`` the data are that table already."""
    if population is None:
        for option, value in (("min_records", min_records), ("weights", weights)):
            if value is not None:
                raise ParameterError(f"{option} applies to records with a population column "
                                     "(population=...)")
        return data, data, None
    data = data.assign(**{p: c.indicator(data) for p, c in conditions.items()})
    table = population_parameters(data, population, params, weights=weights)
    data, table = _drop_small(data, table, population, min_records)
    return data, table, _diagnose(data, population, params, min_records, weights)


def _drop_small(data: pd.DataFrame, table: pd.DataFrame, population: str,
                min_records: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Records and population table without the populations of fewer than ``min_records``
    records (both unchanged without it)."""
    if min_records is None:
        return data, table
    if isinstance(min_records, bool) or not isinstance(min_records, int) or min_records < 1:
        raise ParameterError(f"min_records must be a whole number >= 1, got {min_records!r}")
    sizes = data.groupby(population, sort=True).size()
    keep = sizes.index[sizes >= min_records]
    return data[data[population].isin(keep)], table.loc[table.index.isin(keep)]


def _diagnose(records: pd.DataFrame, population: str, params: Mapping[str, str],
              min_records: int | None, weights: str | None) -> dict[str, Any]:
    """The record-level diagnostics, warned about when anything is flagged."""
    from quiltpriv.errors import AssumptionWarning
    from quiltpriv.model.diagnostics import (
        TINY_POPULATION,
        diagnostics_warnings,
        record_diagnostics,
    )

    values = {p: records[p].to_numpy(dtype=float) for p in params}
    w = None if weights is None else record_weights(records, weights, population, params)
    found = record_diagnostics(values, records[population].to_numpy(),
                               tiny=max(TINY_POPULATION, min_records or 0), weights=w)
    for line in diagnostics_warnings(found):
        warnings.warn(line, AssumptionWarning, stacklevel=3)
    return found


def _given_dag(edges: object, names: Sequence[str]) -> list[tuple[str, str]]:
    """``edges=`` (untrusted: any object) as a checked list of edges between the parameters
    that forms a DAG, or ParameterError naming what is wrong."""
    import networkx as nx

    if isinstance(edges, str | bytes) or not isinstance(edges, Iterable):
        raise ParameterError(f"edges must be a list of (parent, child) pairs, got "
                             f"{type(edges).__name__}")
    out = _edge_list(list(edges), names, "edges")
    graph = nx.DiGraph(out)
    if not nx.is_directed_acyclic_graph(graph):
        loop = nx.find_cycle(graph)
        cycle = " -> ".join([a for a, _ in loop] + [loop[0][0]])
        raise ParameterError(f"edges must form a DAG; they have the cycle {cycle}")
    return out


def _check_settings(method: object, score: object, max_indegree: int, max_iter: int,
                    n_bootstrap: int, seed: int, equivalent_sample_size: float,
                    significance_level: float) -> tuple[float, float]:
    """Refuse bad learning settings (untrusted: a caller may pass anything); the BDeu weight
    and the test level."""
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}, got {method!r}")
    if score not in SCORES:
        raise ParameterError(f"score must be one of {SCORES}, got {score!r}")
    for label, value, lo in (("max_indegree", max_indegree, 0), ("max_iter", max_iter, 1),
                             ("n_bootstrap", n_bootstrap, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise ParameterError(f"{label} must be an integer >= {lo}, got {value!r}")
    if n_bootstrap > MAX_BOOTSTRAP:
        raise ParameterError(f"n_bootstrap must be at most {MAX_BOOTSTRAP}, got {n_bootstrap}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ParameterError(f"seed must be an integer, got {seed!r}")
    ess = float(equivalent_sample_size)
    if not (math.isfinite(ess) and ess > 0):
        raise ParameterError(f"equivalent_sample_size must be > 0, got {equivalent_sample_size}")
    alpha = float(significance_level)
    if not 0 < alpha < 1:
        raise ParameterError(f"significance_level must be in (0, 1), got {significance_level}")
    return ess, alpha


def _record_search(bound: _SearchBound, limit: float | None, max_iter: int) -> dict[str, Any]:
    """The hill-climbing bounds and how the search ended, for the provenance; warns when a
    bound, not a local optimum, ended it."""
    end = _search_end(bound, max_iter)
    if end != "local_optimum":
        from quiltpriv.errors import SearchStoppedWarning

        why = (f"the time limit ({_fmt(limit)} s)" if end == "time_limit" and limit else
               f"the work budget ({MAX_SCORE_EVALUATIONS:,} score evaluations)"
               if end == "evaluation_budget" else f"max_iter ({max_iter} steps)")
        warnings.warn(f"structure learning stopped by {why}: the DAG is the best found so "
                      "far, not a local optimum of the score (recorded in the provenance "
                      "as structure.search_end)", SearchStoppedWarning, stacklevel=3)
    return {"time_limit": limit, "evaluation_budget": MAX_SCORE_EVALUATIONS,
            "score_evaluations": min(bound.evaluations, MAX_SCORE_EVALUATIONS),
            "search_end": end}


def _check_search(method: object, learned: bool, n: int, time_limit: object) -> float | None:
    """Refuse the PC algorithm over :data:`MAX_PC_PARAMETERS`; ``time_limit`` checked."""
    if method == "pc" and learned and n > MAX_PC_PARAMETERS:
        raise ParameterError(f"{n} parameters; the PC algorithm is bounded to "
                             f"{MAX_PC_PARAMETERS} (use method='hill_climb', bounded by a "
                             "time limit and a work budget)")
    return _check_time_limit(time_limit)


def _check_time_limit(time_limit: object) -> float | None:
    """``time_limit`` as positive finite seconds, or None for no limit."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float):
        raise ParameterError(f"time_limit must be a number of seconds > 0 or None, got "
                             f"{time_limit!r}")
    value = float(time_limit)
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"time_limit must be a number of seconds > 0 or None, got "
                             f"{time_limit!r}")
    return value


def _search_end(bound: _SearchBound, max_iter: int) -> str:
    """Why hill climbing ended: a local optimum, or the bound that stopped it."""
    if bound.stopped is not None:
        return bound.stopped
    # pgmpy calls the move generator once per step and stops when the best move improves the
    # score by less than its epsilon (1e-4): after max_iter calls whose last still found an
    # improving move, the step limit ended the search.
    improving = bound.last_best >= 1e-4
    return "max_iter" if bound.steps >= max_iter and improving else "local_optimum"


def _parents_of(edges: Sequence[tuple[int, int]], n: int) -> dict[int, list[int]]:
    """Per node index, its parents' indices in increasing order."""
    parents: dict[int, list[int]] = {k: [] for k in range(n)}
    for a, b in edges:
        parents[b].append(a)
    for k in parents:
        parents[k].sort()
    return parents


def _bootstrap_members(codes: np.ndarray, cards: Sequence[int],
                       parents: Mapping[int, Sequence[int]], ess: float, names: Sequence[str],
                       n_bootstrap: int, seed: int) -> list[dict[str, np.ndarray]]:
    """The BDeu tables of the data and of ``n_bootstrap`` resamples of its populations."""
    rng = np.random.default_rng(seed)
    samples = [codes] + [codes[rng.integers(0, len(codes), len(codes))]
                         for _ in range(n_bootstrap)]
    members = []
    for sample in samples:
        tables = _bdeu_tables(sample, cards, parents, ess)
        members.append({names[k]: t for k, t in tables.items()})
    return members


def _provenance(digest: str, data: pd.DataFrame, table: pd.DataFrame, population: str | None,
                binning: Mapping[str, Bins], method: LearningMethod, score: Score, ess: float,
                max_indegree: int, max_iter: int, alpha: float,
                required: list[tuple[str, str]], forbidden: list[tuple[str, str]],
                edges: list[tuple[str, str]], n_bootstrap: int, seed: int,
                data_public: bool) -> dict[str, Any]:
    from quiltpriv.utils.progress import quiet_tqdm_auto

    quiet_tqdm_auto()
    import pgmpy

    from quiltpriv._version import __version__

    structure: dict[str, Any] = {"method": method, "max_indegree": max_indegree,
                                 "required_edges": [list(e) for e in required],
                                 "forbidden_edges": [list(e) for e in forbidden],
                                 "learned_edges": [list(e) for e in edges]}
    if method == "hill_climb":
        structure.update(score=score, max_iter=max_iter)
        if score == "bdeu":
            structure["equivalent_sample_size"] = ess
    else:
        structure.update(ci_test="chi_square", significance_level=alpha, variant="stable")
    return {
        "source": "learned",
        "data_sha256": digest,
        "data_public": data_public,
        "data_rows": len(data),
        "data_layout": "records" if population is not None else "populations",
        "population_column": population,
        "populations": len(table),
        "parameters": {p: b.to_dict() for p, b in binning.items()},
        "structure": structure,
        "cpds": {"estimator": "Bayesian (posterior mean)", "prior": "BDeu",
                 "equivalent_sample_size": ess},
        "bootstrap": {"resamples": n_bootstrap, "unit": "population", "seed": seed},
        "software": {"quiltpriv": __version__, "pgmpy": str(pgmpy.__version__)},
    }
