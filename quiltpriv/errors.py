"""Exceptions raised by quiltpriv.

Every error a user can cause by bad input is a :class:`QuiltPrivError` with a message that names
the problem, so that callers (and the command line) can report it in one line.
"""

from __future__ import annotations


class QuiltPrivError(ValueError):
    """Base class of every error caused by bad input to quiltpriv."""


class ModelError(QuiltPrivError):
    """A hyperparameter network (or a member of Theta) is malformed."""


class QueryError(QuiltPrivError):
    """A query is malformed or does not fit the model or the data."""


class ParameterError(QuiltPrivError):
    """A privacy or mechanism parameter (eps, delta, records, ...) is out of range."""


class PlanError(ParameterError):
    """A saved plan is malformed, or does not verify against the model and the query."""


class DataError(QuiltPrivError):
    """A data table given to learn a model from is unusable (missing column, bad value, ...)."""


class LedgerError(QuiltPrivError):
    """A privacy ledger cannot be read or written, or fails verification (the reason says
    which entry and why)."""


class BudgetError(LedgerError):
    """A release was refused before any noise was drawn: the proved total privacy loss of the
    ledger's releases on the same data would exceed the budget, or cannot be proved (the
    message names the releases counted)."""


class QuiltPrivWarning(UserWarning):
    """Base class of quiltpriv's warnings (filter them with ``warnings.filterwarnings``)."""


class ParameterStatesWarning(QuiltPrivWarning):
    """A network's states do not look like distribution parameters.

    quiltpriv protects the *parameters* of attributes (a share, a mean): a hyperparameter
    network's states are values of those parameters. States that are not numbers (``yes`` /
    ``no``), or shares outside [0, 1], suggest a record-level network (such as pgmpy's ``asia``)
    was given where a hyperparameter network was meant; the plan is then about a different
    secret than the user may think.
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
    ``structure.search_end`` says which bound stopped it)."""


class RepeatedReleaseWarning(QuiltPrivWarning):
    """A release reads the same data as an earlier one with the same query or model: the
    guarantees do not add up in general (:func:`quiltpriv.releases.ledger.composition`)."""
