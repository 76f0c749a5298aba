"""Blocking calls on the bridged event loop: they take virtual time and hold the loop meanwhile.

Owns the `Blocker` a run of `from_asyncio` hangs on its loop. Code the pump steps on the loop that
blocks — `time.sleep` (through `bridged_clock`), a sync tool called directly on the loop (see
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

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import simpy

from harness.schedulers.bridged_clock import sleep_ms
from harness.sim.kernel import StopReason

if TYPE_CHECKING:
    from harness.schedulers.bridge_asyncio.bridge import RunState
    from harness.schedulers.bridge_threads.turnstile import BridgeThread

#: The trace event of a hold: fields `what`, `since` (ms) and `held_ms`.
BLOCKED_EVENT = "blocked"

#: The fix a hang witness gives for work run in a thread the bridge does not run.
UNBRIDGED_FIX = ("hand the work to asyncio.to_thread / loop.run_in_executor, which the bridge runs on the virtual "
                 "clock (pydantic-ai: wrap the run in `using_thread_executor`)")


class LoopFrozen(BaseException):
    """Raised in the code that blocked the loop when the simulation stopped before the blocking call
    could return: the loop never runs again in this run. A BaseException, so `except Exception` in
    the runtime does not swallow it."""


@dataclass(frozen=True, slots=True)
class Unbridged:
    """A thread outside the bridge that the run's code reached: started from the loop, or calling a tool."""

    thread: str
    what: str


class Blocker:
    """One run's blocking on its loop (`VirtualLoop.blocker` while the run holds the loop)."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        #: The simulation is running inside a hold: code now on the loop's thread is the harness's.
        self.holding = False
        #: What froze the loop for good (a hold the simulation could not finish), if anything.
        self.frozen: str | None = None
        self.unbridged: list[Unbridged] = []

    @property
    def active(self) -> bool:
        return not self.holding and not self.state.closed and self.frozen is None

    def now_ms(self) -> int:
        return self.state.kernel.now

    def sleep(self, seconds: float) -> None:
        """`time.sleep(seconds)` on the loop: hold it for that long (a zero sleep takes no time)."""
        ms = sleep_ms(seconds)
        if ms:
            self.hold(self.state.kernel.delay(ms, "blocking"), f"time.sleep({seconds:g}){_caller(2)}")

    def real_thread(self, name: str) -> None:
        self.unbridged.append(Unbridged(name, "a real thread started from the event loop"))

    def foreign_call(self, thread: str, tool: str) -> None:
        self.unbridged.append(Unbridged(thread, f"called the tool {tool} from outside the bridge"))

    def hold(self, until: simpy.Event, what: str) -> None:
        """Block the loop (the caller is inside one of its callbacks) until `until` is processed."""
        state = self.state
        kernel = state.kernel
        since = kernel.now
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
                    kernel.record(BLOCKED_EVENT, what=what, since=since, held_ms=kernel.now - since, returned=False)
                    raise LoopFrozen(f"{what} held the event loop from {since} ms and never returned "
                                     f"(the simulation stopped: {stop.value})")
        finally:
            self.holding = False
        kernel.record(BLOCKED_EVENT, what=what, since=since, held_ms=kernel.now - since)

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

