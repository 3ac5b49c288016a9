"""Graph structure of Theta: d-separation and Markov quilts ([ZOC22, Def. 7]), in ``quilts``.

Imports only :mod:`quiltpriv.model`, :mod:`quiltpriv.utils` and :mod:`quiltpriv.errors`; a
quilt is priced by :mod:`quiltpriv.inference`, a layer above.
"""
