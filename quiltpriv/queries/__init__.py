"""What is released: the query classes and their sensitivities (``query``; the share of steps
in a state, ``fraction``; a learned share of records, ``share_of``), the predicate language of
``where`` filters (``predicate``), the laws of a count under Theta (exact: ``network_laws``;
certified float64 bounds at any n: ``law_bounds``) and a query's data file (``data_file``).
"""
