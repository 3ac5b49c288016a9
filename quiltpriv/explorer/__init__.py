"""A local explorer in the browser: change a model or a query and see the plan at once.

``quiltpriv explore MODEL`` serves one self-contained page on 127.0.0.1 (no network, no
CDN: its script and stylesheet ship in this package). The page draws the hyperparameter
network with the layout of :mod:`quiltpriv.reporting.drawing`, coloured by the chosen quilt of the
selected sensitive attribute, lets the user choose sensitive attributes, the query and
epsilon, edit conditional tables (or scale a dependency's strength) with undo, save the
edited model (JSON or BIF, atomically, never over the original), compare the mechanisms
``quiltpriv compare`` knows and export the audit report ``quiltpriv report`` writes.

All computation stays in Python behind a small JSON API (:mod:`quiltpriv.explorer.server`);
requests are checked like command-line input (:mod:`quiltpriv.explorer.state`) and planning
runs on background jobs with a time budget, progress and cancellation
(:mod:`quiltpriv.explorer.jobs`). What a job computes for the page (the plan, the candidate
quilts, the comparison) is :mod:`quiltpriv.explorer.compute`; the auditor's side (a published
plan or release record, verified and audited) is :mod:`quiltpriv.explorer.published`.

From Python (a notebook, say)::

    from quiltpriv.explorer import explore
    server = explore(qp.load_model("student"))   # prints the address; server.stop() ends it
"""

from __future__ import annotations

from typing import Any

__all__ = ["Explorer", "ExplorerServer", "explore", "serve"]


def __getattr__(name: str) -> Any:
    # The server (and the planner behind it) is imported on first use, so that registering
    # the command line's ``explore`` costs nothing.
    if name in ("Explorer", "ExplorerServer", "serve"):
        from quiltpriv.explorer import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def explore(theta: Any, *, spec: str = "model", initial: dict[str, Any] | None = None,
            port: int = 0, open_browser: bool = False) -> Any:
    """Start an explorer for ``theta`` on a background thread and return its server.

    The address (with its access token) is printed and in ``server.url``; ``server.stop()``
    stops it.

    Parameters
    ----------
    theta : Theta
        The model to explore (anything :func:`quiltpriv.model.network.as_theta` accepts).
    spec : str
        How the model is named on the page and in the equivalent command.
    initial : dict, optional
        Initial inputs of the page (``sensitive``, ``epsilon``, ``query``), as a plan request.
    port : int
        The port on 127.0.0.1 (0: any free port).
    open_browser : bool
        Open the page in the default browser.

    Returns
    -------
    ExplorerServer
        Serving on a daemon thread.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> from quiltpriv.explorer import explore
    >>> server = explore(qp.load_model("student"), spec="student")
    quiltpriv explorer: http://127.0.0.1:.../?token=...
    >>> server.stop()
    """
    from quiltpriv.explorer.server import Explorer, ExplorerServer
    from quiltpriv.model.network import as_theta

    server = ExplorerServer(Explorer(as_theta(theta), spec, initial=initial), port)
    server.start_in_thread()
    print(f"quiltpriv explorer: {server.url}")
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    return server
