"""Graph structure of Theta: d-separation and Markov quilts ([ZOC22, Def. 7]).

Imports :mod:`quiltpriv.model` (and the influence calculator, lazily, to price a quilt).
"""
