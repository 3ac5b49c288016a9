"""What the front ends share: the query options of the command line and of the explorer.

:mod:`quiltpriv.frontend.options` parses the option texts both front ends take (``--query``,
``--attributes``, ``--records``, ``--where``, ...) into a checked query, once, at the boundary,
so that the command line (:mod:`quiltpriv.cli`) and the explorer (:mod:`quiltpriv.explorer`)
read a query by the same rules; it sits below both and imports neither.
"""
