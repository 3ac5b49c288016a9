"""A fast sample of a long sweep runs by default; the rest is marked ``slow``.

The default run (``python -m pytest -q``; the README adds ``-n auto``) deselects ``slow``;
``python -m pytest -q -m slow`` runs the rest, as CI does, so together they cover every
parameter. ``fast_sample`` samples the parameters of a parametrized test; ``fewer_examples``
gives a hypothesis test a default-run copy that draws fewer examples, the full test
(unchanged) being slow.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
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


def fewer_examples(test: Callable[..., None], max_examples: int,
                   **strategies: Any) -> Callable[..., None]:
    """Mark the ``@given`` test ``test`` slow and return a copy of it for the default run that
    draws at most ``max_examples`` examples of ``strategies`` (``test``'s own ``@given``
    arguments), derandomised. ``test`` itself is untouched (its source, hence the examples that
    derandomised hypothesis draws for it, are as before); assign the copy to a new
    ``test_..._sample`` name in the test module."""
    from hypothesis import HealthCheck, given, settings

    pytest.mark.slow(test)
    return settings(derandomize=True, max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])(
        given(**strategies)(test.hypothesis.inner_test))


def fast_and_full(fast: Any, full: Any) -> list[Any]:
    """Parameters of a long test split in two: its ``fast`` size (a prefix or sub-grid of the
    full case: fewer seeded trials, a coarser grid) runs by default, the ``full`` size, the test
    as it was, is marked slow."""
    return [fast, pytest.param(full, marks=pytest.mark.slow)]
