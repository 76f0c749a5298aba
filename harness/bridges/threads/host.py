"""The host as bridged code sees it: the declared machine, never the one the harness runs on.

Owns the machine facts a bridge thread reads (`cpu_count`, `process_cpu_count`, `sched_getaffinity`:
the scenario's `[machine]`, so a pool sized by them is the same on every host; `active_count`,
`enumerate_threads`: the threads of its run still alive), the stack of declared machines (`declare` /
`undeclare`, by the patches' installations) and `HOST`, the host's own answers for every other
caller. It never patches anything (`patches` does) and never reads the host from bridged code.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from harness.bridges.threads.thread import owner_of
from harness.bridges.threads.turnstile import current
from harness.sim.machine import Machine

#: The host's answers to the machine facts, for callers outside a bridged run: what the patched
#: attributes held when the patches went in (`patches` records them), so a host faked beneath the
#: patches (a test's monkeypatch) stays faked for the harness's own code.
HOST: dict[str, Any] = {
    "cpu_count": os.cpu_count,
    "process_cpu_count": getattr(os, "process_cpu_count", os.cpu_count),  # 3.13
    "sched_getaffinity": getattr(os, "sched_getaffinity", None),  # Linux
    "active_count": threading.active_count,
    "enumerate": threading.enumerate,
}

#: The machines of the bridged batches running now, innermost last (`declare` / `undeclare`, by the
#: patches' installations). Every batch of one run declares the run's machine.
_machines: list[Machine] = []


def declare(machine: Machine) -> None:
    """Bridged code sees `machine` until `undeclare(machine)`."""
    _machines.append(machine)


def undeclare(machine: Machine) -> None:
    _machines.remove(machine)


def machine() -> Machine:
    """The machine bridged code sees now: the latest declared, else the default (never the host)."""
    return _machines[-1] if _machines else Machine()


def cpu_count() -> int | None:
    """`os.cpu_count()`: the declared machine's CPUs in bridged code. `multiprocessing.cpu_count()`
    asks `os.cpu_count()`, so it answers the same."""
    if current() is None:
        return HOST["cpu_count"]()  # type: ignore[no-any-return]
    return machine().cpus


def process_cpu_count() -> int | None:
    """`os.process_cpu_count()` (3.13; what `ThreadPoolExecutor()` sizes itself by there)."""
    if current() is None:
        return HOST["process_cpu_count"]()  # type: ignore[no-any-return]
    return machine().cpus


def sched_getaffinity(pid: int) -> set[int]:
    """`os.sched_getaffinity(pid)`: CPUs 0..N-1 of the declared machine for this process (pid 0 or
    its own) in bridged code."""
    if current() is None or pid not in (0, os.getpid()):
        return HOST["sched_getaffinity"](pid)  # type: ignore[no-any-return]
    return set(range(machine().cpus))


def active_count() -> int:
    """`threading.active_count()`: in a bridge thread, the threads of its run still alive (its
    executor's first thread, named MainThread, included), in every process the same."""
    me = current()
    if me is None:
        return HOST["active_count"]()  # type: ignore[no-any-return]
    return len(me.turnstile.alive())


def enumerate_threads() -> list[Any]:
    """`threading.enumerate()`: in a bridge thread, its run's threads still alive, in creation order."""
    me = current()
    if me is None:
        return HOST["enumerate"]()  # type: ignore[no-any-return]
    return [owner_of(thread) for thread in me.turnstile.alive()]
