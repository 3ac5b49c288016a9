"""Core subcommands (``plan``, ``quilts``, ``release``, ``models``) and the options they share.

The other commands live in one module each under :mod:`quiltpriv.cli` and build their parsers
from the helpers here (model, query, privacy and time-limit options, numeric option types,
:func:`emit`, :func:`read_data`); the query options are parsed by
:mod:`quiltpriv.frontend.options`, which the explorer shares.

The ``plan`` contract is stable (other tools parse it)::

    quiltpriv plan MODEL [--theta MODEL2 ...] --sensitive S1[,S2...] --query count
                   --attributes A1[,A2...] --records N --epsilon E [--json]

Every scale in it is a finite number: plans whose scale overflows the float range are refused
by the planner (exit status 2), never encoded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from quiltpriv.cli import EXIT_INTERRUPTED
from quiltpriv.errors import ParameterError
from quiltpriv.frontend.options import (
    QUERY_KINDS,
    parse_number,
    query_from_options,
    split_list,
)
from quiltpriv.graph.quilts import enumerate_quilts, trivial_quilt
from quiltpriv.inference.influence import (
    ENGINES,
    INFERENCE_METHODS,
    InfluenceTooExpensive,
    fmt_influence,
    max_influence,
)
from quiltpriv.mechanisms.apmqm import Plan, plan, was_interrupted
from quiltpriv.mechanisms.apmqm_release import release
from quiltpriv.mechanisms.quilt_price import price_quilt
from quiltpriv.model.loading import bundled_models, load_theta
from quiltpriv.model.network import Theta
from quiltpriv.queries.data_file import read_query_data
from quiltpriv.queries.query import CountQuery, Query
from quiltpriv.utils.format import describe_query, fmt_number, text_table
from quiltpriv.utils.io import write_text_atomic
from quiltpriv.utils.memory import DEFAULT_MAX_MEMORY, describe_bytes, parse_memory_size
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.time_limit import TimeLimit
from quiltpriv.utils.validation import MAX_RECORDS, Boundaries


def number(option: str, *, integer: bool = False, min_val: float | None = None,
           max_val: float | None = None,
           include_boundaries: Boundaries = "both") -> Callable[[str], float]:
    """An argparse ``type`` for a numeric option: :func:`parse_number` under its name."""
    def parse(text: str) -> float:
        try:
            return parse_number(text, option, integer=integer, min_val=min_val,
                                max_val=max_val, include_boundaries=include_boundaries)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "number"
    return parse


def jobs_type(text: str) -> int:
    """``--jobs``: -1 (every core) or 1 .. the machine's cores; 0 or a million mean nothing."""
    k = number("--jobs", integer=True)(text)
    cores = os.cpu_count() or 1
    if k != -1 and not 1 <= k <= cores:
        raise argparse.ArgumentTypeError(
            f"--jobs must be -1 (every core) or a whole number in [1, {cores}] (the cores of "
            f"this machine), got {k}")
    return int(k)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """MODEL and ``--theta`` (more members of Theta)."""
    p.add_argument("model", metavar="MODEL",
                   help="BIF/XMLBIF file (.bif, .bif.gz, .xml, .xmlbif), quiltpriv JSON model "
                        "(.json), Python model module (.py), or bundled model name "
                        f"({', '.join(bundled_models())})")
    p.add_argument("--theta", action="append", default=[], metavar="MODEL2",
                   help="another member of Theta (same DAG and states); repeatable")


def theta_from_args(args: argparse.Namespace) -> Theta:
    """The model of ``MODEL [--theta MODEL2 ...]``, loaded once per command (``--sensitive
    all`` and ``--attributes all`` need it too), within ``--max-memory`` where the command
    has it (a JSON model whose reading would exceed it is refused) and within its
    ``--time-limit``, counted from the command's start (:func:`command_time_limit`): there is
    no answer without the model, so a limit that passes while it is read ends the command
    with one line naming the limit (:class:`~quiltpriv.errors.TimeLimitError`, status 2),
    nothing written."""
    theta = getattr(args, "_theta", None)
    if theta is None:
        theta = load_theta([args.model, *args.theta],
                           max_memory=getattr(args, "max_memory", None),
                           time_limit=command_time_limit(args))
        args._theta = theta
    return theta


def query_from_args(args: argparse.Namespace) -> Query:
    """The query the options ask for (:func:`quiltpriv.frontend.options.query_from_options`);
    ``--attributes all`` and ``--attributes @FILE`` are expanded first (:func:`name_list`)."""
    text = getattr(args, "attributes", None)
    if isinstance(text, str) and _is_list_form(text):
        names = name_list(text, "--attributes", lambda: theta_from_args(args).nodes)
        args = argparse.Namespace(**{**vars(args), "attributes": names})
    return query_from_options(args)


#: The largest ``@FILE`` of names read (a name a line: far more than any network's nodes).
MAX_NAMES_FILE_BYTES = 64 * 2**20


def _is_list_form(text: str) -> bool:
    return text.strip() == "all" or text.lstrip().startswith("@")


def name_list(text: str, option: str, every: Callable[[], Sequence[str]]) -> list[str]:
    """The names an option such as ``--sensitive`` gives.

    ``A1,A2,...`` lists them; ``all`` means every node of the model (``every()``; a node
    that is itself named ``all`` is given as ``all,``); ``@FILE`` reads them from a UTF-8
    text file, one name a line (surrounding spaces are dropped, blank lines are skipped, a
    name given twice is refused with both line numbers), for lists too long for one
    command-line argument. Names the model does not have are refused by the command, as
    for a list.
    """
    stripped = text.strip()
    if stripped == "all":
        return list(every())
    if not stripped.startswith("@"):
        return split_list(text)
    path = stripped[1:]
    if not path:
        raise ParameterError(f"{option} @FILE: give a file name after '@'")
    try:
        size = os.stat(path).st_size
        if size > MAX_NAMES_FILE_BYTES:
            raise ParameterError(f"{option} @{path}: the file has {size} bytes; at most "
                                 f"{MAX_NAMES_FILE_BYTES} are read")
        with open(path, encoding="utf-8-sig") as fh:
            lines = fh.read().splitlines()
    except UnicodeDecodeError:
        raise ParameterError(f"{option} @{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ParameterError(f"{option} @{path}: cannot read it "
                             f"({exc.strerror or exc})") from None
    names: list[str] = []
    first: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        name = line.strip()
        if not name:
            continue
        if name in first:
            raise ParameterError(f"{option} @{path}: line {number} repeats {name!r} (first on "
                                 f"line {first[name]}); give each name once")
        first[name] = number
        names.append(name)
    if not names:
        raise ParameterError(f"{option} @{path}: the file names no attribute (one name a line)")
    return names


def add_query_arguments(p: argparse.ArgumentParser) -> None:
    """Options describing the query (see ``quiltpriv plan --help``)."""
    g = p.add_argument_group("query")
    g.add_argument("--query", choices=QUERY_KINDS, default="count",
                   help="query kind (default: count)")
    g.add_argument("--attributes", metavar="A1[,A2...]",
                   help="attributes the query reads (count, histogram; one for sum/mean): "
                        f"{NAMES_HELP}")
    g.add_argument("--records", type=number("--records", integer=True, min_val=1,
                                            max_val=MAX_RECORDS), metavar="N",
                   help="number of records n (count, sum, histogram); a whole number in "
                        "[1, 2**53]")
    g.add_argument("--bounds", metavar="LO:HI | A=LO:HI,...",
                   help="value bounds: LO:HI for sum/mean, A1=LO:HI,A2=LO:HI for linear")
    g.add_argument("--weights", metavar="A1=W1,A2=W2",
                   help="weights of a linear query (sum of w_j * mean_j)")
    g.add_argument("--where", metavar="PREDICATE",
                   help="predicate of a count query in quiltpriv's predicate language "
                        "(comparisons, and/or/not, in [...], + - * / over the attributes; "
                        "no '@', calls or attribute access), e.g. \"height > 66 and sat > "
                        "1300\"; it must read exactly --attributes")
    g.add_argument("--domain", "--categories", dest="domain", metavar="A=V1|V2,...",
                   help="declared values per attribute, '|' between values, ',' between "
                        "attributes (all numbers, or else all text): a histogram's cells in "
                        "this order (required for --query histogram), or the values a count's "
                        "--where may see (data outside it are refused)")
    g.add_argument("--record-states", metavar="A=V1:K1|V2:K2,...",
                   help="count query: data value -> record category of the model (0/1 for a "
                        "Bernoulli node, 0..k-1 for a categorical one), for the mechanisms "
                        "that use the model's law of the count (compare, audit)")
    g.add_argument("--state", metavar="S",
                   help="fraction: the state whose share of the steps (--attributes, ranges "
                        "such as X1..X10000 allowed) is released; with --records T, the "
                        "share of all T steps")
    g.add_argument("--catch-all", metavar="LABEL",
                   help="histogram: an extra last cell LABEL per attribute for values outside "
                        "--categories (default: such values are an error)")


#: ``--epsilon``: finite and > 0 (a scale that then overflows is refused by the planner).
epsilon_type = number("--epsilon", min_val=0.0, include_boundaries="right")
time_limit_type = number("--time-limit", min_val=0.0, include_boundaries="right")
seed_type = number("--seed", integer=True, min_val=0)


#: Default planning budget of ``plan`` and ``release`` in seconds (``--time-limit``).
DEFAULT_TIME_LIMIT = 60.0


def _time_limit(text: str) -> float | None:
    # Seconds > 0 through the shared validator; "none" for no limit (None).
    if text.strip().lower() == "none":
        return None
    return time_limit_type(text)


def command_time_limit(args: argparse.Namespace) -> TimeLimit | None:
    """``--time-limit`` as a limit running since the command started (None: no limit).

    The limit bounds the whole command: reading the model and the data counts against it, so
    a search that starts after it has passed stops at once, flagged, while the notes still
    state the number the user gave ("the time limit of 2 s").
    """
    limit = getattr(args, "time_limit", None)
    if limit is None:
        return None
    started = getattr(args, "started", None)
    return TimeLimit.starting_now(limit) if started is None else TimeLimit(limit, started)


def max_memory_type(text: str) -> int:
    """``--max-memory``: a size such as 4G or 512M (:func:`.memory.parse_memory_size`)."""
    try:
        return parse_memory_size(text, "--max-memory")
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_time_limit_argument(p: argparse.ArgumentParser) -> None:
    """``--time-limit SECONDS`` (default :data:`DEFAULT_TIME_LIMIT`; ``none``: no limit) and
    ``--max-memory SIZE`` (default: half the machine's memory), the planner's two budgets."""
    p.add_argument("--time-limit", type=_time_limit, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help=f"the whole command's budget in seconds, counted from its start "
                        f"(reading the model and the data included; default "
                        f"{fmt_number(DEFAULT_TIME_LIMIT)}; none: no limit); when it is hit the "
                        "plan "
                        "stays private with the best quilts found so far (the trivial quilt "
                        "where no search began), flagged as not proven optimal, and its notes "
                        "say so; when it is hit while the model is read, the command ends "
                        "with an error (status 2), nothing written")
    p.add_argument("--max-memory", type=max_memory_type, default=None, metavar="SIZE",
                   help=f"memory budget, e.g. 4G or 512M (default "
                        f"{describe_bytes(DEFAULT_MAX_MEMORY)}, half this machine's memory) "
                        "of reading a JSON model (one that needs more is refused) and of "
                        "exact inference (an influence whose tables need more is not "
                        "computed: the plan stays private, flagged as not proven optimal)")


def add_max_memory_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--max-memory SIZE`` of a command whose exact tables are bounded by it (``what``
    says which, in the help); the model is read within it too (:func:`theta_from_args`)."""
    p.add_argument("--max-memory", type=max_memory_type, default=None, metavar="SIZE",
                   help=f"memory budget, e.g. 4G or 512M (default "
                        f"{describe_bytes(DEFAULT_MAX_MEMORY)}, half this machine's memory) "
                        f"of reading a JSON model and of {what}; what needs more is refused")


#: The help of the options that take a list of names (``--sensitive``, ``--attributes``).
NAMES_HELP = ("A1,A2,... ; all (every node of the model); or @FILE (one name a line, blank "
              "lines skipped, a repeated name refused)")


def add_privacy_arguments(p: argparse.ArgumentParser) -> None:
    """``--sensitive S1[,S2...] | all | @FILE`` and ``--epsilon E`` (both required)."""
    p.add_argument("--sensitive", required=True, metavar="S1[,S2...]",
                   help=f"the sensitive attributes: {NAMES_HELP}")
    p.add_argument("--epsilon", required=True, type=epsilon_type, metavar="E")


def sensitive_from_args(args: argparse.Namespace) -> list[str]:
    """The names of ``--sensitive`` (:func:`name_list`: a list, ``all`` or ``@FILE``)."""
    sensitive = name_list(args.sensitive, "--sensitive", lambda: theta_from_args(args).nodes)
    if not sensitive:
        raise ParameterError("give at least one sensitive attribute (--sensitive S1[,S2])")
    return sensitive


# The CSV reader of --data lives with the queries (the explorer reads data files too).
read_data = read_query_data


def emit(text: str, output: str | None) -> None:
    """Print ``text``, or write it to ``output`` atomically (no partial file on failure)."""
    if output:
        write_text_atomic(output, text + "\n")
    else:
        print(text)


def check_releasable(query: Query) -> None:
    """Refuse, before any work, a release whose query cannot be evaluated (in option words)."""
    if isinstance(query, CountQuery) and query.where is None:
        raise ParameterError("releasing a count query needs its predicate: --where EXPR")


def _plan_from_args(args: argparse.Namespace, query: Query | None = None, *,
                    partial_ok: bool = False) -> tuple[Theta, Query, Plan]:
    """The plan the options ask for.

    On Ctrl-C the planner returns the best valid plan found so far; only ``plan`` wants it
    (``partial_ok``): every other command stops (KeyboardInterrupt), releasing or writing
    nothing.
    """
    import sys
    import warnings

    from quiltpriv.errors import PrivateModelWarning

    if query is None:
        query = query_from_args(args)  # before the model: cheap checks first
    theta = theta_from_args(args)
    sensitive = sensitive_from_args(args)
    with warnings.catch_warnings():
        # Said by the command itself (plan: print_warnings; release: the record's warnings).
        warnings.simplefilter("ignore", PrivateModelWarning)
        p = plan(theta, query, sensitive, args.epsilon, time_limit=command_time_limit(args),
                 max_memory=getattr(args, "max_memory", None), n_jobs=getattr(args, "jobs", None),
                 progress=len(sensitive) > 1 and sys.stderr.isatty(),
                 inference=getattr(args, "inference", "auto"),
                 engine=getattr(args, "engine", "auto"),
                 list_sets={"yes": True, "no": False}.get(getattr(args, "list_sets", "auto")))
    if was_interrupted(p) and not partial_ok:
        raise KeyboardInterrupt
    return theta, query, p


def _cmd_plan(args: argparse.Namespace) -> int:
    import sys

    _, query, p = _plan_from_args(args, partial_ok=True)
    print_warnings(p.warnings)
    if args.json:
        emit(p.to_json(), args.output)
    else:
        from quiltpriv.mechanisms.attained import plan_attained_table

        emit(p.explain() + "\n\n" + "\n".join(plan_attained_table(p, query)), args.output)
    if was_interrupted(p):
        print("quiltpriv: interrupted: the plan given is the best found so far (valid, not "
              "proven optimal)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def print_warnings(texts: Iterable[str]) -> None:
    """Each text as one line ``quiltpriv: warning: ...`` on stderr (a plan's warnings: no
    noise, a Theta learned from private data)."""
    import sys

    for text in texts:
        print(f"quiltpriv: warning: {text}", file=sys.stderr)


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """quiltpriv's warnings (seeded noise, a repeated release) as one stderr line each,
    ``quiltpriv: warning: ...``, instead of Python's two-line warning with a source line."""
    import sys
    import warnings

    from quiltpriv.errors import QuiltPrivWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, QuiltPrivWarning):
            print(f"quiltpriv: warning: {' '.join(str(message).split())}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", QuiltPrivWarning)
        warnings.showwarning = show
        yield


def _cmd_release(args: argparse.Namespace) -> int:
    from quiltpriv.mechanisms.registry import mechanism_entry

    entry = mechanism_entry(args.mechanism)  # an unknown name before any work
    if args.delta is not None and not entry.needs_delta:
        raise ParameterError(f"--delta applies to the (eps, delta) mechanisms, not "
                             f"{entry.name} (a pure guarantee)")
    if args.delta is None and entry.needs_delta:
        raise ParameterError(f"--mechanism {entry.name} needs --delta D")
    check_booking_options(args)
    steps = _postprocess_steps(args)
    if steps and entry.name != "apmqm":
        raise ParameterError(f"--round and --clamp apply to --mechanism apmqm, not "
                             f"{entry.name}")
    if args.ledger is not None:
        from quiltpriv.releases.ledger import check_writable

        check_writable(args.ledger)  # before any planning work
    query = query_from_args(args)
    check_releasable(query)
    if steps:
        from quiltpriv.releases.postprocess import postprocess_for

        postprocess_for(steps, query.to_dict())  # in option words, before any work
    data = read_data(args.data, query)  # a bad file is reported before the planning work
    if entry.name != "apmqm":
        return _release_mechanism(args, entry.name, query, data)
    theta, query, p = _plan_from_args(args, query)
    # The ledger entry is written inside release(), before anything is printed here.
    with one_line_warnings():
        r = release(p, query, data, seed=args.seed, ledger=args.ledger,
                    command=getattr(args, "argv", None), postprocess=steps or None,
                    **_booking_options(args))
    _emit_release(r.to_dict(), args)
    return 0


def _postprocess_steps(args: argparse.Namespace) -> list[str]:
    """``--round`` and ``--clamp`` as release()'s ``postprocess`` steps."""
    return [s for s, on in (("round", getattr(args, "round", False)),
                            ("clamp", getattr(args, "clamp", False))) if on]


def _emit_release(record: dict[str, Any], args: argparse.Namespace) -> None:
    """The release's output: the record with ``--json`` (or to ``-o FILE``), and otherwise
    one line saying what was released (:func:`release_summary`)."""
    if args.output or args.json:
        emit(json.dumps(record, indent=2, allow_nan=False), args.output)
    if not args.json:
        print(release_summary(record, ledger=args.ledger))


def release_summary(record: Mapping[str, Any], ledger: str | None = None) -> str:
    """One line for a person: the released value, the noise scale, the mechanism and the
    ledger entry that holds the record (when ``ledger`` is given)."""
    value = record["value"]
    cells = record.get("cells")
    if isinstance(value, list):
        attrs = record["query"]["definition"].get("attributes") or []
        labels = [" & ".join(f"{a}={x}" for a, x in zip(attrs, c, strict=True))
                  for c in cells] if cells else [str(k) for k in range(len(value))]
        shown = ", ".join(f"{lab}: {fmt_number(v)}" for lab, v in zip(labels, value,
                                                                     strict=True))
    else:
        shown = fmt_number(value)
    post = record.get("postprocess")
    if post:
        words = {"round": "rounded", "clamp": "clamped to [{}, {}]".format(
            *map(fmt_number, post["range"] or (0, 0)))}
        shown += f" ({' and '.join(words[s] for s in post['steps'])})"
    source = record["noise"]["source"]
    noise = {"secure": "secure noise", "seeded": "SEEDED noise (NOT secure)",
             "none": "no noise"}.get(source, source)
    law = str(record["calibration"]["noise"])
    line = (f"released {shown} ({describe_query(record['query']['definition'])}): "
            f"{record['mechanism']}, {law[:1].upper() + law[1:]} scale "
            f"{fmt_number(record['calibration']['noise_scale_used'])}, {noise}")
    if ledger is not None:
        from quiltpriv.releases.ledger import read

        entries, head = read(ledger)
        line += f"; ledger {ledger} entry #{entries[-1].seq}, head {head.hash[:12]}"
    return line


def _booking_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--dataset``, ``--budget`` and ``--allow-unproved`` as release() arguments."""
    return {"dataset": getattr(args, "dataset", None), "budget": getattr(args, "budget", None),
            "allow_unproved": bool(getattr(args, "allow_unproved", False))}


def check_booking_options(args: argparse.Namespace) -> None:
    """Refuse, before any work, ``--budget`` or ``--allow-unproved`` without ``--ledger``."""
    from quiltpriv.releases.records import check_dataset

    check_dataset(getattr(args, "dataset", None))
    if getattr(args, "ledger", None) is None:
        if getattr(args, "budget", None) is not None:
            raise ParameterError("--budget counts the releases of a ledger: give --ledger PATH")
        if getattr(args, "allow_unproved", False):
            raise ParameterError("--allow-unproved applies with --budget and --ledger")
    elif getattr(args, "allow_unproved", False) and getattr(args, "budget", None) is None:
        raise ParameterError("--allow-unproved applies with --budget")


def _release_mechanism(args: argparse.Namespace, name: str, query: Query, data: Any) -> int:
    """``release --mechanism NAME`` for a mechanism other than APMQM, through the protocol."""
    import sys

    from quiltpriv.mechanisms.registry import build_mechanism

    theta = theta_from_args(args)
    sensitive = sensitive_from_args(args)
    mech = build_mechanism(name, theta, query, sensitive, args.epsilon, delta=args.delta,
                           time_limit=command_time_limit(args), progress=sys.stderr.isatty())
    with one_line_warnings():
        r = mech.release(data, seed=args.seed, ledger=args.ledger,  # type: ignore[call-arg]
                         command=getattr(args, "argv", None), **_booking_options(args))
    _emit_release(r.to_dict(), args)
    return 0


#: ``--budget``: a finite epsilon > 0.
budget_type = number("--budget", min_val=0.0, include_boundaries="right")


def add_booking_arguments(p: argparse.ArgumentParser) -> None:
    """``--dataset NAME``, ``--budget EPS`` and ``--allow-unproved`` (with ``--ledger``)."""
    p.add_argument("--dataset", metavar="NAME",
                   help="declare the data set's name: recorded beside the whole table's hash; "
                        "releases with the same name (or the same table) are on the same data, "
                        "whatever columns they read")
    p.add_argument("--budget", type=budget_type, metavar="EPS",
                   help="with --ledger: refuse, before drawing, a release whose total epsilon "
                        "on the same data, proved by a published result over the ledger's "
                        "releases and this one, would exceed EPS, or cannot be proved")
    p.add_argument("--allow-unproved", action="store_true",
                   help="with --budget: release even when no published result proves a total")


def _quilt_row(theta: Theta, node: str, q: Any, query: Query | None,
               eps: float | None, max_memory: int | None = None) -> dict[str, Any]:
    """One quilt's row: its sets, influence and (with a query) sensitivity and scale; with a
    query and epsilon, ``price``, why it costs its scale: the planner's pricer and words
    (:mod:`quiltpriv.mechanisms.quilt_price`), as the plan and the report say them."""
    row: dict[str, Any] = {"quilt": list(q.quilt), "nearby": list(q.nearby),
                           "remote": list(q.remote), "trivial": q.is_trivial}
    if query is not None and eps:
        price = price_quilt(theta, query, q, eps, max_memory=max_memory)
        row["influence"] = price.influence
        if price.influence is not None:
            row.update(sensitivity=price.sensitivity, scale=price.scale,
                       price=price.explain())
        return row
    try:
        e: float | None = max_influence(theta, node, q.quilt, max_memory=max_memory).value
    except InfluenceTooExpensive:
        e = None
    row["influence"] = e
    if query is not None and e is not None:
        row["sensitivity"] = query.sensitivity(set(query.attributes) & set(q.nearby))
        row["scale"] = None
    return row


def _quilt_rows(args: argparse.Namespace, theta: Theta, node: str, query: Query | None
                ) -> tuple[list[dict[str, Any]], bool, tuple[str, ...] | None]:
    """The listed quilts' rows (the planner's choice added when not listed), whether the
    listing was cut at --limit, and the chosen quilt (with a query and epsilon)."""
    from quiltpriv.graph.quilts import markov_quilt

    quilts: list[Any] = []
    truncated = False
    for q in enumerate_quilts(theta, node, max_size=args.max_size):
        if len(quilts) >= args.limit:
            truncated = True
            break
        quilts.append(q)
    if not quilts or quilts[0] != trivial_quilt(theta, node):
        # Q = {} differs from the trivial quilt when some node is d-separated a priori.
        quilts.insert(0, trivial_quilt(theta, node))
    chosen = None
    if query is not None and args.epsilon:
        sp = plan(theta, query, node, args.epsilon, time_limit=command_time_limit(args),
                  max_memory=args.max_memory).sensitive[0]
        chosen = tuple(sp.quilt)
        if not any(sorted(q.quilt) == sorted(chosen) for q in quilts):
            quilts.append(markov_quilt(theta, node, chosen))
    rows = [_quilt_row(theta, node, q, query, args.epsilon, args.max_memory) for q in quilts]
    return rows, truncated, chosen


def _cmd_quilts(args: argparse.Namespace) -> int:
    from quiltpriv.cli import quilts_table as qt

    theta = theta_from_args(args)
    (node,) = theta.check_nodes([args.node], "node")
    eps = args.epsilon
    query = query_from_args(args) if args.attributes or args.weights else None
    rows, truncated, chosen = _quilt_rows(args, theta, node, query)
    attrs = tuple(query.attributes) if query is not None else ()
    ranked = qt.annotate(qt.rank(rows, theta if chosen is not None else None), chosen, eps, attrs)
    shown = qt.top(ranked, args.top)
    if args.json:
        print(json.dumps(jsonable({  # the package's one converter: inf as "inf"
            "node": node, "ranked_by": "scale" if chosen is not None else None,
            "chosen": chosen, "quilts": shown, "truncated": truncated}), allow_nan=False))
        return 0
    header = ["", "Q", "N", "R", "influence"]
    if query is not None:
        header += ["Delta_{A&N}", "scale"]
    if chosen is not None:
        header.append("why not chosen")
    table_rows = []
    for r in shown:
        cells = ["*" if r["chosen"] else "",
                 ("(trivial) " if r["trivial"] else "") + qt.short_set(r["quilt"]),
                 qt.short_set(r["nearby"]), qt.short_set(r["remote"]),
                 "too large" if r["influence"] is None else fmt_influence(r["influence"])]
        if query is not None:
            cells += [fmt_number(r.get("sensitivity", math.nan)), qt.scale_text(r, eps)]
        if chosen is not None:
            cells.append("-" if r["chosen"] else r["why"])
        table_rows.append(tuple(cells))
    order = "ranked by scale; * = the planner's choice" if chosen is not None else \
        "in listing order"
    print(f"Markov quilts of {node!r} ({len(shown)} shown of {len(rows)}, {order}; the trivial "
          "quilt is Q = R = {})")
    print("\n".join(text_table(tuple(header), table_rows)))
    if len(shown) < len(rows):
        print(f"... {len(rows) - len(shown)} more listed; raise --top (now {args.top})")
    if truncated:
        print(f"... more quilts exist; raise --limit (now {args.limit}) or set --max-size")
    choice = next((r for r in shown if r["chosen"] and r.get("price")), None)
    if choice is not None:  # why this quilt costs what it costs, in the plan's words
        print(f"* {qt.short_set(choice['quilt'])}: {choice['price']}.")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    for name, doc in bundled_models().items():
        print(f"{name:12s} {doc}")
    return 0


def _mechanism_names() -> tuple[str, ...]:
    from quiltpriv.mechanisms.registry import MECHANISMS

    return tuple(MECHANISMS)


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="least-noise APMQM plan (Algorithm 3)",
                       description="Plan an Attribute-Private Markov Quilt Mechanism release: "
                                   "per sensitive attribute the quilt with the least Laplace "
                                   "scale, exact over all quilts.")
    add_model_arguments(p)
    add_privacy_arguments(p)
    add_query_arguments(p)
    add_time_limit_argument(p)
    p.add_argument("--jobs", type=jobs_type, metavar="N",
                   help="plan the sensitive attributes in N parallel processes, at most the "
                        "cores (-1: every core)")
    p.add_argument("--inference", choices=INFERENCE_METHODS, default="auto",
                   help="how exact influences are computed (all exact and differing only "
                        "in rounding; default: auto, the fastest measured)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="the engine that computes exact influences (all exact; default: "
                        "auto, the compiled kernel when loaded); each attribute's "
                        "explanation names the engine that answered")
    p.add_argument("--list-sets", choices=("auto", "yes", "no"), default="auto",
                   help="list each sensitive attribute's nearby and remote sets (auto: when "
                        "nodes x sensitive attributes <= 2^20 and nodes <= 2^16; otherwise "
                        "only the query "
                        "attributes in N, so the plan stays linear in the network)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_plan)

    r = sub.add_parser("release", help="release F(X) + noise with APMQM or another mechanism",
                       description="Plan and release a query on a CSV file with APMQM, or "
                                   "with another mechanism (--mechanism; 'quiltpriv compare' "
                                   "says which needs the least noise). Noise is exact discrete "
                                   "Laplace (or Gaussian) from the OS's secure generator "
                                   "unless --seed is given (experiments only). The data are "
                                   "checked against the query's declared domain. Prints one "
                                   "line (value, scale, mechanism, ledger entry); --json "
                                   "prints the release record, -o writes it to a file.")
    add_model_arguments(r)
    add_privacy_arguments(r)
    add_query_arguments(r)
    add_time_limit_argument(r)
    r.add_argument("--mechanism", default="apmqm", metavar="NAME",
                   help=f"the mechanism: {', '.join(_mechanism_names())} (default: apmqm); "
                        "mqm reads one row of data on a network over record values")
    r.add_argument("--delta", type=number("--delta", min_val=0.0, max_val=1.0,
                                          include_boundaries="neither"), metavar="D",
                   help="delta of an (eps, delta) mechanism (group-dp-gaussian)")
    r.add_argument("--data", required=True, metavar="CSV", help="the dataset, one column per "
                                                                "attribute")
    r.add_argument("--seed", type=seed_type, help="reproducible, NOT secure noise (experiments)")
    r.add_argument("--ledger", metavar="PATH",
                   help="append the release record to this privacy ledger (created if "
                        "missing) before the value is printed; see 'quiltpriv ledger'")
    add_booking_arguments(r)
    r.add_argument("--round", action="store_true",
                   help="post-process a count or histogram to the nearest integer (costs no "
                        "privacy; the record keeps the noisy value)")
    r.add_argument("--clamp", action="store_true",
                   help="post-process into the range the query can take ([0, records] for a "
                        "count; costs no privacy; the record keeps the noisy value)")
    r.add_argument("--json", action="store_true",
                   help="print the release record (JSON) instead of the one-line summary")
    r.add_argument("-o", "--output", metavar="FILE",
                   help="write the release record to FILE (the summary is still printed)")
    r.set_defaults(func=_cmd_release)

    q = sub.add_parser("quilts", help="list the Markov quilts of a node with their influence",
                       description="List Markov quilts (Q, N, R) of NODE with max-influence; "
                                   "with a query and --epsilon also their sensitivity and "
                                   "Laplace scale, ranked by scale, with the planner's choice "
                                   "marked (*) and why each other quilt lost (infeasible: "
                                   "e(Q|i) >= eps; or which query attributes stay nearby). "
                                   "Long sets are abbreviated.")
    add_model_arguments(q)
    q.add_argument("--node", required=True)
    add_query_arguments(q)
    q.add_argument("--epsilon", type=epsilon_type, default=None, metavar="E")
    q.add_argument("--max-size", type=number("--max-size", integer=True, min_val=0),
                   default=None, help="largest |Q| to list")
    q.add_argument("--limit", type=number("--limit", integer=True, min_val=1), default=200,
                   help="most quilts to enumerate (default 200; the planner's choice is "
                        "always added)")
    q.add_argument("--top", type=number("--top", integer=True, min_val=1), default=None,
                   metavar="K", help="show the first K quilts (ranked by scale with a query "
                                     "and --epsilon), and the chosen one")
    add_time_limit_argument(q)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_quilts)

    m = sub.add_parser("models", help="list the bundled models")
    m.set_defaults(func=_cmd_models)
