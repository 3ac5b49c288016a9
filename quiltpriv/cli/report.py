"""``quiltpriv report``: plan, then write the HTML + JSON audit report, with a published release.

A report never draws noise outside the ledger: the release it shows is a saved release record
(``--record``, what ``quiltpriv release -o`` writes), a ledger entry (``--ledger L --entry K``),
or a release drawn through the ledger as ``quiltpriv release`` draws it (``--data D --ledger
L``: appended before the report is written). ``--data`` without ``--ledger`` is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from quiltpriv.cli.core import (
    _booking_options,
    _plan_from_args,
    add_booking_arguments,
    add_model_arguments,
    add_privacy_arguments,
    add_query_arguments,
    add_time_limit_argument,
    check_booking_options,
    check_releasable,
    number,
    one_line_warnings,
    query_from_args,
    read_data,
    seed_type,
)
from quiltpriv.errors import LedgerError, ParameterError
from quiltpriv.mechanisms.apmqm_release import release
from quiltpriv.reporting.report import audit_report, model_files
from quiltpriv.utils.io import check_output_path
from quiltpriv.utils.serialize import load_json


def _check_sources(args: argparse.Namespace) -> None:
    """Which release the report shows, refused before any work when the options clash."""
    if args.data is not None and args.ledger is None:
        raise ParameterError("report --data draws a release: give --ledger PATH so that the "
                             "ledger records it (as 'quiltpriv release --ledger' does), or "
                             "show a published release with --record RECORD.json or "
                             "--ledger PATH --entry K")
    if args.record is not None and (args.data is not None or args.ledger is not None):
        raise ParameterError("--record shows a saved release record: give it without --data "
                             "and --ledger")
    if args.entry is not None and (args.ledger is None or args.data is not None):
        raise ParameterError("--entry K shows entry K of --ledger PATH (without --data)")
    if args.ledger is not None and args.data is None and args.entry is None:
        raise ParameterError("with --ledger, give --entry K (show that entry) or --data CSV "
                             "(release through the ledger)")
    if args.seed is not None and args.data is None:
        raise ParameterError("--seed applies to a release drawn with --data")
    if args.data is None and (args.dataset is not None or args.budget is not None
                              or args.allow_unproved):
        raise ParameterError("--dataset, --budget and --allow-unproved apply to a release "
                             "drawn with --data")
    check_booking_options(args)


def _read_record(path: str) -> dict[str, Any]:
    """A saved release record (JSON), parsed once; a bad file is one clear error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"cannot read release record {path}: {exc}") from None
    record = load_json(text, f"release record {path}", error=ParameterError)
    if not isinstance(record, dict):
        raise ParameterError(f"release record {path} is not a JSON object")
    return record


def _ledger_record(path: str, entry: int) -> dict[str, Any]:
    from quiltpriv.releases.ledger import read

    entries, head = read(path)
    if entry >= len(entries):
        raise LedgerError(f"ledger {path}: no entry {entry} (it holds {head.count})")
    return dict(entries[entry].record)


def _cmd_report(args: argparse.Namespace) -> int:
    from quiltpriv.mechanisms.apmqm import Plan

    out = Path(args.output)
    if out.suffix.lower() == ".json":
        raise ParameterError(f"-o {out}: give the HTML path; the JSON twin goes beside it")
    # Both files are checked before any work (the command line checks -o itself).
    check_output_path(out, "-o")
    check_output_path(out.with_suffix(".json"), "-o's JSON twin")
    _check_sources(args)
    query = query_from_args(args)
    data = None
    published: dict[str, Any] | None = None
    if args.record is not None:
        published = _read_record(args.record)
    elif args.entry is not None:
        published = _ledger_record(args.ledger, args.entry)
    else:
        if args.ledger is not None:
            from quiltpriv.releases.ledger import check_writable

            check_writable(args.ledger)  # before any planning work
        if args.data is not None:
            check_releasable(query)
            data = read_data(args.data, query)
    theta, query, p = _plan_from_args(args, query)
    rel: Any = None
    if published is not None:
        plan_doc = published.get("plan")
        if published.get("mechanism", "APMQM") != "APMQM" or not isinstance(plan_doc, dict):
            raise ParameterError(f"the audit report covers APMQM releases; the record is a "
                                 f"{published.get('mechanism')!r} release")
        # The published plan, verified against the model and the query by audit_report.
        p = Plan.from_dict(plan_doc)
        rel = published
    elif data is not None:
        with one_line_warnings():
            rel = release(p, query, data, seed=args.seed, ledger=args.ledger,
                          command=getattr(args, "argv", None), **_booking_options(args))
    report = audit_report(theta, query, p, rel,
                          model_files=model_files([args.model, *args.theta]),
                          run_audit=args.audit, records=args.records,
                          ledger=args.ledger if args.ledger is not None else args.check_ledger)
    html_path, json_path = report.write(out)
    print(f"wrote {html_path} and {json_path}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv report``: plan, then write the audit report."""
    r = sub.add_parser("report", help="write an HTML + JSON audit report of an APMQM plan",
                       description="Plan an APMQM release and write a self-contained HTML "
                                   "audit report (DAG with the chosen quilts, candidate quilts, "
                                   "hashes) and its JSON twin with the same stem. The release "
                                   "it shows is a published one (--record, or --ledger with "
                                   "--entry), or one drawn through a ledger (--data with "
                                   "--ledger); a report never draws noise no ledger records.")
    add_model_arguments(r)
    add_privacy_arguments(r)
    add_query_arguments(r)
    add_time_limit_argument(r)
    r.add_argument("--record", metavar="RECORD.json",
                   help="show this saved release record ('quiltpriv release -o'); its plan "
                        "is verified against the model and query")
    r.add_argument("--ledger", metavar="PATH",
                   help="a privacy ledger: with --entry K show that entry's release; with "
                        "--data release through it (appended before the report is written)")
    r.add_argument("--entry", type=number("--entry", integer=True, min_val=0), metavar="K",
                   help="with --ledger: the entry whose release to show")
    r.add_argument("--data", metavar="CSV", help="with --ledger: release the query on this "
                                                 "dataset through the ledger and show it")
    r.add_argument("--seed", type=seed_type, help="with --data: reproducible, NOT secure noise")
    add_booking_arguments(r)
    r.add_argument("--audit", action="store_true",
                   help="run the exact audit at the plan's scale (count and linear queries up "
                        "to 1000 records): overall, per sensitive attribute and the least "
                        "sufficient scale, in the attestation")
    r.add_argument("--check-ledger", metavar="PATH",
                   help="with --record: verify this ledger and look the release up in it")
    r.add_argument("-o", "--output", required=True, metavar="REPORT.html",
                   help="the HTML file; REPORT.json is written beside it")
    r.set_defaults(func=_cmd_report)
