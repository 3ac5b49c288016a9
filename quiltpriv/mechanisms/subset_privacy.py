"""Privacy on a subset of dataset variables ([Tan]), with corrections to the paper.

Definition 2.2: a mechanism is eps-private on a subset U of the variables if replacing one
record by another that agrees with it on every variable outside U changes the probability of
any output set by at most a factor e^eps. It is bounded eps-DP when U = V (Prop 3.1), monotone
in U (Prop 3.2), 0-private on U iff the output ignores U (Prop 3.3), composes additively
(Prop 3.4), and implied by eps-DP (Prop 3.5). It assumes independent individuals and protects
one record's U values; it does not model correlation between attributes.

This module provides

* :class:`SubsetPrivacyAccountant` -- per-subset accounting (Example 3.6, Table 1): a release
  reads the variables W_t and is eps_t-private on a protected set U_t (every set for an eps-DP
  release; none for an exact release); on a protected set U it costs 0 if U misses W_t (Prop
  3.3), eps_t if U meets W_t only inside U_t (Props 3.2, 3.5), and is not private at all
  (infinite eps) otherwise (:func:`release_subset_epsilon`); eps(U) is the sum over releases
  (:func:`compose_subset_epsilons`, Prop 3.4). An upper bound, never a finite figure for a set
  some release publishes exactly.
* :func:`consistent_count_table` -- [Tan, Alg. 1]: a U_1 x V_1 count table with integer cells,
  exact row (V_1) totals and unbiased cells, eps-private on U. Corrections to the paper: the noise
  law is P(Z = z) = tanh(eps/4) e^{-eps|z|/2} (the printed normaliser is negative); every row
  with n_i >= 2 categories is noised (the printed "n_i > 2" leaves two-category rows exact and
  not private at any eps); the true privacy loss per moved record is eps/2, so the stated eps
  is safe but loose. Non-negativity is not guaranteed.

The ``quiltpriv subset-privacy`` command ([Tan, Alg. 1] on a CSV of records) is
:mod:`quiltpriv.cli.subset_privacy`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.noise import TAIL_FACTOR, discrete_laplace, make_rng
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import round_up
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon

__all__ = [
    "ConsistentCountTable",
    "AccountedRelease",
    "compose_subset_epsilons",
    "release_subset_epsilon",
    "SubsetPrivacyAccountant",
    "SubsetPrivacyTable",
    "cell_moments",
    "consistent_count_table",
    "pair_matrix",
    "two_sided_geometric_pmf",
    "two_sided_geometric_variance",
]


# ---------------------------------------------------------------------------------------------
# accounting (Props 3.2-3.5, Example 3.6)


def compose_subset_epsilons(epsilons: Iterable[float]) -> float:
    """[Tan, Prop. 3.4]: independent releases that are eps_t-private on the same U compose to
    (sum of eps_t)-privacy on U.

    Parameters
    ----------
    epsilons : iterable of float
        Each release's eps on one and the same protected set U (each >= 0; ``math.inf`` for a
        release that is not private on U, e.g. one that publishes a variable of U exactly).

    Returns
    -------
    float
        The sum, rounded up to the next float if the float sum falls below the exact one
        (a privacy parameter is never rounded down); ``math.inf`` if any term is infinite.
        The empty sum is 0 (no release: 0-private on every U).
    """
    # epsilons: untrusted (any object); this is its check.
    if isinstance(epsilons, str | bytes) or not isinstance(epsilons, Iterable):
        raise ParameterError(f"epsilons must be a list of numbers, got "
                             f"{type(epsilons).__name__}")
    exact = Fraction(0)
    for e in epsilons:
        if isinstance(e, bool) or not isinstance(e, int | float | Fraction | np.floating
                                                 | np.integer):
            raise ParameterError(f"an epsilon must be a number, got {e!r}")
        if math.isnan(float(e)) or e < 0:
            raise ParameterError(f"an epsilon must be >= 0, got {e!r}")
        if math.isinf(float(e)):
            return math.inf
        exact += Fraction(e)
    return round_up(exact)


@dataclass(frozen=True)
class AccountedRelease(JSONResult):
    """One registered release and what it guarantees.

    Attributes
    ----------
    name : str
        The release's name (unique in its accountant).
    epsilon : float
        eps_t > 0, the release's guarantee on ``protected``; ``math.inf`` for an exact release.
    reads : frozenset of str
        W_t: the variables the output depends on (it ignores every other variable).
    protected : frozenset of str
        U_t: the release is eps_t-private on U_t (every variable for an eps-DP release, [Tan,
        Prop. 3.5]; the empty set for an exact release, which protects nothing it reads).
    exact : bool
        True iff the release publishes what it reads without noise
        (:meth:`SubsetPrivacyAccountant.register_exact`).

    Named ``Release`` before quiltpriv 0.2 (the same name as :class:`quiltpriv.Release`, an
    APMQM release); that name still works, with a :class:`DeprecationWarning`.
    """

    name: str
    epsilon: float
    reads: frozenset[str]
    protected: frozenset[str]
    exact: bool = False

    def epsilon_on(self, subset: Iterable[str]) -> float:
        """This release's eps on the protected set U (see :func:`release_subset_epsilon`)."""
        return release_subset_epsilon(self, subset)


def release_subset_epsilon(release: AccountedRelease, subset: Iterable[str]) -> float:
    """The eps of one release on a protected set U, from [Tan, Props. 3.2, 3.3, 3.5].

    * 0 if U does not meet the variables W_t the release reads (Prop 3.3: its output ignores U);
    * eps_t if every variable of U that it reads is one of its protected set U_t: two datasets
      that are neighbours on U give the same output law as two that are neighbours on
      U and W_t's common variables, a subset of U_t (Prop 3.2); an eps_t-DP release has
      U_t = V (Prop 3.5), so this covers every U;
    * ``math.inf`` otherwise: the propositions give no bound, and a release that publishes a
      variable of U exactly (exact degree totals for U = {degree}) is not private on U at any
      eps. An exact release is never given a finite eps on a set it reads.
    """
    if not isinstance(release, AccountedRelease):
        raise ParameterError(f"release must be an AccountedRelease, got {type(release).__name__}")
    if isinstance(subset, str):
        subset = [subset]
    elif not isinstance(subset, Iterable):
        raise QueryError(f"the subset must be a list of variable names, got "
                         f"{type(subset).__name__}")
    u = frozenset(str(v) for v in subset)
    touched = u & release.reads
    if not touched:
        return 0.0
    if touched <= release.protected:
        return release.epsilon
    return math.inf


@dataclass(frozen=True)
class SubsetPrivacyTable(JSONResult):
    """eps per release and in total for each protected set (Table 1 of the paper).

    Attributes
    ----------
    columns : tuple of frozenset
        The protected sets U (singletons by default).
    releases : tuple of str
        Release names, one per row of ``values``.
    values : tuple of tuple of float
        ``values[r][c]`` = eps of release r on ``columns[c]`` (:func:`release_subset_epsilon`:
        0, eps_t, or ``math.inf`` = not protected).
    totals : tuple of float
        eps(U) for each column: the composition of all releases ([Tan, Prop. 3.4]).
    """

    columns: tuple[frozenset[str], ...]
    releases: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    totals: tuple[float, ...]

    def format(self) -> str:
        """The table as aligned text, last row the composition of all releases.

        An infinite eps (a set that some release publishes exactly, or reads without protecting
        it) is printed as ``inf``: not protected at any eps.
        """
        heads = ["{" + ", ".join(sorted(c)) + "}" for c in self.columns]
        names = [*self.releases, "all releases"]
        rows = [*self.values, self.totals]
        w0 = max(len("release"), *(len(n) for n in names))
        widths = [max(len(h), 6) for h in heads]
        lines = ["  ".join(["release".ljust(w0)] + [h.rjust(w) for h, w in
                                                    zip(heads, widths, strict=True)])]
        for name, row in zip(names, rows, strict=True):
            cells = [f"{_fmt(v)}".rjust(w) for v, w in zip(row, widths, strict=True)]
            lines.append("  ".join([name.ljust(w0), *cells]))
        return "\n".join(lines)


class SubsetPrivacyAccountant:
    """Per-subset privacy accounting over a fixed set of dataset variables ([Tan, Ex. 3.6]).

    Each release t reads the variables W_t (its output ignores every other variable) and is
    eps_t-private on a protected set U_t: an eps_t-DP release (:meth:`register` without
    ``protected``) is eps_t-private on every set (Prop 3.5); a release such as [Tan, Alg. 1]
    is eps_t-private on the variables it protects and publishes the others it reads exactly
    (``protected=``); an exact release (:meth:`register_exact`) protects nothing it reads. Its
    eps on a protected set U is :func:`release_subset_epsilon` (0, eps_t or infinite), and all
    releases together are eps(U)-private on U with eps(U) the sum over releases
    (:func:`compose_subset_epsilons`, Prop 3.4), infinite as soon as one release is not
    private on U. These are upper bounds (the propositions), never a finite figure for a set
    some release publishes exactly.

    Parameters
    ----------
    variables : sequence of str
        The dataset variables V (distinct names).
    """

    def __init__(self, variables: Sequence[str]) -> None:
        if isinstance(variables, str) or not isinstance(variables, Iterable):
            raise ParameterError(f"variables must be a list of dataset variable names, got "
                                 f"{type(variables).__name__}")
        names = [str(v) for v in variables]
        if not names:
            raise ParameterError("give at least one dataset variable")
        if len(set(names)) != len(names):
            raise ParameterError(f"dataset variables are not distinct: {names}")
        self._variables = tuple(names)
        self._releases: list[AccountedRelease] = []

    @property
    def variables(self) -> tuple[str, ...]:
        return self._variables

    @property
    def releases(self) -> tuple[AccountedRelease, ...]:
        return tuple(self._releases)

    def _subset(self, subset: Iterable[str] | str, what: str) -> frozenset[str]:
        if not isinstance(subset, str) and not isinstance(subset, Iterable):
            raise QueryError(f"{what} must be a variable name or a list of them, got "
                             f"{type(subset).__name__}")
        items = frozenset([subset] if isinstance(subset, str) else (str(v) for v in subset))
        unknown = sorted(items - set(self._variables))
        if unknown:
            raise QueryError(f"{what} names unknown variables {unknown}; "
                             f"the dataset variables are {list(self._variables)}")
        return items

    def _add(self, release: AccountedRelease) -> AccountedRelease:
        if any(r.name == release.name for r in self._releases):
            raise ParameterError(f"a release named {release.name!r} is already registered")
        if not release.reads:
            raise ParameterError(f"release {release.name!r} reads no variable; a release that "
                                 "reads nothing costs nothing and need not be registered")
        self._releases.append(release)
        return release

    def register(self, name: str, epsilon: float, reads: Iterable[str], *,
                 protected: Iterable[str] | None = None) -> AccountedRelease:
        """Record a release that reads only ``reads`` and is ``epsilon``-private on ``protected``.

        Parameters
        ----------
        name : str
            A name unique in this accountant.
        epsilon : float
            eps_t > 0 (finite). An exact release has no finite eps: use :meth:`register_exact`.
        reads : iterable of str
            W_t, every variable the output depends on, the exactly published ones included.
        protected : iterable of str, optional
            U_t. Default: every variable, i.e. the release is eps_t-DP ([Tan, Prop. 3.5]). For
            [Tan, Alg. 1] on a U_1 x V_1 table, ``reads=[U_1, V_1], protected=[U_1]``: its V_1
            totals are exact, so it is not private on any set containing V_1.
        """
        name = str(name)
        eps = check_epsilon(epsilon, f"epsilon of release {name!r}")
        w = self._subset(reads, f"release {name!r}")
        u = frozenset(self._variables) if protected is None else \
            self._subset(protected, f"the protected set of release {name!r}")
        return self._add(AccountedRelease(name, eps, w, u, exact=False))

    def register_exact(self, name: str, reads: Iterable[str]) -> AccountedRelease:
        """Record a release that publishes a function of ``reads`` without noise.

        It is 0-private on every set it does not read ([Tan, Prop. 3.3]) and not private at
        any eps (infinite) on every set that meets ``reads``.
        """
        name = str(name)
        w = self._subset(reads, f"release {name!r}")
        return self._add(AccountedRelease(name, math.inf, w, frozenset(), exact=True))

    def release_epsilons(self, subset: Iterable[str] | str) -> dict[str, float]:
        """eps of each release on U (:func:`release_subset_epsilon`: 0, eps_t or inf)."""
        u = self._subset(subset, "the subset")
        return {r.name: release_subset_epsilon(r, u) for r in self._releases}

    def epsilon(self, subset: Iterable[str] | str) -> float:
        """eps(U): all releases composed on U ([Tan, Prop. 3.4]); inf = not protected."""
        return compose_subset_epsilons(self.release_epsilons(subset).values())

    def table(self, subsets: Iterable[Iterable[str] | str] | None = None) -> SubsetPrivacyTable:
        """The per-release and total eps on each subset (default: each single variable)."""
        cols = [frozenset([v]) for v in self._variables] if subsets is None else \
            [self._subset(s, "a subset") for s in subsets]
        values = tuple(tuple(release_subset_epsilon(r, c) for c in cols)
                       for r in self._releases)
        totals = tuple(compose_subset_epsilons(row[k] for row in values)
                       for k in range(len(cols)))
        return SubsetPrivacyTable(tuple(cols), tuple(r.name for r in self._releases), values,
                                  totals)


# ---------------------------------------------------------------------------------------------
# [Tan, Alg. 1]


def two_sided_geometric_pmf(z: int | np.ndarray, epsilon: float) -> float | np.ndarray:
    """P(Z = z) = tanh(eps/4) exp(-eps |z| / 2), the corrected noise law of [Tan, Alg. 1].

    tanh(eps/4) = (1 - e^{-eps/2}) / (1 + e^{-eps/2}); the paper prints the negative
    (1 - e^{eps/2}) / (1 + e^{eps/2}).
    """
    eps = check_epsilon(epsilon)
    return math.tanh(eps / 4) * np.exp(-eps * np.abs(z) / 2)


def two_sided_geometric_variance(epsilon: float) -> float:
    """Var Z = 2 a / (1 - a)^2 with a = e^{-eps/2} (7.8354 at eps = 1)."""
    a = math.exp(-check_epsilon(epsilon) / 2)
    return 2 * a / (1 - a) ** 2


def cell_moments(n_categories: int, epsilon: float) -> tuple[float, float]:
    """(Var of a cell, Cov of two cells of the same row) in a row with n_i >= 2 categories.

    Each cell is a sum of n_i - 1 independent +-Z, so Var = (n_i - 1) Var Z; two cells share
    one noise with opposite signs, so Cov = -Var Z. A row with one category is exact (0, 0).
    """
    n = _categories(n_categories)
    v = two_sided_geometric_variance(epsilon)
    return ((n - 1) * v, -v) if n >= 2 else (0.0, 0.0)


def _categories(n: object) -> int:
    # n: untrusted (any object); this is its check.
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(f"the number of categories must be an integer >= 1, got {n!r}")
    return int(n)


def pair_matrix(n: int) -> np.ndarray:
    """The C(n, 2) x n matrix M of [Tan, Alg. 1]: a row per unordered pair j < l, +1 at j, -1 at l.

    Any member of the paper's set M(n) gives the same output law (the noises are symmetric).
    """
    n = _categories(n)
    pairs = [(j, k) for j in range(n) for k in range(j + 1, n)]
    m = np.zeros((len(pairs), n), dtype=np.int64)
    for r, (j, k) in enumerate(pairs):
        m[r, j], m[r, k] = 1, -1
    return m


@dataclass(frozen=True)
class ConsistentCountTable(JSONResult):
    """The output of [Tan, Alg. 1].

    Attributes
    ----------
    counts : numpy.ndarray
        Integer (int64) table, rows = values of V_1 (unprotected), columns = values of U_1
        (protected). Read-only. Cells may be negative (no post-processing is applied).
    row_totals : tuple of int
        The exact row totals (equal to the input's).
    epsilon : float
        The parameter: the table is eps-private on U ([Tan, Prop. 5.1]).
    privacy_loss : float
        The exact worst-case loss per moved record, eps / 2 (not eps as stated): the release is also
        (eps/2)-private on U.
    noise_variance : float
        Var Z of each pairwise noise; a cell in a row with n_i categories has variance
        (n_i - 1) * noise_variance.
    secure : bool
        True iff the noise came from ``secrets.SystemRandom``.
    seed : int or None
        The seed of a reproducible (experiments-only) draw; None for the secure default.
    sampler : str
        The noise sampler used.
    """

    counts: np.ndarray
    row_totals: tuple[int, ...]
    epsilon: float
    privacy_loss: float
    noise_variance: float
    secure: bool
    seed: int | None
    sampler: str


def _count_table(counts: ArrayLike) -> np.ndarray:
    try:
        f = np.asarray(counts, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("counts must be a 2-d table of non-negative integers") from None
    if f.ndim != 2 or f.size == 0:
        raise ParameterError(f"counts must be a non-empty 2-d table, got shape {f.shape}")
    if not np.all(np.isfinite(f)) or np.any(f < 0) or np.any(f != np.round(f)):
        raise ParameterError("counts must be non-negative integers")
    if np.any(f > 2.0**53):
        raise ParameterError("counts are too large to be represented exactly")
    return f.astype(np.int64)


def _check_cells_fit(f: np.ndarray, mask: np.ndarray, t: Fraction, eps: float) -> None:
    """Refuse, before drawing, an epsilon whose noise would overflow the 64-bit cells.

    A cell of a row with ``n_i`` possible categories gets ``n_i - 1`` noises; each exceeds
    ``TAIL_FACTOR * t`` in size with probability at most ``exp(-TAIL_FACTOR)``.
    """
    widest = int(mask.sum(axis=1).max()) - 1
    if widest < 1:
        return
    reach = int(f.max()) + widest * TAIL_FACTOR * t
    if reach >= 2**63:
        raise ParameterError(
            f"epsilon = {_fmt(eps)} is too small for this table: its noise (scale 2/eps per pair "
            "of categories) would overflow the 64-bit integer cells")


def consistent_count_table(counts: ArrayLike, epsilon: float, *,
                           allowed: ArrayLike | None = None,
                           seed: int | random.Random | None = None) -> ConsistentCountTable:
    """[Tan, Alg. 1] (corrected): a noisy count table with exact row totals.

    Parameters
    ----------
    counts : 2-d array of non-negative integers
        f(i, j): rows are the values v_i of the unprotected variable V_1, columns the values of
        the protected variable U_1.
    epsilon : float
        The table is eps-private on U (and in fact (eps/2)-private, see
        :attr:`ConsistentCountTable.privacy_loss`).
    allowed : 2-d boolean array, optional
        Which cells are possible (U_{1,i} of the paper: the structurally possible values of
        U_1 given v_i). Impossible cells must have count 0 and stay 0. Default: every cell.
        It must not be derived from the data.
    seed : int, optional
        Reproducible noise for experiments only (recorded); default secure randomness.

    Notes
    -----
    For each row with n_i >= 2 possible categories, C(n_i, 2) i.i.d. noises b with
    P(b = z) = tanh(eps/4) e^{-eps|z|/2} are drawn and b M is added (:func:`pair_matrix`). Each
    noise adds to one cell what it takes from another, so row totals are exact and cells stay
    integers; the noise has mean 0, so cells are unbiased. Moving one record between cells
    (j, l) of a row shifts the output by e_l - e_j, which the bijection b_jl -> b_jl - 1 on
    the noises absorbs at a likelihood cost of at most e^{eps/2}.
    """
    f = _count_table(counts)
    eps = check_epsilon(epsilon)
    if allowed is None:
        mask = np.ones(f.shape, dtype=bool)
    else:
        mask = np.asarray(allowed)
        if mask.shape != f.shape:
            raise ParameterError(f"allowed has shape {mask.shape}, counts has {f.shape}")
        if mask.dtype != bool:
            if not np.all(np.isin(mask, (0, 1))):
                raise ParameterError("allowed must be a boolean (0/1) table")
            mask = mask.astype(bool)
        if np.any(f[~mask] != 0):
            i, j = np.argwhere((f != 0) & ~mask)[0]
            raise ParameterError(f"cell ({i}, {j}) is marked impossible but has count {f[i, j]}")
    t = Fraction(2) / Fraction(eps)  # discrete Laplace P(z) ~ exp(-|z|/t) = exp(-eps|z|/2)
    _check_cells_fit(f, mask, t, eps)
    rng = make_rng(seed)
    g = f.copy()
    for i in range(f.shape[0]):
        cols = np.flatnonzero(mask[i])
        if cols.size < 2:  # n_i = 1: the cell equals the exact row total, nothing to hide
            continue
        for a in range(cols.size):
            for b in range(a + 1, cols.size):
                z = discrete_laplace(t, rng)
                g[i, cols[a]] += z
                g[i, cols[b]] -= z
    g.setflags(write=False)
    secure = isinstance(rng, random.SystemRandom)
    source = "secrets.SystemRandom" if secure else "seeded random.Random (experiments only)"
    return ConsistentCountTable(
        counts=g,
        row_totals=tuple(int(x) for x in f.sum(axis=1)),
        epsilon=eps,
        privacy_loss=eps / 2,
        noise_variance=two_sided_geometric_variance(eps),
        secure=secure,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        sampler=f"exact two-sided geometric (CKS discrete Laplace, t = 2/eps), {source}",
    )


#: Names this module had before, for one release: old name -> (new name, why).
_RENAMED = {"Release": ("AccountedRelease", "quiltpriv.Release is an APMQM release")}


def __getattr__(name: str) -> object:
    from quiltpriv._compat import renamed_attribute

    return renamed_attribute(__name__, _RENAMED, name)
