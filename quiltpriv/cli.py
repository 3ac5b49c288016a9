"""The ``quiltpriv`` command line.

Each subcommand is registered by a function ``register_cli(subparsers)`` that adds its parser and
sets ``func`` (a callable taking the parsed namespace and returning an exit code). Modules are
listed in :data:`COMMAND_MODULES` and imported when the CLI starts.

User errors (:class:`~quiltpriv.errors.QuiltPrivError`, unreadable files, bad options) are
printed to stderr as one line ``quiltpriv: error: <reason>`` with exit status 2; nothing else is
printed. An output path (``-o``) is checked before any model or data is read. Ctrl-C ends the
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
from collections.abc import Sequence
from typing import NoReturn

from .errors import QuiltPrivError

#: Modules that contribute subcommands, in the order they appear in ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "quiltpriv._cli_core",
    "quiltpriv.verification",
    "quiltpriv.compare",
    "quiltpriv.audit",
    "quiltpriv.report",
    "quiltpriv.subset_privacy",
    "quiltpriv.explorer",
    "quiltpriv.ledger",
)

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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="quiltpriv",
        description="Attribute privacy with Markov quilts: plan and release noisy queries.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


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
    from ._io import check_output_path

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if getattr(args, "output", None) is not None:
            check_output_path(args.output, "-o")  # before any model or data is read
        args.argv = ["quiltpriv", *(sys.argv[1:] if argv is None else argv)]  # for records
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except QuiltPrivError as exc:
        _say(f"quiltpriv: error: {exc}")
        return 2
    except BrokenPipeError:
        raise
    except OSError as exc:
        _say(f"quiltpriv: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return 2


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
