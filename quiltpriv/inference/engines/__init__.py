"""The inference engines: each computes the exact joint marginal of a query on one member of
Theta (variable elimination in Python, bucket elimination with per-Theta folds, the compiled
kernel's networks, exact integers, conditioning on a cutset)."""
