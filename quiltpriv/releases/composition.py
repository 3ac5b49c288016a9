"""What a sequence of releases guarantees together: only what a published theorem says.

Attribute privacy, like every Pufferfish-style guarantee, does not compose in general: two
releases, each private alone, can together reveal the secret (``docs/ledger.md`` has an
example, checked exactly by :mod:`quiltpriv.audit.joint`). So :func:`composition` states a joint
epsilon only when a published theorem whose statement quiltpriv has read covers the sequence,
with that theorem's conditions checked from the release records, and otherwise says in plain
words that no published composition result applies. It never sums epsilons on its own.

The results considered (:data:`THEOREMS`):

* ``[ZOC22, Thm. 4]``: APMQM (their Algorithm 3) is ``(eps, 0)``-distributional attribute
  private. It covers a sequence of ONE release: the release's own guarantee.
* ``[SC17]`` (Song and Chaudhuri, composition of the Markov Quilt Mechanism for time series) and
  ``[BHGKM26]`` (Bai, He, Gu, Kifer and Maeng, necessary and sufficient conditions for linear
  composition of Pufferfish mechanisms): their theorem statements could not be read when this
  module was written (only the abstracts were available), so quiltpriv claims nothing from
  them. Beyond that, [SC17]'s Markov Quilt Mechanism protects the values of records in a time
  series or Bayesian network of records (Pufferfish privacy), while APMQM protects the
  distribution parameters ``phi_i`` of attributes over a hyperparameter network [ZOC22]: a
  theorem about the first transfers to the second only where its proof's assumptions hold,
  which cannot be checked without the statement.

* ``[DR14, Thm. 3.16]``: sequential composition of differential privacy; group-DP releases
  with independent noise on one data set are (sum eps, sum delta)-DP.
* ``[Tan, Prop. 3.4]`` (with Prop. 3.5): releases private on the same protected set U, and DP
  releases, add up on U.
* ``[KM19, Table III]``: on one input (the ledger's releases on one data set), distribution
  privacy alone gives no bound; only point privacy composes.

Hence two or more APMQM releases get no joint epsilon, nor does any mix no result covers;
the explanation says why, lists what each release guarantees alone, and notes the facts the
records show (same model, same data, independent noise, the quilts each release used).
Releases are grouped by the data they were released on (:func:`same_data_groups`), never by
model or mechanism; :func:`budget_check` refuses a release a budget does not allow.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import LedgerError
from quiltpriv.releases.records import READABLE_FORMATS
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.rounding import add_up

__all__ = ["THEOREMS", "Composition", "DataIdentity", "Theorem", "budget_check", "composition",
           "compositions_by_data", "data_identity", "record_of", "same_data_groups"]


@dataclass(frozen=True)
class Theorem:
    """A published result composition considers, and whether its statement was read.

    Attributes
    ----------
    key : str
        The citation, e.g. ``"ZOC22, Thm. 4"``.
    read : bool
        Whether the statement below is the theorem's own text (then quiltpriv may use it).
    statement : str
        The theorem as published (when read), or what is known of the paper and why nothing is
        claimed from it.
    """

    key: str
    read: bool
    statement: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "read": self.read, "statement": self.statement}


#: The published results composition considers, by citation key.
THEOREMS: Mapping[str, Theorem] = {
    "ZOC22, Thm. 4": Theorem(
        "ZOC22, Thm. 4", True,
        "The Attribute-Private Markov Quilt Mechanism APMQM(X, F, A, C, {S, Q, Theta}, eps) in "
        "Algorithm 3 is (eps, 0)-distributional attribute private."),
    "SC17": Theorem(
        "SC17", False,
        "Song and Chaudhuri show that the Markov Quilt Mechanism, a Pufferfish mechanism for "
        "time-series data, has composition properties comparable to pure differential privacy "
        "(abstract). The statement of the theorem, with its conditions on the quilts, could not "
        "be read, so quiltpriv claims nothing from it; and its mechanism protects record values "
        "in a time series or a Bayesian network of records, not the distribution parameters of "
        "attributes that APMQM protects."),
    "BHGKM26": Theorem(
        "BHGKM26", False,
        "Bai, He, Gu, Kifer and Maeng prove necessary and sufficient conditions for linear "
        "composition of Pufferfish mechanisms, differential-privacy-style inequalities reached "
        "through (a, b)-influence curves (abstract). The statements could not be read, and "
        "quiltpriv computes no influence curves, so it claims nothing from them."),
    "DR14, Thm. 3.16": Theorem(
        "DR14, Thm. 3.16", True,
        "Let M_i : N^|X| -> R_i be an (eps_i, delta_i)-differentially private algorithm for "
        "i in [k]. Then if M_[k](x) = (M_1(x), ..., M_k(x)), M_[k] is (sum_i eps_i, "
        "sum_i delta_i)-differentially private. (Dwork and Roth, The Algorithmic Foundations "
        "of Differential Privacy, 2014; the mechanisms' randomness independent.)"),
    "KM19, Table III": Theorem(
        "KM19, Table III", True,
        "Sequential composition of distribution privacy: with independent inputs (A1 x A0), "
        "(eps_b, delta_b)-DistP mechanisms compose to (sum eps_b, sum delta_b)-DistP on the "
        "product pairs; with one input given to both (A1 . A0), point privacy composes "
        "((eps_b, delta_b)-DP on an adjacency gives (sum eps_b, sum delta_b)-DistP on its "
        "lifting) but distribution privacy alone gives no bound "
        "(quiltpriv.distribution.composition)."),
    "Tan, Prop. 3.4": Theorem(
        "Tan, Prop. 3.4", True,
        "Let V be a set of variables, U a subset of V and M_1 and M_2 be independent "
        "randomised algorithms such that M_1 is eps_1-private on U and M_2 is eps_2-private "
        "on U. Then M_12(D) = (M_1(D), M_2(D)) is (eps_1 + eps_2)-private on U. "
        "(Prop. 3.5: an eps-differentially private algorithm is eps-private on U.)"),
    "own guarantee": Theorem(
        "own guarantee", True,
        "One release has the guarantee its mechanism's published result gives it, as its "
        "record states (guarantee.kind, epsilon, delta; calibration.why cites the formula)."),
}

#: The one sentence every refusal starts from.
NO_RESULT = ("no published composition result applies: attribute privacy does not compose in "
             "general (two releases, each private alone, can together reveal a secret), and "
             "summing the epsilons would not be a guarantee")


@dataclass(frozen=True)
class DataIdentity:
    """What a record says about the data it was released on (never the data).

    Attributes
    ----------
    table_sha256 : str or None
        SHA-256 of the whole table as read (format 3 on); None in older records.
    dataset : str or None
        The declared data-set name, if any.
    columns_sha256 : str or None
        SHA-256 of the columns the query read.
    rows : int or None
    """

    table_sha256: str | None
    dataset: str | None
    columns_sha256: str | None
    rows: int | None

    @property
    def known(self) -> bool:
        """Whether the record identifies its whole table (else it may be on any data)."""
        return self.table_sha256 is not None or self.dataset is not None

    def keys(self) -> tuple[tuple[str, str], ...]:
        """Identities two records on the same data share (any one suffices)."""
        out = []
        if self.table_sha256 is not None:
            out.append(("table", self.table_sha256))
        if self.dataset is not None:
            out.append(("dataset", self.dataset))
        if self.columns_sha256 is not None:
            out.append(("columns", self.columns_sha256))
        return tuple(out)

    def describe(self) -> str:
        parts = []
        if self.dataset is not None:
            parts.append(f"data set {self.dataset!r}")
        if self.table_sha256 is not None:
            parts.append(f"table sha256 {self.table_sha256[:12]}...")
        elif self.columns_sha256 is not None:
            parts.append(f"columns sha256 {self.columns_sha256[:12]}... (whole table not "
                         "recorded)")
        return ", ".join(parts) or "data not recorded"


def data_identity(record: Mapping[str, Any]) -> DataIdentity:
    """The data identity a release record states (:class:`DataIdentity`)."""
    if not isinstance(record, Mapping):
        raise LedgerError(f"expected a release record (a mapping), got {type(record).__name__}")
    data = record.get("data")
    if not isinstance(data, Mapping):
        return DataIdentity(None, None, None, None)

    def text(key: str) -> str | None:
        v = data.get(key)
        return v if isinstance(v, str) and v else None

    rows = data.get("rows")
    return DataIdentity(text("table_sha256"), text("dataset"), text("sha256"),
                        rows if isinstance(rows, int) and not isinstance(rows, bool) else None)


@dataclass(frozen=True)
class _Facts:
    """What composition reads from one release record, parsed and checked."""

    label: str
    mechanism: str
    kind: str
    epsilon: float
    delta: float
    sensitive: tuple[str, ...]
    model: str | None
    source: str
    seed: int | None
    data: DataIdentity
    quilts: Mapping[str, tuple[str, ...]]
    group_records: int | None


@dataclass(frozen=True)
class Composition:
    """What a sequence of releases guarantees together, when a published theorem says so.

    Attributes
    ----------
    releases : tuple of str
        The releases considered (ledger entry numbers ``#k``, or positions ``[k]``).
    epsilon : float or None
        The joint guarantee for secrets about every attribute in ``sensitive``; None when no
        published result covers the sequence (see ``reasons``).
    theorem : str or None
        The citation of the theorem used (a key of :data:`THEOREMS`).
    citation : str or None
        That theorem's statement.
    conditions : tuple of str
        The theorem's conditions, each checked from the records and met.
    assumptions : tuple of str
        What is assumed, not checked.
    reasons : tuple of str
        Why no published result applies, in plain words (empty when ``epsilon`` is given).
    notes : tuple of str
        Facts the records show about the sequence (same model, same data, noise, quilts).
    sensitive : tuple of str
        The attributes any release protects.
    alone : tuple of tuple
        Per release: (label, epsilon, sensitive attributes): what it guarantees alone.
    """

    releases: tuple[str, ...]
    epsilon: float | None
    theorem: str | None
    citation: str | None
    conditions: tuple[str, ...]
    assumptions: tuple[str, ...]
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    sensitive: tuple[str, ...]
    alone: tuple[tuple[str, float, tuple[str, ...]], ...]
    delta: float | None = 0.0
    kind: str | None = "distributional attribute privacy"
    alone_by: str = "by [ZOC22, Thm. 4]"

    @property
    def composed(self) -> bool:
        return self.epsilon is not None

    def to_dict(self) -> dict[str, Any]:
        return {"releases": list(self.releases), "epsilon": self.epsilon,
                "delta": self.delta if self.composed else None,
                "kind": self.kind if self.composed else None, "theorem": self.theorem,
                "citation": self.citation,
                "conditions": list(self.conditions), "assumptions": list(self.assumptions),
                "reasons": list(self.reasons), "notes": list(self.notes),
                "sensitive": list(self.sensitive),
                "alone": [{"release": lab, "epsilon": e, "sensitive": list(s)}
                          for lab, e, s in self.alone]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        n = len(self.releases)
        lines = [f"releases {', '.join(self.releases)} ({n} release{'s' if n != 1 else ''}):"]
        if self.composed:
            about = (f"for secrets about {_names(self.sensitive)}" if self.sensitive else
                     "for every property of the data")
            delta = f", delta = {fmt_number(self.delta)}" if self.delta else ""
            lines.append(f"  together: epsilon = {fmt_number(self.epsilon)}{delta} {about}, by "
                         f"[{self.theorem}] ({self.kind})")
            lines += _wrap(f"[{self.theorem}] {self.citation}")
            lines += [w for c in self.conditions for w in _wrap(f"checked: {c}")]
            lines += [w for c in self.assumptions for w in _wrap(f"assumed: {c}")]
        else:
            lines.append("  together: NO joint guarantee.")
            lines += [w for r in self.reasons for w in _wrap(f"- {r}")]
        lines += [w for r in self.notes for w in _wrap(f"note: {r}")]
        alone = "; ".join(f"{lab}: epsilon {fmt_number(e)} for "
                          f"{_names(s) if s else 'every property of the data'}"
                          for lab, e, s in self.alone)
        lines += _wrap(f"each alone, {self.alone_by}: {alone}")
        return "\n".join(lines)


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False)


def _names(xs: Iterable[str]) -> str:
    return "{" + ", ".join(xs) + "}"


# -- reading records --------------------------------------------------------------------------


def record_of(item: Any) -> tuple[str | None, Mapping[str, Any]]:
    """(label, record) of a ledger entry, a ``Release``, an entry's dict or a record dict."""
    seq, record = getattr(item, "seq", None), getattr(item, "record", None)
    if isinstance(seq, int) and isinstance(record, Mapping):  # a LedgerEntry
        return f"#{seq}", record
    to_dict = getattr(item, "to_dict", None)
    if callable(to_dict) and not isinstance(item, Mapping):
        return None, to_dict()
    if isinstance(item, Mapping):
        if set(item) == {"seq", "prev", "hash", "record"}:
            return f"#{item['seq']}", item["record"]
        return None, item
    raise LedgerError(f"composition: expected ledger entries or release records, got "
                      f"{type(item).__name__}")


def _number(x: Any, what: str, *, positive: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) \
            or x < 0 or (positive and x == 0):
        raise LedgerError(f"{what} is not a finite number {'> 0' if positive else '>= 0'}: "
                          f"{x!r}")
    return float(x)


def _names_list(x: Any, what: str) -> tuple[str, ...]:
    if not isinstance(x, list) or not all(isinstance(v, str) for v in x):
        raise LedgerError(f"{what} is not a list of attribute names")
    return tuple(x)


def _facts(label: str, r: Mapping[str, Any]) -> _Facts:
    """Parse one record into what composition needs, refusing anything malformed."""
    where = f"composition: release {label}"
    if not isinstance(r, Mapping) or r.get("format") not in READABLE_FORMATS:
        raise LedgerError(f"{where}: not a {' or '.join(READABLE_FORMATS)} record")
    mech = r.get("mechanism")
    if not isinstance(mech, str) or not mech:
        raise LedgerError(f"{where}: the record names no mechanism")
    quilts: dict[str, tuple[str, ...]] = {}
    group_records = None
    try:
        g, noise = r["guarantee"], r["noise"]
        eps = _number(g["epsilon"], f"{where}: epsilon", positive=True)
        delta = _number(g["delta"], f"{where}: delta")
        kind = g.get("kind", "distributional attribute privacy")  # format 1: APMQM only
        if not isinstance(kind, str):
            raise LedgerError(f"{where}: the guarantee's kind is not a text")
        if mech == "APMQM":
            plan = r["plan"]
            if plan.get("mechanism") != "APMQM":
                raise LedgerError(f"{where}: an APMQM record whose plan is not an APMQM plan")
            for node, sp in plan["sensitive"].items():
                quilts[str(node)] = _names_list(sp["quilt"], f"{where}: the quilt of {node!r}")
                _number(sp["influence"], f"{where}: the influence of {node!r}")
            sensitive = tuple(quilts)
            if delta != 0:
                raise LedgerError(f"{where}: delta = {delta}; APMQM releases have delta = 0")
            if not quilts:
                raise LedgerError(f"{where}: the plan protects no attribute")
        else:
            sensitive = _names_list(g.get("sensitive", []), f"{where}: the sensitive list")
        if kind == "differential privacy (group)":
            n = (r.get("calibration") or {}).get("records")
            if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
                group_records = n
        seed = noise["seed"]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise LedgerError(f"{where}: the seed {seed!r} is not an integer")
        source = noise["source"]
        model = r.get("model")
        model_fp = model.get("fingerprint") if isinstance(model, Mapping) else None
    except (KeyError, TypeError, AttributeError) as exc:
        raise LedgerError(f"{where}: the record lacks {exc}") from None
    if source not in ("secure", "seeded", "none"):
        raise LedgerError(f"{where}: unknown noise source {source!r}")
    return _Facts(label=label, mechanism=mech, kind=kind, epsilon=eps, delta=delta,
                  sensitive=sensitive, model=None if model_fp is None else str(model_fp),
                  source=source, seed=seed, data=data_identity(r), quilts=quilts,
                  group_records=group_records)


# -- the facts the records show ---------------------------------------------------------------


def _independence(facts: Sequence[_Facts]) -> list[str]:
    """Why the noise of the releases may not be independent (empty: independent)."""
    out = []
    seeds: dict[int, str] = {}
    for f in facts:
        if f.source == "seeded" and f.seed is None:
            out.append(f"release {f.label} drew seeded noise from a random.Random stream whose "
                       "seed is not recorded")
        elif f.source == "seeded" and f.seed is not None:
            if f.seed in seeds:
                out.append(f"releases {seeds[f.seed]} and {f.label} used the same seed "
                           f"{f.seed}: their noise is one draw, twice, not independent")
            else:
                seeds[f.seed] = f.label
    return out


def _notes(facts: Sequence[_Facts]) -> list[str]:
    """Plain facts about a sequence of two or more releases (none of them a guarantee)."""
    out = []
    models = sorted({f.model for f in facts if f.model is not None})
    without = [f.label for f in facts if f.model is None]
    if len(models) == 1 and not without:
        out.append(f"every release was planned against the same model (fingerprint "
                   f"{models[0][:16]}...)")
    elif models:
        out.append(f"the releases were planned against {len(models)} different model"
                   f"{'s' if len(models) != 1 else ''}"
                   f"{'; ' + ', '.join(without) + ' used no model' if without else ''}")
    mechanisms = list(dict.fromkeys(f.mechanism for f in facts))
    if len(mechanisms) > 1:
        out.append(f"the releases used different mechanisms: {', '.join(mechanisms)}")
    ids = {f.data.describe() for f in facts}
    if len(ids) == 1:
        out.append(f"every release is on the same data ({next(iter(ids))})")
    else:
        out.append("the releases are on the same data (the same whole table, declared data-set "
                   "name or columns: " + "; ".join(f"{f.label}: {f.data.describe()}"
                                                   for f in facts) + ")")
    unknown = [f.label for f in facts if not f.data.known]
    if unknown:
        out.append(f"release{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} recorded "
                   "no whole-table hash or data-set name (written before format 3): counted "
                   "with every release, since it may be on the same data")
    out += _independence(facts)
    for node in dict.fromkeys(n for f in facts for n in f.quilts):
        used = "; ".join(f"{f.label}: " + (_names(f.quilts[node]) if node in f.quilts
                                           else "not protected") for f in facts)
        out.append(f"Markov quilts used for {node!r}: {used}")
    return out


# -- the composition results ------------------------------------------------------------------


def _sum_up(xs: Iterable[float]) -> float:
    """The exact sum of floats, rounded up to a float (a budget is never under-stated)."""
    return add_up(*xs)  # the one directed rounding (quiltpriv.utils.rounding)


DP_KIND = "differential privacy (group)"
SUBSET_KIND = "subset privacy"
DISTP_KINDS = ("distribution privacy", "local distribution privacy")


def _dp_sequential(facts: Sequence[_Facts]) -> tuple[list[str], list[str]] | None:
    """[DR14, Thm. 3.16] for group-DP releases: (conditions, assumptions), or None."""
    if not all(f.kind == DP_KIND for f in facts) or _independence(facts):
        return None
    conditions = [
        "every release is differentially private for a group of all n records (its guarantee "
        "kind is 'differential privacy (group)'): any two datasets of its size are "
        "neighbours, so each release is (eps_j, delta_j)-DP for this data's every change",
        "the noise of the releases is independent (secure noise, or distinct recorded seeds)",
    ]
    for f in facts:
        if f.group_records is not None and f.data.rows is not None:
            if f.data.rows > f.group_records:
                return None
            conditions.append(f"release {f.label}: the data's {f.data.rows} rows are within "
                              f"its group of {f.group_records} records")
    assumptions = ["the releases are on one dataset; (eps, delta)-DP over every change of it "
                   "is (eps, delta) attribute privacy for every secret and every prior"]
    return conditions, assumptions


def _subset_sequential(facts: Sequence[_Facts]) -> tuple[list[str], list[str], tuple[str, ...]
                                                         ] | None:
    """[Tan, Prop. 3.4] (with Prop. 3.5 for DP releases) on one protected set U."""
    if any(f.kind not in (SUBSET_KIND, DP_KIND) for f in facts) or _independence(facts):
        return None
    sets = {f.sensitive for f in facts if f.kind == SUBSET_KIND}
    if len(sets) != 1 or not next(iter(sets)):
        return None
    if any(f.delta != 0 for f in facts):
        return None
    (u,) = sets
    conditions = [f"every release is eps_j-private on the same protected set U = {_names(u)} "
                  "(subset privacy), or eps_j-DP, hence eps_j-private on every U "
                  "([Tan, Prop. 3.5])",
                  "the releases are independent randomised algorithms on the same dataset "
                  "(secure noise, or distinct recorded seeds)", "every delta is 0"]
    return conditions, [], u


def composition(entries: Iterable[Any]) -> Composition:
    """What a sequence of releases guarantees together, only where a published theorem says so.

    Parameters
    ----------
    entries : iterable of LedgerEntry, Release, ReleaseRecord or release record (dict)
        The releases, on the same data (:func:`compositions_by_data` groups a ledger's
        entries). From a ledger, pass verified entries
        (:func:`quiltpriv.releases.ledger.read`).

    Returns
    -------
    Composition
        For one release: its own guarantee (APMQM: by [ZOC22, Thm. 4], with its conditions
        checked). For two or more, a joint epsilon only by a result whose conditions the
        records meet: [DR14, Thm. 3.16] for group-DP releases with independent noise (the
        epsilons and the deltas add up); [Tan, Prop. 3.4] (with Prop. 3.5) for subset-privacy
        releases on one protected set U and DP releases. Any other sequence (two APMQM
        releases; APMQM next to group DP; ...) has ``epsilon`` None and ``reasons`` saying
        that no published composition result applies and why.

    Raises
    ------
    LedgerError
        No releases, or a record that is malformed (the release named).
    """
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise LedgerError(f"composition: expected a sequence of ledger entries or release "
                          f"records, got {type(entries).__name__}")
    items = [record_of(e) for e in entries]
    if not items:
        raise LedgerError("composition: no releases given")
    facts = [_facts(lab or f"[{k}]", r) for k, (lab, r) in enumerate(items)]
    labels = tuple(f.label for f in facts)
    alone = tuple((f.label, f.epsilon, f.sensitive) for f in facts)
    sensitive = tuple(dict.fromkeys(n for f in facts for n in f.sensitive))
    if len(facts) == 1:
        return _alone(facts[0], labels, alone, sensitive)
    notes = tuple(_notes(facts))
    dp = _dp_sequential(facts)
    if dp is not None:
        thm = THEOREMS["DR14, Thm. 3.16"]
        eps, delta = _sum_up(f.epsilon for f in facts), _sum_up(f.delta for f in facts)
        return Composition(releases=labels, epsilon=eps, theorem=thm.key,
                           citation=thm.statement, conditions=tuple(dp[0]),
                           assumptions=tuple(dp[1]), reasons=(), notes=notes,
                           sensitive=(), alone=alone, delta=delta, kind=DP_KIND,
                           alone_by=_alone_by(facts))
    subset = _subset_sequential(facts)
    if subset is not None:
        # The sum rounded up, as quiltpriv.mechanisms.subset_privacy.compose_subset_epsilons
        # gives it (a layer above this one; the tests check that both agree).
        thm = THEOREMS["Tan, Prop. 3.4"]
        return Composition(releases=labels, epsilon=_sum_up(f.epsilon for f in facts),
                           theorem=thm.key, citation=thm.statement,
                           conditions=tuple(subset[0]), assumptions=tuple(subset[1]),
                           reasons=(), notes=notes, sensitive=subset[2], alone=alone,
                           delta=0.0, kind=SUBSET_KIND, alone_by=_alone_by(facts))
    return Composition(releases=labels, epsilon=None, theorem=None, citation=None,
                       conditions=(), assumptions=(), reasons=tuple(_reasons(facts)),
                       notes=notes, sensitive=sensitive, alone=alone, delta=None, kind=None,
                       alone_by=_alone_by(facts))


def _alone_by(facts: Sequence[_Facts]) -> str:
    if all(f.mechanism == "APMQM" for f in facts):
        return "by [ZOC22, Thm. 4]"
    return "as each record states (its mechanism's result)"


def _reasons(facts: Sequence[_Facts]) -> list[str]:
    """Why no published result covers the sequence, in plain words."""
    out = [NO_RESULT]
    kinds = list(dict.fromkeys(f.kind for f in facts))
    if len(kinds) > 1:
        out.append("the releases give different kinds of guarantee (" + ", ".join(kinds) +
                   "): no published result composes these kinds together")
    if any(f.mechanism == "APMQM" for f in facts):
        out += [
            "[SC17] (Song and Chaudhuri: the Markov Quilt Mechanism composes under stated "
            "conditions): the statement of its theorem could not be read, so quiltpriv "
            "claims nothing from it; and its setting differs (record values in a time "
            "series or a Bayesian network of records, where APMQM protects the "
            "distribution parameters of attributes over a hyperparameter network)",
            "[BHGKM26] (Bai, He, Gu, Kifer and Maeng: necessary and sufficient conditions "
            "for linear composition of Pufferfish mechanisms): its statements could not be "
            "read and quiltpriv computes no (a, b)-influence curves, so it claims nothing "
            "from it"]
    if all(f.kind in DISTP_KINDS + (DP_KIND,) for f in facts) and \
            any(f.kind in DISTP_KINDS for f in facts):
        # The ledger's releases on one data set share ONE input: [KM19, Table III]'s
        # A1 . A0, where distribution privacy alone gives no bound (only point privacy
        # composes; quiltpriv.distribution.composition.compose_same_input, a layer above this
        # one, gives inf; the tests check that both agree). Group DP is point privacy, the
        # distribution-privacy releases are not.
        out.append("[KM19, Table III] one input (A1 . A0): the releases read one input "
                   "(the same data), and on one input distribution privacy does not compose "
                   "(two releases that each leak nothing can together reveal the "
                   "distribution); only point (differential) privacy of every release "
                   "would, and " + ", ".join(f.label for f in facts if f.kind in DISTP_KINDS)
                   + " state distribution privacy only")
    if all(f.kind in (DP_KIND, SUBSET_KIND) for f in facts):
        why = _independence(facts)
        if why:
            out.append("sequential composition ([DR14, Thm. 3.16], [Tan, Prop. 3.4]) needs "
                       "independent noise: " + "; ".join(why))
    return out


def _alone(f: _Facts, labels: tuple[str, ...], alone: tuple[tuple[str, float, tuple[str, ...]],
                                                                ...],
           sensitive: tuple[str, ...]) -> Composition:
    """A sequence of one release: its own guarantee, by the result it was made under."""
    assumed: tuple[str, ...] = ()
    if f.source == "seeded":
        assumed += ("the seed is secret (a record holding its seed reveals the noise: seeded "
                    "noise is for experiments)",)
    if f.mechanism != "APMQM":
        thm = THEOREMS["own guarantee"]
        conditions = (f"the release is a {f.mechanism} release with ({fmt_number(f.epsilon)}, "
                      f"{fmt_number(f.delta)})-{f.kind}",)
        return Composition(releases=labels, epsilon=f.epsilon, theorem=thm.key,
                           citation=thm.statement, conditions=conditions, assumptions=assumed,
                           reasons=(), notes=(), sensitive=sensitive, alone=alone,
                           delta=f.delta, kind=f.kind, alone_by=_alone_by([f]))
    thm = THEOREMS["ZOC22, Thm. 4"]
    conditions = (
        "the release is an APMQM release ([ZOC22, Alg. 3]) with delta = 0 and epsilon "
        f"{fmt_number(f.epsilon)}, protecting {_names(f.quilts)}",
    )
    assumed = ("its plan's quilts, influences and sensitivities, verified when the release was "
               "made, hold for the model it names", *assumed)
    return Composition(releases=labels, epsilon=f.epsilon, theorem=thm.key,
                       citation=thm.statement, conditions=conditions, assumptions=assumed,
                       reasons=(), notes=(), sensitive=sensitive, alone=alone)


# -- grouping a ledger by the data released ---------------------------------------------------


def same_data_groups(records: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Indices of ``records`` grouped by the data they were released on (first appearance
    order).

    Two releases are on the same data when they share the whole table's hash, the declared
    data-set name, or the hash of the columns read (any one; transitively). A record that
    identifies no whole table (written before format 3) may be on any data: it joins every
    group. Grouping too much only withholds a joint guarantee; grouping too little would
    claim one that does not hold.
    """
    if isinstance(records, str | bytes | Mapping) or not isinstance(records, Sequence):
        raise LedgerError(f"expected a list of release records, got {type(records).__name__}")
    parent = list(range(len(records)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    owner: dict[tuple[str, str], int] = {}
    unknown = []
    for k, r in enumerate(records):
        ident = data_identity(r)
        if not ident.known:
            unknown.append(k)
        for key in ident.keys():
            if key in owner:
                union(k, owner[key])
            else:
                owner[key] = k
    for k in unknown:
        for j in range(len(records)):
            union(k, j)
    groups: dict[int, list[int]] = {}
    for k in range(len(records)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def compositions_by_data(entries: Sequence[Any]) -> list[Composition | LedgerError]:
    """:func:`composition` of ledger entries, one sequence per data set released on
    (:func:`same_data_groups`: whatever the model or mechanism), in order of first
    appearance; a sequence whose records composition cannot read gives its error instead."""
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise LedgerError(f"composition: expected a sequence of ledger entries, got "
                          f"{type(entries).__name__}")
    items = list(entries)
    recs = [record_of(e)[1] for e in items]
    out: list[Composition | LedgerError] = []
    for g in same_data_groups(recs):
        try:
            out.append(composition([items[k] for k in g]))
        except LedgerError as exc:
            out.append(exc)
    return out


# -- a budget ---------------------------------------------------------------------------------


def budget_check(entries: Sequence[Any], prospective: Mapping[str, Any], budget: float, *,
                 allow_unproved: bool = False) -> Composition | None:
    """Refuse a release, before it is drawn, that a budget does not allow.

    The releases counted are the ledger's ``entries`` on the same data as ``prospective`` (the
    new release's record before drawing; :func:`same_data_groups`) and the new release. Their
    :func:`composition` must prove a total epsilon within ``budget``; a total that no
    published result proves is refused unless ``allow_unproved``.

    Returns
    -------
    Composition or None
        The composition the check used; None when the records could not be read and
        ``allow_unproved`` let the release through.

    Raises
    ------
    BudgetError
        The proved total exceeds ``budget``, or no total is proved and ``allow_unproved`` is
        false; the message names the releases counted.
    """
    from quiltpriv.errors import BudgetError

    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise LedgerError(f"budget: expected a sequence of ledger entries, got "
                          f"{type(entries).__name__}")
    if not isinstance(prospective, Mapping):
        raise LedgerError(f"budget: the new release's record must be a mapping, got "
                          f"{type(prospective).__name__}")
    if isinstance(budget, bool) or not isinstance(budget, int | float) or \
            not math.isfinite(budget) or budget <= 0:
        raise LedgerError(f"budget must be a finite epsilon > 0, got {budget!r}")
    items = list(entries)
    recs = [record_of(e)[1] for e in items] + [prospective]
    new = len(recs) - 1
    group = next(g for g in same_data_groups(recs) if new in g)
    counted = [items[k] for k in group if k != new]
    labels = [record_of(e)[0] or f"[{k}]" for k, e in enumerate(counted)]
    names = ", ".join([*labels, "this release"])
    try:
        c = composition([*counted, {"seq": len(items), "prev": "", "hash": "",
                                    "record": dict(prospective)}])
    except LedgerError as exc:
        if allow_unproved:
            return None
        raise BudgetError(f"budget {fmt_number(budget)}: the total of releases {names} on the same "
                          f"data cannot be proved ({exc}); --allow-unproved (allow_unproved="
                          "True) releases anyway") from None
    if c.composed:
        assert c.epsilon is not None
        if c.epsilon > budget:
            raise BudgetError(f"budget {fmt_number(budget)} exceeded: releases {names} on the same "
                              f"data total epsilon {fmt_number(c.epsilon)} by [{c.theorem}]; "
                              "nothing was drawn")
        return c
    if not allow_unproved:
        kinds = [r for r in c.reasons if r.startswith("the releases give different kinds")]
        why = kinds[0] if kinds else ("attribute privacy does not compose in general; "
                                      "'quiltpriv ledger show' gives the reasons")
        raise BudgetError(f"budget {fmt_number(budget)}: no published result proves a total for "
                          f"releases {names} on the same data ({why}); "
                          "nothing was drawn; --allow-unproved (allow_unproved=True) releases "
                          "anyway")
    return c
