"""Human-readable output: HTML/JSON audit reports, the layered drawing of Theta, figures
(matplotlib, optional).
"""
