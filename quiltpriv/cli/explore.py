"""``quiltpriv explore MODEL``: the local explorer in the browser."""

from __future__ import annotations

import argparse
from typing import Any

from quiltpriv.cli.core import (
    NAMES_HELP,
    add_model_arguments,
    add_query_arguments,
    epsilon_type,
    name_list,
    number,
    theta_from_args,
    time_limit_type,
)


def _names(args: argparse.Namespace, option: str) -> str:
    """``--sensitive`` or ``--attributes`` as the page's comma list (``all`` and ``@FILE``
    expanded as for the other commands, :func:`quiltpriv.cli.core.name_list`)."""
    names = name_list(getattr(args, option), f"--{option}", lambda: theta_from_args(args).nodes)
    return ",".join(names)


def _initial_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The page's first inputs from the command line's options (all optional)."""
    init: dict[str, Any] = {}
    if args.sensitive:
        init["sensitive"] = _names(args, "sensitive")
    if args.epsilon is not None:
        init["epsilon"] = args.epsilon
    attributes = _names(args, "attributes") if args.attributes else args.attributes
    q = {"kind": args.query, "attributes": attributes, "records": args.records,
         "where": args.where, "bounds": args.bounds, "weights": args.weights,
         "categories": args.domain, "record_states": args.record_states,
         "catch_all": args.catch_all}
    init["query"] = {k: v for k, v in q.items() if v is not None}
    if args.time_limit is not None:
        init["time_limit"] = args.time_limit
    return init


def _cmd_explore(args: argparse.Namespace) -> int:
    from quiltpriv.explorer.server import Explorer, serve
    from quiltpriv.reporting.report import model_files

    theta = theta_from_args(args)
    spec = " ".join([args.model, *(f"--theta {t}" for t in args.theta)])
    app = Explorer(theta, spec, sources=model_files([args.model, *args.theta]),
                   initial=_initial_from_args(args))
    return serve(app, port=args.port, open_browser=not args.no_browser, verbose=args.verbose)


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv explore MODEL``: the local explorer in the browser."""
    p = sub.add_parser(
        "explore", help="explore a model interactively in the browser (local server)",
        description="Start a local explorer on 127.0.0.1 (a free port, printed, and opened in "
                    "the browser): change sensitive attributes, the query, epsilon and the "
                    "model's conditional tables, and see the plan, the candidate quilts and "
                    "the mechanisms side by side at once. Edited models are saved under a new "
                    "name (JSON or BIF); the original file is never modified. Ctrl-C stops "
                    "the server. The options below only fill in the page's first inputs.")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]",
                   help=f"first sensitive attribute(s): {NAMES_HELP}")
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
