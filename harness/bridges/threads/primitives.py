"""Thread primitives on the turnstile: what `threading`, `queue`, `time` and `concurrent.futures` hand
to code running in a bridge thread.

Owns `Lock`, `RLock`, `Condition`, `Semaphore`, `BoundedSemaphore`, `Event`, `Thread`, `Timer`,
`SimpleQueue`, `Future` (a real `concurrent.futures.Future` with a deterministic hash), the virtual
clock functions (`sleep`, `monotonic`, `time`, `perf_counter` and their `_ns` forms) and the declared
machine's facts (`cpu_count`, `process_cpu_count`, `sched_getaffinity`, `active_count`, `enumerate_threads`:
the scenario's `[machine]`, never the host's, so a pool sized by them is the same on every host). Each blocks by
parking its thread on the turnstile, so a wait is a switch point and its timeout is virtual time;
waiters are served first come, first served. The pure-Python parts of the standard library built on
these (`queue.Queue`, `threading.Barrier`, `concurrent.futures.wait` / `as_completed`, the real
`ThreadPoolExecutor`) then run unchanged. Constructed from any other thread, each name gives the real
primitive, so the harness and foreign threads never see a fake. It never patches anything (`patches`
does) and never decides which thread runs (the driver does).
"""

from __future__ import annotations

import _thread
import concurrent.futures
import itertools
import os
import queue
import threading
import time as _time
from collections import deque
from collections.abc import Callable
from typing import Any

from harness.bridges.threads.turnstile import DONE, BridgeThread, _by_ident, _get_ident, current
from harness.sim.machine import Machine

_REAL: dict[str, Any] = {
    "Lock": _thread.allocate_lock,
    "RLock": threading.RLock,
    "Condition": threading.Condition,
    "Semaphore": threading.Semaphore,
    "BoundedSemaphore": threading.BoundedSemaphore,
    "Event": threading.Event,
    "Thread": threading.Thread,
    "Timer": threading.Timer,
    "current_thread": threading.current_thread,
    "SimpleQueue": queue.SimpleQueue,
    "sleep": _time.sleep,
    "monotonic": _time.monotonic,
    "monotonic_ns": _time.monotonic_ns,
    "perf_counter": _time.perf_counter,
    "perf_counter_ns": _time.perf_counter_ns,
    "time": _time.time,
    "time_ns": _time.time_ns,
}
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
_RealFuture = concurrent.futures.Future

#: `time.time()` in a bridge thread: a fixed epoch (2026-01-01T00:00:00Z) plus virtual time, so
#: timestamps a runtime writes into its results are the same in every run.
EPOCH_S = 1_767_225_600
_foreign_ids = itertools.count(1 << 40)


def _me() -> BridgeThread:
    thread = current()
    if thread is None:
        raise RuntimeError("this primitive belongs to a bridged run and would block outside it")
    return thread


class _Hashed:
    """Primitives hash by creation order within their batch, so sets of them iterate the same way in
    every process (object addresses would not)."""

    __slots__ = ("__weakref__", "_serial")

    def _number(self) -> None:
        thread = _by_ident.get(_get_ident())  # `current()`, inlined: every primitive made comes here
        self._serial = thread.turnstile.next_serial() if thread is not None else next(_foreign_ids)

    def __hash__(self) -> int:
        return self._serial


# -- locks ------------------------------------------------------------------------------------


class _BridgeLock(_Hashed):
    __slots__ = ("_owner", "_waiters")

    def __init__(self) -> None:
        self._number()
        self._owner: object | None = None
        self._waiters: deque[BridgeThread] = deque()

    def _owner_token(self) -> object:
        return _by_ident.get(_get_ident()) or _get_ident()  # `current()`, inlined: a hot path

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = _by_ident.get(_get_ident())  # `current()`, inlined: a hot path
        if self._owner is None:
            self._owner = me or _thread.get_ident()
            return True
        if not blocking:
            return False
        if me is None:
            raise RuntimeError("a bridged lock held by a thread of the run cannot be waited for outside it")
        me.turnstile.check(me)
        deadline = None if timeout is None or timeout < 0 else me.turnstile.deadline_in(timeout)
        self._waiters.append(me)
        # The releaser hands the lock over (FIFO): woken means owning.
        return me.turnstile.park(me, deadline, lambda: self._waiters.remove(me))

    def release(self) -> None:
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._hand_over()

    def _hand_over(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.state == DONE:
                continue
            self._owner = waiter
            waiter.turnstile.wake(waiter)
            return
        self._owner = None

    def locked(self) -> bool:
        return self._owner is not None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    # What `threading.Condition` asks of its lock.
    def _is_owned(self) -> bool:
        return self._owner is not None

    def _release_save(self) -> object:
        self.release()
        return None

    def _acquire_restore(self, state: object) -> None:
        self.acquire()

    def _at_fork_reinit(self) -> None:
        self._owner, self._waiters = None, deque()


def Lock() -> Any:
    """`threading.Lock()`: bridged in a bridge thread, real elsewhere."""
    return _BridgeLock() if current() is not None else _REAL["Lock"]()


class _BridgeRLock(_BridgeLock):
    __slots__ = ("_count",)

    def __init__(self) -> None:
        super().__init__()
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        token = self._owner_token()
        if self._owner is token:
            self._count += 1
            return True
        if super().acquire(blocking, timeout):
            self._count = 1
            return True
        return False

    def release(self) -> None:
        if self._owner is not self._owner_token():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            self._hand_over()

    def _hand_over(self) -> None:
        super()._hand_over()
        if self._owner is not None:
            self._count = 1

    def _is_owned(self) -> bool:
        return self._owner is self._owner_token()

    def _release_save(self) -> object:
        count, self._count = self._count, 1
        self.release()
        return count

    def _acquire_restore(self, state: object) -> None:
        self.acquire()
        assert isinstance(state, int)
        self._count = state


def RLock(*args: Any, **kwargs: Any) -> Any:
    """`threading.RLock()`: bridged in a bridge thread, real elsewhere."""
    return _BridgeRLock() if current() is not None else _REAL["RLock"](*args, **kwargs)


# -- condition, event, semaphores ------------------------------------------------------------


class Condition(_Hashed):
    """`threading.Condition` on the turnstile; `wait(timeout)` counts virtual seconds."""

    __slots__ = ("_lock", "_waiters", "acquire", "release")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Condition and current() is None:
            return _REAL["Condition"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, lock: Any = None) -> None:
        self._number()
        self._lock = lock if lock is not None else _BridgeRLock()
        self.acquire = self._lock.acquire
        self.release = self._lock.release
        self._waiters: deque[BridgeThread] = deque()

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)

    def _is_owned(self) -> bool:
        owned = getattr(self._lock, "_is_owned", None)
        if owned is not None:
            return bool(owned())
        if self._lock.acquire(False):
            self._lock.release()
            return False
        return True

    def wait(self, timeout: float | None = None) -> bool:
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        me = _me()
        me.turnstile.check(me)
        saved = self._lock._release_save() if hasattr(self._lock, "_release_save") else self._lock.release()
        self._waiters.append(me)
        try:
            woken = me.turnstile.park(me, me.turnstile.deadline_in(timeout), lambda: self._waiters.remove(me))
        finally:
            if hasattr(self._lock, "_acquire_restore"):
                self._lock._acquire_restore(saved)
            else:
                self._lock.acquire()
        return woken

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        end = None if timeout is None else monotonic() + timeout
        result = predicate()
        while not result:
            remaining = None
            if end is not None:
                remaining = end - monotonic()
                if remaining <= 0:
                    break
            self.wait(remaining)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        while n > 0 and self._waiters:
            waiter = self._waiters.popleft()
            waiter.turnstile.wake(waiter)
            n -= 1

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all


class Semaphore(_Hashed):
    """`threading.Semaphore`: FIFO waiters, virtual timeouts."""

    __slots__ = ("_value", "_waiters")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Semaphore and current() is None:
            return _REAL["Semaphore"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, value: int = 1) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._number()
        self._value = value
        self._waiters: deque[BridgeThread] = deque()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        if self._value > 0 and not self._waiters:
            self._value -= 1
            return True
        if not blocking:
            return False
        me = _me()
        me.turnstile.check(me)
        self._waiters.append(me)
        # A release hands its permit to the first waiter: woken means holding it.
        return me.turnstile.park(me, me.turnstile.deadline_in(timeout), lambda: self._waiters.remove(me))

    def release(self, n: int = 1) -> None:
        if n < 1:
            raise ValueError("n must be one or more")
        for _ in range(n):
            self._release_one()

    def _release_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.state != DONE:
                waiter.turnstile.wake(waiter)
                return
        self._value += 1

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


class BoundedSemaphore(Semaphore):
    __slots__ = ("_initial",)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is BoundedSemaphore and current() is None:
            return _REAL["BoundedSemaphore"](*args, **kwargs)
        return _Hashed.__new__(cls)

    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._initial = value

    def release(self, n: int = 1) -> None:
        if self._value + n > self._initial and not self._waiters:
            raise ValueError("Semaphore released too many times")
        super().release(n)


class Event(_Hashed):
    """`threading.Event`; `wait(timeout)` counts virtual seconds."""

    __slots__ = ("_flag", "_waiters")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Event and current() is None:
            return _REAL["Event"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self) -> None:
        self._number()
        self._flag = False
        self._waiters: list[BridgeThread] = []

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set

    def set(self) -> None:
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.turnstile.wake(waiter)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        me = _me()
        me.turnstile.check(me)
        self._waiters.append(me)
        me.turnstile.park(me, me.turnstile.deadline_in(timeout), lambda: self._waiters.remove(me))
        return self._flag


# -- threads ----------------------------------------------------------------------------------


class Thread(_Hashed):
    """`threading.Thread` whose `start()` makes a bridge thread: it runs when the driver says, its
    `join(timeout)` waits in virtual time."""

    __slots__ = ("__dict__", "_args", "_bridge", "_kwargs", "_name", "_target", "daemon")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Thread and current() is None:
            return _REAL["Thread"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, group: None = None, target: Callable[..., Any] | None = None, name: str | None = None,
                 args: Any = (), kwargs: dict[str, Any] | None = None, *, daemon: bool | None = None) -> None:
        self._number()
        self._target, self._args, self._kwargs = target, tuple(args), dict(kwargs or {})
        self._name = name if name is not None else f"Thread-{self._serial}"
        self.daemon = bool(daemon)
        self._bridge: BridgeThread | None = None

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    def getName(self) -> str:
        return self._name

    def setName(self, value: str) -> None:
        self._name = str(value)

    def isDaemon(self) -> bool:
        return self.daemon

    def setDaemon(self, value: bool) -> None:
        self.daemon = value

    @property
    def ident(self) -> int | None:
        # Deterministic, unlike an OS thread id: a runtime may write it into a result.
        return None if self._bridge is None else 1000 + self._bridge.index

    native_id = ident

    def start(self) -> None:
        if self._bridge is not None:
            raise RuntimeError("threads can only be started once")
        self._bridge = _me().turnstile.spawn(self.run, self._name, self)

    def run(self) -> None:
        try:
            if self._target is not None:
                self._target(*self._args, **self._kwargs)
        finally:
            del self._target, self._args, self._kwargs

    def is_alive(self) -> bool:
        return self._bridge is not None and self._bridge.state != DONE

    def join(self, timeout: float | None = None) -> None:
        bridge = self._bridge
        if bridge is None:
            raise RuntimeError("cannot join thread before it is started")
        if bridge.state == DONE:
            return
        me = _me()
        if bridge is me:
            raise RuntimeError("cannot join current thread")
        me.turnstile.check(me)

        def ended(me: BridgeThread = me) -> None:
            me.turnstile.wake(me)

        bridge.watchers.append(ended)
        deadline = me.turnstile.deadline_in(timeout)
        if not me.turnstile.park(me, deadline, lambda: bridge.watchers.remove(ended)):
            return

    def __repr__(self) -> str:
        state = "initial" if self._bridge is None else ("stopped" if self._bridge.state == DONE else "started")
        return f"<Thread({self._name}, {state}) (bridged)>"


class Timer(Thread):
    """`threading.Timer`: runs `function` after `interval` virtual seconds unless cancelled."""

    __slots__ = ("args", "finished", "function", "interval", "kwargs")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Timer and current() is None:
            return _REAL["Timer"](*args, **kwargs)
        return _Hashed.__new__(cls)

    def __init__(self, interval: float, function: Callable[..., Any], args: Any = None,
                 kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.interval, self.function = interval, function
        self.args, self.kwargs = list(args) if args is not None else [], dict(kwargs or {})
        self.finished = Event()

    def cancel(self) -> None:
        self.finished.set()

    def run(self) -> None:
        self.finished.wait(self.interval)
        if not self.finished.is_set():
            self.function(*self.args, **self.kwargs)
        self.finished.set()


def current_thread() -> Any:
    """`threading.current_thread()`: the bridged `Thread` (or a stand-in naming the thread)."""
    me = current()
    if me is None:
        return _REAL["current_thread"]()
    return _owner_of(me)


def _owner_of(thread: BridgeThread) -> Any:
    if thread.owner is None:
        stand_in = Thread(name=thread.name)
        stand_in._bridge = thread
        thread.owner = stand_in
    return thread.owner


# -- queues and futures -----------------------------------------------------------------------


class SimpleQueue(_Hashed):
    """`queue.SimpleQueue` (the C one would block for real); FIFO getters, virtual timeouts."""

    __slots__ = ("_items", "_waiters")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is SimpleQueue and current() is None:
            return _REAL["SimpleQueue"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self) -> None:
        self._number()
        self._items: deque[Any] = deque()
        self._waiters: deque[BridgeThread] = deque()

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        self._items.append(item)
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.state != DONE:
                waiter.turnstile.wake(waiter)
                break

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        if self._items:
            return self._items.popleft()
        if not block:
            raise queue.Empty
        me = _me()
        deadline = me.turnstile.deadline_in(timeout)
        while not self._items:
            me.turnstile.check(me)
            self._waiters.append(me)
            if not me.turnstile.park(me, deadline, lambda: self._waiters.remove(me)):
                raise queue.Empty
        return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


class Future(_RealFuture[Any]):
    """A real `concurrent.futures.Future` that hashes by creation order within its batch, so the sets
    `wait` returns and `as_completed` walks iterate the same way in every process."""

    def __init__(self) -> None:
        super().__init__()
        thread = current()
        self._serial = thread.turnstile.next_serial() if thread is not None else next(_foreign_ids)

    def __hash__(self) -> int:
        return self._serial


# -- the virtual clock ------------------------------------------------------------------------


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


# -- the declared machine ---------------------------------------------------------------------

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
    return [_owner_of(thread) for thread in me.turnstile.alive()]
