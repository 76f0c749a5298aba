"""File times in virtual time: while a run is open on this thread, every time pyfakefs stamps on a
file of the world (`st_mtime`, `st_ctime`, `st_atime`) is a fixed epoch plus the run's virtual time.

Owns that clock. pyfakefs stamps files with `pyfakefs.helpers.now`, which reads the host's clock, so a
planner or a tool comparing `st_mtime` (hermes' read cache) saw a machine-dependent value that moved
from one run to the next. `helpers.now` is replaced once, when this module is imported, by a function
that reads the clock of the run open on the calling thread and, with none open, calls pyfakefs' own
function: a user's own pyfakefs file system outside a run keeps the host's times. It never changes
what a file holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyfakefs import helpers

#: What a file's time reads at 0 ms of virtual time: 2026-01-01T00:00:00Z, the epoch bridged code's
#: wall clock counts from (`harness.bridges.threads.virtual_time.EPOCH_S`).
EPOCH_S = 1_767_225_600

_host_now: Callable[[], float] = helpers.now
_open = threading.local()


def file_time() -> float:
    """What a file is stamped with now: the open run's virtual time on this thread, else the host's."""
    clock: Callable[[], float] | None = getattr(_open, "clock", None)
    return clock() if clock is not None else _host_now()


def open_clock() -> Callable[[], float] | None:
    """The clock `file_time` reads on this thread (the open run's, or a world's epoch being built), or None:
    a write's stamp reads it directly (`WorldFiles._now`), one call less per stamp."""
    clock: Callable[[], float] | None = getattr(_open, "clock", None)
    return clock


def run_clock_open() -> bool:
    """Whether a run's clock (or the epoch of a world being built) stamps files on this thread now."""
    return getattr(_open, "clock", None) is not None


class virtual_file_times:  # (lower case: used as the function it was, `with virtual_file_times(...)`)
    """Within this block, on this thread, files are stamped `EPOCH_S` plus `virtual_ms()` milliseconds
    (nested blocks: the innermost run's clock, the outer one's again when it ends). A class, not a
    `contextlib.contextmanager` generator: entered once per run, a few calls less."""

    __slots__ = ("_clock", "_outer")

    def __init__(self, virtual_ms: Callable[[], float]) -> None:
        self._clock: Callable[[], float] = lambda: EPOCH_S + virtual_ms() / 1000.0
        self._outer: Callable[[], float] | None = None

    def __enter__(self) -> None:
        self._outer = getattr(_open, "clock", None)
        _open.clock = self._clock

    def __exit__(self, *exc: object) -> None:
        _open.clock = self._outer


helpers.now = file_time
