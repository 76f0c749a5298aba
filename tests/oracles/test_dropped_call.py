"""`dropped-call`: a call answered "cancelled" without ever starting is reported unless something had
stopped the turn first. Broken schedulers are caught; skips with a cause (an interrupt, a failed
sibling under cancel-siblings, a batch deadline, a crash) pass."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, CallResult, Outcome
from harness.oracles import ORACLES
from harness.run import RunResult
from harness.scheduling.context import SchedulerContext
from tests.catalogue import buggy
from tests.helpers import scenario


def dropped(result: RunResult) -> list[dict[str, Any]]:
    return [dict(v.witness) for v in ORACLES["liveness"](result).violations if v.label == "dropped-call"]


def test_a_cap_that_answers_the_excess_cancelled_is_caught() -> None:
    result = run(find_scenario("incident-triage"), buggy.CapsByCancelling(), 5)
    (witness,) = dropped(result)
    assert witness["calls"] == ["call-deploys"] and witness["reason"] == "skipped due to user interrupt"
    assert all(v.ok for name, v in ((n, o(result)) for n, o in ORACLES.items()) if name != "liveness")


def test_a_cancelled_answer_the_scheduler_made_itself_is_caught() -> None:
    sc = scenario([("a", "web_search", {"query": "q"}), ("b", "web_search", {"query": "r"})])

    def answers_b_itself(batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        first = yield ctx.start(batch.calls[0])
        return [first, CallResult("b", Outcome.CANCELLED, None, "not now", 0, ctx.now, ctx.now)]

    (witness,) = dropped(run(sc, answers_b_itself, 1))  # type: ignore[arg-type]
    assert witness["calls"] == ["b"] and witness["reason"] == "not now"


def test_started_and_cancelled_at_once_is_not_a_cause_for_itself() -> None:
    sc = scenario([("a", "web_search", {"query": "q"}), ("b", "web_search", {"query": "r"})])

    def gives_up(batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        handles = [ctx.start(call) for call in batch]
        for handle in handles:
            ctx.cancel(handle)
        yield ctx.sleep(1)
        return [h.result for h in handles]

    (witness,) = dropped(run(sc, gives_up, 1))  # type: ignore[arg-type]
    assert witness["calls"] == ["a", "b"]


def test_skips_after_a_user_interrupt_pass() -> None:
    for name in ("serial", "parallel", "hermes_segments"):
        result = run(find_scenario("interrupt-midbatch"), get_scheduler(name), 1)
        assert any(e["ev"] == "skip" for e in result.trace) or name != "serial"
        assert dropped(result) == [], name


def test_siblings_cancelled_after_a_failure_pass() -> None:
    sc = scenario([("bad", "read_file", {"path": "missing.txt"}), ("b", "web_search", {"query": "q"}),
                   ("c", "web_search", {"query": "r"})],
                  execution={"on_failure": "cancel_siblings", "max_concurrency": 1})
    result = run(sc, get_scheduler("resource_keys"), 1)  # a plan scheduler: it runs the execution policy
    assert [r.outcome.value for r in result.results] == ["error", "cancelled", "cancelled"]
    assert not any(e["ev"] == "start" and e["call"] != "bad" for e in result.trace)
    assert dropped(result) == []


def test_calls_skipped_at_a_batch_deadline_pass() -> None:
    sc = scenario([("slow", "web_search", {"query": "q"}), ("later", "web_search", {"query": "r"})],
                  execution={"batch_deadline_ms": 500, "max_concurrency": 1},
                  tools={"web_search": {"latency": {"fixed": 2000}}})
    result = run(sc, get_scheduler("resource_keys"), 1)
    assert [r.outcome.value for r in result.results] == ["unknown", "cancelled"]
    assert dropped(result) == []
