"""``quiltpriv verify PLAN.json MODEL``: check a saved plan against the model (and the query)."""

from __future__ import annotations

import argparse

from quiltpriv.cli.core import (
    NAMES_HELP,
    add_model_arguments,
    add_query_arguments,
    emit,
    epsilon_type,
    query_from_args,
    sensitive_from_args,
    theta_from_args,
)
from quiltpriv.mechanisms.verification import check_plan, plan_from_json, query_from_dict


def _query_group_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """True when any option of the ``query`` group differs from its default."""
    for group in parser._action_groups:
        if group.title == "query":
            return any(getattr(args, a.dest) != a.default for a in group._group_actions)
    return False


def _cmd_verify(args: argparse.Namespace) -> int:
    with open(args.plan, "rb") as fh:
        plan = plan_from_json(fh.read())
    theta = theta_from_args(args)
    if _query_group_given(args._parser, args):
        query = query_from_args(args)
    else:
        query = query_from_dict(plan.query)
    sensitive = sensitive_from_args(args) if args.sensitive is not None else None
    result = check_plan(plan, theta, query, sensitive=sensitive, epsilon=args.epsilon)
    emit(result.to_json() if args.json else result.explain(), None)
    result.verified_plan()  # a failure becomes the one-line error and exit status 2
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv verify PLAN.json MODEL [--theta MODEL2 ...] [query options] [--json]``."""
    p = sub.add_parser(
        "verify", help="verify a saved plan against the model (and the query)",
        description="Verify a plan saved with 'quiltpriv plan --json' against MODEL: the model "
                    "fingerprint, and per sensitive attribute the quilt (d-separation), the "
                    "influence, the sensitivity and the scale recomputed, and a claim of "
                    "optimality re-checked. The query is given by the query options; without "
                    "them it is rebuilt from the plan's own record (not possible for a custom "
                    "query), which checks the plan against the query it states. Give "
                    "--sensitive and --epsilon to check that it gives the privacy you require, "
                    "not only the privacy it states. Exit status 0 when the plan verifies, 2 "
                    "otherwise.")
    p.add_argument("plan", metavar="PLAN.json", help="the plan (JSON of 'quiltpriv plan --json')")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]",
                   help=f"attributes the plan must protect (it may protect more): {NAMES_HELP}")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E",
                   help="the privacy required: the plan's epsilon must be at most E")
    add_query_arguments(p)
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=_cmd_verify, _parser=p)
