"""The synchronisation primitives on the turnstile (as the `threading` docs name them): `Lock`, `RLock`,
`Condition`, `Semaphore`, `BoundedSemaphore` and `Event`, and what every bridged primitive stands on.

Each blocks by parking its thread on the turnstile, so a wait is a switch point and its timeout is
virtual time; waiters are served first come, first served (a lock or a permit is handed to the first
waiter: woken means holding it). Constructed from any other thread, each name gives the real
primitive, so the harness and foreign threads never see a fake. Every bridged primitive (these, and
`thread`'s, `queues`') hashes by creation order within its batch (`Hashed`, `FOREIGN_SERIALS`), so
sets of them iterate the same way in every process; `caller()` is the bridge thread that may block. It
never patches anything (`patches` does) and never decides which thread runs (the driver does).
"""

from __future__ import annotations

import _thread
import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from harness import moved
from harness.bridges.threads.turnstile import DONE, BridgeThread, _by_ident, _get_ident, current
from harness.bridges.threads.virtual_time import monotonic

_REAL: dict[str, Any] = {
    "Lock": _thread.allocate_lock,
    "RLock": threading.RLock,
    "Condition": threading.Condition,
    "Semaphore": threading.Semaphore,
    "BoundedSemaphore": threading.BoundedSemaphore,
    "Event": threading.Event,
}
#: The serials of bridged primitives made outside a bridge thread: far above any batch's own.
FOREIGN_SERIALS = itertools.count(1 << 40)


def caller() -> BridgeThread:
    """The bridge thread the caller runs in: a primitive that blocks must be waited for in one."""
    thread = current()
    if thread is None:
        raise RuntimeError("this primitive belongs to a bridged run and would block outside it")
    return thread


class Hashed:
    """Primitives hash by creation order within their batch, so sets of them iterate the same way in
    every process (object addresses would not)."""

    __slots__ = ("__weakref__", "_serial")

    def _number(self) -> None:
        thread = _by_ident.get(_get_ident())  # `current()`, inlined: every primitive made comes here
        if thread is None:
            self._serial = next(FOREIGN_SERIALS)
        else:
            turnstile = thread.turnstile  # `next_serial()`, inlined
            turnstile.serial += 1
            self._serial = turnstile.serial

    def __hash__(self) -> int:
        return self._serial


# -- locks ------------------------------------------------------------------------------------


class _BridgeLock(Hashed):
    __slots__ = ("_owner", "_waiters")

    def __init__(self) -> None:
        self._number()
        self._owner: object | None = None
        self._waiters: deque[BridgeThread] = deque()

    def _owner_token(self) -> object:
        return _by_ident.get(_get_ident()) or _get_ident()  # `current()`, inlined: a hot path

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._owner is None:
            self._owner = True  # a plain lock has no owner to name (the RLock below has)
            return True
        if not blocking:
            return False
        me = _by_ident.get(_get_ident())  # `current()`, inlined: a hot path
        if me is None:
            raise RuntimeError("a bridged lock held by a thread of the run cannot be waited for outside it")
        if me.killed:  # `check`, guarded: a wait's hot path
            me.turnstile.check(me)
        deadline = None if timeout is None or timeout < 0 else me.turnstile.deadline_in(timeout)
        self._waiters.append(me)
        # The releaser hands the lock over (FIFO): woken means owning.
        return me.turnstile.park(me, deadline, None if deadline is None else lambda: self._waiters.remove(me))

    def release(self) -> None:
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        if self._waiters:
            self._hand_over()
        else:
            self._owner = None

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

    # `with lock:` is `acquire()` itself (no frame of its own): the hottest path of every bridged primitive.
    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        # `release()`, inlined: the other half of the hottest path.
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        if self._waiters:
            self._hand_over()
        else:
            self._owner = None

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
    return _BridgeLock() if _by_ident.get(_get_ident()) is not None else _REAL["Lock"]()  # `current()`, inlined


class _BridgeRLock(_BridgeLock):
    __slots__ = ("_count",)

    def __init__(self) -> None:
        super().__init__()
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        token = _by_ident.get(_get_ident()) or _get_ident()  # `_owner_token()`, inlined: a hot path
        owner = self._owner
        # A bridge thread is its own token; any other thread's is its ident, an int made anew each call:
        # equal, not identical (`is` alone misses it and a real thread's lock is never its own).
        if owner is token or owner == token:
            self._count += 1
            return True
        if owner is None:
            self._owner, self._count = token, 1
            return True
        if not blocking:
            return False
        if not isinstance(token, BridgeThread):
            raise RuntimeError("a bridged lock held by a thread of the run cannot be waited for outside it")
        if token.killed:  # `check`, guarded: a wait's hot path
            token.turnstile.check(token)
        deadline = None if timeout is None or timeout < 0 else token.turnstile.deadline_in(timeout)
        self._waiters.append(token)
        # The releaser hands the lock over (FIFO, `_hand_over`): woken means owning it, once.
        return token.turnstile.park(token, deadline, None if deadline is None else lambda: self._waiters.remove(token))

    __enter__ = acquire

    def release(self) -> None:
        token = _by_ident.get(_get_ident()) or _get_ident()
        if self._owner is not token and self._owner != token:  # an ident is equal, not identical (see acquire)
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            if self._waiters:
                self._hand_over()
            else:
                self._owner = None

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _hand_over(self) -> None:
        super()._hand_over()
        if self._owner is not None:
            self._count = 1

    def _is_owned(self) -> bool:
        return bool(self._owner == self._owner_token())  # a bridge thread by identity, an ident by value

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


class Condition(Hashed):
    """`threading.Condition` on the turnstile; `wait(timeout)` counts virtual seconds."""

    __slots__ = ("_lock", "_waiters", "acquire", "release")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Condition and _by_ident.get(_get_ident()) is None:  # `current()`, inlined
            return _REAL["Condition"](*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, lock: Any = None) -> None:
        self._number()
        self._lock = lock if lock is not None else _BridgeRLock()
        self.acquire = self._lock.acquire
        self.release = self._lock.release
        self._waiters: deque[BridgeThread] = deque()

    # Every `Future` holds one, entered at each of its state changes: the default lock's own
    # `acquire`/`release` fast paths, inlined.
    def __enter__(self) -> bool:
        lock = self._lock
        if type(lock) is _BridgeRLock:
            token = _by_ident.get(_get_ident()) or _get_ident()
            owner = lock._owner
            if owner is token or owner == token:  # an ident is equal, not identical (see the RLock)
                lock._count += 1
                return True
            if owner is None:
                lock._owner, lock._count = token, 1
                return True
        return bool(self.acquire())

    def __exit__(self, *exc: object) -> None:
        lock = self._lock
        if type(lock) is _BridgeRLock:
            token = _by_ident.get(_get_ident()) or _get_ident()
            if lock._owner is not token and lock._owner != token:  # an ident by value (see the RLock)
                raise RuntimeError("cannot release un-acquired lock")
            lock._count -= 1
            if lock._count == 0:
                if lock._waiters:
                    lock._hand_over()
                else:
                    lock._owner = None
            return
        self.release()

    def _is_owned(self) -> bool:
        lock = self._lock
        if type(lock) is _BridgeRLock:  # the default lock: its `_is_owned()`, inlined
            return lock._owner is (_by_ident.get(_get_ident()) or _get_ident())
        owned = getattr(lock, "_is_owned", None)
        if owned is not None:
            return bool(owned())
        if self._lock.acquire(False):
            self._lock.release()
            return False
        return True

    def wait(self, timeout: float | None = None) -> bool:
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        me = _by_ident.get(_get_ident()) or caller()  # `caller()`, inlined (it raises, saying why)
        if me.killed:  # `check`, guarded: a wait's hot path
            me.turnstile.check(me)
        saved = self._lock._release_save() if hasattr(self._lock, "_release_save") else self._lock.release()
        self._waiters.append(me)
        try:
            deadline = me.turnstile.deadline_in(timeout)
            woken = me.turnstile.park(me, deadline, None if deadline is None else lambda: self._waiters.remove(me))
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
        if not self._waiters:  # the common case (a future settling with nobody in its `result()`)
            if not self._is_owned():
                raise RuntimeError("cannot notify on un-acquired lock")
            return
        self.notify(len(self._waiters))

    notifyAll = notify_all


_new = object.__new__


def default_condition(serial: int) -> Condition:
    """`Condition()` as a bridge thread makes it (on a new `_BridgeRLock`), numbered `serial` and its lock
    `serial + 1` as `Condition()` numbers them, without the five calls `Condition()` makes: every
    future a pool submits holds one (see `queues.Future`). `Condition.__init__` and `_BridgeRLock`'s, inlined."""
    lock = _new(_BridgeRLock)
    lock._serial, lock._owner, lock._waiters, lock._count = serial + 1, None, deque(), 0
    condition = _new(Condition)
    condition._serial, condition._lock, condition._waiters = serial, lock, deque()
    condition.acquire, condition.release = lock.acquire, lock.release
    return condition


class Semaphore(Hashed):
    """`threading.Semaphore`: FIFO waiters, virtual timeouts."""

    __slots__ = ("_value", "_waiters")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Semaphore and _by_ident.get(_get_ident()) is None:  # `current()`, inlined
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
        me = _by_ident.get(_get_ident()) or caller()  # `caller()`, inlined (it raises, saying why)
        if me.killed:  # `check`, guarded: a wait's hot path
            me.turnstile.check(me)
        if timeout is not None and timeout <= 0:
            return False  # a zero timeout never blocks (what `park` would answer at once)
        self._waiters.append(me)
        # A release hands its permit to the first waiter: woken means holding it.
        deadline = me.turnstile.deadline_in(timeout)
        return me.turnstile.park(me, deadline, None if deadline is None else lambda: self._waiters.remove(me))

    def release(self, n: int = 1) -> None:
        if n == 1 and not self._waiters:  # the common case: nobody to hand the permit to
            self._value += 1
            return
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
        return Hashed.__new__(cls)

    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._initial = value

    def release(self, n: int = 1) -> None:
        if self._value + n > self._initial and not self._waiters:
            raise ValueError("Semaphore released too many times")
        super().release(n)


class Event(Hashed):
    """`threading.Event`; `wait(timeout)` counts virtual seconds."""

    __slots__ = ("_flag", "_waiters")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Event and _by_ident.get(_get_ident()) is None:  # `current()`, inlined
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
        me = _by_ident.get(_get_ident()) or caller()  # `caller()`, inlined (it raises, saying why)
        if me.killed:  # `check`, guarded: a wait's hot path
            me.turnstile.check(me)
        self._waiters.append(me)
        deadline = me.turnstile.deadline_in(timeout)
        me.turnstile.park(me, deadline, None if deadline is None else lambda: self._waiters.remove(me))
        return self._flag


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
