"""``quiltpriv compare``: the noise of every mechanism side by side."""

from __future__ import annotations

import argparse
import sys

from quiltpriv.cli.core import (
    add_model_arguments,
    add_privacy_arguments,
    add_query_arguments,
    emit,
    query_from_args,
    sensitive_from_args,
    theta_from_args,
    time_limit_type,
)
from quiltpriv.mechanisms.compare import DEFAULT_TIME_LIMIT, compare
from quiltpriv.utils.validation import check_positive


def _cmd_compare(args: argparse.Namespace) -> int:
    limit = check_positive(args.time_limit, "--time-limit")
    theta = theta_from_args(args)
    query = query_from_args(args)
    c = compare(theta, query, sensitive_from_args(args), args.epsilon,
                time_limit=limit, progress=sys.stderr.isatty())
    emit(c.to_json() if args.json else c.explain(), args.output)
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv compare MODEL [--theta M2 ...] --sensitive S --query ... --epsilon E``."""
    p = sub.add_parser("compare", help="noise of every mechanism side by side",
                       description="For one model, query and epsilon, print the noise scale "
                                   "and standard deviation of APMQM, group DP, the Wasserstein "
                                   "mechanism and APGM, and why any of them does not apply.")
    add_model_arguments(p)
    add_privacy_arguments(p)
    add_query_arguments(p)
    p.add_argument("--time-limit", type=time_limit_type, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help="stop after this long (default: %(default)g): the plan is then not "
                        "proven optimal, and the Wasserstein row says it was not computed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_compare)
