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

Hence two or more releases get no joint epsilon; the explanation says why, lists what each
release guarantees alone, and notes the facts the records show (same model, same data
columns, independent noise, the quilts each release used).
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

__all__ = ["THEOREMS", "Composition", "Theorem", "composition"]


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
}

#: The one sentence every refusal starts from.
NO_RESULT = ("no published composition result applies: attribute privacy does not compose in "
             "general (two releases, each private alone, can together reveal a secret), and "
             "summing the epsilons would not be a guarantee")


@dataclass(frozen=True)
class _Facts:
    """What composition reads from one release record, parsed and checked."""

    label: str
    epsilon: float
    model: str
    source: str
    seed: int | None
    data_sha: str | None
    quilts: Mapping[str, tuple[str, ...]]


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

    @property
    def composed(self) -> bool:
        return self.epsilon is not None

    def to_dict(self) -> dict[str, Any]:
        return {"releases": list(self.releases), "epsilon": self.epsilon,
                "theorem": self.theorem, "citation": self.citation,
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
            lines.append(f"  together: epsilon = {_num(self.epsilon)} for secrets about "
                         f"{_names(self.sensitive)}, by [{self.theorem}]")
            lines += _wrap(f"[{self.theorem}] {self.citation}")
            lines += [w for c in self.conditions for w in _wrap(f"checked: {c}")]
            lines += [w for c in self.assumptions for w in _wrap(f"assumed: {c}")]
        else:
            lines.append("  together: NO joint guarantee.")
            lines += [w for r in self.reasons for w in _wrap(f"- {r}")]
        lines += [w for r in self.notes for w in _wrap(f"note: {r}")]
        alone = "; ".join(f"{lab}: epsilon {_num(e)} for {_names(s)}" for lab, e, s in self.alone)
        lines += _wrap(f"each alone, by [ZOC22, Thm. 4]: {alone}")
        return "\n".join(lines)


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _names(xs: Iterable[str]) -> str:
    return "{" + ", ".join(xs) + "}"


# -- reading records --------------------------------------------------------------------------


def _record_of(item: Any) -> tuple[str | None, Mapping[str, Any]]:
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
    if r.get("mechanism") != "APMQM":
        raise LedgerError(f"{where}: mechanism {r.get('mechanism')!r}; composition knows APMQM "
                          "releases only")
    try:
        plan, g, noise = r["plan"], r["guarantee"], r["noise"]
        eps = _number(g["epsilon"], f"{where}: epsilon", positive=True)
        delta = _number(g["delta"], f"{where}: delta")
        quilts = {}
        for node, sp in plan["sensitive"].items():
            quilts[str(node)] = _names_list(sp["quilt"], f"{where}: the quilt of {node!r}")
            _number(sp["influence"], f"{where}: the influence of {node!r}")
        seed = noise["seed"]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise LedgerError(f"{where}: the seed {seed!r} is not an integer")
        model, mech, source = r["model"]["fingerprint"], r["mechanism"], noise["source"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise LedgerError(f"{where}: the record lacks {exc}") from None
    if mech != "APMQM" or plan.get("mechanism") != "APMQM":
        raise LedgerError(f"{where}: mechanism {mech!r}; composition knows APMQM releases only")
    if delta != 0:
        raise LedgerError(f"{where}: delta = {delta}; APMQM releases have delta = 0")
    if source not in ("secure", "seeded", "none"):
        raise LedgerError(f"{where}: unknown noise source {source!r}")
    if not quilts:
        raise LedgerError(f"{where}: the plan protects no attribute")
    data = r.get("data")
    data_sha = data.get("sha256") if isinstance(data, Mapping) else None
    return _Facts(label=label, epsilon=eps, model=str(model), source=source, seed=seed,
                  data_sha=None if data_sha is None else str(data_sha), quilts=quilts)


# -- the facts the records show ---------------------------------------------------------------


def _notes(facts: Sequence[_Facts]) -> list[str]:
    """Plain facts about a sequence of two or more releases (none of them a guarantee)."""
    out = []
    models = sorted({f.model for f in facts})
    if len(models) == 1:
        out.append(f"every release was planned against the same model (fingerprint "
                   f"{models[0][:16]}...)")
    else:
        out.append(f"the releases were planned against {len(models)} different models")
    shas = {f.data_sha for f in facts}
    sha = next(iter(shas))
    if len(shas) == 1 and sha is not None:
        out.append(f"every release read the same data columns (sha256 "
                   f"{sha[:12]}...)")
    else:
        out.append("the releases read different data columns or different data (the hash "
                   "covers only the columns each query read)")
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
    for node in dict.fromkeys(n for f in facts for n in f.quilts):
        used = "; ".join(f"{f.label}: " + (_names(f.quilts[node]) if node in f.quilts
                                           else "not protected") for f in facts)
        out.append(f"Markov quilts used for {node!r}: {used}")
    return out


# -- composition ------------------------------------------------------------------------------


def composition(entries: Iterable[Any]) -> Composition:
    """What a sequence of releases guarantees together, only where a published theorem says so.

    Parameters
    ----------
    entries : iterable of LedgerEntry, Release or release record (dict)
        The releases. From a ledger, pass verified entries (:func:`quiltpriv.releases.ledger.read`).

    Returns
    -------
    Composition
        For one release: its own guarantee by [ZOC22, Thm. 4], with its conditions (an APMQM
        record with delta = 0) checked. For two or more: ``epsilon`` None and ``reasons``
        saying that no published composition result applies and why ([SC17] and [BHGKM26]
        could not be read; see :data:`THEOREMS`), with each release's own guarantee and the
        facts the records show in ``notes``.

    Raises
    ------
    LedgerError
        No releases, or a record that is malformed (the release named).
    """
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise LedgerError(f"composition: expected a sequence of ledger entries or release "
                          f"records, got {type(entries).__name__}")
    items = [_record_of(e) for e in entries]
    if not items:
        raise LedgerError("composition: no releases given")
    facts = [_facts(lab or f"[{k}]", r) for k, (lab, r) in enumerate(items)]
    labels = tuple(f.label for f in facts)
    alone = tuple((f.label, f.epsilon, tuple(f.quilts)) for f in facts)
    sensitive = tuple(dict.fromkeys(n for f in facts for n in f.quilts))
    if len(facts) == 1:
        return _alone(facts[0], labels, alone, sensitive)
    reasons = (NO_RESULT,
               "[SC17] (Song and Chaudhuri: the Markov Quilt Mechanism composes under stated "
               "conditions): the statement of its theorem could not be read, so quiltpriv "
               "claims nothing from it; and its setting differs (record values in a time "
               "series or a Bayesian network of records, where APMQM protects the "
               "distribution parameters of attributes over a hyperparameter network)",
               "[BHGKM26] (Bai, He, Gu, Kifer and Maeng: necessary and sufficient conditions "
               "for linear composition of Pufferfish mechanisms): its statements could not be "
               "read and quiltpriv computes no (a, b)-influence curves, so it claims nothing "
               "from it")
    return Composition(releases=labels, epsilon=None, theorem=None, citation=None,
                       conditions=(), assumptions=(), reasons=reasons,
                       notes=tuple(_notes(facts)), sensitive=sensitive, alone=alone)


def _alone(f: _Facts, labels: tuple[str, ...], alone: tuple[tuple[str, float, tuple[str, ...]],
                                                                ...],
           sensitive: tuple[str, ...]) -> Composition:
    """A sequence of one release: its own guarantee, by the theorem it was planned under."""
    thm = THEOREMS["ZOC22, Thm. 4"]
    conditions = (
        "the release is an APMQM release ([ZOC22, Alg. 3]) with delta = 0 and epsilon "
        f"{_num(f.epsilon)}, protecting {_names(f.quilts)}",
    )
    assumed: tuple[str, ...] = (
        "its plan's quilts, influences and sensitivities, verified when the release was made, "
        "hold for the model it names",)
    if f.source == "seeded":
        assumed += ("the seed is secret (a record holding its seed reveals the noise: seeded "
                    "noise is for experiments)",)
    return Composition(releases=labels, epsilon=f.epsilon, theorem=thm.key,
                       citation=thm.statement, conditions=conditions, assumptions=assumed,
                       reasons=(), notes=(), sensitive=sensitive, alone=alone)


def compositions_by_model(entries: Sequence[Any]) -> list[Composition | LedgerError]:
    """:func:`composition` of ledger entries, one sequence per model (in order of first
    appearance); a sequence whose records composition cannot read gives its error instead."""
    groups: dict[str, list[Any]] = {}
    for e in entries:
        model = e.record.get("model")
        fp = model.get("fingerprint") if isinstance(model, Mapping) else None
        groups.setdefault(str(fp), []).append(e)
    out: list[Composition | LedgerError] = []
    for g in groups.values():
        try:
            out.append(composition(g))
        except LedgerError as exc:
            out.append(exc)
    return out
