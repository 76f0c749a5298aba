"""The clocks bridged code reads, wherever it runs: a bridge thread or a bridged asyncio loop.

Owns the clock stand-ins `patches` installs for bridged runs: `time.sleep`, `time.monotonic`,
`time.perf_counter`, `time.time` (and the `_ns` forms), the `datetime.datetime` / `datetime.date`
classes, and the CPU counts of the declared machine (`os.cpu_count`, `os.process_cpu_count`,
`os.sched_getaffinity`). Each decides per call who is asking: code in a bridge thread gets the thread bridge's
virtual clock (`threads.virtual_time`); code on a bridged asyncio loop, while the run's pump steps it in the
harness thread, gets the loop's clock, and its `time.sleep` holds the loop (see
`harness.bridges.asyncio.blocking`); anything else (the harness, the test runner, foreign threads, the
simulation running while the loop is held) gets the real thing.

Virtual wall time starts at a fixed epoch, 2026-01-01T00:00:00Z (`virtual_time.EPOCH_S`), and the
simulated machine's local time zone is UTC: datetime's `now` is that epoch plus the run's virtual
milliseconds, the same in every run and on every host. It never advances time itself.
"""

from __future__ import annotations

import datetime as _datetime
import os as _os
import time as _time
from asyncio import events
from typing import Any, Protocol

from harness.bridges.threads import host, virtual_time
from harness.bridges.threads.turnstile import current

_real_sleep = _time.sleep
_real_monotonic = _time.monotonic
_real_monotonic_ns = _time.monotonic_ns
_real_perf_counter = _time.perf_counter
_real_perf_counter_ns = _time.perf_counter_ns
_real_time = _time.time
_real_time_ns = _time.time_ns
_RealDatetime = _datetime.datetime
_RealDate = _datetime.date
_UTC = _datetime.UTC
#: The virtual epoch as an aware datetime (what datetime's `now` reads at 0 ms).
EPOCH = _RealDatetime.fromtimestamp(virtual_time.EPOCH_S, _UTC)


class LoopBlocker(Protocol):
    """What a bridged loop carries while a run holds it (`harness.bridges.asyncio.blocking.Blocker`)."""

    @property
    def holding(self) -> bool:
        """Whether the simulation is running inside a hold (code on the loop's thread is the harness's)."""

    @property
    def active(self) -> bool:
        """Whether code stepping on the loop now is the run's bridged code (not the simulation
        running while the loop is held, not the drain of a finished run)."""

    def now_ms(self) -> int: ...

    def sleep(self, seconds: float) -> None: ...

    def real_thread(self, thread: object) -> None:
        """A real OS thread is being started from the loop (it will run outside the virtual clock)."""


def loop_blocker() -> LoopBlocker | None:
    """The blocker of the bridged loop the caller is stepping on, if the caller is bridged code on it."""
    loop = events._get_running_loop()
    if loop is None:
        return None
    blocker: LoopBlocker | None = getattr(loop, "blocker", None)
    return blocker if blocker is not None and blocker.active else None


def virtual_ms() -> int | None:
    """The virtual milliseconds the caller's clock reads, or None for a caller that is not bridged."""
    thread = current()
    if thread is not None:
        return thread.turnstile.now_ms()
    blocker = loop_blocker()
    return blocker.now_ms() if blocker is not None else None


# -- time ---------------------------------------------------------------------------------------


def sleep(seconds: float) -> None:
    """`time.sleep`: in a bridge thread, parks the thread; on a bridged loop, holds the loop (nothing
    else on it runs) for `seconds` of virtual time; elsewhere, really sleeps."""
    if current() is not None:
        virtual_time.sleep(seconds)
        return
    loop = events._get_running_loop()
    blocker: LoopBlocker | None = getattr(loop, "blocker", None) if loop is not None else None
    if blocker is None or blocker.holding:  # not a bridged loop, or the simulation running in a hold
        _real_sleep(seconds)
        return
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if blocker.active:
        blocker.sleep(seconds)
    # else: the loop of a finished run, draining its leftover tasks: its virtual time is over


def monotonic() -> float:
    ms = virtual_ms()
    return ms / 1000.0 if ms is not None else _real_monotonic()


def monotonic_ns() -> int:
    ms = virtual_ms()
    return ms * 1_000_000 if ms is not None else _real_monotonic_ns()


def perf_counter() -> float:
    ms = virtual_ms()
    return ms / 1000.0 if ms is not None else _real_perf_counter()


def perf_counter_ns() -> int:
    ms = virtual_ms()
    return ms * 1_000_000 if ms is not None else _real_perf_counter_ns()


def time() -> float:
    ms = virtual_ms()
    return virtual_time.EPOCH_S + ms / 1000.0 if ms is not None else _real_time()


def time_ns() -> int:
    ms = virtual_ms()
    return (virtual_time.EPOCH_S * 1000 + ms) * 1_000_000 if ms is not None else _real_time_ns()


# -- the declared machine -------------------------------------------------------------------------


def cpu_count() -> int | None:
    """`os.cpu_count()`: the declared machine's CPUs in bridged code, on a bridge thread or the loop."""
    if current() is None and loop_blocker() is None:
        return host.HOST["cpu_count"]()  # type: ignore[no-any-return]
    return host.machine().cpus


def process_cpu_count() -> int | None:
    """`os.process_cpu_count()` (3.13), as `cpu_count`."""
    if current() is None and loop_blocker() is None:
        return host.HOST["process_cpu_count"]()  # type: ignore[no-any-return]
    return host.machine().cpus


def sched_getaffinity(pid: int) -> set[int]:
    """`os.sched_getaffinity(pid)`: CPUs 0..N-1 of the declared machine for this process, in bridged code."""
    if (current() is None and loop_blocker() is None) or pid not in (0, _os.getpid()):
        return host.HOST["sched_getaffinity"](pid)  # type: ignore[no-any-return]
    return set(range(host.machine().cpus))


#: The thread bridge's clock function -> the one that also knows the bridged loop (what `patches`
#: installs in its place).
LOOP_AWARE: dict[Any, Any] = {
    host.cpu_count: cpu_count,
    host.process_cpu_count: process_cpu_count,
    host.sched_getaffinity: sched_getaffinity,
    virtual_time.sleep: sleep,
    virtual_time.monotonic: monotonic,
    virtual_time.monotonic_ns: monotonic_ns,
    virtual_time.perf_counter: perf_counter,
    virtual_time.perf_counter_ns: perf_counter_ns,
    virtual_time.time: time,
    virtual_time.time_ns: time_ns,
}


# -- datetime ------------------------------------------------------------------------------------


def _virtual_now(tz: _datetime.tzinfo | None) -> _datetime.datetime | None:
    ms = virtual_ms()
    if ms is None:
        return None
    aware = EPOCH + _datetime.timedelta(milliseconds=ms)
    return aware.replace(tzinfo=None) if tz is None else aware.astimezone(tz)


class _StandIn(type):
    """The metaclass of the datetime stand-ins: `isinstance` and `issubclass` answer for the real
    class, so a real `datetime` (made by C code, or before the patch) still is a `datetime.datetime`."""

    _real: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._real)


class VirtualDatetime(_RealDatetime, metaclass=_StandIn):
    """`datetime.datetime` while patches are in place: `now()`, `utcnow()` and `today()` read the
    virtual clock in bridged code. Every instance it makes is a real `datetime` (so pickling, `type(x)
    is datetime` taken before the patch and arithmetic are unchanged)."""

    _real = _RealDatetime

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _RealDatetime(*args, **kwargs)

    @classmethod
    def now(cls, tz: _datetime.tzinfo | None = None) -> Any:
        virtual = _virtual_now(tz)
        return virtual if virtual is not None else _RealDatetime.now(tz)

    @classmethod
    def utcnow(cls) -> Any:
        virtual = _virtual_now(None)
        return virtual if virtual is not None else _RealDatetime.now(_UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> Any:
        return cls.now()


class VirtualDate(_RealDate, metaclass=_StandIn):
    """`datetime.date` while patches are in place: `today()` is the virtual date in bridged code."""

    _real = _RealDate

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _RealDate(*args, **kwargs)

    @classmethod
    def today(cls) -> Any:
        virtual = _virtual_now(None)
        return virtual.date() if virtual is not None else _RealDate.today()


#: (module, attribute, stand-in): the classes `patches` replaces besides its own table.
CLASSES: tuple[tuple[Any, str, Any], ...] = (
    (_datetime, "datetime", VirtualDatetime),
    (_datetime, "date", VirtualDate),
)
