"""``quiltpriv report``: plan (and optionally release), then write the HTML + JSON audit report."""

from __future__ import annotations

import argparse
from pathlib import Path

from quiltpriv.cli.core import (
    _plan_from_args,
    add_model_arguments,
    add_privacy_arguments,
    add_query_arguments,
    add_time_limit_argument,
    check_releasable,
    one_line_warnings,
    query_from_args,
    read_data,
    seed_type,
)
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.apmqm_release import release
from quiltpriv.reporting.report import audit_report, model_files
from quiltpriv.utils.io import check_output_path


def _cmd_report(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() == ".json":
        raise ParameterError(f"-o {out}: give the HTML path; the JSON twin goes beside it")
    # Both files are checked before any work (the command line checks -o itself).
    check_output_path(out, "-o")
    check_output_path(out.with_suffix(".json"), "-o's JSON twin")
    query = query_from_args(args)
    data = None
    if args.data:
        check_releasable(query)
        data = read_data(args.data, query)
    theta, query, p = _plan_from_args(args, query)
    rel = None
    if data is not None:
        with one_line_warnings():
            rel = release(p, query, data, seed=args.seed)
    report = audit_report(theta, query, p, rel,
                          model_files=model_files([args.model, *args.theta]))
    html_path, json_path = report.write(out)
    print(f"wrote {html_path} and {json_path}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv report``: plan (and optionally release), then write the audit report."""
    r = sub.add_parser("report", help="write an HTML + JSON audit report of an APMQM plan",
                       description="Plan an APMQM release and write a self-contained HTML "
                                   "audit report (DAG with the chosen quilts, candidate quilts, "
                                   "hashes) and its JSON twin with the same stem.")
    add_model_arguments(r)
    add_privacy_arguments(r)
    add_query_arguments(r)
    add_time_limit_argument(r)
    r.add_argument("--data", metavar="CSV", help="also release the query on this dataset and "
                                                 "include the release record")
    r.add_argument("--seed", type=seed_type, help="with --data: reproducible, NOT secure noise")
    r.add_argument("-o", "--output", required=True, metavar="REPORT.html",
                   help="the HTML file; REPORT.json is written beside it")
    r.set_defaults(func=_cmd_report)
