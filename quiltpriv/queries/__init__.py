"""What is released: the query classes and their sensitivities, the predicate language of
``where`` filters, and the laws of a count under Theta (exact, or certified bounds).
"""
