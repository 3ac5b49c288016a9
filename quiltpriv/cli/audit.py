"""``quiltpriv audit``: the worst-case privacy loss of a Laplace release, exact or bounded."""

from __future__ import annotations

import argparse
import sys

from quiltpriv.audit.exact import EXACT_RECORDS, audit
from quiltpriv.cli.core import (
    add_model_arguments,
    add_privacy_arguments,
    add_query_arguments,
    emit,
    number,
    query_from_args,
    sensitive_from_args,
    theta_from_args,
    time_limit_type,
)
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.apmqm import plan, was_interrupted
from quiltpriv.mechanisms.compare import DEFAULT_TIME_LIMIT
from quiltpriv.queries.law_bounds import Budget
from quiltpriv.queries.query import CountQuery, LinearQuery
from quiltpriv.utils.validation import check_positive


def _cmd_audit(args: argparse.Namespace) -> int:
    limit = check_positive(args.time_limit, "--time-limit")
    budget = Budget(limit)  # one limit for the plan (without --scale) and the audit
    query = query_from_args(args)
    if isinstance(query, LinearQuery) and args.records is None:
        raise ParameterError("auditing a linear query needs --records N (its number of records)")
    theta = theta_from_args(args)
    sens = sensitive_from_args(args)
    if args.scale is None:
        p = plan(theta, query, sens, args.epsilon, time_limit=limit)
        if was_interrupted(p):
            raise KeyboardInterrupt  # a partial plan is not the one to audit
        scale = p.scale
    else:
        scale = args.scale
    records = None if isinstance(query, CountQuery) else args.records
    left = budget.remaining()
    result = audit(theta, query, sens, args.epsilon, scale, records=records,
                   time_limit=None if left is None else max(left, 1e-3),
                   progress=sys.stderr.isatty())
    emit(result.to_json() if args.json else result.explain(), args.output)
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
    add_privacy_arguments(p)
    add_query_arguments(p)
    p.add_argument("--scale", type=number("--scale", min_val=0.0), default=None, metavar="B",
                   help="Laplace scale to audit (default: the APMQM plan's)")
    p.add_argument("--time-limit", type=time_limit_type, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help="stop after this long (default: %(default)g); an audit cut short is "
                        "UNDECIDED (or VIOLATED if the pairs done already prove it), never MET")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_audit)
