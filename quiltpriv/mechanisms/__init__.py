"""The release mechanisms, one module per mechanism, and what they share.

``apmqm`` (the Attribute-Private Markov Quilt Mechanism's planner and plans, [ZOC22, Alg. 3]),
``plan_fields`` (strict parsing of a plan's fields), ``step_plans`` (a time series' per-step
plans, held as runs), ``chain_quilts`` and ``hmm_quilts`` (exact least-noise quilts of every
step of a Markov chain or hidden Markov model, linear in T), ``attained`` (the epsilon each
attribute really gets at the published scale) and ``fragility`` (would a small change of one
table flip a plan), ``verification`` (checking a saved plan), ``record_verification`` (a
published release record checked end to end), ``apmqm_release`` (releasing a verified plan's
query), ``calibration`` (the one Laplace and Gaussian calibration),
``mqm`` (the original Markov Quilt Mechanism [SWC17]), ``apgm`` (attribute-private Gaussian
mechanisms [ZOC22, Alg. 1, 2]), ``wasserstein`` ([ZOC22, Alg. 4]), ``group_dp`` (the group
differential privacy baseline), ``noise`` (exact samplers), ``protocol`` (the one shape of
every mechanism: guarantee, calibration, ``release(data)`` and its record), ``registry`` (the
mechanisms by name, as ``quiltpriv release --mechanism`` runs them), ``compare`` (every
applicable mechanism side by side), ``subset_privacy`` (privacy on a subset of variables [Tan]).

``quiltpriv.mechanisms.<name>`` for a name of quiltpriv 0.1's flat ``quiltpriv.mechanisms``
module (now :mod:`quiltpriv.mechanisms.apmqm` and :mod:`quiltpriv.mechanisms.apmqm_release`)
still works, with a :class:`DeprecationWarning`.
"""

from quiltpriv._compat import forward_attribute as _forward

_SUBMODULES = frozenset({"apgm", "apmqm", "apmqm_release", "compare", "group_dp", "mqm", "noise",
                         "protocol", "registry", "subset_privacy", "verification", "wasserstein"})


def __getattr__(name: str) -> object:
    return _forward(__name__, _SUBMODULES, name)
