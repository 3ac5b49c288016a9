"""``quiltpriv report``: write the HTML + JSON audit report of a plan, with a published release.

A report never draws noise outside the ledger: the release it shows is a saved release record
(``--record``, what ``quiltpriv release -o`` writes), a ledger entry (``--ledger L --entry K``),
or a release drawn through the ledger as ``quiltpriv release`` draws it (``--data D --ledger
L``: appended before the report is written). ``--data`` without ``--ledger`` is refused.

A published plan or release (``--plan``, ``--record``, ``--entry``) is reported as published:
its plan is verified against the model (and against ``--sensitive``/``--epsilon`` and the query
options when given, as ``quiltpriv verify`` checks them), never made again.
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
    add_query_arguments,
    add_time_limit_argument,
    check_booking_options,
    check_releasable,
    epsilon_type,
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
    if args.plan is not None and (args.record is not None or args.ledger is not None
                                  or args.data is not None):
        raise ParameterError("--plan reports a published plan without a release: give it "
                             "without --record, --ledger and --data (a record embeds its plan)")
    published = args.plan is not None or args.record is not None or args.entry is not None
    if not published and (args.sensitive is None or args.epsilon is None):
        raise ParameterError("give --sensitive and --epsilon (or report a published plan or "
                             "release: --plan PLAN.json, --record RECORD.json, or --ledger L "
                             "--entry K)")
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


def _published_plan(args: argparse.Namespace, plan_doc: Any) -> tuple[Any, Any, Any]:
    """The model, query and verified plan of a published plan (nothing planned again)."""
    from quiltpriv.cli.core import sensitive_from_args, theta_from_args
    from quiltpriv.cli.verify import _query_group_given
    from quiltpriv.mechanisms.apmqm import plan_from_dict
    from quiltpriv.mechanisms.verification import check_plan, query_from_dict

    plan = plan_from_dict(plan_doc)
    theta = theta_from_args(args)
    query = query_from_args(args) if _query_group_given(args._parser, args) else \
        query_from_dict(plan.query)
    sensitive = sensitive_from_args(args) if args.sensitive is not None else None
    verified = check_plan(plan, theta, query, sensitive=sensitive,
                          epsilon=args.epsilon).verified_plan()
    return theta, query, verified


def _read_plan(path: str) -> Any:
    from quiltpriv.mechanisms.apmqm import plan_from_json

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ParameterError(f"cannot read plan {path}: {exc.strerror or exc}") from None
    return plan_from_json(raw).to_dict()


def _cmd_report(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() == ".json":
        raise ParameterError(f"-o {out}: give the HTML path; the JSON twin goes beside it")
    # Both files are checked before any work (the command line checks -o itself).
    check_output_path(out, "-o")
    check_output_path(out.with_suffix(".json"), "-o's JSON twin")
    _check_sources(args)
    published: dict[str, Any] | None = None
    if args.record is not None:
        published = _read_record(args.record)
    elif args.entry is not None:
        published = _ledger_record(args.ledger, args.entry)
    rel: Any = published
    if published is not None or args.plan is not None:
        if published is None:
            plan_doc = _read_plan(args.plan)
        else:
            plan_doc = published.get("plan")
            if published.get("mechanism", "APMQM") != "APMQM" or not isinstance(plan_doc,
                                                                                 dict):
                raise ParameterError(f"the audit report covers APMQM releases; the record is "
                                     f"a {published.get('mechanism')!r} release")
        # the published plan, verified; audit_report checks the release was made with it
        theta, query, p = _published_plan(args, plan_doc)
    else:
        query = query_from_args(args)
        data = None
        if args.ledger is not None:
            from quiltpriv.releases.ledger import check_writable

            check_writable(args.ledger)  # before any planning work
        if args.data is not None:
            check_releasable(query)
            data = read_data(args.data, query)
        theta, query, p = _plan_from_args(args, query)
        if data is not None:
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
    """Add ``quiltpriv report``: plan (or read a published plan), then write the report."""
    r = sub.add_parser("report", help="write an HTML + JSON audit report of an APMQM plan",
                       description="Plan an APMQM release (or read a published plan or "
                                   "release: --plan, --record, --ledger with --entry; verified "
                                   "against MODEL, never made again) and write a "
                                   "self-contained HTML "
                                   "audit report (DAG with the chosen quilts, candidate quilts, "
                                   "hashes) and its JSON twin with the same stem. The release "
                                   "it shows is a published one (--record, or --ledger with "
                                   "--entry), or one drawn through a ledger (--data with "
                                   "--ledger); a report never draws noise no ledger records.")
    add_model_arguments(r)
    r.add_argument("--sensitive", metavar="S1[,S2...]",
                   help="the sensitive attributes (to plan; with a published plan or release, "
                        "attributes it must protect)")
    r.add_argument("--epsilon", type=epsilon_type, metavar="E",
                   help="epsilon (to plan; with a published plan or release, the most it may "
                        "state)")
    add_query_arguments(r)
    add_time_limit_argument(r)
    r.add_argument("--plan", metavar="PLAN.json",
                   help="report this published plan ('quiltpriv plan --json'), verified "
                        "against the model, instead of planning")
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
    r.set_defaults(func=_cmd_report, _parser=r)
