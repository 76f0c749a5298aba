"""Process exit codes of the `harness` command, one per kind of verdict.

Owns the numbers (documented in the README); it never decides which applies.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    PASS = 0
    SAFETY_VIOLATION = 1
    USAGE_ERROR = 2
    LIVENESS_VIOLATION = 3
    CONTRACT_ERROR = 4  # the scheduler raised, yielded garbage or returned the wrong thing
    NONDETERMINISM = 5
    # A user's Python tool failed in its own code during a run (raised, or returned NaN, a set, an
    # object): a verdict on the tool, never on the scheduler. Exit 2 is for inputs refused before
    # anything ran (a tools module, model or loop policy that cannot be loaded included).
    TOOL_ERROR = 6
    HARNESS_BUG = 70  # EX_SOFTWARE: a bug in the harness itself
    INTERRUPTED = 130  # 128 + SIGINT: the user pressed Ctrl-C (never a verdict on the scheduler)
    IO_ERROR = 74  # EX_IOERR: an output file could not be written (disk full, no permission, read-only)
