"""``quiltpriv audit``: the worst-case privacy loss of a Laplace release, exact or bounded."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from quiltpriv.audit.exact import EXACT_RECORDS, audit
from quiltpriv.audit.least_scale import audit_per_attribute, least_scale
from quiltpriv.cli.core import (
    add_max_memory_argument,
    add_model_arguments,
    add_query_arguments,
    emit,
    epsilon_type,
    number,
    query_from_args,
    sensitive_from_args,
    theta_from_args,
    time_limit_type,
)
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.apmqm import Plan, plan, plan_from_json, was_interrupted
from quiltpriv.mechanisms.compare import DEFAULT_TIME_LIMIT
from quiltpriv.mechanisms.fragility import DEFAULT_DELTA
from quiltpriv.mechanisms.record_verification import check_record, looks_like_record
from quiltpriv.mechanisms.verification import check_plan, query_from_dict
from quiltpriv.queries.law_bounds import Budget
from quiltpriv.queries.query import CountQuery, LinearQuery, Query
from quiltpriv.utils.format import fmt_number, text_table
from quiltpriv.utils.validation import check_positive


def _published(args: argparse.Namespace, theta: object) -> tuple[Plan, Query]:
    """The verified plan of ``--plan FILE`` (a plan or a release record) and its query."""
    with open(args.plan, "rb") as fh:
        raw = fh.read()
    given = query_from_args(args) if args.attributes or args.weights else None
    if looks_like_record(raw):
        rv = check_record(raw, theta, given)
        rv.verified()
        assert rv.plan is not None
        return rv.plan.plan, given or query_from_dict(rv.plan.query)
    plan_ = plan_from_json(raw)
    query = given or query_from_dict(plan_.query)
    return check_plan(plan_, theta, query).verified_plan(), query


def _cmd_audit(args: argparse.Namespace) -> int:
    limit = check_positive(args.time_limit, "--time-limit")
    budget = Budget(limit)  # one limit for the plan (without --scale) and the audit
    theta = theta_from_args(args)
    if args.plan is not None:
        if args.scale is not None:
            raise ParameterError("--plan audits the published plan's scale: give --scale "
                                 "without --plan")
        p, query = _published(args, theta)
        p_used: Plan | None = p
        sens, eps, scale = [sp.sensitive for sp in p.sensitive], p.epsilon, p.scale
    else:
        if args.sensitive is None or args.epsilon is None:
            raise ParameterError("give --sensitive and --epsilon (or --plan FILE: a published "
                                 "plan or release record)")
        query = query_from_args(args)
        sens, eps = sensitive_from_args(args), args.epsilon
        scale = args.scale
        p_used = None
        if scale is None:
            p = plan(theta, query, sens, eps, time_limit=limit, max_memory=args.max_memory)
            if was_interrupted(p):
                raise KeyboardInterrupt  # a partial plan is not the one to audit
            scale, p_used = p.scale, p
    if isinstance(query, LinearQuery) and args.records is None:
        raise ParameterError("auditing a linear query needs --records N (its number of records)")
    records = None if isinstance(query, CountQuery) else args.records
    left = budget.remaining()
    result = audit(theta, query, sens, eps, scale, records=records,
                   time_limit=None if left is None else max(left, 1e-3),
                   progress=sys.stderr.isatty(), max_memory=args.max_memory)
    extra: dict[str, Any] = {}
    lines = [result.explain()]
    if args.per_attribute:
        left = budget.remaining()
        per = audit_per_attribute(theta, query, sens, eps, scale, records=records,
                                  time_limit=None if left is None else max(left, 1e-3),
                                  max_memory=args.max_memory)
        extra["per_attribute"] = {k: r.to_dict() for k, r in per.items()}
        lines += ["", f"per sensitive attribute, at scale {fmt_number(scale, rounding='up')}:"]
        lines += text_table(("sensitive", "loss", "epsilon", "verdict"),
                            [(k, fmt_number(r.loss), f"{fmt_number(eps)}", r.verdict)
                             for k, r in per.items()])
    if args.least_scale:
        left = budget.remaining()
        least = least_scale(theta, query, sens, eps, start=scale or None, records=records,
                            time_limit=None if left is None else max(left, 1e-3),
                            planned=scale, max_memory=args.max_memory)
        extra["least_scale"] = least.to_dict()
        lines += ["", least.explain()]
    if args.fragility:
        if p_used is None:
            raise ParameterError("--fragility tests a plan's chosen quilts: give --plan FILE, "
                                 "or omit --scale")
        from quiltpriv.mechanisms.fragility import fragility

        left = budget.remaining()
        frag = fragility(theta, p_used, query, delta=args.delta,
                         time_limit=None if left is None else max(left, 1e-3))
        extra["fragility"] = frag.to_dict()
        lines += ["", frag.explain()]
    if args.json:
        emit(json.dumps({**result.to_dict(), **extra}, allow_nan=False), args.output)
    else:
        emit("\n".join(lines), args.output)
    return 0 if result.met else 1


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv audit MODEL --sensitive S --query count|linear ... --epsilon E``."""
    p = sub.add_parser(
        "audit", help="worst-case privacy loss of a Laplace release, exact or proven bounds",
        description="Compute the worst-case privacy loss of F(X) + Lap(scale) on a "
                    "hyperparameter network (count: the --where predicate, read over the "
                    "model's record categories through --domain or --record-states, or "
                    "without --where 'all attributes = 1'; linear: sum of w_j * mean_j over "
                    "--records N) and compare it with epsilon: exact "
                    f"up to {EXACT_RECORDS} records, proven lower and upper bounds above. "
                    "Without --scale the APMQM plan's scale is audited. Exit status 0 when "
                    "the loss is proven to meet epsilon, 1 when it does not or when that is "
                    "not proven (verdict UNDECIDED: within the error bound, or time limit).")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]",
                   help="the sensitive attributes (required without --plan)")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E",
                   help="the epsilon to meet (required without --plan)")
    p.add_argument("--plan", metavar="FILE",
                   help="audit a published plan or release record (verified against MODEL "
                        "first): its sensitive attributes, epsilon, query and scale")
    p.add_argument("--per-attribute", action="store_true",
                   help="also audit each sensitive attribute alone")
    p.add_argument("--least-scale", action="store_true",
                   help="also find, by bisection, the least scale the exact audit proves "
                        "sufficient, beside the audited one")
    p.add_argument("--fragility", action="store_true",
                   help="also test each chosen quilt against changes of at most --delta in "
                        "one column of one table: could one make it infeasible (FLIPS), is "
                        "that excluded (STABLE), or not decided in time (UNDECIDED)?")
    p.add_argument("--delta", type=number("--delta", min_val=0.0, max_val=1.0,
                                               include_boundaries="right"),
                   default=DEFAULT_DELTA, metavar="D",
                   help="with --fragility: the largest change of one column, in total "
                        "variation (default: %(default)g)")
    add_query_arguments(p)
    p.add_argument("--scale", type=number("--scale", min_val=0.0), default=None, metavar="B",
                   help="Laplace scale to audit (default: the APMQM plan's)")
    p.add_argument("--time-limit", type=time_limit_type, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help="stop after this long (default: %(default)g); an audit cut short is "
                        "UNDECIDED (or VIOLATED if the pairs done already prove it), never MET")
    add_max_memory_argument(p, "the exact (rational) tables of the audit and of the plan")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_audit)
