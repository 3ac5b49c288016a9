"""A fast sample of a long parametrized sweep runs by default; the rest is marked ``slow``.

The default run (``python -m pytest -q``) deselects ``slow``; ``python -m pytest -q -m slow``
runs the rest, as CI does, so together they cover every parameter.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pytest


def fast_sample(values: Sequence[Any], fast: int | Collection[int], *,
                unpack: bool = False) -> list[Any]:
    """``values`` as parameters: those at the indices in ``fast`` (the first ``fast`` when it is
    an int) run by default, the others are marked slow. Test ids are unchanged. With ``unpack``
    each value is a tuple of several arguments (``parametrize("a, b", ...)``)."""
    keep = set(range(fast)) if isinstance(fast, int) else set(fast)
    if isinstance(fast, int):
        assert 0 < fast <= len(values)
    else:
        assert keep <= set(range(len(values)))
    return [v if k in keep else
            pytest.param(*(v if unpack else (v,)), marks=pytest.mark.slow)
            for k, v in enumerate(values)]
