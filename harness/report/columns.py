"""Tables that grow with a run (its timeline, its results) printed as aligned columns, in time linear
in their rows.

Owns `print_columns`: the same text rich's `Table(box=None, pad_edge=False)` prints for such a table
(title, header, cells two spaces apart, the last column wrapped as rich wraps it), laid out here
instead of by rich's per-cell measuring and rendering, which took seconds for a 1,000-call run while
the run took a fraction of one. A table whose layout this does not reproduce exactly (any column but
the last too wide, a cell with a line break or a tab) is handed to rich itself, so the output never
depends on which path printed it. Cells are literal text on both paths: no markup, no `:emoji:` codes.
It never decides what a table says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

Justify = Literal["left", "right"]

#: Characters rich renders otherwise than as one cell each (line breaks, tabs, escapes).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: What rich puts between two cells of a `box=None` table: a cell's right and the next one's left padding.
_GAP = "  "


def print_columns(console: Console, title: str, columns: Sequence[tuple[str, Justify]],
                  rows: Sequence[Sequence[str]]) -> None:
    """Print `rows` under `title` and the `columns`' headers (name, justification), as rich would."""
    heads = [name for name, _ in columns]
    widths = [cell_len(name) for name in heads]
    for row in rows:
        for i, cell in enumerate(row):
            if _CONTROL.search(cell):
                return _with_rich(console, title, columns, rows)
            width = cell_len(cell)
            if width > widths[i]:
                widths[i] = width
    last = _last_width(console.width, widths, [*(row[-1] for row in rows), heads[-1]])
    if last is None:
        return _with_rich(console, title, columns, rows)
    widths[-1] = last
    console.print(Text(title, style="table.title"), soft_wrap=True)
    console.print(Text(_line(heads, widths, columns), style="table.header"), soft_wrap=True)
    lines = []
    for row in rows:
        tail = row[-1]
        if cell_len(tail) <= last:
            lines.append(_line(row, widths, columns))
            continue
        # Only the last column wraps, at its width, the way rich wraps a cell's text.
        wrapped = Text(tail).wrap(console, last, justify="left", overflow="ellipsis")
        lines.append(_line([*row[:-1], wrapped[0].plain], widths, columns))
        blank = [""] * (len(row) - 1)
        lines += [_line([*blank, part.plain], widths, columns) for part in wrapped[1:]]
    if lines:
        # Laid out already: handed to the console as it is (rich would split, measure and crop it again).
        console.print(_Verbatim("\n".join(lines)), crop=False)


class _Verbatim:
    """Lines of text a console writes as they are."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        yield Segment(self.text)
        yield Segment.line()


def _last_width(room: int, widths: list[int], last_cells: Sequence[str]) -> int | None:
    """The last column's width when the table fits in `room` columns as rich would lay it out: its
    natural width, or narrowed to what is left when it alone is too wide (rich narrows the widest
    column first, to no less than the next widest and the longest word in it). None when rich would
    narrow another column too."""
    padding = 2 * len(widths) - 2  # one space each side of a cell, none at the table's two edges
    if sum(widths) + padding <= room:
        return widths[-1]
    left = room - padding - sum(widths[:-1])
    longest_word = max((cell_len(word) for cell in last_cells for word in cell.split()), default=0)
    # Compared with padding as rich compares: the first and last columns carry one space, others two.
    if len(widths) > 1 and left + 1 >= max(w + (1 if i == 0 else 2) for i, w in enumerate(widths[:-1])) \
            and left >= longest_word and left >= 1:
        return left
    return None


def _line(cells: Sequence[str], widths: Sequence[int], columns: Sequence[tuple[str, Justify]]) -> str:
    parts = []
    for cell, width, (_, justify) in zip(cells, widths, columns, strict=True):
        pad = " " * (width - cell_len(cell))
        parts.append(pad + cell if justify == "right" else cell + pad)
    return _GAP.join(parts).rstrip(" ")


def _with_rich(console: Console, title: str, columns: Sequence[tuple[str, Justify]],
               rows: Sequence[Sequence[str]]) -> None:
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
