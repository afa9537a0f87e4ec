"""What the command line prints, legible at 80 columns (most terminals, and CI logs, where rich assumes 80).

- :func:`print_table`: a table whose columns all fit the console is printed as a table, with short
  headers; one that does not fit is printed one line per row (``first · header value · …``), wrapped
  as prose, so no header or cell is ever cut to an ellipsis. The files beside (``summary.csv``) keep
  every column, complete.
- :func:`help_markup_mode`: the commands' ``--help`` is click's plain two-column layout on a terminal
  narrower than :data:`RICH_HELP_MIN_COLUMNS` (rich's boxed panels would cut option names and words
  there, "--fine-tune-enco…"), and rich's panels on a wider one.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

RICH_HELP_MIN_COLUMNS = 100
"""Narrower terminals get the plain help layout."""


def help_markup_mode() -> str | None:
    """``rich_markup_mode`` for a ``typer.Typer``: None (click's plain help) on a narrow terminal or when the
    width is unknown (a pipe, a CI log: ``COLUMNS`` or 80), else ``"rich"``."""
    return "rich" if shutil.get_terminal_size((80, 24)).columns >= RICH_HELP_MIN_COLUMNS else None


def table_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """Columns a rich table (heavy head, a border, one space of padding each side) needs to show every header
    and cell whole."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return sum(widths) + 3 * len(widths) + 1


def print_table(console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], *,
                right: Sequence[str] = (), width: int | None = None) -> None:
    """``rows`` under ``headers`` as a rich table when it fits ``width`` (default: the console's), else one
    line per row: the first cell, then ``header value`` pairs, wrapped as text. ``right``: headers of
    columns aligned right in the table (numbers)."""
    cells = [[str(c) for c in r] for r in rows]
    width = width or console.width
    if table_width(headers, cells) <= width:
        table = Table(title=title, title_justify="left")
        for h in headers:
            table.add_column(h, justify="right" if h in right else "left", no_wrap=True)
        for r in cells:
            table.add_row(*r)
        console.print(table)
        return
    console.print(f"[italic]{escape(title)}[/italic]")
    for r in cells:
        rest = " · ".join(f"{h} {v}" for h, v in zip(headers[1:], r[1:]) if v != "")
        console.print(f"[bold]{escape(r[0])}[/bold]" + (f": {escape(rest)}" if rest else ""), overflow="fold")
