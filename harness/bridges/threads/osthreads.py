"""The OS-thread carrier: each bridge thread on a real OS thread, parked ones reused across threads and runs.

Owns `OSThread` (the OS thread one bridge thread runs on), `_Worker` (a reusable OS thread, parked
between bodies; each body starts as on a fresh thread: no `threading.local` data, an empty
`contextvars` context), `retire_parked` and `thread_state_dict` (the calling OS thread's thread-state
dict, where `threading.local` keeps its data: the greenlet carrier swaps its contents too). The
turnstile uses it where greenlets cannot carry the threads (see `turnstile.carrier`). It never decides
which thread runs and never touches a thread's baton except to start its body.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import ctypes
import os
from collections.abc import Callable
from typing import Any

_allocate_lock = _thread.allocate_lock


class OSThread:
    """The OS thread one bridge thread runs on: a parked worker of `_workers`, reused across bridge
    threads and runs (starting an OS thread costs more than a whole baton pass), or a new bare one
    (`_thread.start_new_thread`: no start handshake, no registry entry) when none is parked. `join`
    waits until this bridge thread's body has ended on it, as a real join waits for the thread's end.
    The bridge thread's baton lock is its worker's own lock: the first hand-over of the baton starts
    the body, one wake-up instead of two (the job, then the baton).

    Each body starts as on a fresh thread: no `threading.local` data (the worker's thread-state dict,
    where every `threading.local` keeps its per-thread data, is emptied when a body ends) and an empty
    `contextvars` context. `threading.get_ident()` may repeat an ended thread's ident, as the OS may.
    Where emptying that dict does not reset `threading.local` (3.13), no worker is parked."""

    __slots__ = ("_done",)

    def __init__(self, thread: Any, worker: _Worker | None = None) -> None:
        self._done = _allocate_lock()
        self._done.acquire()
        if worker is None:
            worker = _workers.pop() if _workers else _Worker()
        worker.job = (thread._main, self._done)
        thread.go = worker.go  # held: released by whoever hands `thread` the baton, which starts it

    @staticmethod
    def parked(thread: Any) -> OSThread | None:
        """`thread` on a parked worker, or None if none is parked. Unlike starting an OS thread, this
        is safe from inside a bridge thread: the worker is past its bootstrap, waiting on its own lock."""
        try:
            worker = _workers.pop()
        except IndexError:
            return None
        return OSThread(thread, worker)

    def join(self) -> None:
        self._done.acquire()
        self._done.release()


class _Worker:
    """A reusable OS thread: runs one body at a time, then parks on `go` in `_workers` for the next."""

    __slots__ = ("_gone", "go", "job")

    def __init__(self) -> None:
        self.go = _allocate_lock()
        self.go.acquire()
        self.job: tuple[Callable[[], Any], Any] | None = None
        #: What tells that the OS thread is gone (`_count()` no longer counts it): 3.13's joinable
        #: handle, else (3.11, 3.12) the thread-state sentinel lock the thread takes when it starts.
        self._gone: Any = None
        if _start_joinable is not None:
            self._gone = _start_joinable(self._loop)
        else:
            _thread.start_new_thread(self._loop, ())

    def wait_gone(self) -> None:
        if hasattr(self._gone, "join"):
            self._gone.join()
        elif self._gone is not None:
            self._gone.acquire()
            self._gone.release()

    def _loop(self) -> None:
        if _start_joinable is None:
            self._gone = _thread._set_sentinel()  # type: ignore[attr-defined]  # released once the thread is gone
            self._gone.acquire()
        generation = _generation[0]
        state = thread_state_dict()
        if _resets_locals[0] is None:
            _resets_locals[0] = _emptying_resets_locals(state)
        while True:
            self.go.acquire()
            job, self.job = self.job, None
            if job is None:
                return  # retired (`retire_parked`)
            body, done = job
            with contextlib.suppress(BaseException):  # `BridgeThread._main` keeps every error: none gets here
                contextvars.Context().run(body)
            # A parked worker holds nothing of the run it served (the body's thread, turnstile, run).
            job = body = None  # type: ignore[assignment]
            # Its `threading.local` data dies with the body, on this thread, as at a real thread's end.
            state.clear()
            # Parked again before `done` is released: whoever joins this body and then starts the next
            # thread finds this worker ready. Not after a fork (the pool is another process's).
            keep = len(_workers) < MAX_PARKED and generation == _generation[0] and _resets_locals[0] is True
            if keep:
                _workers.append(self)
            done.release()
            if not keep:
                return


def thread_state_dict() -> dict[str, Any]:
    """The calling thread's state dict (`PyThreadState_GetDict`), where every `threading.local` keeps
    this thread's data (`asyncio` its running-loop cache, `repr` its recursion guard): emptied between
    bodies, the thread reads as fresh. One dict for the thread's life: a worker reads it once."""
    # The C function returns a borrowed reference: read as an address, then as the object (which
    # takes a reference of its own); a `py_object` restype would steal one and free the dict.
    address = _PyThreadState_GetDict()
    return ctypes.cast(address, ctypes.py_object).value  # type: ignore[no-any-return]


# A prototype of our own (holding the GIL, as `pythonapi`'s do), leaving `pythonapi`'s shared one alone.
_PyThreadState_GetDict = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyThreadState_GetDict", ctypes.pythonapi))


def _emptying_resets_locals(state: dict[str, Any]) -> bool:
    """Whether emptying the thread-state dict resets `threading.local` here (3.11, 3.12; 3.13 keeps
    locals elsewhere): asked once, by the first worker before its first body. If not, workers are
    never parked and every bridge thread gets a new OS thread, as before."""
    probe = _thread._local()
    probe.mark = True
    state.clear()
    return not hasattr(probe, "mark")


#: Whether workers may be parked and reused (None: not asked yet).
_resets_locals: list[bool | None] = [None]


def retire_parked() -> None:
    """End every parked worker's OS thread and return once they are gone: a test that counts OS
    threads then sees only the threads that are not parked, and a profiler that hooks thread starts
    sees the next bridge threads start."""
    retired = []
    while _workers:
        worker = _workers.pop()
        worker.job = None
        worker.go.release()
        retired.append(worker)
    for worker in retired:
        worker.wait_gone()


_start_joinable: Callable[..., Any] | None = getattr(_thread, "start_joinable_thread", None)  # 3.13
#: Parked workers, ready for the next bridge thread (list append/pop are atomic under the GIL).
_workers: list[_Worker] = []
#: At most this many workers stay parked; more end when their body does.
MAX_PARKED = 64
#: Bumped in a forked child, whose parked workers do not exist: the parent's pool is forgotten.
_generation = [0]


def _after_fork() -> None:
    _workers.clear()
    _generation[0] += 1


os.register_at_fork(after_in_child=_after_fork)
