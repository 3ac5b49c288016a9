"""The fraction of time in a state: the question a time-series practitioner asks.

``F = (1 / total) * sum over the query's steps t of [X_t = state]``: the share of steps (or of
the query's steps) a person spent in a state, from one recorded series (a row with one column
per step) or the mean over several. Changing the steps in ``B`` moves ``F`` by at most
``|B & steps| / total``, so its sensitivity is additive ([ZOC22, Alg. 3] and the Lipschitz
constant ``1 / total`` of [SWC17]'s MQM), and the planners treat it as the linear query
``sum_t (1 / total) * mean([X_t = state])`` over indicators in ``[0, 1]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import QueryError
from quiltpriv.queries.query import Query, _attrs, _columns
from quiltpriv.utils.rounding import div_up

if TYPE_CHECKING:  # pandas is imported where data are read, not to declare a query
    import pandas as pd

__all__ = ["FractionQuery"]

@dataclass(frozen=True)
class FractionQuery(Query):
    """The share of ``steps`` in ``state``, over ``total`` steps (default ``len(steps)``).

    Parameters
    ----------
    steps : sequence of str
        The steps (nodes, columns) the query reads.
    state : str or number
        The state counted; compared with the data as text (``"1"`` matches ``1``).
    total : int, optional
        The denominator: ``len(steps)`` (the share of the query's steps, the default) or the
        length of the whole series (the share of all steps spent in ``state`` within
        ``steps``). At least ``len(steps)``.

    Examples
    --------
    The share of four steps of the bundled chain spent in state ``0.8``: changing two steps
    changes it by at most 2/4.

    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.FractionQuery(["x01", "x02", "x03", "x04"], "0.8")
    >>> query.sensitivity({"x01", "x02"})
    0.5
    >>> query.evaluate(pd.DataFrame({"x01": ["0.8"], "x02": ["0.2"], "x03": ["0.8"],
    ...                              "x04": ["0.5"]}))
    0.5
    """

    steps: tuple[str, ...]
    state: Any
    total: int | None = None
    kind: str = field(default="fraction", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.steps, str):
            raise QueryError("fraction query: steps must be a list of step names, got the "
                             f"text {self.steps!r}")
        steps = _attrs(self.steps, "fraction query")
        object.__setattr__(self, "steps", steps)
        if isinstance(self.state, bool) or not isinstance(self.state, str | int | float):
            raise QueryError(f"fraction query: the state must be a text or a number, got "
                             f"{self.state!r}")
        total = len(steps) if self.total is None else self.total
        if isinstance(total, bool) or not isinstance(total, int | np.integer) \
                or total < len(steps):
            raise QueryError(f"fraction query: total must be a whole number >= the "
                             f"{len(steps)} steps read, got {self.total!r}")
        object.__setattr__(self, "total", int(total))
        object.__setattr__(self, "_step_set", frozenset(steps))

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.steps

    @property
    def weight(self) -> float:
        """``1 / total``: what one step can move ``F`` by."""
        return 1.0 / self.total  # type: ignore[operator]

    def sensitivity(self, columns: Iterable[str]) -> float:
        # |B & steps| / total, linear in |B|; a count then one division, rounded up
        hit = self._step_set  # type: ignore[attr-defined]
        n = len(hit.intersection(columns))
        return div_up(n, self.total)  # type: ignore[arg-type]

    sensitivity_structure = "additive"

    def evaluate(self, data: pd.DataFrame) -> float:
        frame = _columns(data, self.steps, "fraction query")
        if len(frame) == 0:
            raise QueryError("fraction query: the data has no rows")
        # the state as given or as its text (a CSV reads "1" for the state 1)
        values = frame.to_numpy(dtype=object)
        # str of every cell at once (pandas' astype(str) goes column by column: 114 s of a
        # 50,000-step trace's release)
        import pandas as pd  # the data are a DataFrame: pandas is loaded

        hits = ((values == self.state) | ((values.astype(str) == str(self.state))
                                          & ~pd.isna(values))).mean(axis=0)
        return float(hits.sum() / self.total)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": list(self.steps), "state": self.state,
                "total": self.total}

    def describe(self) -> str:
        n = len(self.steps)
        span = f"{self.steps[0]}..{self.steps[-1]}" if n > 3 else ", ".join(self.steps)
        return f"fraction of {self.total} steps in state {self.state!r} ({n} read: {span})"

