"""``quiltpriv ledger show|verify PATH``: show or verify a privacy ledger."""

from __future__ import annotations

import argparse
import json

from quiltpriv.errors import LedgerError
from quiltpriv.releases.composition import Composition, compositions_by_data
from quiltpriv.releases.ledger import LEDGER_FORMAT, read, table, verify, warning_lines


def _cmd_ledger(args: argparse.Namespace) -> int:
    if args.action == "verify":
        if args.json:
            raise LedgerError("--json applies to 'ledger show'")
        head = verify(args.path, expect_head=args.expect_head, expect_count=args.expect_count)
        print(head.explain())
        return 0
    entries, head = read(args.path, expect_head=args.expect_head)
    if args.expect_count is not None and head.count < args.expect_count:
        raise LedgerError(f"ledger {head.path}: {head.count} entries, fewer than the "
                          f"{args.expect_count} expected: entries were deleted")
    comps = compositions_by_data(entries)
    if args.json:
        print(json.dumps({"format": LEDGER_FORMAT, "head": head.to_dict(),
                          "entries": [e.to_dict() for e in entries],
                          "compositions": [c.to_dict() if isinstance(c, Composition)
                                           else {"error": str(c)} for c in comps]},
                         allow_nan=False, indent=2))
        return 0
    print(table(entries))
    for line in warning_lines(entries):
        print(line)
    print()
    print(head.explain())
    for c in comps:
        print()
        print(c.explain() if isinstance(c, Composition) else f"no composition: {c}")
    return 0


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
    p.set_defaults(func=_cmd_ledger)
