"""Declared example hyperparameter networks bundled with quiltpriv.

Each module defines ``model()`` returning a pgmpy ``DiscreteBayesianNetwork`` whose nodes are
attributes and whose states are hyperparameter values, and may define ``theta()`` returning a
list of such networks (a Theta with several members). Load one by name with
``quiltpriv.load_model("student")`` (or ``"student:theta"``) or on the command line.
"""
