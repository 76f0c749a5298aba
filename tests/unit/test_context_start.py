"""`SchedulerContext.start` accepts the batch's calls (its own copies, or equal ones a scheduler
rebuilt) and refuses any other."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.model import Batch, ToolCall
from harness.run import RunStatus
from harness.scenario import Scenario
from harness.scheduling import SchedulerContext
from harness.world.state import WorldState


def scenario(n: int) -> Scenario:
    calls = [(f"r{i}", "read_file", '{"path": "/r/a.txt"}') for i in range(n)]
    return Scenario("reads", (Batch.of(calls),), world=WorldState(cwd="/r", files=(("/r/a.txt", "a"),)))


class Rebuilds:
    """Starts equal copies of the calls, not the batch's own objects."""

    name = "rebuilds"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        handles = [ctx.start(replace(call)) for call in batch]
        results = yield ctx.all_of(handles)
        return [results[h] for h in handles]


class Stranger:
    name = "stranger"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        yield ctx.start(ToolCall("zz", "read_file", '{"path": "/r/a.txt"}', 0))
        return []


def test_equal_copies_of_the_batch_calls_start() -> None:
    assert run(scenario(3), Rebuilds(), 1).status is RunStatus.COMPLETED


def test_a_call_of_no_batch_is_refused_as_a_scheduler_error() -> None:
    result = run(scenario(3), Stranger(), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR
    assert "call 'zz' is not part of this batch" in (result.error or "")


@pytest.mark.parametrize("n", [5_000])
def test_thousands_of_calls_in_one_batch_run(n: int) -> None:
    # A smoke test, not a timing: quadratic membership checks made this take ~15 s; the per-call cost
    # at sizes is measured in benchmarks.
    assert run(scenario(n), get_scheduler("parallel"), 1).status is RunStatus.COMPLETED


class SettlesEach:
    """One call at a time through `ctx.settle`, noting what settle handed back."""

    name = "settles-each"

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        results = []
        for call in batch:
            handle = ctx.start(call)
            settling = ctx.settle(handle)
            self.seen.append(settling is handle)
            results.append((yield settling))
        return results


def test_settle_is_the_handle_itself_only_when_no_interrupt_can_come() -> None:
    from harness.scenario.spec import Interrupt

    plain = SettlesEach()
    result = run(scenario(3), plain, 1)
    assert plain.seen == [True] * 3 and [r.outcome.value for r in result.results] == ["ok"] * 3
    # With a scripted interrupt, settle is a process that honours it: the call running when the user
    # interrupts gets the grace period and is then given up as of unknown effect.
    interrupted = SettlesEach()
    slow = replace(scenario(3), interrupt=Interrupt(150, 10))
    result = run(slow, interrupted, 1)
    assert interrupted.seen == [False] * 3
    assert [r.outcome.value for r in result.results] == ["ok", "unknown", "unknown"]
