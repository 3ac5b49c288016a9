"""A local explorer in the browser: change a model or a query and see the plan at once.

``quiltpriv explore MODEL`` serves one self-contained page on 127.0.0.1 (no network, no
CDN: its script and stylesheet ship in this package). The page draws the hyperparameter
network with the layout of :mod:`quiltpriv.model.drawing`, coloured by the chosen quilt of the
selected sensitive attribute, lets the user choose sensitive attributes, the query and
epsilon, edit conditional tables (or scale a dependency's strength) with undo, save the
edited model (JSON or BIF, atomically, never over the original), compare the mechanisms
``quiltpriv compare`` knows and export the audit report ``quiltpriv report`` writes.

All computation stays in Python behind a small JSON API (:mod:`quiltpriv.explorer.server`);
requests are checked like command-line input (:mod:`quiltpriv.explorer.state`) and planning
runs on background jobs with a time budget, progress and cancellation
(:mod:`quiltpriv.explorer.jobs`).

From Python (a notebook, say)::

    from quiltpriv.explorer import explore
    server = explore(qp.load_model("student"))   # prints the address; server.stop() ends it
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["Explorer", "ExplorerServer", "explore", "register_cli", "serve"]


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


def _initial_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The page's first inputs from the command line's options (all optional)."""
    init: dict[str, Any] = {}
    if args.sensitive:
        init["sensitive"] = args.sensitive
    if args.epsilon is not None:
        init["epsilon"] = args.epsilon
    q = {"kind": args.query, "attributes": args.attributes, "records": args.records,
         "where": args.where, "bounds": args.bounds, "weights": args.weights,
         "categories": args.domain, "record_states": args.record_states,
         "catch_all": args.catch_all}
    init["query"] = {k: v for k, v in q.items() if v is not None}
    if args.time_limit is not None:
        init["time_limit"] = args.time_limit
    return init


def _cmd_explore(args: argparse.Namespace) -> int:
    from quiltpriv.cli.core import theta_from_args
    from quiltpriv.explorer.server import Explorer, serve
    from quiltpriv.reporting.report import _model_files

    theta = theta_from_args(args)
    spec = " ".join([args.model, *(f"--theta {t}" for t in args.theta)])
    app = Explorer(theta, spec, sources=_model_files([args.model, *args.theta]),
                   initial=_initial_from_args(args))
    return serve(app, port=args.port, open_browser=not args.no_browser, verbose=args.verbose)


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv explore MODEL``: the local explorer in the browser."""
    from quiltpriv.cli.core import (
        add_model_arguments,
        add_query_arguments,
        epsilon_type,
        number,
        time_limit_type,
    )

    p = sub.add_parser(
        "explore", help="explore a model interactively in the browser (local server)",
        description="Start a local explorer on 127.0.0.1 (a free port, printed, and opened in "
                    "the browser): change sensitive attributes, the query, epsilon and the "
                    "model's conditional tables, and see the plan, the candidate quilts and "
                    "the mechanisms side by side at once. Edited models are saved under a new "
                    "name (JSON or BIF); the original file is never modified. Ctrl-C stops "
                    "the server. The options below only fill in the page's first inputs.")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]", help="first sensitive attribute(s)")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E", help="first epsilon")
    add_query_arguments(p)
    p.add_argument("--time-limit", type=time_limit_type, metavar="SECONDS",
                   help="time budget of each plan (default 30)")
    p.add_argument("--port", type=number("--port", integer=True, min_val=0, max_val=65535),
                   default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true",
                   help="do not open a browser (the address is printed)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.set_defaults(func=_cmd_explore)
