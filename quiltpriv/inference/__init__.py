"""Exact inference on Theta: max-influence of a quilt ([ZOC22, Def. 8]) and the joint marginals
it is computed from.

``influence`` (:func:`~quiltpriv.inference.influence.max_influence` and
:func:`~quiltpriv.inference.influence.joint_marginal`, the interface every other layer uses;
the result type is in ``result``), ``engines`` (one module per engine: the compiled kernel,
bucket and variable elimination in Python, exact integers, cutset conditioning), the
calibrated junction tree of a member (``junction_tree``) and every node's joint with the
query's attributes in one batched propagation (``attribute_joints``); what they share:
Definition 8 on a joint (``definition8``), elimination orders (``orders``), the memory budget
and deadline (``budget``), when float64 is trusted (``underflow``) and its rounding bounds
(``rounding``), the names of the methods (``methods``), the compiled kernel's loading
(``compiled``, ``_kernel.c``) and what inference remembers about one Theta (``cache``).
"""
