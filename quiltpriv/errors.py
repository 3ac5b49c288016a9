"""Exceptions raised by quiltpriv.

Every error a user can cause by bad input is a :class:`QuiltPrivError` with a message that names
the problem, so that callers (and the command line) can report it in one line.
"""

from __future__ import annotations


class QuiltPrivError(ValueError):
    """Base class of every error caused by bad input to quiltpriv.

    It is a :class:`ValueError`, so code that already catches bad values catches it too.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> try:
    ...     qp.load_model("no-such-model")
    ... except qp.QuiltPrivError as error:
    ...     print(type(error).__name__, "-", error)
    ModelError - no bundled model named 'no-such-model' (bundled: ...) and no such file
    """


class ModelError(QuiltPrivError):
    """A hyperparameter network (or a member of Theta) is malformed.

    Examples
    --------
    A conditional table whose columns do not sum to one:

    >>> import quiltpriv as qp
    >>> qp.theta_from_tables([], {"x": [0.2, 0.8]}, {"x": [0.5, 0.6]})
    Traceback (most recent call last):
    ...
    quiltpriv.errors.ModelError: ...
    """


class QueryError(QuiltPrivError):
    """A query is malformed or does not fit the model or the data.

    Examples
    --------
    A count whose predicate reads an attribute the query does not declare:

    >>> import quiltpriv as qp
    >>> qp.CountQuery(["height"], records=10, where="sat > 1300")
    Traceback (most recent call last):
    ...
    quiltpriv.errors.QueryError: count query: ... (read but not declared: 'sat'; ...)
    """


class ParameterError(QuiltPrivError):
    """A privacy or mechanism parameter (eps, delta, records, ...) is out of range.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> qp.CountQuery(["sat"], records=0)
    Traceback (most recent call last):
    ...
    quiltpriv.errors.ParameterError: ...
    """


class PlanError(ParameterError):
    """A saved plan is malformed, or does not verify against the model and the query.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> qp.Plan.from_dict({"epsilon": 1.0})
    Traceback (most recent call last):
    ...
    quiltpriv.errors.PlanError: plan: no 'format' field: ...
    """


class DataError(QuiltPrivError):
    """A data table given to learn a model from is unusable (missing column, bad value, ...).

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> records = pd.DataFrame({"school": ["a", "b"], "score": [1.0, 2.0]})
    >>> qp.population_parameters(records, "district", {"score": "mean"})
    Traceback (most recent call last):
    ...
    quiltpriv.errors.DataError: ...
    """


class TimeLimitError(QuiltPrivError):
    """The time limit passed before there was anything to answer with: reading the model
    took the whole limit, and no plan exists without a model (a search that is cut short
    returns its best quilts so far instead, flagged). The message states the user's limit
    and how far reading got.

    Examples
    --------
    >>> import time
    >>> import quiltpriv as qp
    >>> from quiltpriv.utils.time_limit import TimeLimit
    >>> passed = TimeLimit(2.0, time.monotonic() - 10.0)  # started 10 s ago
    >>> qp.load_model("chain", time_limit=passed)
    Traceback (most recent call last):
    ...
    quiltpriv.errors.TimeLimitError: the time limit of 2 s was reached while reading ...
    """


class LedgerError(QuiltPrivError):
    """A privacy ledger cannot be read or written, or fails verification (the reason says
    which entry and why)."""


class BudgetError(LedgerError):
    """A release was refused before any noise was drawn: the proved total privacy loss of the
    ledger's releases on the same data would exceed the budget, or cannot be proved (the
    message names the releases counted)."""


class QuiltPrivWarning(UserWarning):
    """Base class of quiltpriv's warnings (filter them with ``warnings.filterwarnings``).

    Examples
    --------
    >>> import warnings
    >>> import quiltpriv as qp
    >>> issubclass(qp.ParameterStatesWarning, qp.QuiltPrivWarning)
    True
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", qp.QuiltPrivWarning)  # every quiltpriv warning
    """


class ParameterStatesWarning(QuiltPrivWarning):
    """A network's states do not look like distribution parameters.

    quiltpriv protects the *parameters* of attributes (a share, a mean): a hyperparameter
    network's states are values of those parameters. States that are not numbers (``yes`` /
    ``no``), or shares outside [0, 1], suggest a record-level network (such as pgmpy's ``asia``)
    was given where a hyperparameter network was meant; the plan is then about a different
    secret than the user may think.

    Examples
    --------
    >>> import warnings
    >>> import quiltpriv as qp
    >>> from quiltpriv.model.provenance import check_parameter_states
    >>> theta = qp.theta_from_tables([("smoker", "cough")],
    ...                              {"smoker": ["yes", "no"], "cough": ["yes", "no"]},
    ...                              {"smoker": [0.3, 0.7], "cough": [[0.6, 0.1], [0.4, 0.9]]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     problems = check_parameter_states(theta)
    >>> caught[0].category.__name__
    'ParameterStatesWarning'
    >>> print(problems[0])
    2 node(s) have states that are not numbers: 'smoker' ('yes', 'no'); 'cough' ('yes', 'no'). ...
    """


class SeededNoiseWarning(QuiltPrivWarning):
    """A release drew its noise from a seeded, reproducible generator: NOT secure."""


class ZeroNoiseWarning(QuiltPrivWarning):
    """A release adds no noise: it publishes the exact value, which protects only the declared
    states of the sensitive attributes and gives no record-level privacy."""


class PrivateModelWarning(QuiltPrivWarning):
    """Theta was learned from the data being released, or from data not declared public: its
    parameters, printed without noise in plans and release records, come from private data."""


class AssumptionWarning(QuiltPrivWarning):
    """The records a Theta was learned from look unlike what the guarantee assumes: attributes
    dependent within a population, or tiny populations
    (:mod:`quiltpriv.model.diagnostics`). Theta is unchanged; the diagnostics are in its
    provenance."""


class SearchStoppedWarning(QuiltPrivWarning):
    """Structure learning was stopped by its time limit, work budget or step limit: the learned
    DAG is the best found so far, not a local optimum of the score (the provenance's
    ``structure.search_end`` says which bound stopped it).

    Examples
    --------
    To make a stopped search an error rather than a warning:

    >>> import warnings
    >>> import quiltpriv as qp
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", qp.SearchStoppedWarning)
    """


class RepeatedReleaseWarning(QuiltPrivWarning):
    """A release reads the same data as an earlier one with the same query or model: the
    guarantees do not add up in general (:func:`quiltpriv.releases.ledger.composition`)."""
