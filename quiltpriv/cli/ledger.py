"""``quiltpriv ledger show|verify PATH``: show or verify a privacy ledger."""

from __future__ import annotations

import argparse
import json
from typing import Any

from quiltpriv.audit.ledger import DEFAULT_AUDIT_TIME_LIMIT
from quiltpriv.errors import LedgerError
from quiltpriv.releases.composition import Composition, compositions_by_data
from quiltpriv.releases.ledger import LEDGER_FORMAT, read, table, verify, warning_lines
from quiltpriv.utils.format import fmt_number as _fmt


def _cmd_ledger(args: argparse.Namespace) -> int:
    if args.action == "verify":
        if args.json or args.audit is not None:
            raise LedgerError("--json and --audit apply to 'ledger show'")
        head = verify(args.path, expect_head=args.expect_head, expect_count=args.expect_count)
        print(head.explain())
        return 0
    entries, head = read(args.path, expect_head=args.expect_head)
    if args.expect_count is not None and head.count < args.expect_count:
        raise LedgerError(f"ledger {head.path}: {head.count} entries, fewer than the "
                          f"{args.expect_count} expected: entries were deleted")
    comps = compositions_by_data(entries)
    audits = _audits(args, entries)
    if args.json:
        doc = {"format": LEDGER_FORMAT, "head": head.to_dict(),
               "entries": [e.to_dict() for e in entries],
               "compositions": [c.to_dict() if isinstance(c, Composition)
                                else {"error": str(c)} for c in comps]}
        if audits is not None:
            doc["audits"] = [a.to_dict() for a in audits]
        print(json.dumps(doc, allow_nan=False, indent=2))
        return 0
    print(table(entries))
    for line in warning_lines(entries):
        print(line)
    print()
    print(head.explain())
    for c in comps:
        print()
        print(c.explain() if isinstance(c, Composition) else f"no composition: {c}")
    if audits is not None:
        print()
        for a in audits:
            print(a.explain())
    return 0


def _audits(args: argparse.Namespace, entries: Any) -> Any:
    """``--audit MODEL``: the exact joint loss per data set, or None when not asked."""
    if args.audit is None:
        if args.theta:
            raise LedgerError("--theta adds members to the Theta of --audit MODEL")
        return None
    from quiltpriv.audit.ledger import audit_ledger
    from quiltpriv.cli.core import command_time_limit
    from quiltpriv.model.loading import load_theta

    theta = load_theta([args.audit, *args.theta], max_memory=args.max_memory,
                       time_limit=command_time_limit(args))
    return audit_ledger(theta, entries, time_limit=args.time_limit, max_memory=args.max_memory)


def _audit_time_limit(text: str) -> float | None:
    from quiltpriv.cli.core import time_limit_type

    return None if text.strip().lower() == "none" else time_limit_type(text)


def _count(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--expect-count must be a whole number, got "
                                         f"{text!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"--expect-count must be >= 0, got {k}")
    return k


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv ledger show|verify PATH``."""
    p = sub.add_parser(
        "ledger", help="show or verify a privacy ledger",
        description="Show a privacy ledger (written by 'quiltpriv release --ledger PATH') as a "
                    "table with what its releases guarantee together (only where a published "
                    "theorem covers them; else it says none applies), or verify its hash chain: "
                    "exit status 0 when intact, 2 with the first fault otherwise.")
    p.add_argument("action", choices=("show", "verify"), help="show the entries, or verify")
    p.add_argument("path", metavar="PATH", help="the ledger file (SQLite)")
    p.add_argument("--expect-head", metavar="SHA256",
                   help="a head printed by an earlier 'ledger verify': it must still be in the "
                        "chain (detects a history rewritten as a whole)")
    p.add_argument("--expect-count", type=_count,
                   metavar="N", help="at least N entries must be there")
    p.add_argument("--json", action="store_true",
                   help="show: print the entries, head and compositions as one JSON object")
    p.add_argument("--audit", metavar="MODEL",
                   help="show: also compute, for the Theta of MODEL (and --theta), the exact "
                        "joint privacy loss of the releases on each data set with the exact "
                        "joint auditor (small models; 'audited, exact, for this Theta', not a "
                        "theorem); refused, with the reason, beyond the auditor's limits")
    p.add_argument("--theta", action="append", default=[], metavar="MODEL2",
                   help="with --audit: another member of Theta; repeatable")
    p.add_argument("--time-limit", type=_audit_time_limit, default=DEFAULT_AUDIT_TIME_LIMIT,
                   metavar="SECONDS",
                   help=f"with --audit: seconds per data set (default "
                        f"{_fmt(DEFAULT_AUDIT_TIME_LIMIT)}; none: no limit); a data set past it "
                        "is refused")
    from quiltpriv.cli.core import add_max_memory_argument

    add_max_memory_argument(p, "the exact tables of --audit")
    p.set_defaults(func=_cmd_ledger)
