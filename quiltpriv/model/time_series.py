"""Time-series models: a Markov chain or a hidden Markov model over T steps, built compactly.

The Markov Quilt Mechanism was made for time series ([SWC17]): one person's activity or
power trace, one node per time step. These builders give the network directly as a
:class:`~quiltpriv.model.network.Theta`, in time and memory linear in ``T`` with one
validated table shared by every step (a homogeneous chain holds one transition matrix, not
``T`` copies), so a year of minutes (500,000 steps) is built in about a second::

    import quiltpriv as qp

    theta = qp.markov_chain(10_000, [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5])

Matrices follow the time-series convention: ``transition[u][x] = P(X_t = x | X_(t-1) = u)``
(each *row* sums to one), ``emission[h][x] = P(X_t = x | H_t = h)``. A sequence of ``T - 1``
transition matrices gives an inhomogeneous chain; a list of models (several calls) joined with
:meth:`~quiltpriv.model.network.Theta.with_members` gives a Theta of several chains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE, _check_table
from quiltpriv.model.network import CPD, Theta

__all__ = ["hidden_markov", "markov_chain"]


def _step_names(n_steps: int, prefix: str = "X") -> tuple[str, ...]:
    """``("X1", ..., "XT")``: the node of step ``t`` (1-based, as ``X_t`` in [SWC17])."""
    return tuple(f"{prefix}{t}" for t in range(1, n_steps + 1))


def _provenance(builder: str, n_steps: int) -> dict[str, Any]:
    """Metadata (not in the fingerprint): a network over record values, which ``compare``
    reads to list the original MQM."""
    return {"network": "record values", "source": f"quiltpriv.{builder}",
            "steps": n_steps}


def _steps(n_steps: object) -> int:
    if isinstance(n_steps, bool) or not isinstance(n_steps, int | np.integer) or n_steps < 1:
        raise ModelError(f"the number of steps must be an integer >= 1, got {n_steps!r}")
    return int(n_steps)


def _state_names(states: Sequence[Any] | None, k: int, what: str) -> tuple[str, ...]:
    from quiltpriv.model.builder import state_name

    if states is None:
        return tuple(str(s) for s in range(k))
    if isinstance(states, str) or not isinstance(states, Sequence):
        raise ModelError(f"{what} must be a list of {k} state names")
    names = tuple(state_name(s) for s in states)
    if len(names) != k or len(set(names)) != k:
        raise ModelError(f"{what} must be {k} distinct state names, got {list(states)!r}")
    return names


def _matrix(rows: Any, k_from: int | None, what: str) -> np.ndarray:
    """A row-stochastic matrix (rows = conditioning state) as a CPD table (its transpose)."""
    try:
        arr = np.asarray(rows, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} has non-numeric values") from exc
    if arr.ndim != 2 or (k_from is not None and arr.shape[0] != k_from):
        raise ModelError(f"{what} must be a matrix with {k_from or 'one'} row(s) per state, "
                         f"got shape {arr.shape}")
    # CPD axes are (node, parent): column u of the table is row u of the matrix
    return _check_table(arr.T, (arr.shape[1], arr.shape[0]), what, CPD_SUM_TOLERANCE)


def _initial(p: Any, k: int, what: str) -> np.ndarray:
    try:
        arr = np.asarray(p, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} has non-numeric values") from exc
    return _check_table(arr, (k,), what, CPD_SUM_TOLERANCE)


def _transitions(transition: Any, n_steps: int, k: int, what: str) -> list[np.ndarray]:
    """One validated table per step 2..T (the same object for a homogeneous chain)."""
    arr = np.asarray(transition, dtype=object)
    if arr.ndim == 3 or (isinstance(transition, Sequence) and transition
                         and np.ndim(transition[0]) == 2):
        if len(transition) != n_steps - 1:
            raise ModelError(f"{what}: an inhomogeneous chain of {n_steps} steps needs "
                             f"{n_steps - 1} matrices, got {len(transition)}")
        return [_matrix(t, k, f"{what} of step {s + 2}") for s, t in enumerate(transition)]
    table = _matrix(transition, k, what)
    return [table] * (n_steps - 1)


def markov_chain(n_steps: int, transition: Any, initial: Any, *,
                 states: Sequence[Any] | None = None, prefix: str = "X",
                 name: str = "markov chain") -> Theta:
    """A Markov chain ``X_1 -> X_2 -> ... -> X_T`` as a Theta.

    Parameters
    ----------
    n_steps : int
        ``T``, the number of steps (nodes).
    transition : (k, k) array or sequence of T - 1 of them
        ``transition[u][x] = P(X_t = x | X_(t-1) = u)`` (rows sum to one); a sequence gives
        step ``t``'s matrix for ``t = 2..T`` (an inhomogeneous chain).
    initial : (k,) array
        ``P(X_1)``; the stationary law for a chain started at stationarity.
    states : sequence, optional
        The state names (default ``"0" .. "k-1"``).
    prefix : str
        Step ``t`` is the node ``f"{prefix}{t}"``.
    name : str
        The member's name.

    Returns
    -------
    Theta
        One member; every step shares its table (no per-step copy).

    Raises
    ------
    ModelError
        A bad size, a matrix that is not row-stochastic, mismatched state counts.

    Examples
    --------
    A two-state chain over a day of hours:

    >>> import quiltpriv as qp
    >>> theta = qp.markov_chain(24, [[0.9, 0.1], [0.2, 0.8]], [2 / 3, 1 / 3],
    ...                         states=["home", "away"])
    >>> theta
    Theta(24 nodes, 23 edges, 1 member)
    >>> theta.nodes[:3], theta.parents["X2"], theta.states["X2"]
    (('X1', 'X2', 'X3'), ('X1',), ('home', 'away'))
    """
    n = _steps(n_steps)
    p0 = _initial(initial, len(np.asarray(initial, dtype=object).reshape(-1)),
                  "initial distribution")
    k = p0.shape[0]
    names = _step_names(n, str(prefix))
    tables = _transitions(transition, n, k, "transition matrix") if n > 1 else []
    if any(t.shape != (k, k) for t in tables):
        raise ModelError(f"the transition matrices must be {k} x {k} (as the initial law)")
    st = _state_names(states, k, "states")
    cpds = {names[0]: CPD(names[0], (), p0)}
    for t in range(1, n):
        cpds[names[t]] = CPD(names[t], (names[t - 1],), tables[t - 1])
    parents = {names[0]: ()} | {names[t]: (names[t - 1],) for t in range(1, n)}
    return Theta(names, dict.fromkeys(names, st), parents, [cpds], [str(name)],
                 _provenance("markov_chain", n))


def hidden_markov(n_steps: int, transition: Any, emission: Any, initial: Any, *,
                  hidden_states: Sequence[Any] | None = None,
                  observed_states: Sequence[Any] | None = None,
                  hidden_prefix: str = "H", observed_prefix: str = "X",
                  name: str = "hidden Markov model") -> Theta:
    """A hidden Markov model: ``H_1 -> ... -> H_T`` and ``H_t -> X_t`` for every step.

    Parameters
    ----------
    n_steps : int
        ``T``.
    transition : (k, k) array or sequence of T - 1 of them
        ``transition[u][h] = P(H_t = h | H_(t-1) = u)``.
    emission : (k, m) array
        ``emission[h][x] = P(X_t = x | H_t = h)`` (rows sum to one).
    initial : (k,) array
        ``P(H_1)``.
    hidden_states, observed_states : sequence, optional
        State names (default ``"0" ..``).
    hidden_prefix, observed_prefix : str
        Node names ``H1..HT`` and ``X1..XT`` by default.
    name : str
        The member's name.

    Returns
    -------
    Theta
        Nodes in the order ``H1, X1, H2, X2, ...``; the queries read the ``X`` nodes.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.hidden_markov(3, [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.3], [0.1, 0.9]],
    ...                          [0.5, 0.5])
    >>> theta.nodes
    ('H1', 'X1', 'H2', 'X2', 'H3', 'X3')
    >>> theta.parents["X2"], theta.parents["H2"]
    (('H2',), ('H1',))
    """
    n = _steps(n_steps)
    p0 = _initial(initial, len(np.asarray(initial, dtype=object).reshape(-1)),
                  "initial distribution")
    k = p0.shape[0]
    tables = _transitions(transition, n, k, "transition matrix") if n > 1 else []
    if any(t.shape != (k, k) for t in tables):
        raise ModelError(f"the transition matrices must be {k} x {k} (as the initial law)")
    emit = _matrix(emission, k, "emission matrix")
    m = emit.shape[0]
    hs = _state_names(hidden_states, k, "hidden_states")
    xs = _state_names(observed_states, m, "observed_states")
    hn, xn = _step_names(n, str(hidden_prefix)), _step_names(n, str(observed_prefix))
    if set(hn) & set(xn):
        raise ModelError("the hidden and observed prefixes must differ")
    nodes: list[str] = []
    cpds: dict[str, CPD] = {}
    parents: dict[str, tuple[str, ...]] = {}
    for t in range(n):
        h, x = hn[t], xn[t]
        nodes += [h, x]
        if t == 0:
            cpds[h], parents[h] = CPD(h, (), p0), ()
        else:
            cpds[h], parents[h] = CPD(h, (hn[t - 1],), tables[t - 1]), (hn[t - 1],)
        cpds[x], parents[x] = CPD(x, (h,), emit), (h,)
    states = {**dict.fromkeys(hn, hs), **dict.fromkeys(xn, xs)}
    return Theta(nodes, states, parents, [cpds], [str(name)],
                 _provenance("hidden_markov", n))
