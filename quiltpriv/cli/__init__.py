"""The ``quiltpriv`` command line.

Each subcommand is registered by a function ``register_cli(subparsers)`` of a module of this
package (the only one that uses argparse; library modules never import it) that adds its parser
and sets ``func`` (a callable taking the parsed namespace and returning an exit code). Modules are
listed in :data:`COMMAND_MODULES`; :data:`COMMANDS` names the subcommands each one registers, so
that a run imports only the module of the command it runs (``quiltpriv --help`` imports none of
them, and a heavy dependency of one command does not slow down the others).

User errors (:class:`~quiltpriv.errors.QuiltPrivError`, unreadable files, bad options) are
printed to stderr as one line ``quiltpriv: error: <reason>`` with exit status 2; nothing else is
printed; a warning is one line ``quiltpriv: warning: <text>``. An output path (``-o``) is checked
before any model or data is read, and refused when it is the same file as an input of the
command (the data, the model, a plan, a ledger). Ctrl-C ends the
command with ``quiltpriv: interrupted`` and exit status 130 (``plan`` first prints the best
valid plan found so far). When the reader of the output goes away (``quiltpriv ... | head``)
the command stops quietly with exit status 141 (128 + SIGPIPE, what a shell reports for a
tool killed by SIGPIPE).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn, TextIO

from quiltpriv._version import __version__
from quiltpriv.errors import ParameterError, QuiltPrivError

#: Modules that contribute subcommands, in the order they appear in ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "quiltpriv.cli.core",
    "quiltpriv.cli.verify",
    "quiltpriv.cli.compare",
    "quiltpriv.cli.audit",
    "quiltpriv.cli.report",
    "quiltpriv.cli.subset_privacy",
    "quiltpriv.cli.explore",
    "quiltpriv.cli.ledger",
    "quiltpriv.cli.learn",
)

#: The subcommands (name, one-line help) each module of :data:`COMMAND_MODULES` registers, in
#: registration order. The command line imports a module only to run (or print the help of) one
#: of its commands and lists the others from here; tests/cli/test_cli_wiring.py checks that this
#: table matches what the modules register. A module missing from it is imported at every start.
COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "quiltpriv.cli.core": (
        ("plan", "least-noise APMQM plan (Algorithm 3)"),
        ("release", "release F(X) + noise with APMQM or another mechanism"),
        ("quilts", "list the Markov quilts of a node with their influence"),
        ("models", "list the bundled models"),
    ),
    "quiltpriv.cli.verify": (
        ("verify", "verify a saved plan or a release record against the model"),
    ),
    "quiltpriv.cli.compare": (("compare", "noise of every mechanism side by side"),),
    "quiltpriv.cli.audit": (
        ("audit", "worst-case privacy loss of a Laplace release, exact or proven bounds"),
    ),
    "quiltpriv.cli.report": (
        ("report", "write an HTML + JSON audit report of an APMQM plan"),
    ),
    "quiltpriv.cli.subset_privacy": (
        ("subset-privacy", "noisy count table, eps-private on a protected column, exact row "
                           "totals"),
    ),
    "quiltpriv.cli.explore": (
        ("explore", "explore a model interactively in the browser (local server)"),
    ),
    "quiltpriv.cli.ledger": (("ledger", "show or verify a privacy ledger"),),
    "quiltpriv.cli.learn": (
        ("learn", "learn Theta from a CSV table and save it as a JSON model"),
    ),
}

#: Exit statuses besides 0 (success) and 2 (an error).
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other error of the CLI."""

    def error(self, message: str) -> NoReturn:
        # An option's own check already names it: "argument --jobs: --jobs must be ..." is
        # said once. Other usage errors point at the command's help instead of printing it.
        named = re.sub(r"^argument (\S+): \1 ", r"\1 ", message)
        hint = "" if named != message else f" (see '{self.prog} --help')"
        self.exit(2, f"quiltpriv: error: {named}{hint}\n")


class _Version(argparse.Action):
    """``--version``: the version, and which inference engine runs (the compiled kernel and its
    file, or the pure-Python engines); the kernel is looked up only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        sys.stdout.write(f"quiltpriv {__version__}\n{_engine_line()}\n")  # stdout, as argparse's
        parser.exit()


def _engine_line() -> str:
    """Which engine runs, as the kernel's loader decided at import."""
    try:  # the loader's module (quiltpriv.inference.influence before the engine split)
        loader = importlib.import_module("quiltpriv.inference.compiled")
    except ImportError:
        loader = importlib.import_module("quiltpriv.inference.influence")
    kernel = loader._KERNEL
    if kernel is None:
        return f"engine: pure Python ({loader.kernel_or_reason()[1] or 'switched off'})"
    return f"engine: compiled kernel ({kernel.__file__})"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser.

    Parameters
    ----------
    command : str, optional
        Without it every module registers its subcommands (the full parser: documentation,
        tests). With it only the module of ``command`` is imported and registers its parsers;
        every other subcommand gets a placeholder parser with the same name and one-line help,
        so the top-level ``--help`` and usage errors read the same either way.
    """
    parser = _Parser(
        prog="quiltpriv",
        description="Attribute privacy with Markov quilts: plan and release noisy queries.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and which inference engine runs, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        listed = COMMANDS.get(name)
        if command is None or listed is None or command in (c for c, _ in listed):
            importlib.import_module(name).register_cli(sub)
        else:
            for cmd, text in listed:
                sub.add_parser(cmd, help=text)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` names: its first word that is not an option ("" if none).

    The top-level parser has no option that takes a value (``--version`` exits before any
    command runs), so this is the word argparse dispatches on.
    """
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except KeyboardInterrupt:
        _say("quiltpriv: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    started = time.monotonic()  # --time-limit bounds the whole command from here
    from quiltpriv.utils.io import check_output_path

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if getattr(args, "output", None) is not None:
            check_output_path(args.output, "-o")  # before any model or data is read
            _refuse_output_naming_an_input(args)
        args.argv = ["quiltpriv", *(sys.argv[1:] if argv is None else argv)]  # for records
        args.started = started  # cli.core.command_time_limit
        _quiet_resource_tracker()
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except QuiltPrivError as exc:
        _say(f"quiltpriv: error: {exc}")
        return 2
    except MemoryError:  # a table or an output larger than this machine can hold
        _say(f"quiltpriv: error: out of memory in '{args.command}': a table or an output it "
             "needs is larger than this machine could allocate")
        return 2
    except BrokenPipeError:
        raise
    except OSError as exc:
        _say(f"quiltpriv: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return 2


def _input_files(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(option, value) of every option value that names an existing file.

    Every string option is looked at, not a list of the options known to be inputs, so that
    an input added later (a model spec ``FILE:member``, an ``@FILE`` list) is covered too.
    """
    for dest, value in vars(args).items():
        if dest in ("output", "command", "func", "argv") or dest.startswith("_"):
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if not isinstance(v, str) or not v:
                continue
            option = f"--{dest.replace('_', '-')}"
            for candidate in {v, v.removeprefix("@"), v.rpartition(":")[0]}:
                if candidate and os.path.isfile(candidate):
                    yield option, candidate


def _refuse_output_naming_an_input(args: argparse.Namespace) -> None:
    """Refuse ``-o`` when it is the same file as an input (after symbolic links, and hard
    links: same device and inode), before anything is read or written: writing the output
    would replace the private data, the model or the ledger."""
    try:
        out = os.stat(args.output)
    except OSError:  # a new file: it cannot be an input
        return
    for option, path in _input_files(args):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise ParameterError(f"-o {args.output}: is the same file as the input {path} "
                                 f"({option}); writing the output would replace it, give "
                                 "another output file")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Every warning of a command as one line ``quiltpriv: warning: ...`` on stderr (not
    Python's two lines with the source line that warned); a warning that is not quiltpriv's
    own is named by its category."""
    from quiltpriv.errors import QuiltPrivWarning

    text = " ".join(str(message).split())
    if not issubclass(category, QuiltPrivWarning):
        text = f"{text} ({category.__name__})"
    _say(f"quiltpriv: warning: {text}")


#: The warning filter given to joblib's worker processes and their resource tracker.
_TRACKER_FILTER = "ignore:resource_tracker:UserWarning"


def _quiet_resource_tracker() -> None:
    """Keep a Ctrl-C during a parallel plan to the CLI's one line.

    Interrupted workers leave their semaphores to joblib's (loky's) resource tracker, a child
    process that cleans them up and says so in two ``UserWarning`` lines on the inherited
    stderr, after quiltpriv's own message. Child processes read their warning filters from
    ``PYTHONWARNINGS``; the filter only silences those clean-up notes.
    """
    current = os.environ.get("PYTHONWARNINGS", "")
    if _TRACKER_FILTER not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [current, _TRACKER_FILTER]))


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except (BrokenPipeError, ValueError):  # stderr closed too: nothing more to say
        pass


def _silence_stdout() -> None:
    # Python flushes stdout once more at exit; point it at /dev/null so that flush does not
    # print "Exception ignored ... BrokenPipeError" (the recipe of the signal module's docs).
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout)
        pass


