"""The compiled kernel's networks of one member: bucket elimination and Definition 8 in C.

Each member gets one network per Theta (cached), over its CPDs and the folded CPDs of
:func:`quiltpriv.inference.engines.bucket._folded_factors`; a query no folded order fits is
priced again unfolded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quiltpriv.inference import compiled
from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.compiled import _KERNEL_NO_FIT, _KERNEL_OK, _KERNEL_UNDERFLOW, _budget
from quiltpriv.inference.engines.base import (
    DEFAULT_SETTINGS,
    Answer,
    EngineSettings,
    JointQuery,
)
from quiltpriv.inference.engines.bucket import _fold_key, _folded_factors
from quiltpriv.inference.engines.elimination import _python_float_joint
from quiltpriv.inference.junction_tree import cardinalities, parent_indices
from quiltpriv.inference.rounding import _elim_depth
from quiltpriv.inference.underflow import _float_safe_for
from quiltpriv.model.network import Theta


def _kernel_network(theta: Theta, member: int, folded: bool = True,
                    settings: EngineSettings = DEFAULT_SETTINGS) -> Any:
    """The compiled kernel's copy of one member (cached): the tables it reads and an order.

    The kernel holds the arrays' buffers (no copy): each CPD with axes ``(v, *parents)``, and
    (``folded``) the folded CPDs of :func:`_folded_factors`; plus the cardinalities and, as its
    first candidate order, the network's topological order (ancestors first: marginals passed
    downwards, which suits ancestral sets). The kernel prices greedy orders of each query's
    own; the global min-weight order of the Python path won no more often than this one on
    the bundled networks and costs 11 ms to compute on munin, so the kernel does without it.
    The folds depend on ``settings`` (``fold_limit``, ``safe_log2_floor``).
    """
    cache = InferenceCache.of(theta)
    if folded:
        key: Any = (member, *_fold_key(settings))
        nets: Any = cache.kernel
    else:
        key, nets = member, cache.kernel_unfolded
    net = nets.get(key)
    if net is None:
        parents = parent_indices(theta)
        cpds = theta.members[member]
        base = [((v, *ups), np.ascontiguousarray(cpds[name].table, dtype=np.float64), ups)
                for v, (name, ups) in enumerate(zip(theta.nodes, parents, strict=True))]
        folds = (_folded_factors(theta, member, settings) if folded
                 else (None,) * len(theta.nodes))
        net = nets[key] = compiled._KERNEL.Network(
            cardinalities(theta), range(len(theta.nodes)), base,
            [None if f is None else
             (tuple(f[0]), f[1], np.ascontiguousarray(f[2], dtype=np.float64), f[3])
             for f in folds])
    return net


def _kernel_call(theta: Theta, member: int, method: str, *args: Any,
                 deadline: float | None = None,
                 settings: EngineSettings = DEFAULT_SETTINGS) -> Any:
    """``Network.joint`` or ``Network.influence`` of the member's kernel network; where no
    order fits, again without folded CPDs.

    A fold is an elimination step fixed in advance (a private parent summed into its child),
    and the larger scope it leaves can keep every order of a query above ``max_table`` where
    the unfolded CPDs have one: measured on diabetes, ``e({meal_2, cho_bal_8, renal_cl_11,
    ins_indep_util_13, cho_bal_15} | ins_dep_5)`` fits no folded order and takes 0.4 s
    unfolded. The second pricing costs milliseconds, and only queries the first refused.
    With ``deadline``, each call gets the time left (:func:`_budget`) and may return
    :data:`_KERNEL_LATE`.
    """
    if deadline is not None:
        args = (*args, 0, _budget(deadline))  # mode 0 (the cheapest order), the budget
    found = getattr(_kernel_network(theta, member, True, settings), method)(*args)
    if (found is None or found == _KERNEL_NO_FIT) and any(
            f is not None for f in _folded_factors(theta, member, settings)):
        if deadline is not None:
            args = (*args[:-1], _budget(deadline))
        found = getattr(_kernel_network(theta, member, False, settings), method)(*args)
    return found


class KernelEngine:
    """``engine="kernel"``: bucket elimination in the compiled kernel, in the cheapest of its
    priced orders, its IEEE underflow flag read after every query; a query no order of the
    kernel fits goes to the Python order (``"elimination"``)
    (:class:`~quiltpriv.inference.engines.base.Engine`). The kernel's joint does not read the
    deadline (its fused influence call does, :func:`_kernel_call`)."""

    name = "kernel"

    def joint(self, query: JointQuery) -> Answer | None:
        theta, nodes, member = query.theta, query.nodes, query.member
        floor = query.settings.safe_log2_floor
        depth = _elim_depth(theta, query.settings.merge_limit)
        out = np.empty([theta.cardinality[v] for v in nodes])
        code = _kernel_call(theta, member, "joint", [theta.index[v] for v in nodes], out,
                            query.max_table, settings=query.settings)
        if code == _KERNEL_OK or (code == _KERNEL_UNDERFLOW
                                  and _float_safe_for(theta, member, nodes, "auto", floor)):
            return Answer(out, self.name, depth)
        if code == _KERNEL_NO_FIT:
            table = _python_float_joint(theta, nodes, member, query.max_table,
                                        query.deadline, floor)
            return None if table is None else Answer(table, "elimination", depth)
        return None
