"""The command line's subcommands and their options, as argparse declares them (for the tests
that check the CLI reference page, before and after MkDocs builds it)."""

from __future__ import annotations

import argparse


def subcommand_options() -> dict[str, list[str]]:
    """Per ``quiltpriv`` subcommand, every option string it declares."""
    from quiltpriv.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: [opt for action in p._actions for opt in action.option_strings]
            for name, p in sub.choices.items()}
