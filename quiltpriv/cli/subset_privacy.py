"""``quiltpriv subset-privacy``: a noisy count table of a CSV of records ([Tan, Alg. 1])."""

from __future__ import annotations

import argparse
import csv
import io

import numpy as np

from quiltpriv.cli.core import epsilon_type, seed_type
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.subset_privacy import consistent_count_table
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.io import write_text_atomic
from quiltpriv.utils.validation import check_epsilon


def _read_records(path: str, rows: str, protected: str) -> tuple[list[str], list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        text = fh.read()
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in (rows, protected) if c not in header]
    if missing:
        raise QueryError(f"{path}: no column {missing[0]!r}; the columns are {header}")
    if rows == protected:
        raise QueryError("--rows and --protected must be different columns")
    rv, pv = [], []
    try:
        for rec in reader:
            if rec.get(rows) is None or rec.get(protected) is None:
                raise QueryError(f"{path}, line {reader.line_num}: too few fields")
            rv.append(rec[rows])
            pv.append(rec[protected])
    except csv.Error as exc:
        raise QueryError(f"{path}: not a valid CSV file ({exc})") from None
    if not rv:
        raise QueryError(f"{path}: no records")
    return rv, pv


def _declared(text: str, option: str) -> list[str]:
    values = [c.strip() for c in text.split(",")]
    if any(not c for c in values) or len(set(values)) != len(values):
        raise ParameterError(f"{option} must be distinct non-empty names, got {values}")
    return values


def _outside(values: list[str], declared: list[str], column: str, option: str) -> None:
    known = set(declared)
    unknown = [v for v in values if v not in known]
    if unknown:
        raise QueryError(f"column {column!r} has {len(unknown)} value(s) outside {option} "
                         f"(e.g. {unknown[0]!r})")


def _handle(args: argparse.Namespace) -> int:
    eps = check_epsilon(args.epsilon, "--epsilon")
    if args.categories_from_data:
        raise ParameterError(
            "--categories-from-data is no longer accepted: which categories occur would be "
            "released without noise; declare the protected domain with --categories a,b,c")
    if args.categories is None:
        raise ParameterError(
            "give the protected column's categories with --categories a,b,c (a domain fixed "
            "in advance, never read off the data)")
    cats = _declared(args.categories, "--categories")
    rv, pv = _read_records(args.input, args.rows, args.protected)
    _outside(pv, cats, args.protected, "--categories")
    if args.row_categories is not None:
        row_values = _declared(args.row_categories, "--row-categories")
        _outside(rv, row_values, args.rows, "--row-categories")
    else:
        # V_1 is unprotected: its values and exact totals are released as they are (the
        # guarantee covers U only, and neighbours on U have the same rows).
        row_values = sorted(set(rv))
    ri = {v: i for i, v in enumerate(row_values)}
    ci = {c: j for j, c in enumerate(cats)}
    f = np.zeros((len(row_values), len(cats)), dtype=np.int64)
    for r, p in zip(rv, pv, strict=True):
        f[ri[r], ci[p]] += 1
    result = consistent_count_table(f, eps, seed=args.seed)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([args.rows, "total", *cats])
    for v, total, row in zip(row_values, result.row_totals, result.counts, strict=True):
        writer.writerow([v, total, *(int(x) for x in row)])
    write_text_atomic(args.output, buf.getvalue())
    print(f"wrote {args.output}: {len(row_values)} rows x {len(cats)} categories; "
          f"eps-private on {{{args.protected}}} with eps = {_fmt(eps)} "
          f"(exact loss per record eps/2 = {_fmt(result.privacy_loss)}); row totals exact; "
          + ("secure randomness" if result.secure
             else f"seed {args.seed} (reproducible, NOT for release)"))
    return 0


def register_cli(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``subset-privacy`` subcommand (Algorithm 1 of Tan on a CSV of records)."""
    p = subparsers.add_parser(
        "subset-privacy",
        help="noisy count table, eps-private on a protected column, exact row totals",
        description=(
            "Cross-tabulate a CSV of records by an unprotected ROWS column and a PROTECTED "
            "column and release the table with Algorithm 1 of Tan (corrected): integer cells, "
            "exact row totals, unbiased, eps-private on the protected column (exact loss eps/2 "
            "per record). Cells may be negative. Assumes independent records."),
    )
    p.add_argument("input", help="CSV file, one record per line, with a header")
    p.add_argument("--rows", required=True, help="unprotected column (its totals stay exact)")
    p.add_argument("--protected", required=True, help="protected column (U_1)")
    p.add_argument("--epsilon", required=True, type=epsilon_type, help="privacy parameter eps > 0")
    p.add_argument("--output", "-o", required=True, help="where to write the protected CSV")
    p.add_argument("--categories", help="comma-separated domain of the protected column, in "
                                        "output order (required; every category gets a column)")
    p.add_argument("--row-categories",
                   help="comma-separated values of the rows column, in output order (every "
                        "row is written, zero totals included; default: the values that occur, "
                        "sorted, since the rows column is not protected)")
    p.add_argument("--categories-from-data", action="store_true",
                   help="refused (it read the protected domain off the data, which released "
                        "which categories occur without noise); declare --categories")
    p.add_argument("--seed", type=seed_type, default=None,
                   help="reproducible noise for experiments only (default: secure randomness)")
    p.set_defaults(func=_handle)
    return p
