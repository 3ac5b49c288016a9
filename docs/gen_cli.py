"""The CLI reference of docs/cli.md, generated from ``quiltpriv.cli.build_parser()``.

Used two ways:

* as an MkDocs hook (``hooks:`` in mkdocs.yml): when docs/cli.md is built, the marker line
  ``<!-- cli-reference -->`` is replaced by the help of every subcommand, so the published
  reference always matches the code;
* as a script, ``python docs/gen_cli.py``, which prints the same Markdown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- cli-reference -->"
WIDTH = 96


def _formatter(prog: str) -> argparse.HelpFormatter:
    # A fixed width so the text does not depend on the terminal that builds the docs.
    return argparse.HelpFormatter(prog, width=WIDTH, max_help_position=32)


def cli_markdown() -> str:
    """Markdown: the top-level help, then one section per subcommand with its full help."""
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from quiltpriv.cli import build_parser

    parser = build_parser()
    parser.formatter_class = _formatter
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    out = ["```text", parser.format_help().rstrip(), "```", ""]
    for name, p in sub.choices.items():
        p.formatter_class = _formatter
        # The help text holds the description already.
        out += [f"## `quiltpriv {name}`", ""]
        out += ["```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: fill the marker of docs/cli.md."""
    if page.file.src_uri == "cli.md" and MARKER in markdown:
        return markdown.replace(MARKER, cli_markdown())
    return markdown


if __name__ == "__main__":
    print(cli_markdown())
