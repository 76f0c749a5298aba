"""A started call: the `CallHandle` a scheduler yields, the `Progress` event of its next notification, and
the `AttemptProcess` its attempt runs in.

Owns the handle (a SimPy event that the call's attempt settles with its `CallResult`, or the scheduler
settles earlier when it abandons the call), its progress notices and the attempt's process (SimPy's
`Process`, its `_resume` with the scheduling of its own end written out). What runs behind a handle is
`harness.scheduling.attempt`'s; both are importable from there too.
"""

from __future__ import annotations

from heapq import heappush

import simpy
from simpy.events import NORMAL, PENDING, Event, _describe_frame

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


class AttemptProcess(simpy.Process):
    """The SimPy process of one attempt (`SchedulerContext.start` makes it): `simpy.Process`, whose `_resume`
    this is, step for step (SimPy 4.1's), but for `env.schedule(self)` at its end, written out as
    `Environment.schedule` does it: one call less per attempt. tests/unit/test_core8_attempt_process.py
    runs every built-in scenario with SimPy's own `Process` in its place and compares."""

    def _resume(self, event: Event) -> None:
        env = self.env
        env._active_proc = self
        while True:
            try:
                if event._ok:
                    event = self._generator.send(event._value)
                else:
                    event._defused = True
                    # An exclusive copy of the exception, as SimPy makes (its traceback is this process's).
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    event = self._generator.throw(exc)
            except StopIteration as e:
                event = None  # type: ignore[assignment]
                self._ok = True
                self._value = e.args[0] if len(e.args) else None
                heappush(env._queue, (env._now, NORMAL, next(env._eid), self))  # `env.schedule(self)`
                break
            except BaseException as e:
                event = None  # type: ignore[assignment]
                self._ok = False
                e.__traceback__ = e.__traceback__.tb_next  # type: ignore[union-attr]  # (this frame, as SimPy)
                self._value = e
                heappush(env._queue, (env._now, NORMAL, next(env._eid), self))
                break
            try:
                if event.callbacks is not None:  # not yet triggered: resume when it is
                    event.callbacks.append(self._resume)
                    break
            except AttributeError:
                if hasattr(event, "callbacks"):
                    raise
                # What SimPy's own `_resume` raises (an attempt yields only events: never, short of a bug).
                descr = _describe_frame(self._generator.gi_frame)  # type: ignore[attr-defined]
                raise RuntimeError(f'\n{descr}Invalid yield value "{event}"') from None
        self._target = event
        env._active_proc = None
