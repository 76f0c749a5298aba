"""The turnstile: threads of which exactly one runs at a time, on the virtual clock.

Owns `BridgeThread` (one user thread, carried by a greenlet on the driver's OS thread, see `green`,
or where that cannot keep `threading.local` apart (3.13) or `HARNESS_THREAD_CARRIER=os` says so, by a
real OS thread that waits for its baton on that OS thread's lock), the parked OS threads reused across
bridge threads and runs (`OSThread`: each body starts as on a fresh thread), `Turnstile` (which
threads are runnable, blocked or done; handing the baton to one and taking it back when that thread
blocks; virtual deadlines; releasing every thread at the end) and `current()` (the bridge thread the
caller runs in, if any). A thread gives the baton back only at a
controlled point: when it blocks (`park`), yields (`yield_now`) or ends. Whoever holds the baton — the
driving SimPy process or one bridge thread — is the only code touching this state, so it needs no
lock of its own. It never decides which runnable thread goes next (the driver does) and never reads
the wall clock, except in the backstop that frees threads of a run nobody drives any more.
"""

from __future__ import annotations

import _thread
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.bridges.threads.osthreads import OSThread, thread_state_dict
from harness.bridges.threads.osthreads import retire_parked as retire_parked
from harness.sim.arbiter import THREAD_PREFIX

try:
    from harness.bridges.threads import green as green  # (re-exported: the driver runs threads with it)
except ImportError:  # no greenlet: OS threads carry the bridge threads
    green = None  # type: ignore[assignment]

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

    __slots__ = ("abandoned", "carrier", "deadline", "error", "go", "index", "killed", "loop", "name", "on_timeout",
                 "owner", "releases", "saved", "state", "target", "timed_out", "turnstile", "watchers")

    def __init__(self, turnstile: Turnstile, index: int, name: str, target: Callable[[], Any],
                 owner: object | None) -> None:
        self.turnstile, self.index, self.name, self.target = turnstile, index, name, target
        #: The user-visible thread object (`threading.current_thread()` inside this thread).
        self.owner = owner
        #: The lock its OS thread waits on for the baton (OS-thread carrier only).
        self.go: Any = None
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
        #: What runs it: a greenlet (`green.Carrier`) or an OS thread (`OSThread`); None until it first runs.
        self.carrier: Any = None
        #: On a greenlet, while another thread runs: its thread-state dict's contents and asyncio's running loop.
        self.saved: dict[str, Any] | None = None
        self.loop: Any = None

    @property
    def entry(self) -> str:
        """The thread's name in an order tape (zero-padded, so tapes sort in creation order)."""
        return f"{THREAD_PREFIX}{self.index:03d}"

    def _main(self) -> BridgeThread | None:
        """Body of its carrier, which starts it holding the baton: run the target, hand the baton on.
        On a greenlet, returns the thread it hands the baton to (None: the driver)."""
        on_os_thread = not self.turnstile.green
        if on_os_thread:
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
            self.turnstile.live -= 1
            watchers, self.watchers = self.watchers, []
            for watcher in watchers:
                watcher()
            if on_os_thread:
                del _by_ident[ident]
                self.turnstile._pass_baton(self)
        return None if on_os_thread else self.turnstile._following(self)

    def top_frame(self) -> Any:
        """Its innermost frame while it waits on a greenlet, else None (read from `sys._current_frames()`)."""
        return green.top_frame(self) if self.turnstile.green else None




def carrier() -> str:
    """What carries bridge threads in batches starting now: "greenlet" where a greenlet can keep
    `threading.local` data apart (the thread-state dict, 3.11 and 3.12), else (or with
    `HARNESS_THREAD_CARRIER=os`) "os"."""
    if _carrier[0] is None:
        wanted = os.environ.get("HARNESS_THREAD_CARRIER", "greenlet")
        _carrier[0] = "greenlet" if wanted != "os" and green is not None and _dict_holds_locals() else "os"
    return _carrier[0] or "os"


#: The carrier decided (None: not yet). Tests set it to try both.
_carrier: list[str | None] = [None]


def _dict_holds_locals() -> bool:
    """Whether this thread's thread-state dict holds `threading.local` data (asked on a dict of a
    throwaway copy: emptying the real one would drop the caller's locals)."""
    probe = _thread._local()
    probe.mark = True
    state = thread_state_dict()
    saved = state.copy()
    state.clear()
    held = not hasattr(probe, "mark")
    state.update(saved)
    return held and getattr(probe, "mark", False) is True


def _ended() -> None:
    """What an ended thread's target becomes."""


class Turnstile:
    """The threads of one batch. The driver calls `run(thread)`; threads call `park`/`yield_now`."""

    def __init__(self, now_ms: Callable[[], int], on_wake: Callable[[], None] | None,
                 progress: Callable[[], int]) -> None:
        self.now_ms = now_ms
        #: Tells the driver, if it is waiting on the simulation, that a thread became runnable (None:
        #: nobody to tell now; the driver that sets it while it waits saves a call at every other wake).
        self.on_wake = on_wake
        #: A counter that moves while the run is driven (the kernel's steps), for the backstop.
        self._progress = progress
        #: Greenlets carry the threads (see `green`), else OS threads.
        self.green = green is not None and carrier() == "greenlet"
        #: On greenlets: the greenlet that drives the threads now (a thread gives the baton back to it).
        self.driver: Any = None
        #: On greenlets, while driven: what a thread handing the baton on needs (see `green.run`).
        self.green_here: Any = None
        #: On greenlets: signals that arrive while a thread runs are handled on the driver (until released).
        self._signals = green.SignalRoute(_by_ident) if self.green else None
        self.back = _allocate_lock()
        self.back.acquire()  # released by a thread on an OS thread when it gives the baton back
        self.threads: list[BridgeThread] = []
        #: How many of them have not ended (spawned, not DONE): none, and `release_all` has nothing to release.
        self.live = 0
        #: How many of them are runnable: none, and the scans for the first runnable one are skipped (a
        #: thread parking while the others wait, the driver waiting on the simulation). Kept by every
        #: move into and out of RUNNABLE.
        self.ready = 0
        #: How many threads have a deadline set (blocked with a timeout): none, and nothing can expire.
        self.timed = 0
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
        self.ready += 1
        self.live += 1
        if self.on_wake is not None:
            self.on_wake()
        return thread

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial

    def runnable(self) -> list[BridgeThread]:
        if not self.ready:
            return []
        return [t for t in self.threads if t.state == RUNNABLE]

    def first_runnable(self) -> BridgeThread | None:
        """The runnable thread lowest in creation order (the plain runs' rule), if any."""
        if not self.ready:
            return None
        for thread in self.threads:
            if thread.state == RUNNABLE:
                return thread
        return None

    def alive(self) -> list[BridgeThread]:
        return [t for t in self.threads if t.state != DONE]

    def next_deadline(self) -> int | None:
        if not self.timed:
            return None
        deadlines = [t.deadline for t in self.threads if t.state == BLOCKED and t.deadline is not None]
        return min(deadlines) if deadlines else None

    def expire(self) -> None:
        """Wake, as timed out, every blocked thread whose virtual deadline has come."""
        if not self.timed:
            return
        now = self.now_ms()
        for thread in self.threads:
            if thread.state == BLOCKED and thread.deadline is not None and thread.deadline <= now:
                thread.timed_out = True
                if thread.on_timeout is not None:
                    thread.on_timeout()  # leave the primitive's waiter list before anyone notifies it
                self._make_runnable(thread)

    def run(self, thread: BridgeThread) -> None:
        """Hand `thread` the baton; return once it blocks, yields or ends."""
        if self.green:
            green.run(self, thread, _by_ident, _get_ident())
            return
        if thread.carrier is None:
            thread.carrier = OSThread(thread)
        if thread.state == RUNNABLE:
            self.ready -= 1
        thread.state = RUNNING
        self.driving = True
        try:
            thread.go.release()
            self.back.acquire()
        finally:
            self.driving = False

    def release_all(self) -> list[str]:
        """End every thread: each, in creation order and one at a time, gets the baton back with
        `ThreadReleased` raised at its controlled point and unwinds; then its carrier is joined.
        Returns the names of threads that would not end (user code that swallows `ThreadReleased`
        again and again, see `check`); they stay parked for good, as daemon threads."""
        self.closed = True
        if not self.live and self.green:  # every thread has ended (the common case): none to release or join
            if self._signals is not None:
                self._signals.close()
            self._untie()
            return []
        stuck: list[str] = []
        try:
            for thread in self.threads:
                if thread.carrier is None:
                    if thread.state == RUNNABLE:
                        self.ready -= 1
                    thread.state = DONE  # never ran: nothing to unwind
                    self.live -= 1
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
                if not self.green:  # a greenlet carrier has nothing to wait for (`Carrier.join`)
                    thread.carrier.join()
        finally:
            if self._signals is not None:
                self._signals.close()
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
        self.on_wake = None

    # -- the threads' side -------------------------------------------------------------------

    def deadline_in(self, timeout: float | None) -> int | None:
        """The virtual deadline (ms) of a wait of `timeout` seconds (None: no deadline)."""
        if timeout is None:
            return None
        return self.now_ms() + max(0, math.ceil(timeout * 1000 - 1e-9))

    def park(self, thread: BridgeThread, deadline: int | None = None,
             on_timeout: Callable[[], None] | None = None) -> bool:
        """Block `thread` (the caller) until `wake(thread)` or the deadline; True if woken in time."""
        if thread.killed:
            self.check(thread)
        if deadline is not None and deadline <= self.now_ms():
            # A zero timeout never blocks (`acquire(timeout=0)`, `wait(0)`), as with real threads.
            if on_timeout is not None:
                on_timeout()
            return False
        thread.state = BLOCKED
        if thread.deadline is not None:  # left set by a release that ran it while it waited
            self.timed -= 1
        if deadline is not None:
            self.timed += 1
        thread.deadline = deadline
        thread.timed_out = False
        thread.on_timeout = on_timeout
        if self.green:  # `_give_back`, inlined: every wait of every thread comes here
            following = None  # `_following(thread)`, inlined: `thread` is blocked, never the one it finds
            if self.ready and self.direct and not self.closed:
                for runnable in self.threads:
                    if runnable.state == RUNNABLE:
                        following = runnable
                        break
            green.give_back(self, thread, following)
            if thread.killed:
                self.check(thread)
        else:
            self._give_back(thread)
        return not thread.timed_out

    def yield_now(self, thread: BridgeThread) -> None:
        """A switch point that does not block: in order-first runs, another runnable thread may go
        first (a choice); in plain runs the caller simply continues."""
        self.check(thread)
        if not self.yields_switch:
            return
        thread.state = RUNNABLE
        self.ready += 1
        self._give_back(thread)

    def wake(self, thread: BridgeThread) -> None:
        """Make a blocked thread runnable (called by whoever holds the baton)."""
        if thread.state == BLOCKED:  # `_make_runnable`, inlined: every wake comes here
            thread.state = RUNNABLE
            self.ready += 1
            if thread.deadline is not None:
                self.timed -= 1
                thread.deadline = None
            thread.on_timeout = None
            if self.on_wake is not None:
                self.on_wake()

    def _make_runnable(self, thread: BridgeThread) -> None:
        thread.state = RUNNABLE
        self.ready += 1
        if thread.deadline is not None:
            self.timed -= 1
            thread.deadline = None
        thread.on_timeout = None
        if self.on_wake is not None:
            self.on_wake()

    def _give_back(self, thread: BridgeThread) -> None:
        if self.green:
            green.give_back(self, thread, self._following(thread))
        else:
            self._pass_baton(thread)
            self._wait_for_baton(thread)
        if thread.killed:
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
            if self.green:
                green.abandon(self, thread)
            self.back.release()
            forever = _allocate_lock()
            forever.acquire()
            forever.acquire()  # nobody ever releases it
        raise ThreadReleased

    def _following(self, leaving: BridgeThread) -> BridgeThread | None:
        """The thread `leaving` may hand the baton to directly, the one the driver would pick anyway
        (plain run, same instant), else None (back to the driver). The first thread (the executor
        itself) ending always goes back: the batch is over."""
        if self.ready and self.direct and not self.closed and not (leaving.index == 0 and leaving.state == DONE):
            for following in self.threads:
                if following.state == RUNNABLE:
                    return following if following is not leaving else None
        return None

    def _pass_baton(self, leaving: BridgeThread) -> None:
        """On OS threads: hand the baton on, directly (see `_following`) when the next thread's OS thread
        runs or a parked one is free for it, else back to the driver (which alone starts new OS threads)."""
        following = self._following(leaving)
        if following is not None:
            if following.carrier is None:
                following.carrier = OSThread.parked(following)
            if following.carrier is not None:
                self.ready -= 1  # it was runnable
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
                    if other is not thread and other.state != DONE and other.carrier is not None:
                        other.killed = True
                        other.go.release()
                        self.back.acquire()
                thread.killed = True
                return
