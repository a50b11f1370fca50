"""What every `openenv-prime` subcommand's parser shares: help text that keeps its examples as written, and old flag
spellings that keep working, hidden from `--help`, with a note on stderr. Standard library only: `--help` imports it."""

from __future__ import annotations

import argparse
import sys
import textwrap


class ExampleFormatter(argparse.HelpFormatter):
    """argparse's formatter, except in descriptions and epilogs: prose lines are joined and wrapped to the terminal
    as usual, while indented lines (examples, tables) and blank lines are kept as written. A flag such as
    --action-fields is never split across two lines."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                lines.append(textwrap.fill(" ".join(prose), width, initial_indent=indent, subsequent_indent=indent,
                                           break_on_hyphens=False))
                prose.clear()

        for line in text.splitlines():
            if line.strip() and not line.startswith(" "):
                prose.append(line.strip())
                continue
            flush()
            lines.append(indent + line if line.strip() else "")
        flush()
        return "\n".join(lines)


class DeprecatedAlias(argparse.Action):
    """An old spelling of a flag: it still sets `dest` as before, is left out of `--help`, and says on stderr which
    spelling replaces it. Use as ``add_argument("--old", dest="new_dest", action=DeprecatedAlias, new="--new")``."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs):
        self.new = new
        kwargs["help"] = argparse.SUPPRESS
        kwargs.setdefault("default", argparse.SUPPRESS)  # the new flag's default stands
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is deprecated and will be removed; use {self.new} "
              "(it means the same)", file=sys.stderr)
        setattr(namespace, self.dest, values)
