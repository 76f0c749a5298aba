"""A started call: the `CallHandle` a scheduler yields, and the `Progress` event of its next notification.

Owns the handle (a SimPy event that the call's attempt settles with its `CallResult`, or the scheduler
settles earlier when it abandons the call) and its progress notices. What runs behind a handle is
`harness.scheduling.attempt`'s; both are importable from there too.
"""

from __future__ import annotations

import simpy
from simpy.events import PENDING

from harness.model import CallResult, ToolCall


class CallHandle(simpy.Event):
    """A started call. Yield it to wait for its `CallResult`.

    It settles when the attempt finishes, or earlier when the scheduler abandons it (cancel or
    timeout); in that case the attempt may keep running detached if the tool ignores cancellation.
    `progress()` is an event for the call's next progress notification (MCP `notifications/progress`,
    which only `[faults] mcp_progress_only` sends); `progress_count` counts those so far.
    """

    # Class defaults, not set in __init__: a handle is made for every attempt, a progress notice almost never.
    progress_count = 0
    _next_progress: simpy.Event | None = None

    def __init__(self, env: simpy.Environment, call: ToolCall, attempt: int, started_ms: int) -> None:
        # `simpy.Event.__init__`, inlined as SimPy inlines it in its own events. `SchedulerContext.start`
        # sets these same attributes itself, in this order, without calling this: an attribute added here
        # goes there too (tests/unit/test_core7_hot_paths.py compares the two).
        self.env = env
        self.callbacks = []
        self._value = PENDING
        self.call = call
        self.attempt = attempt
        self.started_ms = started_ms
        self.process: simpy.Process | None = None
        self.stops_on_cancel = True
        self.finished = False  # the attempt itself has ended (not merely been abandoned)

    def progress(self) -> simpy.Event:
        """An event that fires at the call's next progress notification, with the count so far (the
        notification's `progress`). One that never comes never fires: wait on it beside the handle."""
        if self._next_progress is None:
            self._next_progress = Progress(self.env, self)
        return self._next_progress

    def _progressed(self) -> None:
        self.progress_count += 1
        waiting, self._next_progress = self._next_progress, None
        if waiting is not None:
            waiting.succeed(self.progress_count)

    @property
    def result(self) -> CallResult:
        if not self.triggered:
            raise RuntimeError(f"call {self.call.id} has not settled yet")
        value = self.value
        assert isinstance(value, CallResult)
        return value


class Progress(simpy.Event):
    """A call's next progress notification (`CallHandle.progress`); the hang diagnosis names the call."""

    def __init__(self, env: simpy.Environment, handle: CallHandle) -> None:
        super().__init__(env)
        self.handle = handle
