"""Generative adversarial privacy [HKCSR17]: the optimal privatizers in closed form and by
convex programs (``privatizers``), the MMSE adversary and the mutual-information privatizers
(``information``), the alpha-loss adversary and the privatizers minimising Arimoto mutual
information (``alpha_loss``), and privatizers learned against a neural adversary
(``learning``).

``quiltpriv.gap.<name>`` for a name of quiltpriv 0.1's flat ``quiltpriv.gap`` module (now
:mod:`quiltpriv.gap.privatizers`) still works, with a :class:`DeprecationWarning`.
"""

from quiltpriv._compat import forward_attribute as _forward

_SUBMODULES = frozenset({"alpha_loss", "information", "learning", "privatizers"})


def __getattr__(name: str) -> object:
    return _forward(__name__, _SUBMODULES, name)
