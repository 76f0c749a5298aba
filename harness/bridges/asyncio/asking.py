"""A bridged tool asking the user before its call runs, and a runtime that stops waiting meanwhile.

Owns `Asking`: the approval step the bridges' tools take (the runtime under test has none the harness
can see, so the tool asks, as hermes' terminal tool does): `harness.scheduling.approval_gate.gate` — ask,
wait at most `approval_timeout_ms` — run as a SimPy process of its own, plus what happens when the
runtime gives up on the tool while it still waits for the person (an asyncio `wait_for` shorter than
the approval timeout cancels the tool's await; a thread executor's `future.result(timeout=...)` stops
waiting for the thread): the tool stops waiting too, there and then, and its call never runs. What
the runtime reports for the call is kept as it reported it (an `except Exception` around `wait_for`
often keeps only the `TimeoutError`'s empty text: that is what its model reads); the bridges only stop
taking such an error for an exception the executor swallowed before the call started. Shared by both
bridges (the thread bridge imports it from here). It never starts a call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import simpy

from harness.bridges.asyncio.calls import ToolFailed
from harness.model import CallResult, ToolCall
from harness.scheduling.approval_gate import gate
from harness.scheduling.context import SchedulerContext

if TYPE_CHECKING:  # the thread bridge imports this module: its types only for annotations
    from harness.bridges.threads.turnstile import BridgeThread, Turnstile


class Asking:
    """One approval request of a bridged tool: `process` succeeds with None (go) or the refused
    result, after at most the scenario's approval timeout, or with None at once when given up."""

    __slots__ = ("_stop", "call", "ctx", "gave_up_ms", "process")

    def __init__(self, ctx: SchedulerContext, call: ToolCall) -> None:
        self.ctx, self.call = ctx, call
        self._stop: simpy.Event = ctx.env.event()
        #: When the runtime stopped waiting for the tool while the user had not answered (None: it did not).
        self.gave_up_ms: int | None = None
        self.process: simpy.Process = ctx.env.process(gate(ctx, call, ctx.execution.approval_timeout_ms,
                                                           stop=self._stop))

    @property
    def waiting(self) -> bool:
        """Still waiting for the user (neither answered, timed out nor given up)."""
        return not self.process.triggered and self.gave_up_ms is None

    @property
    def refused(self) -> CallResult | None:
        """The refusal (denied, or no answer within the approval timeout), once decided."""
        if self.gave_up_ms is None and self.process.triggered and isinstance(self.process.value, CallResult):
            return self.process.value
        return None

    def give_up(self) -> None:
        """The runtime stopped waiting for the tool while it waited for the user: the tool stops
        waiting too (no refusal is traced later, and the call never starts)."""
        if not self.waiting:
            return
        self.gave_up_ms = self.ctx.now
        self._stop.succeed()
        self.ctx.note(f"{self.call.id}: the runtime stopped waiting for {self.call.name} while its approval "
                      "request was unanswered; the call never ran", self.call)

    def wait_in_thread(self, turnstile: Turnstile, thread: BridgeThread) -> CallResult | None:
        """Block the bridge `thread` (parked on `turnstile`) until the user answers. Returns the
        refusal, if any; raises `ToolFailed` when the runtime stopped waiting for the thread meanwhile.
        A thread released because the run is over stops asking as it goes."""
        asked = self.process
        if not asked.triggered:
            asked.callbacks.append(lambda _event: turnstile.wake(thread))
            try:
                while not asked.triggered:
                    turnstile.park(thread)
            except BaseException:  # released (`ThreadReleased`): the tool stops asking
                self.give_up()
                raise
        if self.gave_up_ms is not None:
            raise ToolFailed(f"{self.call.name} was not run: the runtime stopped waiting for its approval")
        return self.refused
