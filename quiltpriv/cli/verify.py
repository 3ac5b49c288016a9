"""``quiltpriv verify PLAN.json|RECORD.json MODEL``: check a saved plan or a published release
record against the model (and the query, the data and the ledger)."""

from __future__ import annotations

import argparse
import json

from quiltpriv.cli.core import (
    NAMES_HELP,
    add_model_arguments,
    add_query_arguments,
    add_time_limit_argument,
    command_time_limit,
    emit,
    epsilon_type,
    query_from_args,
    read_data,
    sensitive_from_args,
    theta_from_args,
)
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.attained import attained_epsilons, plan_attained_table
from quiltpriv.mechanisms.record_verification import (
    check_record,
    looks_like_record,
    record_from_json,
)
from quiltpriv.mechanisms.verification import (
    ModelComparison,
    PlanVerification,
    check_plan,
    compare_models,
    plan_from_json,
    query_from_dict,
)
from quiltpriv.model.loading import load_model


def _query_group_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """True when any option of the ``query`` group differs from its default."""
    for group in parser._action_groups:
        if group.title == "query":
            return any(getattr(args, a.dest) != a.default for a in group._group_actions)
    return False


def _cmd_verify(args: argparse.Namespace) -> int:
    with open(args.plan, "rb") as fh:
        raw = fh.read()
    record = record_from_json(raw) if looks_like_record(raw) else None
    if record is None and (args.data is not None or args.ledger is not None):
        raise ParameterError("--data and --ledger apply to a release record; "
                             f"{args.plan} is a plan")
    plan = plan_from_json(raw) if record is None else None
    theta = theta_from_args(args)
    plan_model = None if args.plan_model is None else load_model(
        args.plan_model, max_memory=args.max_memory, time_limit=command_time_limit(args))
    query = query_from_args(args) if _query_group_given(args._parser, args) else None
    sensitive = sensitive_from_args(args) if args.sensitive is not None else None
    if record is not None:
        data = None
        if args.data is not None:
            from quiltpriv.mechanisms.apmqm import plan_from_dict

            q = query or query_from_dict(plan_from_dict(record["plan"]).query)
            data = read_data(args.data, q)
        rv = check_record(record, theta, query, data=data, ledger=args.ledger,
                          sensitive=sensitive, epsilon=args.epsilon)
        pv = rv.plan
        comparison = _comparison(pv, theta, plan_model, args)
        ok = pv is not None and pv.ok
        if args.json:
            attained = attained_epsilons(pv.plan, query_from_dict(pv.query)) \
                if pv is not None and ok else ()
            out = rv.to_dict()
            out["attained_epsilon"] = {r.sensitive: r.to_dict() for r in attained}
            if comparison is not None:
                out["other_model"] = comparison.to_dict()
            emit(json.dumps(out, allow_nan=False), None)
        else:
            text = rv.explain()
            if ok and pv is not None:
                # one row per run of steps for a time series (the JSON lists every node)
                text += "\n\n" + "\n".join(plan_attained_table(pv.plan,
                                                                query_from_dict(pv.query)))
            emit(text + ("" if comparison is None else "\n\n" + comparison.explain()), None)
        rv.verified()  # a failure becomes the one-line error and exit status 2
        return 0
    assert plan is not None
    query = query or query_from_dict(plan.query)
    result = check_plan(plan, theta, query, sensitive=sensitive, epsilon=args.epsilon)
    comparison = _comparison(result, theta, plan_model, args)
    if args.json:
        attained = attained_epsilons(result.plan, query) if result.ok else ()
        out = result.to_dict()
        out["attained_epsilon"] = {r.sensitive: r.to_dict() for r in attained}
        if comparison is not None:
            out["other_model"] = comparison.to_dict()
        emit(json.dumps(out, allow_nan=False), None)
    else:
        text = result.explain()
        if result.ok:
            # one row per run of steps for a time series (the JSON lists every node)
            text += "\n\n" + "\n".join(plan_attained_table(result.plan, query))
        emit(text + ("" if comparison is None else "\n\n" + comparison.explain()), None)
    result.verified_plan()  # a failure becomes the one-line error and exit status 2
    return 0


def _comparison(pv: PlanVerification | None, theta: object, plan_model: object,
                args: argparse.Namespace) -> ModelComparison | None:
    """When the plan was made for another model: the diff and the re-planned scale."""
    if pv is None or pv.kind != "model" or "another model" not in (pv.failure or ""):
        return None
    return compare_models(pv.plan, theta, query_from_dict(pv.query), plan_theta=plan_model,
                          time_limit=command_time_limit(args))


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv verify PLAN.json|RECORD.json MODEL [--data D.csv] [--ledger L]
    [--plan-model M] [--theta MODEL2 ...] [query options] [--json]``."""
    p = sub.add_parser(
        "verify", help="verify a saved plan or a release record against the model",
        description="Verify a plan saved with 'quiltpriv plan --json', or a release record "
                    "(the JSON of 'quiltpriv release'), against MODEL. For a record: its "
                    "embedded plan as below, the guarantee and calibration it states against "
                    "that plan, the noise drawn, with --data the hash and row count of the "
                    "columns the query read (and the true value, so that the noise actually "
                    "added shows), with --ledger the ledger entry holding it. For a plan: the "
                    "model "
                    "fingerprint, and per sensitive attribute the quilt (d-separation), the "
                    "influence, the sensitivity and the scale recomputed, and a claim of "
                    "optimality re-checked. The query is given by the query options; without "
                    "them it is rebuilt from the plan's own record (not possible for a custom "
                    "query), which checks the plan against the query it states. Give "
                    "--sensitive and --epsilon to check that it gives the privacy you require, "
                    "not only the privacy it states. When the model is another one, the plan "
                    "is made again under it and its scale compared with the published one "
                    "(and with --plan-model, the tables that differ are listed). Exit status "
                    "0 when the plan or record verifies, 2 otherwise.")
    p.add_argument("plan", metavar="PLAN.json|RECORD.json",
                   help="the plan (JSON of 'quiltpriv plan --json') or a release record")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]",
                   help=f"attributes the plan must protect (it may protect more): {NAMES_HELP}")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E",
                   help="the privacy required: the plan's epsilon must be at most E")
    p.add_argument("--data", metavar="CSV",
                   help="record only: the data released on (hash, rows and the true value)")
    p.add_argument("--ledger", metavar="PATH",
                   help="record only: a privacy ledger that must hold the record")
    p.add_argument("--plan-model", metavar="MODEL",
                   help="the model the plan was made for (when MODEL is another one: list the "
                        "tables that differ)")
    add_time_limit_argument(p)
    add_query_arguments(p)
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=_cmd_verify, _parser=p)
