"""Checking guarantees exactly: the exact auditor of noisy counts (``exact``), of pairs and
sequences of releases (``joint``), of the Gaussian mechanisms (``gaussian``), and the MAP
adversary's score of any mechanism with a discrete secret (``adversary``); the least Laplace
scale the exact audit proves sufficient, per sensitive attribute (``least_scale``), and the
exact joint loss of a ledger's releases on the same data (``ledger``).

``quiltpriv.audit.<name>`` for a name of quiltpriv 0.1's flat ``quiltpriv.audit`` module (now
:mod:`quiltpriv.audit.exact`) still works, with a :class:`DeprecationWarning`.
"""

from quiltpriv._compat import forward_attribute as _forward

_SUBMODULES = frozenset({"adversary", "exact", "gaussian", "joint"})


def __getattr__(name: str) -> object:
    return _forward(__name__, _SUBMODULES, name)
