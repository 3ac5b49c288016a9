"""The attribute hyperparameter network Theta: its type, readers, loaders, builders, learning.

``network`` (the checked :class:`~quiltpriv.model.network.Theta`), ``readers`` (BIF/XMLBIF in
one pass), ``loading`` (files, bundled models, JSON), ``builder`` (declare a network in code),
``time_series`` (Markov chains and hidden Markov models over T steps), ``learning`` (learn
Theta from a table) and ``diagnostics`` (the record-level assumptions it checks),
``provenance`` (where a model came from), ``diff`` (what differs between two models),
``cpd_tables`` (the checks of every conditional table), ``datasets`` (bundled and optional
real data).
Imports only :mod:`quiltpriv.utils` and :mod:`quiltpriv.errors`.
"""
