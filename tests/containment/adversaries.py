"""The adversarial-scheduler catalogue of issue 15: each class breaks the scheduler contract one way.

Every class builds with no arguments, so the command line can name it as
`tests.containment.adversaries:NAME` (run from the checkout, as `python -m harness`). A real scheduler
would never do these things on purpose; a buggy one does them by accident, and the harness must
report each as the scheduler's fault (hang, scheduler-error or contract-error), never hang itself,
pass silently, crash (exit 70) or let one run change what the next one sees.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

from harness.model import Batch, CallResult, Outcome
from harness.scheduling import SchedulerContext

Process = Generator[Any, Any, list[CallResult]]


def _serially(batch: Batch, ctx: SchedulerContext) -> Process:
    """Model order, one call at a time: what each adversary does when it is not misbehaving."""
    results = []
    for call in batch:
        results.append((yield ctx.start(call)))
    return results


class SpinInCall:
    """Loops in Python after its first call started, never yielding to the simulation (C1)."""

    name = "spin-in-call"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        while True:
            pass


class SpinInConstructor:
    """Never finishes being built (C1: the watchdog covers construction too)."""

    name = "spin-in-constructor"

    def __init__(self) -> None:
        while True:
            pass

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        return _serially(batch, ctx)


class ReyieldsProcessedEvent:
    """Yields one already-processed event forever: SimPy resumes it at once, inside one step (C2)."""

    name = "reyield"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        done = ctx.sleep(0)
        yield done
        while True:
            yield done


class _Raises:
    error: BaseException = RuntimeError()

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        raise self.error


class RaisesSystemExit(_Raises):
    """`sys.exit(0)` from the scheduler: once a silent pass (C3)."""

    name = "system-exit"
    error = SystemExit(0)


class RaisesKeyboardInterrupt(_Raises):
    """A KeyboardInterrupt the scheduler's own code raises (no Ctrl-C was pressed) (C3)."""

    name = "keyboard-interrupt"
    error = KeyboardInterrupt()


class RaisesGeneratorExit(_Raises):
    name = "generator-exit"
    error = GeneratorExit()


class Custom(BaseException):
    """An exception outside the `Exception` hierarchy."""


class RaisesCustomBaseException(_Raises):
    name = "custom-base-exception"
    error = Custom("not an Exception")


class UnhashableId:
    """Reports a result whose id is a list (C4)."""

    name = "unhashable-id"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from _serially(batch, ctx)
        return [CallResult([r.call_id], r.outcome) for r in results]  # type: ignore[arg-type]


class NonJsonValue:
    """Reports a value JSON cannot carry (C4)."""

    name = "non-json-value"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from _serially(batch, ctx)
        return [CallResult(r.call_id, Outcome.OK, value={"x": object()}) for r in results]


class _Evil(CallResult):
    """A CallResult whose fields raise when read, once it is armed (after it was built)."""

    __slots__ = ("armed",)

    def __getattribute__(self, name: str) -> Any:
        if name in ("call_id", "value", "outcome"):
            try:
                armed = object.__getattribute__(self, "armed")
            except AttributeError:
                armed = False
            if armed:
                raise RuntimeError(f"reading {name} of an evil result")
        return super().__getattribute__(name)

    def __hash__(self) -> int:
        raise RuntimeError("hashing an evil result")


def _armed(result: CallResult) -> _Evil:
    evil = _Evil(result.call_id, result.outcome)
    object.__setattr__(evil, "armed", True)
    return evil


class RaisingResultSubclass:
    name = "raising-result"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from _serially(batch, ctx)
        return [_armed(r) for r in results]


class NonStrName:
    """A `name` that is not a string (C4)."""

    name = 42

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        return _serially(batch, ctx)


class ClearsToolCaps:
    """Empties the caps it was handed, then runs everything at once (C5)."""

    name = "clears-caps"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        with contextlib.suppress(AttributeError):  # a read-only view: the scenario keeps its caps
            ctx.tool_caps.clear()  # type: ignore[attr-defined]
        results = yield ctx.all_of([ctx.start(call) for call in batch])
        return [results[handle] for handle in results]


class MutatesBatch:
    """Rewrites the frozen batch (and a call) it was handed in place, then runs what is left (C5)."""

    name = "mutates-batch"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        object.__setattr__(batch.calls[0], "arguments", '{"query": "poisoned"}')
        object.__setattr__(batch, "calls", batch.calls[:1])
        return _serially(batch, ctx)


#: Every adversary by name, with what the harness must call it (the run's status).
class SpinInCallWhenReady(SpinInCall):
    """SpinInCall that first creates the file named by $HARNESS_TEST_SPINNING: a test that interrupts
    the spin waits for that file, not for a fixed time (on a loaded machine the process may still be
    importing). Not in the catalogue: it is SpinInCall with a signal for tests."""

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        Path(os.environ["HARNESS_TEST_SPINNING"]).touch()
        while True:
            pass


CATALOGUE: dict[str, tuple[type, str]] = {
    "SpinInCall": (SpinInCall, "hang"),
    "SpinInConstructor": (SpinInConstructor, "hang"),
    "ReyieldsProcessedEvent": (ReyieldsProcessedEvent, "hang"),
    "RaisesSystemExit": (RaisesSystemExit, "scheduler-error"),
    "RaisesKeyboardInterrupt": (RaisesKeyboardInterrupt, "scheduler-error"),
    "RaisesGeneratorExit": (RaisesGeneratorExit, "scheduler-error"),
    "RaisesCustomBaseException": (RaisesCustomBaseException, "scheduler-error"),
    "UnhashableId": (UnhashableId, "contract-error"),
    "NonJsonValue": (NonJsonValue, "contract-error"),
    "RaisingResultSubclass": (RaisingResultSubclass, "contract-error"),
    "NonStrName": (NonStrName, "contract-error"),
    "ClearsToolCaps": (ClearsToolCaps, "completed"),
    "MutatesBatch": (MutatesBatch, "completed"),
}
