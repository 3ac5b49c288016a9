"""The attribute hyperparameter network Theta: its type, readers, loaders, builders, learning.

``network`` (the checked :class:`~quiltpriv.model.network.Theta`), ``readers`` (BIF/XMLBIF in
one pass), ``loading`` (files, bundled models, JSON), ``builder`` (declare a network in code),
``learning`` (learn Theta from a table), ``provenance`` (where a model came from), ``datasets``
(bundled and optional real data). Imports only :mod:`quiltpriv.utils` and :mod:`quiltpriv.errors`.
"""
