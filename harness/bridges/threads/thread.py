"""`threading.Thread` on the turnstile: threads that run when the driver says and join in virtual time.

Owns `Thread` (its `start()` spawns a bridge thread on the caller's turnstile; its `ident` is
deterministic, unlike an OS thread id, since a runtime may write it into a result), `Timer` (runs its
function after a virtual interval unless cancelled), `current_thread()`, `get_ident()` / `get_native_id()`
(its `Thread.ident`, on any carrier) and `owner_of` (the `Thread`
object standing for a bridge thread, a stand-in naming it for one nobody made with `Thread`).
Constructed from any other thread, each name gives the real one, so the harness and foreign threads
never see a fake. It never patches anything (`patches` does) and never decides which thread runs
(the driver does).
"""

from __future__ import annotations

import _thread
import threading
from collections.abc import Callable
from typing import Any

from harness.bridges.threads.primitives import FOREIGN_SERIALS, Event, Hashed, caller
from harness.bridges.threads.turnstile import DONE, BridgeThread, _by_ident, _get_ident, current

_REAL: dict[str, Any] = {
    "Thread": threading.Thread,
    "Timer": threading.Timer,
    "current_thread": threading.current_thread,
    "get_ident": _thread.get_ident,
    "get_native_id": getattr(_thread, "get_native_id", _thread.get_ident),
}
_new = object.__new__
#: A bridge thread's ident (`threading.get_ident()`, `Thread.ident`): this plus its creation index.
IDENT_BASE = 1000


class Thread(Hashed):
    """`threading.Thread` whose `start()` makes a bridge thread: it runs when the driver says, its
    `join(timeout)` waits in virtual time."""

    __slots__ = ("__dict__", "_args", "_bridge", "_kwargs", "_name", "_target", "daemon")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Thread and _by_ident.get(_get_ident()) is None:  # `current()`, inlined: a pool's every worker
            return _REAL["Thread"](*args, **kwargs)
        return _new(cls)

    def __init__(self, group: None = None, target: Callable[..., Any] | None = None, name: str | None = None,
                 args: Any = (), kwargs: dict[str, Any] | None = None, *, daemon: bool | None = None) -> None:
        me = _by_ident.get(_get_ident())  # `_number()`, inlined: a pool's every worker
        if me is None:
            self._serial = next(FOREIGN_SERIALS)
        else:
            turnstile = me.turnstile
            turnstile.serial += 1
            self._serial = turnstile.serial
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
        return None if self._bridge is None else IDENT_BASE + self._bridge.index

    native_id = ident

    def start(self) -> None:
        if self._bridge is not None:
            raise RuntimeError("threads can only be started once")
        me = _by_ident.get(_get_ident()) or caller()  # `caller()`, inlined (it raises, saying why)
        self._bridge = me.turnstile.spawn(self.run, self._name, self)

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
        me = _by_ident.get(_get_ident()) or caller()  # `caller()`, inlined (it raises, saying why)
        if bridge is me:
            raise RuntimeError("cannot join current thread")
        me.turnstile.check(me)

        def ended(me: BridgeThread = me) -> None:
            me.turnstile.wake(me)

        bridge.watchers.append(ended)
        deadline = me.turnstile.deadline_in(timeout)
        if not me.turnstile.park(me, deadline, None if deadline is None else lambda: bridge.watchers.remove(ended)):
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
        return Hashed.__new__(cls)

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
    return owner_of(me)


def get_ident() -> int:
    """`threading.get_ident()`: a bridge thread's own, the same as its `Thread.ident` (deterministic, and
    distinct from its run's other threads whether they run on OS threads or greenlets)."""
    me = current()
    if me is None:
        return _REAL["get_ident"]()  # type: ignore[no-any-return]
    return IDENT_BASE + me.index


def get_native_id() -> int:
    """`threading.get_native_id()`: as `get_ident` in a bridge thread (the OS's id says nothing about it)."""
    me = current()
    if me is None:
        return _REAL["get_native_id"]()  # type: ignore[no-any-return]
    return IDENT_BASE + me.index


def owner_of(thread: BridgeThread) -> Any:
    """The `Thread` standing for `thread`: the one that started it, else a stand-in naming it (made once)."""
    if thread.owner is None:
        stand_in = Thread(name=thread.name)
        stand_in._bridge = thread
        thread.owner = stand_in
    return thread.owner
