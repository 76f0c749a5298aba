"""Values handed between bridge threads: `queue.SimpleQueue` and `concurrent.futures.Future`.

Owns `SimpleQueue` (the C one would block for real: FIFO getters parked on the turnstile, virtual
timeouts) and `Future` (a real `concurrent.futures.Future` that hashes by creation order within its
batch, so the sets `wait` returns and `as_completed` walks iterate the same way in every process).
The pure-Python parts of the standard library built on these and on `primitives` (`queue.Queue`,
`concurrent.futures.wait` / `as_completed`, the real `ThreadPoolExecutor`) then run unchanged. Made
from any other thread, `SimpleQueue` is the real one. It never patches anything (`patches` does) and
never decides which thread runs (the driver does).
"""

from __future__ import annotations

import concurrent.futures
import queue
from collections import deque
from typing import Any

from harness.bridges.threads.primitives import FOREIGN_SERIALS, Condition, Hashed, _BridgeRLock, caller
from harness.bridges.threads.turnstile import DONE, BridgeThread, _by_ident, _get_ident, current

_REAL: dict[str, Any] = {
    "SimpleQueue": queue.SimpleQueue,
}
_RealFuture = concurrent.futures.Future
_new = object.__new__
PENDING, RUNNING, FINISHED = concurrent.futures._base.PENDING, concurrent.futures._base.RUNNING, \
    concurrent.futures._base.FINISHED


class SimpleQueue(Hashed):
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
        me = _by_ident.get(_get_ident())  # `caller()`, inlined: every idle pool worker waits here
        if me is None:
            me = caller()  # raises, saying why
        deadline = None if timeout is None else me.turnstile.deadline_in(timeout)
        while not self._items:
            if me.killed:  # `check`, guarded: a wait's hot path
                me.turnstile.check(me)
            self._waiters.append(me)
            if not me.turnstile.park(me, deadline, None if deadline is None else lambda: self._waiters.remove(me)):
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
    `wait` returns and `as_completed` walks iterate the same way in every process. On a pool's hot path
    (made, started, settled, read) it skips the calls that change nothing (see below)."""

    def __init__(self) -> None:
        thread = _by_ident.get(_get_ident())  # `current()`, inlined: one per submitted call
        if thread is None:
            super().__init__()
            self._serial = next(FOREIGN_SERIALS)
            return
        # `_base.Future.__init__`, inlined (its fields, as in 3.11 to 3.13), its `threading.Condition()` made
        # by `default_condition`: the same serials in the same order (the condition's, its lock's, then
        # this future's), without the seven calls they took.
        turnstile = thread.turnstile
        serial = turnstile.serial
        turnstile.serial = serial + 3
        # `default_condition(serial + 1)`, inlined: one per submitted call.
        lock = _new(_BridgeRLock)
        lock._serial, lock._owner, lock._waiters, lock._count = serial + 2, None, deque(), 0
        condition = _new(Condition)
        condition._serial, condition._lock, condition._waiters = serial + 1, lock, deque()
        condition.acquire, condition.release = lock.acquire, lock.release
        self._condition = condition  # type: ignore[assignment]  # the bridged one
        self._state = PENDING
        self._result = None
        self._exception = None
        self._waiters = []
        self._done_callbacks = []  # type: ignore[var-annotated]
        self._serial = serial + 3

    def __hash__(self) -> int:
        return self._serial

    # A pool's worker calls these two on every call it runs, and an executor reads each result. On the
    # default condition (see `default_condition`) with its lock free, the lock's `acquire`/`release`
    # fast paths and the `notify_all` and `_invoke_callbacks` that have nothing to do are inlined (as
    # in `Condition.__enter__`); anything else is `_base.Future`'s own code.
    def result(self, timeout: float | None = None) -> Any:
        if self._state == FINISHED and self._exception is None:
            lock = getattr(self._condition, "_lock", None)
            # Taking a free lock nobody waits for and leaving it again changes nothing: the result alone.
            if type(lock) is _BridgeRLock and lock._owner is None:
                return self._result
        return super().result(timeout)

    def set_running_or_notify_cancel(self) -> bool:
        if self._state == PENDING:
            lock = getattr(self._condition, "_lock", None)
            # Taking a free lock nobody waits for and leaving it again changes nothing: the state alone.
            if type(lock) is _BridgeRLock and lock._owner is None:
                self._state = RUNNING
                return True
        return super().set_running_or_notify_cancel()

    def set_result(self, result: Any) -> None:
        condition = self._condition
        lock = getattr(condition, "_lock", None)
        me = _by_ident.get(_get_ident())
        if (type(lock) is not _BridgeRLock or lock._owner is not None or me is None
                or (self._state != PENDING and self._state != RUNNING)):
            super().set_result(result)  # raises InvalidStateError for a settled future, as it says why
            return
        lock._owner, lock._count = me, 1  # `with self._condition:`, entered
        try:
            self._result = result
            self._state = FINISHED
            for waiter in self._waiters:
                waiter.add_result(self)
            if condition._waiters:  # type: ignore[attr-defined]  # the bridged Condition (its lock is ours)
                condition.notify_all()
        finally:
            if lock._owner is not me:  # `with self._condition:`, left
                raise RuntimeError("cannot release un-acquired lock")
            lock._count -= 1
            if lock._count == 0:
                if lock._waiters:
                    lock._hand_over()
                else:
                    lock._owner = None
        if self._done_callbacks:
            self._invoke_callbacks()  # type: ignore[attr-defined]  # _base.Future's own
