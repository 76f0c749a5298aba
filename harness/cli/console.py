"""The rich console the text reports print on: its width, and lines without trailing padding.

Owns how wide a text report is (the terminal's width, `COLUMNS` when set, else 120 columns in a pipe
or CI log) and the stream that drops the spaces rich pads every table line with, so copied text
(a command line above all) carries no trailing blanks. It never decides what a report says.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
from typing import IO, TextIO, cast

from rich.console import Console

#: The end of a line rich padded: spaces, possibly around the escape codes that close its styles.
_TAIL = re.compile(r"(?:\x1b\[[0-9;]*m| )+$")


def report_width() -> int:
    """`COLUMNS` when set, the terminal's width on a terminal, else 120: a pipe has no width, and
    120 columns keeps values readable in CI logs."""
    return shutil.get_terminal_size(fallback=(120, 24)).columns


def strip_line(line: str) -> str:
    """`line` without trailing spaces; escape codes among them are kept (they close styles)."""
    return _TAIL.sub(lambda tail: tail.group(0).replace(" ", ""), line)


class _Stripped(io.TextIOBase):
    """A text stream that writes each complete line to `target` without its trailing spaces."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._pending = ""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._target.isatty()

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._target.write("".join(strip_line(line) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def close(self) -> None:
        if self._pending:
            self._target.write(strip_line(self._pending))
            self._pending = ""
        self._target.flush()


def report_console(target: TextIO | None = None) -> Console:
    """A console for a text report on `target` (stdout): no markup or highlighting, `report_width()`
    columns, styles only on a terminal, and no line ending in a space."""
    out = target if target is not None else sys.stdout
    return Console(file=cast(IO[str], _Stripped(out)), highlight=False, markup=False, width=report_width())
