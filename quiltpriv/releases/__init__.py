"""Releases over time: what one release is (``release_record``: ``ReleaseRecord``,
``Guarantee``, ``Calibration``), the versioned release record (``records``, schema
``quiltpriv-release/4``; /1 to /3 still read), the hash-chained privacy ledger (``ledger``),
what releases guarantee together, only by a published theorem (``composition``), and
post-processing of a released value: rounding and clamping (``postprocess``).
"""
