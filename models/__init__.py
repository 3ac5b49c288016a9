"""Declared example hyperparameter networks bundled with quiltpriv.

Each module defines ``model()`` returning a :class:`quiltpriv.Theta` whose nodes are
attributes and whose states are hyperparameter values, declared with
:class:`quiltpriv.NetworkBuilder` (so loading one does not import pgmpy), and may define
``theta()`` returning a Theta with several members. ``network()`` gives the same network as a
pgmpy ``DiscreteBayesianNetwork``. Load one by name with ``quiltpriv.load_model("student")``
(or ``"student:theta"``) or on the command line.
"""
