"""The virtual clock as a bridge thread reads it: `time.sleep`, `monotonic`, `perf_counter`, `time` and
their `_ns` forms.

Owns those functions and `EPOCH_S`, the fixed epoch the bridged `time` counts from. In a bridge thread
each reads the run's virtual time (`sleep` parks the thread on the turnstile until its virtual deadline,
a switch point; `sleep(0)` yields); in any other thread each is the real function, captured before any
patch. It never patches anything (`patches` does) and never advances time (the driver does).
"""

from __future__ import annotations

import time as _time
from typing import Any

from harness.bridges.threads.turnstile import BridgeThread, current

_REAL: dict[str, Any] = {
    "sleep": _time.sleep,
    "monotonic": _time.monotonic,
    "monotonic_ns": _time.monotonic_ns,
    "perf_counter": _time.perf_counter,
    "perf_counter_ns": _time.perf_counter_ns,
    "time": _time.time,
    "time_ns": _time.time_ns,
}

#: The bridged `time` in a bridge thread: a fixed epoch (2026-01-01T00:00:00Z) plus virtual time, so
#: timestamps a runtime writes into its results are the same in every run.
EPOCH_S = 1_767_225_600


def _virtual_ms(thread: BridgeThread) -> int:
    return thread.turnstile.now_ms()


def sleep(seconds: float) -> None:
    """`time.sleep`: a switch point; the thread wakes after `seconds` of virtual time."""
    me = current()
    if me is None:
        _REAL["sleep"](seconds)
        return
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if seconds == 0:
        me.turnstile.yield_now(me)
        return
    me.turnstile.park(me, me.turnstile.deadline_in(seconds))


def monotonic() -> float:
    me = current()
    return _virtual_ms(me) / 1000.0 if me is not None else float(_REAL["monotonic"]())


def monotonic_ns() -> int:
    me = current()
    return _virtual_ms(me) * 1_000_000 if me is not None else int(_REAL["monotonic_ns"]())


def perf_counter() -> float:
    me = current()
    return _virtual_ms(me) / 1000.0 if me is not None else float(_REAL["perf_counter"]())


def perf_counter_ns() -> int:
    me = current()
    return _virtual_ms(me) * 1_000_000 if me is not None else int(_REAL["perf_counter_ns"]())


def time() -> float:
    me = current()
    return EPOCH_S + _virtual_ms(me) / 1000.0 if me is not None else float(_REAL["time"]())


def time_ns() -> int:
    me = current()
    return (EPOCH_S * 1000 + _virtual_ms(me)) * 1_000_000 if me is not None else int(_REAL["time_ns"]())
