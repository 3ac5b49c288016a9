"""``quiltpriv learn DATA.csv --parameters A=share,B=mean -o theta.json``: learn Theta from a
table and save it as a JSON model that every other command reads (same fingerprint)."""

from __future__ import annotations

import argparse

from quiltpriv.cli.core import _time_limit, emit, number, seed_type
from quiltpriv.errors import ParameterError
from quiltpriv.frontend.options import domain_from_text, split_list


def _items(text: str) -> list[str]:
    """``text`` split at the commas outside quotes and brackets (a ``share of`` condition may
    hold ``in ["a", "b"]``); the items stripped, empty ones dropped."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'`":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [s.strip() for s in items if s.strip()]


def _parameters(text: str) -> dict[str, str]:
    """``A=share,B=mean,C=share of X == "x"`` as learn_theta's ``parameters`` (the kinds are
    checked there)."""
    out: dict[str, str] = {}
    for item in _items(text):
        name, sep, kind = item.partition("=")
        if not sep or not name.strip() or not kind.strip():
            raise ParameterError(f"--parameters: {item!r} is not NAME=KIND (KIND share, mean "
                                 "or 'share of CONDITION')")
        if name.strip() in out:
            raise ParameterError(f"--parameters names {name.strip()!r} twice")
        out[name.strip()] = kind.strip()
    if not out:
        raise ParameterError("--parameters: give at least one NAME=KIND")
    return out


def _edges(text: str | None, option: str) -> list[tuple[str, str]] | None:
    """``A>B,C>B`` as a list of (parent, child) edges; None when the option is absent."""
    if text is None:
        return None
    out = []
    for item in split_list(text):
        parent, sep, child = item.partition(">")
        if not sep or not parent.strip() or not child.strip():
            raise ParameterError(f"{option}: {item!r} is not PARENT>CHILD")
        out.append((parent.strip(), child.strip()))
    return out


def _cmd_learn(args: argparse.Namespace) -> int:
    from quiltpriv.cli.core import read_data
    from quiltpriv.model.learning import learn_theta

    parameters = _parameters(args.parameters)
    given = _edges(args.edges, "--edges")
    from quiltpriv.queries.share_of import shares_from_text

    domain = None if args.domain is None else domain_from_text(args.domain)
    parameters = shares_from_text(parameters, domain)
    data = read_data(args.data)
    theta = learn_theta(
        data, parameters, population=args.population, quantiles=args.quantiles,
        method=args.method, edges=given, required_edges=_edges(args.required_edges,
                                                               "--required-edges"),
        forbidden_edges=_edges(args.forbidden_edges, "--forbidden-edges"),
        max_indegree=args.max_indegree, time_limit=args.time_limit,
        n_bootstrap=args.bootstrap, seed=args.seed, name=args.name,
        data_public=args.data_public, min_records=args.min_records, weights=args.weights)
    emit(theta.to_json(indent=1), args.output)
    if args.output:
        edges = ", ".join(f"{a} -> {b}" for a, b in theta.edges) or "none"
        print(f"learned {len(theta.nodes)} attributes, {len(theta.members)} member(s), "
              f"edges {edges}; fingerprint {theta.fingerprint()}; wrote {args.output}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv learn DATA.csv --parameters ... [-o theta.json]``."""
    p = sub.add_parser(
        "learn", help="learn Theta from a CSV table and save it as a JSON model",
        description="Learn a hyperparameter network (and bootstrap members of Theta) from a "
                    "CSV table with one row per population, or one row per record with "
                    "--population: each parameter binned (--quantiles K), the DAG learned "
                    "(or given with --edges), BDeu tables. The JSON model (with its "
                    "provenance) is printed, or written with -o; every command reads it as "
                    "MODEL with the same fingerprint.")
    p.add_argument("data", metavar="DATA.csv", help="the table (a header row of column names)")
    p.add_argument("--parameters", required=True, metavar="A=KIND,...",
                   help="the attributes to model and their kinds: share (a share in [0, 1]; "
                        "a 0/1 column of records), mean, or 'share of CONDITION' (records: the "
                        "share meeting a condition, e.g. high='share of income == \"high\"'; "
                        "declare the columns it reads with --domain)")
    p.add_argument("--domain", metavar="COLUMN=V1|V2,...",
                   help="the values of each column a 'share of' condition reads (declared, "
                        "never read off the data)")
    p.add_argument("--population", metavar="COLUMN",
                   help="records: the column naming each record's population")
    p.add_argument("--weights", metavar="COLUMN",
                   help="records: a column of survey weights (positive numbers); the "
                        "populations' shares and means and the diagnostics are weighted")
    p.add_argument("--min-records", type=number("--min-records", integer=True, min_val=1),
                   metavar="N", help="records: leave out populations with fewer than N records")
    p.add_argument("--quantiles", type=number("--quantiles", integer=True, min_val=2,
                                              max_val=64), default=3, metavar="K",
                   help="bins per parameter at the data's quantiles (default 3)")
    p.add_argument("--method", choices=("hill_climb", "pc"), default="hill_climb",
                   help="structure learning (default hill_climb, BDeu score)")
    p.add_argument("--edges", metavar="A>B,...",
                   help="the DAG you already have: only its tables are learned")
    p.add_argument("--required-edges", metavar="A>B,...", help="edges the DAG must contain")
    p.add_argument("--forbidden-edges", metavar="A>B,...", help="edges the DAG must not contain")
    p.add_argument("--max-indegree", type=number("--max-indegree", integer=True, min_val=0,
                                                 max_val=16), default=2, metavar="K",
                   help="most parents per node when learning the DAG (default 2)")
    p.add_argument("--time-limit", type=_time_limit, default=60.0, metavar="SECONDS",
                   help="seconds hill climbing may take (default 60; none: no limit); when "
                        "it or the work budget runs out, the best DAG so far is used, flagged "
                        "in the provenance as not a local optimum, with a warning")
    p.add_argument("--bootstrap", type=number("--bootstrap", integer=True, min_val=0),
                   default=0, metavar="B", help="bootstrap members besides the estimate")
    p.add_argument("--seed", type=seed_type, default=0, help="seeds the bootstrap (default 0)")
    p.add_argument("--name", default="learned", help="the estimate's member name")
    p.add_argument("--data-public", action="store_true",
                   help="declare the data public (else plans and releases warn that Theta was "
                        "read off private data)")
    p.add_argument("-o", "--output", metavar="FILE.json", help="write the model to FILE.json")
    p.set_defaults(func=_cmd_learn)
