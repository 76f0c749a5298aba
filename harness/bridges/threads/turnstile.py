"""The turnstile: real OS threads of which exactly one runs at a time, on the virtual clock.

Owns `BridgeThread` (one user thread, backed by a real OS thread that waits for its baton on that OS
thread's lock), the parked OS threads reused across bridge threads and runs (`_OSThread`: each body
starts as on a fresh thread), `Turnstile` (which threads are runnable, blocked or done; handing the
baton to one and taking it back when that thread blocks; virtual deadlines; releasing every thread
at the end) and
`current()` (the bridge thread the caller runs in, if any). A thread gives the baton back only at a
controlled point: when it blocks (`park`), yields (`yield_now`) or ends. Whoever holds the baton — the
driving SimPy process or one bridge thread — is the only code touching this state, so it needs no
lock of its own. It never decides which runnable thread goes next (the driver does) and never reads
the wall clock, except in the backstop that frees threads of a run nobody drives any more.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import ctypes
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.sim.arbiter import THREAD_PREFIX

#: The real primitives, captured before any patch, for the bridge's own plumbing.
_allocate_lock = _thread.allocate_lock
_get_ident = _thread.get_ident
_RealThread = threading.Thread
_real_monotonic = time.monotonic

#: OS thread ident -> the bridge thread running on it (every run's; an entry lives as long as its thread).
_by_ident: dict[int, BridgeThread] = {}

#: How often a thread may swallow `ThreadReleased` before it is parked for good.
RELEASE_LIMIT = 50
#: Seconds without kernel progress after which a parked thread decides nobody drives its run any more.
BACKSTOP_S = 2.0


def current() -> BridgeThread | None:
    """The bridge thread the caller runs in, or None for any other thread (the harness's own, a test
    runner's, a library's): those always get the real primitives."""
    return _by_ident.get(_get_ident())


class ThreadReleased(BaseException):
    """Raised inside a bridge thread at its next controlled point once its run is over, to unwind it.

    A BaseException, so `except Exception` in user code does not swallow it."""


RUNNABLE, RUNNING, BLOCKED, DONE = "runnable", "running", "blocked", "done"


class BridgeThread:
    """One thread of the code under test."""

    __slots__ = ("abandoned", "deadline", "error", "go", "index", "killed", "name", "on_timeout", "os_thread",
                 "owner", "releases", "state", "target", "timed_out", "turnstile", "watchers")

    def __init__(self, turnstile: Turnstile, index: int, name: str, target: Callable[[], Any],
                 owner: object | None) -> None:
        self.turnstile, self.index, self.name, self.target = turnstile, index, name, target
        #: The user-visible thread object (`threading.current_thread()` inside this thread).
        self.owner = owner
        self.go = _allocate_lock()
        self.go.acquire()  # held until the driver hands this thread the baton
        self.state = RUNNABLE
        self.deadline: int | None = None
        self.timed_out = False
        self.killed = False
        self.releases = 0  # how many times `ThreadReleased` was raised in it
        self.abandoned = False  # it swallowed `ThreadReleased` too often: parked for good
        self.on_timeout: Callable[[], None] | None = None
        self.error: BaseException | None = None
        #: Called (with the baton held) when this thread ends: joiners waiting for it.
        self.watchers: list[Callable[[], None]] = []
        self.os_thread: _OSThread | None = None

    @property
    def entry(self) -> str:
        """The thread's name in an order tape (zero-padded, so tapes sort in creation order)."""
        return f"{THREAD_PREFIX}{self.index:03d}"

    def _main(self) -> None:
        """Body of the OS thread, which starts it holding the baton (see `_OSThread`): run the target,
        hand the baton back."""
        ident = _get_ident()
        _by_ident[ident] = self
        try:
            if self.killed:
                raise ThreadReleased
            self.target()
        except ThreadReleased:
            pass
        except BaseException as exc:  # a real thread dies with it; the driver reports it
            self.error = exc
        finally:
            self.state = DONE
            watchers, self.watchers = self.watchers, []
            for watcher in watchers:
                watcher()
            del _by_ident[ident]
            self.turnstile._pass_baton(self)


class _OSThread:
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

    def __init__(self, thread: BridgeThread, worker: _Worker | None = None) -> None:
        self._done = _allocate_lock()
        self._done.acquire()
        if worker is None:
            worker = _workers.pop() if _workers else _Worker()
        worker.job = (thread._main, self._done)
        thread.go = worker.go  # held: released by whoever hands `thread` the baton, which starts it

    @staticmethod
    def parked(thread: BridgeThread) -> _OSThread | None:
        """`thread` on a parked worker, or None if none is parked. Unlike starting an OS thread, this
        is safe from inside a bridge thread: the worker is past its bootstrap, waiting on its own lock."""
        try:
            worker = _workers.pop()
        except IndexError:
            return None
        return _OSThread(thread, worker)

    def join(self) -> None:
        self._done.acquire()
        self._done.release()


class _Worker:
    """A reusable OS thread: runs one body at a time, then parks on `go` in `_workers` for the next."""

    __slots__ = ("_gone", "go", "job")

    def __init__(self) -> None:
        self.go = _allocate_lock()
        self.go.acquire()
        self.job: tuple[Callable[[], None], Any] | None = None
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
        state = _thread_state_dict()
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


def _thread_state_dict() -> dict[str, Any]:
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


def _ended() -> None:
    """What an ended thread's target and a released turnstile's wake callback become."""


class Turnstile:
    """The threads of one batch. The driver calls `run(thread)`; threads call `park`/`yield_now`."""

    def __init__(self, now_ms: Callable[[], int], on_wake: Callable[[], None], progress: Callable[[], int]) -> None:
        self.now_ms = now_ms
        #: Tells the driver, if it is waiting on the simulation, that a thread became runnable.
        self.on_wake = on_wake
        #: A counter that moves while the run is driven (the kernel's steps), for the backstop.
        self._progress = progress
        self.back = _allocate_lock()
        self.back.acquire()  # released by a thread when it gives the baton back
        self.threads: list[BridgeThread] = []
        self.serial = 0  # creation counter of this batch's primitives: their deterministic hashes
        self.closed = False
        self.driving = False  # the driver is waiting for a thread (the run is alive even if the kernel is still)
        #: Whether a yield without blocking is a choice (order-first runs) or a no-op (plain runs).
        self.yields_switch = False
        #: Plain runs: a thread that blocks hands the baton straight to the next runnable thread
        #: (lowest creation index, the driver's own rule) instead of through the driver: half the OS
        #: context switches. Order-first runs go through the driver, where the arbiter chooses.
        self.direct = False

    # -- the driver's side -------------------------------------------------------------------

    def spawn(self, target: Callable[[], Any], name: str | None = None, owner: object | None = None) -> BridgeThread:
        """A new runnable thread. Its OS thread is created when it first gets the baton, by the driver:
        a real thread must never be started from inside a bridge thread (it would see patched
        primitives while bootstrapping)."""
        if self.closed:
            raise RuntimeError("cannot start a thread: its run is over")
        index = len(self.threads)
        thread = BridgeThread(self, index, name or f"Thread-{index}", target, owner)
        self.threads.append(thread)
        self.on_wake()
        return thread

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial

    def runnable(self) -> list[BridgeThread]:
        return [t for t in self.threads if t.state == RUNNABLE]

    def alive(self) -> list[BridgeThread]:
        return [t for t in self.threads if t.state != DONE]

    def next_deadline(self) -> int | None:
        deadlines = [t.deadline for t in self.threads if t.state == BLOCKED and t.deadline is not None]
        return min(deadlines) if deadlines else None

    def expire(self) -> None:
        """Wake, as timed out, every blocked thread whose virtual deadline has come."""
        now = self.now_ms()
        for thread in self.threads:
            if thread.state == BLOCKED and thread.deadline is not None and thread.deadline <= now:
                thread.timed_out = True
                if thread.on_timeout is not None:
                    thread.on_timeout()  # leave the primitive's waiter list before anyone notifies it
                self._make_runnable(thread)

    def run(self, thread: BridgeThread) -> None:
        """Hand `thread` the baton; return once it blocks, yields or ends."""
        if thread.os_thread is None:
            thread.os_thread = _OSThread(thread)
        thread.state = RUNNING
        self.driving = True
        try:
            thread.go.release()
            self.back.acquire()
        finally:
            self.driving = False

    def release_all(self) -> list[str]:
        """End every thread: each, in creation order and one at a time, gets the baton back with
        `ThreadReleased` raised at its controlled point and unwinds; then its OS thread is joined.
        Returns the names of threads that would not end (user code that swallows `ThreadReleased`
        again and again, see `check`); they stay parked for good, as daemon threads."""
        self.closed = True
        stuck: list[str] = []
        for thread in self.threads:
            if thread.os_thread is None:
                thread.state = DONE  # never ran: nothing to unwind
                continue
            if thread.state == RUNNING:
                # It holds the baton: the driver was interrupted while waiting for it (a wall-clock
                # timeout of a thread that spins without a controlled point). It cannot be stopped.
                stuck.append(thread.name)
                continue
            if thread.state != DONE:
                thread.killed = True
                self.run(thread)
            if thread.abandoned or thread.state != DONE:
                stuck.append(thread.name)
                continue
            thread.os_thread.join()
        if not stuck:
            self._untie()
        return stuck

    def _untie(self) -> None:
        """Once every thread has ended: drop the references that tie this batch into cycles (the
        turnstile <-> its threads; a thread -> its target -> its `Thread` -> the thread; the turnstile
        -> the driver's wake callback -> the driver -> the turnstile), so a run is freed as soon as its
        last reference goes, not by the cyclic garbage collector (each thread-bridged run was a whole
        run of cyclic garbage: a collection every other run). Not while a thread is stuck: it still
        runs on this turnstile."""
        for thread in self.threads:
            thread.target = _ended
            thread.owner = None
            thread.watchers.clear()
            thread.on_timeout = None
        self.threads = []
        self.on_wake = _ended

    # -- the threads' side -------------------------------------------------------------------

    def deadline_in(self, timeout: float | None) -> int | None:
        """The virtual deadline (ms) of a wait of `timeout` seconds (None: no deadline)."""
        if timeout is None:
            return None
        return self.now_ms() + max(0, math.ceil(timeout * 1000 - 1e-9))

    def park(self, thread: BridgeThread, deadline: int | None = None,
             on_timeout: Callable[[], None] | None = None) -> bool:
        """Block `thread` (the caller) until `wake(thread)` or the deadline; True if woken in time."""
        self.check(thread)
        if deadline is not None and deadline <= self.now_ms():
            # A zero timeout never blocks (`acquire(timeout=0)`, `wait(0)`), as with real threads.
            if on_timeout is not None:
                on_timeout()
            return False
        thread.state = BLOCKED
        thread.deadline = deadline
        thread.timed_out = False
        thread.on_timeout = on_timeout
        self._give_back(thread)
        return not thread.timed_out

    def yield_now(self, thread: BridgeThread) -> None:
        """A switch point that does not block: in order-first runs, another runnable thread may go
        first (a choice); in plain runs the caller simply continues."""
        self.check(thread)
        if not self.yields_switch:
            return
        thread.state = RUNNABLE
        self._give_back(thread)

    def wake(self, thread: BridgeThread) -> None:
        """Make a blocked thread runnable (called by whoever holds the baton)."""
        if thread.state == BLOCKED:
            self._make_runnable(thread)

    def _make_runnable(self, thread: BridgeThread) -> None:
        thread.state = RUNNABLE
        thread.deadline = None
        thread.on_timeout = None
        self.on_wake()

    def _give_back(self, thread: BridgeThread) -> None:
        self._pass_baton(thread)
        self._wait_for_baton(thread)
        self.check(thread)

    def check(self, thread: BridgeThread) -> None:
        """At a controlled point: unwind the thread if its run is over. User code that catches
        `ThreadReleased` and carries on meets it again at its next controlled point; after
        RELEASE_LIMIT times the thread gives the baton back and stays parked for good (a daemon thread,
        which cannot keep the process alive), so the release of the others goes on."""
        if not thread.killed:
            return
        thread.releases += 1
        if thread.releases > RELEASE_LIMIT:
            thread.abandoned = True
            self.back.release()
            forever = _allocate_lock()
            forever.acquire()
            forever.acquire()  # nobody ever releases it
        raise ThreadReleased

    def _pass_baton(self, leaving: BridgeThread) -> None:
        """Hand the baton on: directly to the next runnable thread when the driver would pick it anyway
        (plain run, same instant, its OS thread running or a parked one free for it), else back to the
        driver (which alone starts new OS threads). The first thread (the executor itself) ending always
        goes back: the batch is over."""
        if self.direct and not self.closed and not (leaving.index == 0 and leaving.state == DONE):
            following = next((t for t in self.threads if t.state == RUNNABLE), None)
            if following is not None and following is not leaving:
                if following.os_thread is None:
                    following.os_thread = _OSThread.parked(following)
                if following.os_thread is not None:
                    following.state = RUNNING
                    following.go.release()
                    return
        self.back.release()

    def _wait_for_baton(self, thread: BridgeThread) -> None:
        """Wait for the baton. The backstop: if the run stopped without releasing its threads (the
        kernel gave up on an event budget while no thread was driving), the kernel stops moving; after
        BACKSTOP_S of that, the first thread to notice releases the others and unwinds itself."""
        if thread.go.acquire(timeout=0.25):
            return  # the common case: no clock read, no progress read
        seen, since = self._progress(), _real_monotonic()
        while not thread.go.acquire(timeout=0.25):
            progress = self._progress()
            if progress != seen or self.driving:
                seen, since = progress, _real_monotonic()
            elif _real_monotonic() - since > BACKSTOP_S and not self.closed:
                self.closed = True
                for other in self.threads:
                    if other is not thread and other.state != DONE and other.os_thread is not None:
                        other.killed = True
                        other.go.release()
                        self.back.acquire()
                thread.killed = True
                return
