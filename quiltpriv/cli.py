"""The ``quiltpriv`` command line.

Each subcommand is registered by a function ``register_cli(subparsers)`` that adds its parser and
sets ``func`` (a callable taking the parsed namespace and returning an exit code). Modules are
listed in :data:`COMMAND_MODULES` and imported when the CLI starts.

User errors (:class:`~quiltpriv.errors.QuiltPrivError`, unreadable files) are printed to stderr
as one line ``quiltpriv: error: <reason>`` with exit status 2; nothing else is printed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .errors import QuiltPrivError

#: Modules that contribute subcommands, in the order they appear in ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "quiltpriv._cli_core",
    "quiltpriv.verification",
    "quiltpriv.compare",
    "quiltpriv.audit",
    "quiltpriv.report",
    "quiltpriv.subset_privacy",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quiltpriv",
        description="Attribute privacy with Markov quilts: plan and release noisy queries.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except QuiltPrivError as exc:
        print(f"quiltpriv: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"quiltpriv: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
