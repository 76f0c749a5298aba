"""The driver of one batch's scheduler: it steps the user's generator, checks every yield and the
returned results against the contract, and contains whatever the scheduler's code does.

Owns containment of the scheduler (a contract break is a `scheduler-error`, only a real Ctrl-C and
the wall-clock watchdog go through) and how an error is described. Never decides an order.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from operator import attrgetter
from typing import Any

import simpy

from harness.model import Batch, CallResult, Outcome
from harness.run.result import RunStatus
from harness.scheduling.context import Scheduler, SchedulerContext
from harness.sim.kernel import StopReason
from harness.sim.realtime import (
    WallClockExceeded,
    aborts,
)
from harness.sim.trace import canonical_json


def scheduler_label(scheduler: object) -> tuple[str, str | None]:
    """The name a scheduler goes by in traces and reports, and what is wrong with its `name` (None if
    nothing): a `name` that is not a string (or that raises when read) is a contract error, and the
    run is labelled by the class instead."""
    fallback = f"<{type(scheduler).__name__}>"
    try:
        name = getattr(scheduler, "name", type(scheduler).__name__)
    except Exception as exc:
        return fallback, f"reading the scheduler's name raised {describe_error(exc)}"
    if type(name) is not str:
        return fallback, f"the scheduler's name is {type(name).__name__} {_short(name)}, not a string"
    return name, None


class _Contained(Exception):
    """Raised inside the driver to end a batch whose scheduler broke the contract."""


class Driver:
    """Runs the user's scheduler generator, checking every yield and the returned value.

    Whatever the scheduler's code raises — `SystemExit`, `GeneratorExit`, a `KeyboardInterrupt` it
    raised itself, a custom `BaseException` — ends the batch as a `scheduler-error`; only a real
    Ctrl-C and the wall-clock watchdog go through (see `harness.sim.realtime.aborts`).
    """

    def __init__(self, scheduler: Scheduler, batch: Batch, ctx: SchedulerContext, mark: int = 0,
                 name_problem: str | None = None) -> None:
        self.scheduler, self.batch, self.ctx = scheduler, batch, ctx
        self.results: list[CallResult] = []
        self.status = RunStatus.COMPLETED
        self.error: str | None = None
        self.crashed = False
        self.mark = mark
        self.name_problem = name_problem
        #: Set when the driver itself stopped the batch at a kernel limit (see `_steps`).
        self.stop: StopReason | None = None
        #: The SimPy process driving the scheduler (where a hang diagnosis starts).
        self.process: simpy.Process | None = None

    def drive(self) -> Generator[simpy.Event, Any, None]:
        self.process = self.ctx.env.active_process
        if self.name_problem is not None:
            self._fail(RunStatus.CONTRACT_ERROR, self.name_problem)
            return
        try:
            produced = self.scheduler(self.batch, self.ctx)
        except WallClockExceeded:
            raise
        except BaseException as exc:
            if aborts(exc, self.mark):
                raise
            self._fail(RunStatus.SCHEDULER_ERROR, describe_error(exc))
            return
        if isinstance(produced, Generator):
            try:
                returned = yield from self._steps(produced)
            except _Contained:
                return
        else:
            returned = produced  # a plain function that returned its results without waiting
        self._accept(returned)

    def _steps(self, gen: Generator[Any, Any, Any]) -> Generator[simpy.Event, Any, Any]:
        kernel = self.ctx.kernel
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                item = gen.throw(throw) if throw is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            except WallClockExceeded:
                raise
            except BaseException as exc:
                if aborts(exc, self.mark):
                    raise
                self._fail(RunStatus.SCHEDULER_ERROR, describe_error(exc))
                raise _Contained from None
            if not isinstance(item, simpy.Event):
                self._close(gen)
                self._fail(RunStatus.CONTRACT_ERROR, f"scheduler yielded {_short(item)}, not a SimPy event")
                raise _Contained
            if item.callbacks is None:
                # An event already processed resumes the generator at once, inside the same SimPy
                # step: a loop re-yielding one would spin forever without the kernel counting a step.
                # Every such resume counts against the event budget.
                kernel.steps += 1
                if kernel.steps >= kernel.limits.event_budget:
                    self._close(gen)
                    self.stop = StopReason.EVENT_BUDGET
                    raise _Contained
            try:
                send, throw = (yield item), None
            except Exception as exc:  # a failed event: hand the exception to the scheduler
                if self.crashed:  # the process is dead: nothing of the scheduler runs any more
                    gen.close()
                    raise _Contained from None
                send, throw = None, exc

    def _close(self, gen: Generator[Any, Any, Any]) -> None:
        """Close a generator the batch is done with; whatever its clean-up raises is already moot."""
        try:
            gen.close()
        except WallClockExceeded:
            raise
        except BaseException as exc:
            if aborts(exc, self.mark):
                raise

    def _accept(self, returned: Any) -> None:
        try:
            # The CallResults the harness settled calls with are valid by construction; only others
            # (built or altered by the scheduler) are checked field by field.
            # (An untriggered handle's value is SimPy's PENDING marker, which no result is.)
            made = set(map(id, map(_VALUE, self.ctx.handles)))
            results, problem = _validated(returned, made)
        except WallClockExceeded:
            raise
        except BaseException as exc:  # a raising __len__, __iter__ or property of the scheduler's
            if aborts(exc, self.mark):
                raise
            results, problem = [], f"scheduler returned results that cannot be read ({describe_error(exc)})"
        if problem is not None:
            self._fail(RunStatus.CONTRACT_ERROR, problem)
            return
        self.results = results
        kernel = self.ctx.kernel  # (`kernel.record_ids("report", order=...)`, without its call)
        kernel.trace.add(int(kernel.env._now), "report", {"order": [r.call_id for r in self.results]}, True)

    def crash(self, process: simpy.Process) -> None:
        """The runtime died mid-turn: no results, the scheduler never runs again, and every call in
        flight stops (one whose tool ignores cancellation, e.g. a request already sent, lands anyway)."""
        self.crashed = True
        self.status, self.error = RunStatus.CRASHED, "the runtime crashed mid-batch"
        self.results = []
        self.ctx.crashed = True
        for handle in self.ctx.handles:
            if not handle.triggered:
                self.ctx.cancel(handle, outcome=Outcome.UNKNOWN, reason="runtime crashed")
        if process.is_alive:
            process.interrupt("runtime crashed")

    def _fail(self, status: RunStatus, error: str) -> None:
        self.status, self.error = status, error
        self.ctx.kernel.record("scheduler_failed", status=status.value, error=error)


def _validated(returned: Any, made: set[int] | frozenset[int] = frozenset()) -> tuple[list[CallResult], str | None]:
    """The scheduler's results as plain `CallResult`s the oracles can trust, or what is wrong with
    them: not a sequence, an element that is not a `CallResult`, an id that is not a string, a value
    that is not JSON, a field of the wrong type. A subclass is copied field by field into a plain
    `CallResult`, so nothing of the scheduler's runs again once the batch is over."""
    if type(returned) is not list and (not isinstance(returned, Sequence) or isinstance(returned, str | bytes)):
        return [], f"scheduler returned {_short(returned)}, not a list of CallResult"
    items = list(returned)
    if made.issuperset(map(id, items)) and set(map(type, items)) <= _MADE_TYPES:
        return items, None  # every one is a CallResult the harness settled a call with (the common case)
    results: list[CallResult] = []
    for position, item in enumerate(items):
        if id(item) in made and type(item) is CallResult:
            results.append(item)
            continue
        if not isinstance(item, CallResult):
            return [], f"scheduler returned {_short(item)} at position {position}, not a CallResult"
        if type(item) is not CallResult:
            item = CallResult(item.call_id, item.outcome, item.value, item.error, item.attempts, item.start_ms,
                              item.end_ms, tuple(item.notes))
        problem = _field_problem(item)
        if problem is not None:
            return [], f"scheduler returned a CallResult at position {position} whose {problem}"
        results.append(item)
    return results, None


_VALUE = attrgetter("_value")
_MADE_TYPES = frozenset({CallResult})


def _field_problem(result: CallResult) -> str | None:
    if type(result.call_id) is not str:
        return f"call_id is {type(result.call_id).__name__} {_short(result.call_id)}, not a string"
    if type(result.outcome) is not Outcome:
        return f"outcome is {type(result.outcome).__name__}, not an Outcome"
    if result.error is not None and type(result.error) is not str:
        return f"error is {type(result.error).__name__}, not a string"
    for field_name in ("attempts", "start_ms", "end_ms"):
        if type(getattr(result, field_name)) is not int:
            return f"{field_name} is {type(getattr(result, field_name)).__name__}, not an int"
    if type(result.notes) is not tuple or any(type(note) is not str for note in result.notes):
        return "notes are not a tuple of strings"
    value = result.value
    if value is None or type(value) in (str, int, float, bool):
        return None  # the common case, JSON as it is
    try:
        canonical_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return f"value is not JSON ({type(exc).__name__}: {exc})"
    return None


def describe_error(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception of the scheduler's whose __str__ raises
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _short(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a value of the scheduler's whose __repr__ raises
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."

