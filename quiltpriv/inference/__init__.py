"""Exact inference on Theta: max-influence of a quilt ([ZOC22, Def. 8]) by variable elimination
(pure Python or the optional compiled kernel, ``_kernel.c``) and the junction tree.
"""
