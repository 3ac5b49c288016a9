"""Human-readable output: HTML/JSON audit reports (``report``), the part a supervisor signs
(``attestation``), the model's provenance and tables for a person (``model_tables``), the
layered drawing of Theta (``drawing``), the Jupyter views (``notebook``) and figures
(``plots``; matplotlib, optional).
"""
