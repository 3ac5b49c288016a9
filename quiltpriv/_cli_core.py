"""Core subcommands: ``plan``, ``quilts``, ``release`` and ``models``.

The ``plan`` contract is stable (other tools parse it)::

    quiltpriv plan MODEL [--theta MODEL2 ...] --sensitive S1[,S2...] --query count
                   --attributes A1[,A2...] --records N --epsilon E [--json]
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ._io import write_text_atomic
from .errors import ParameterError, QueryError
from .influence import INFERENCE_METHODS, InfluenceTooExpensive, max_influence
from .loading import bundled_models, load_theta
from .mechanisms import Plan, _fmt, _scale, _set, _table, plan, release
from .network import Theta
from .quilts import enumerate_quilts, trivial_quilt
from .sensitivity import (
    CountQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    Query,
    SumQuery,
)

QUERY_KINDS = ("count", "sum", "mean", "linear", "histogram")


def _split(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def _float(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise QueryError(f"{what}: {text!r} is not a number") from None


def _interval(text: str, what: str) -> tuple[float, float]:
    lo, sep, hi = text.partition(":")
    if not sep:
        raise QueryError(f"{what}: expected LO:HI, got {text!r}")
    return _float(lo, what), _float(hi, what)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """MODEL and ``--theta`` (more members of Theta)."""
    p.add_argument("model", metavar="MODEL",
                   help="BIF/XMLBIF file, Python model module, or bundled model name "
                        f"({', '.join(bundled_models())})")
    p.add_argument("--theta", action="append", default=[], metavar="MODEL2",
                   help="another member of Theta (same DAG and states); repeatable")


def theta_from_args(args: argparse.Namespace) -> Theta:
    return load_theta([args.model, *args.theta])


def add_query_arguments(p: argparse.ArgumentParser) -> None:
    """Options describing the query (see ``quiltpriv plan --help``)."""
    g = p.add_argument_group("query")
    g.add_argument("--query", choices=QUERY_KINDS, default="count",
                   help="query kind (default: count)")
    g.add_argument("--attributes", metavar="A1[,A2...]",
                   help="attributes the query reads (count, histogram; one for sum/mean)")
    g.add_argument("--records", type=float, metavar="N",
                   help="number of records n (count, sum, histogram)")
    g.add_argument("--bounds", metavar="LO:HI | A=LO:HI,...",
                   help="value bounds: LO:HI for sum/mean, A1=LO:HI,A2=LO:HI for linear")
    g.add_argument("--weights", metavar="A1=W1,A2=W2",
                   help="weights of a linear query (sum of w_j * mean_j)")
    g.add_argument("--where", metavar="EXPR",
                   help="predicate of a count query, as a pandas expression (for release)")


def query_from_args(args: argparse.Namespace) -> Query:
    kind = args.query
    attrs = _split(args.attributes)
    records = args.records
    if kind in ("count", "sum", "histogram") and records is None:
        raise ParameterError(f"a {kind} query needs --records N")
    if records is not None and (not math.isfinite(records) or records != int(records)
                                or records < 1):
        raise ParameterError(f"--records must be a whole number >= 1, got {records:g}")
    if kind == "count":
        if not attrs:
            raise QueryError("a count query needs --attributes")
        return CountQuery(tuple(attrs), int(records), where=args.where)
    if kind == "histogram":
        if not attrs:
            raise QueryError("a histogram query needs --attributes")
        return HistogramQuery(tuple(attrs), int(records))
    if kind in ("sum", "mean"):
        if len(attrs) != 1:
            raise QueryError(f"a {kind} query reads exactly one attribute (--attributes A)")
        if not args.bounds:
            raise QueryError(f"a {kind} query needs --bounds LO:HI")
        lo, hi = _interval(args.bounds, "--bounds")
        if kind == "sum":
            return SumQuery(attrs[0], lo, hi, int(records))
        return MeanQuery(attrs[0], lo, hi)
    # linear
    if not args.weights or not args.bounds:
        raise QueryError("a linear query needs --weights A1=W1,... and --bounds A1=LO:HI,...")
    weights, bounds = {}, {}
    for item in _split(args.weights):
        a, sep, w = item.partition("=")
        if not sep:
            raise QueryError(f"--weights: expected A=W, got {item!r}")
        weights[a.strip()] = _float(w, f"--weights {a}")
    for item in _split(args.bounds):
        a, sep, rng = item.partition("=")
        if not sep:
            raise QueryError(f"--bounds: expected A=LO:HI, got {item!r}")
        bounds[a.strip()] = _interval(rng, f"--bounds {a}")
    return LinearQuery(weights, bounds)


def _epsilon(text: str) -> float:
    # Parsed here (not by argparse's float) so that NaN/inf/<=0 get our one-line error.
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


#: Default planning budget of ``plan`` and ``release`` in seconds (``--time-limit``).
DEFAULT_TIME_LIMIT = 60.0


def _time_limit(text: str) -> float | None:
    # Seconds > 0; "0" or "none" for no limit (None).
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value == 0:
        return None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"expected seconds > 0, or 0 or none for no limit, got {text!r}")
    return value


def add_time_limit_argument(p: argparse.ArgumentParser) -> None:
    """``--time-limit SECONDS`` (default :data:`DEFAULT_TIME_LIMIT`; 0 or none: no limit)."""
    p.add_argument("--time-limit", type=_time_limit, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help=f"planning budget in seconds (default {DEFAULT_TIME_LIMIT:g}; 0 or "
                        "none: no limit); when it is hit the plan stays private with the best "
                        "quilts found so far, flagged as not proven optimal, and its notes say "
                        "so")


def add_privacy_arguments(p: argparse.ArgumentParser) -> None:
    """``--sensitive S1[,S2...]`` and ``--epsilon E`` (both required)."""
    p.add_argument("--sensitive", required=True, metavar="S1[,S2...]")
    p.add_argument("--epsilon", required=True, type=_epsilon, metavar="E")


def sensitive_from_args(args: argparse.Namespace) -> list[str]:
    sensitive = _split(args.sensitive)
    if not sensitive:
        raise ParameterError("give at least one sensitive attribute (--sensitive S1[,S2])")
    return sensitive


def read_data(path: str) -> Any:
    """The dataset of ``--data``: a CSV file read with pandas, one column per attribute."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise QueryError(f"cannot read data file {path}: {exc}") from exc


def emit(text: str, output: str | None) -> None:
    """Print ``text``, or write it to ``output`` atomically (no partial file on failure)."""
    if output:
        write_text_atomic(output, text + "\n")
    else:
        print(text)


def _plan_from_args(args: argparse.Namespace) -> tuple[Theta, Query, Plan]:
    theta = theta_from_args(args)
    query = query_from_args(args)
    sensitive = sensitive_from_args(args)
    import sys

    return theta, query, plan(theta, query, sensitive, args.epsilon,
                              time_limit=args.time_limit, n_jobs=getattr(args, "jobs", None),
                              progress=len(sensitive) > 1 and sys.stderr.isatty(),
                              inference=getattr(args, "inference", "auto"))


def _cmd_plan(args: argparse.Namespace) -> int:
    _, _, p = _plan_from_args(args)
    emit(p.to_json() if args.json else p.explain(), args.output)
    return 0


def _cmd_release(args: argparse.Namespace) -> int:
    theta, query, p = _plan_from_args(args)
    r = release(p, query, read_data(args.data), seed=args.seed)
    emit(r.to_json(indent=2), args.output)
    if not r.secure and r.scale > 0:
        import sys

        print("quiltpriv: warning: seeded noise is reproducible and NOT secure; use it only "
              "for experiments", file=sys.stderr)
    return 0


def _cmd_quilts(args: argparse.Namespace) -> int:
    theta = theta_from_args(args)
    (node,) = theta.check_nodes([args.node], "node")
    eps = args.epsilon
    query = query_from_args(args) if args.attributes or args.weights else None
    rows: list[dict[str, Any]] = []
    count = 0
    truncated = False
    quilts = []
    for q in enumerate_quilts(theta, node, max_size=args.max_size):
        if count >= args.limit:
            truncated = True
            break
        quilts.append(q)
        count += 1
    if not quilts or quilts[0] != trivial_quilt(theta, node):
        # Q = {} differs from the trivial quilt when some node is d-separated a priori.
        quilts.insert(0, trivial_quilt(theta, node))
    for q in quilts:
        try:
            e: float | None = max_influence(theta, node, q.quilt).value
        except InfluenceTooExpensive:
            e = None
        row: dict[str, Any] = {"quilt": list(q.quilt), "nearby": list(q.nearby),
                               "remote": list(q.remote), "trivial": q.is_trivial,
                               "influence": e}
        if query is not None and e is not None:
            a_n = set(query.attributes) & set(q.nearby)
            d = query.sensitivity(a_n)
            row["sensitivity"] = d
            row["scale"] = _scale(d, e, eps) if eps else None
        rows.append(row)
    if args.json:
        def clean(x: Any) -> Any:
            return "inf" if isinstance(x, float) and math.isinf(x) else x
        print(json.dumps({"node": node, "quilts": [{k: clean(v) for k, v in r.items()}
                                                   for r in rows],
                          "truncated": truncated}, allow_nan=False))
        return 0
    header = ["Q", "N", "R", "influence"]
    if query is not None:
        header += ["Delta_{A&N}", "scale"]
    table_rows = []
    for r in rows:
        cells = [("(trivial) " if r["trivial"] else "") + _set(r["quilt"]), _set(r["nearby"]),
                 _set(r["remote"]),
                 "too large" if r["influence"] is None else _fmt(r["influence"])]
        if query is not None:
            cells += [_fmt(r.get("sensitivity", math.nan)),
                      _fmt(r["scale"]) if r.get("scale") is not None else "-"]
        table_rows.append(tuple(cells))
    print(f"Markov quilts of {node!r} ({len(rows)} shown; the trivial quilt is Q = R = {{}})")
    print("\n".join(_table(tuple(header), table_rows)))
    if truncated:
        print(f"... more quilts exist; raise --limit (now {args.limit}) or set --max-size")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    for name, doc in bundled_models().items():
        print(f"{name:12s} {doc}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="least-noise APMQM plan (Algorithm 3)",
                       description="Plan an Attribute-Private Markov Quilt Mechanism release: "
                                   "per sensitive attribute the quilt with the least Laplace "
                                   "scale, exact over all quilts.")
    add_model_arguments(p)
    add_privacy_arguments(p)
    add_query_arguments(p)
    add_time_limit_argument(p)
    p.add_argument("--jobs", type=int, metavar="N",
                   help="plan the sensitive attributes in N parallel processes (-1: all cores)")
    p.add_argument("--inference", choices=INFERENCE_METHODS, default="auto",
                   help="how exact influences are computed (all exact and differing only "
                        "in rounding; default: auto, the fastest measured)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_plan)

    r = sub.add_parser("release", help="plan, then release F(X) + Laplace noise",
                       description="Plan and release a query on a CSV file. Noise is exact "
                                   "discrete Laplace from the OS's secure generator unless "
                                   "--seed is given (experiments only).")
    add_model_arguments(r)
    add_privacy_arguments(r)
    add_query_arguments(r)
    add_time_limit_argument(r)
    r.add_argument("--data", required=True, metavar="CSV", help="the dataset, one column per "
                                                                "attribute")
    r.add_argument("--seed", type=int, help="reproducible, NOT secure noise (experiments)")
    r.add_argument("-o", "--output", metavar="FILE", help="write the release record to FILE")
    r.set_defaults(func=_cmd_release)

    q = sub.add_parser("quilts", help="list the Markov quilts of a node with their influence",
                       description="List Markov quilts (Q, N, R) of NODE with max-influence; "
                                   "with a query and --epsilon also their sensitivity and "
                                   "Laplace scale.")
    add_model_arguments(q)
    q.add_argument("--node", required=True)
    add_query_arguments(q)
    q.add_argument("--epsilon", type=_epsilon, default=None, metavar="E")
    q.add_argument("--max-size", type=int, default=None, help="largest |Q| to list")
    q.add_argument("--limit", type=int, default=200, help="most quilts to list (default 200)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_quilts)

    m = sub.add_parser("models", help="list the bundled models")
    m.set_defaults(func=_cmd_models)
