"""Blocking calls on the bridged event loop: they take virtual time and hold the loop meanwhile.

Owns the `Blocker` a run of `from_asyncio` hangs on its loop. Code the pump steps on the loop that
blocks — `time.sleep` (through `harness.bridges.clock`), a sync tool called directly on the loop (see
`Toolbox.invoke_on_loop`) — calls `hold(event)`: from inside the loop's callback, the simulation is
run on (`Kernel.run_until`, the same stepping the run's driver does, so calls, timers, other agents,
the order-first arbiter and the threads work was handed to all go on) until the event is processed,
while the loop itself stays frozen in that callback: no other task runs, no timer fires, and whatever
the blocked code does next happens at the later virtual time. Exact in every strategy, since nothing
is estimated: the loop simply is not stepped while the kernel advances.

Each hold is traced (`blocked`: what blocked, since when, how long), so reports name it and the
fingerprint covers it. A hold the simulation cannot finish (it went idle, or hit its time bound or
event budget, while the loop was held) freezes the loop for good: the run ends as a hang whose
witness names the blocking call. Also records real threads started from the loop and harness tools
called from threads the bridge does not run (anyio's worker thread), for the hang witness. It never
decides an order and never advances time except through the kernel.
"""

from __future__ import annotations

import _thread
import math
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import simpy

from harness.sim.kernel import StopReason

if TYPE_CHECKING:
    from harness.bridges.asyncio.loop import VirtualLoop
    from harness.bridges.asyncio.threads import ThreadHost
    from harness.bridges.threads.turnstile import BridgeThread
    from harness.scheduling.context import SchedulerContext
    from harness.sim.kernel import Kernel


class BlockingHost(Protocol):
    """What a blocker reads of its run (the bridge's `RunState` is one): declared here so that the
    bridge imports this module and never the other way round."""

    wake: simpy.Event

    @property
    def ctx(self) -> SchedulerContext: ...
    @property
    def kernel(self) -> Kernel: ...
    @property
    def loop(self) -> VirtualLoop: ...
    @property
    def threads(self) -> ThreadHost | None: ...

#: The trace event of a hold: fields `what`, `since` (ms), `held_ms`, `by` (who blocked: one of
#: `BLOCKERS`) and `delayed` (whether other work on the loop was waiting: see `Blocker.hold`).
BLOCKED_EVENT = "blocked"
#: Who blocked the loop: the runtime's code (`time.sleep` on the loop), the runtime calling a sync tool
#: on the loop (`sync-tool`), or a tool's own synchronous work before its first await (`tool-work`:
#: the tool author's doing, which no scheduler can avoid).
BLOCKERS = ("sleep", "sync-tool", "tool-work")

#: The fix a hang witness gives for work run in a thread the bridge does not run.
UNBRIDGED_FIX = ("hand the work to asyncio.to_thread / loop.run_in_executor, which the bridge runs on the virtual "
                 "clock (pydantic-ai: wrap the run in `using_thread_executor`)")


#: Real seconds a thread outside the bridge that called a tool waits for its run to end, at most (a
#: backstop: a non-daemon thread parked for good would keep the interpreter from exiting).
FOREIGN_WAIT_S = 30.0

#: The real class (read at import, before any patch: while one is in place `threading.Thread` is the bridge's).
_RealThread = threading.Thread

#: Real threads started from a bridged loop (anyio's worker), while they live: a pool keeps its
#: workers from one run to the next, so a later run's witness still names them.
_real_threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def real_threads() -> list[str]:
    """Names of the live real threads started from a bridged loop, sorted (a set's order is not)."""
    return sorted(t.name for t in list(_real_threads) if t.is_alive())


class LoopFrozen(BaseException):
    """Raised in the code that blocked the loop when the simulation stopped before the blocking call
    could return: the loop never runs again in this run. A BaseException, so `except Exception` in
    the runtime does not swallow it."""


@dataclass(frozen=True, slots=True)
class Unbridged:
    """A thread outside the bridge that the run's code reached: started from the loop, or calling a tool."""

    thread: str
    #: Started from the loop (known when it happens, on the loop); else it called a tool (a real-time event).
    started: bool


class Blocker:
    """One run's blocking on its loop (`VirtualLoop.blocker` while the run holds the loop)."""

    def __init__(self, state: BlockingHost) -> None:
        # Weakly: the loop keeps its blocker after the run, and the run's state holds it (a cycle
        # that would keep the whole run for the cycle collector, see `RunState._let_go`).
        self._state = weakref.ref(state)
        #: The simulation is running inside a hold: code now on the loop's thread is the harness's.
        self.holding = False
        #: What froze the loop for good (a hold the simulation could not finish), if anything.
        self.frozen: str | None = None
        self.unbridged: list[Unbridged] = []
        self._closed = _thread.allocate_lock()
        self._closed.acquire()  # released when the run ends: threads outside the bridge may go on
        self.ended = False

    @property
    def state(self) -> BlockingHost:
        state = self._state()
        assert state is not None, "a blocker outlived its run while still in use"
        return state

    @property
    def active(self) -> bool:
        return not self.holding and not self.ended and self.frozen is None

    def now_ms(self) -> int:
        return self.state.kernel.now

    def sleep(self, seconds: float) -> None:
        """`time.sleep(seconds)` on the loop: hold it for that long (a zero sleep takes no time)."""
        ms = max(0, math.ceil(seconds * 1000 - 1e-9))  # whole milliseconds, never shorter than asked
        if ms:
            self.hold(self.state.kernel.delay(ms, "blocking"), f"time.sleep({seconds:g}){_caller(2)}", "sleep")

    def real_thread(self, thread: object) -> None:
        if isinstance(thread, _RealThread):
            _real_threads.add(thread)
            self.unbridged.append(Unbridged(thread.name, True))

    def foreign_call(self, thread: str, tool: str) -> None:
        """A thread the bridge does not run called `tool`: noted for the hang witness, and the thread
        waits until the run is over. Its result could only reach the loop at a real moment the
        simulation knows nothing of (`call_soon_threadsafe`), so the run hears nothing: a hang, every
        time, rather than a verdict that depends on how fast a real thread ran."""
        self.unbridged.append(Unbridged(thread, False))
        if self._closed.acquire(timeout=FOREIGN_WAIT_S):
            self._closed.release()

    def close(self) -> None:
        """The run is over: threads outside the bridge waiting in `foreign_call` go on (idempotent)."""
        if not self.ended:
            self.ended = True
            self._closed.release()

    def hold(self, until: simpy.Event, what: str, by: str) -> None:
        """Block the loop (the caller is inside one of its callbacks) until `until` is processed.

        The trace says whether the hold `delayed` other work of the loop: another callback (a task
        step) was ready when the hold began, or an asyncio timer fell due before it ended. A hold
        with nothing else to do on the loop costs the run nothing."""
        state = self.state
        kernel = state.kernel
        since = kernel.now
        ready = bool(state.loop._ready)  # type: ignore[attr-defined]
        self.holding = True
        try:
            while until.callbacks is not None:
                threads = state.threads
                if threads is not None and not threads.closed:
                    # Threads work was handed to are not held: they go on as the pump would run them.
                    threads.expire()
                    runnable = threads.runnable()
                    if runnable:
                        threads.run(runnable[0] if state.ctx._arbiter is None else self._choose(runnable))
                        continue
                if state.wake.triggered:
                    state.wake = kernel.env.event()
                waits = [until, state.wake]
                due = threads.next_deadline() if threads is not None and not threads.closed else None
                if due is not None:
                    waits.append(kernel.delay(max(0, due - kernel.now), "thread-wait"))
                stop = kernel.run_until(simpy.AnyOf(kernel.env, waits))
                if stop is not StopReason.DONE:
                    self.frozen = what
                    kernel.record(BLOCKED_EVENT, what=what, since=since, held_ms=kernel.now - since, by=by,
                                  delayed=self._delayed(ready), returned=False)
                    raise LoopFrozen(f"{what} held the event loop from {since} ms and never returned "
                                     f"(the simulation stopped: {stop.value})")
        finally:
            self.holding = False
        kernel.record(BLOCKED_EVENT, what=what, since=since, held_ms=kernel.now - since, by=by,
                      delayed=self._delayed(ready))

    def _delayed(self, ready: bool) -> bool:
        due = self.state.loop.next_timer_ms()
        return ready or (due is not None and due < self.state.kernel.now)

    def _choose(self, runnable: list[BridgeThread]) -> BridgeThread:
        """Order-first runs: the arbiter picks the next thread, as in the pump (`RunState._choose`)."""
        arbiter = self.state.ctx._arbiter
        assert arbiter is not None
        kernel = self.state.kernel
        now = kernel.now
        asks = [(thread, arbiter.step(thread.entry, 1, earliest=now, latest=now)) for thread in runnable]
        kernel.run_until(simpy.AnyOf(kernel.env, [granted for _, granted in asks]))
        return next((thread for thread, granted in asks if granted.triggered), runnable[0])


def _caller(depth: int) -> str:
    """` in <function>`: the code that blocked (its qualified name only: paths differ between hosts
    and would change the fingerprint)."""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
    name = frame.f_code.co_qualname if frame is not None else ""
    return f" in {name}" if name and name != "<module>" else ""

