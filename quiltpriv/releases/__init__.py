"""Releases over time: the release record (schema ``quiltpriv-release/1``) and the hash-chained
privacy ledger.
"""
