"""The scheduler contract and the two core policies."""

from collections.abc import Generator
from typing import Any

import pytest

from harness import find_scenario
from harness.model import Batch, CallResult, Outcome
from harness.policies import Parallel, Serial, get_scheduler, scheduler_names
from harness.policies.registry import UnknownSchedulerError
from harness.run import run
from harness.scheduling import SchedulerContext
from tests.helpers import run_named, scenario


def test_incident_triage_serial_9000_parallel_4000_same_results() -> None:
    sc = find_scenario("incident-triage")
    serial, parallel = run_named(sc, "serial"), run_named(sc, "parallel")
    assert (serial.makespan_ms, parallel.makespan_ms) == (9000, 4000)
    assert [(r.call_id, r.outcome, r.value) for r in serial.results] == \
           [(r.call_id, r.outcome, r.value) for r in parallel.results]


def test_completion_order_reporting_differs_from_model_order() -> None:
    sc = find_scenario("incident-triage")
    completion = run(sc, Parallel(order="completion"), 1)
    assert [r.call_id for r in completion.results] == ["call-deploys", "call-logs", "call-metrics"]
    assert completion.scheduler == "parallel_completion_order"


def test_max_workers_caps_concurrency_in_fifo_order() -> None:
    sc = find_scenario("incident-triage")
    capped = run(sc, Parallel(max_workers=2), 1)
    starts = {r.call_id: r.start_ms for r in capped.results}
    assert starts == {"call-logs": 0, "call-metrics": 0, "call-deploys": 3000}
    assert capped.makespan_ms == 5000


def test_a_call_draws_the_same_latency_under_any_scheduler_and_order() -> None:
    sc = find_scenario("compare-three-files")
    durations = {}
    for name in ("serial", "parallel", "parallel_completion_order"):
        r = run_named(sc, name, seed=11)
        durations[name] = {e["call"]: e["t"] for e in r.trace if e["ev"] == "end"}
        starts = {e["call"]: e["t"] for e in r.trace if e["ev"] == "start"}
        durations[name] = {c: durations[name][c] - starts[c] for c in starts}
    assert durations["serial"] == durations["parallel"] == durations["parallel_completion_order"]
    assert len(set(durations["serial"].values())) > 1  # the latencies really are random


def test_registry_lists_and_builds_builtins() -> None:
    assert {"serial", "parallel", "parallel_completion_order"} <= set(scheduler_names())
    assert isinstance(get_scheduler("serial"), Serial)


def test_run_takes_a_scheduler_by_name_as_the_cli_does() -> None:
    """`run(scenario, "serial", seed)` is the run of `get_scheduler("serial")`, fingerprint and all
    (it was a `scheduler-error`: the name was called as if it were a scheduler)."""
    sc = find_scenario("incident-triage")
    by_name, by_instance = run(sc, "serial", seed=1), run(sc, Serial(), seed=1)
    assert by_name.status.value == "completed" and by_name.makespan_ms == 9000
    assert by_name.fingerprint == by_instance.fingerprint
    assert run(sc, "harness.policies.serial:Serial", seed=1).fingerprint == by_instance.fingerprint
    with pytest.raises(UnknownSchedulerError, match=r"unknown scheduler 'seriall'; valid: .*serial"):
        run(sc, "seriall", seed=1)


class TimeoutEach:
    """Starts everything and gives each call `ms` of virtual time."""

    name = "timeout-each"

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        waits = [ctx.with_timeout(ctx.start(call), self.ms) for call in batch]
        yield ctx.all_of(waits)
        return [w.value for w in waits]


def test_timeout_of_a_cancellable_tool_stops_its_effect() -> None:
    sc = scenario([("w", "write_file_atomic", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"})
    r = run(sc, TimeoutEach(100), 1)
    assert r.results[0].outcome is Outcome.TIMEOUT and r.results[0].end_ms == 100
    assert r.final.file_map["/repo/a.txt"] == "old"
    assert any(e["ev"] == "end" and e["outcome"] == "cancelled" for e in r.trace)


def test_timeout_of_a_tool_that_ignores_cancel_lets_the_effect_land_later() -> None:
    sc = scenario([("t", "create_ticket", {"title": "outage"})])  # effect at 400 ms of 800 ms
    r = run(sc, TimeoutEach(100), 1)
    assert r.results[0].outcome is Outcome.TIMEOUT
    assert r.makespan_ms == 100
    assert len(r.final.ledger("tickets")) == 1  # a ghost effect: reported as failed, landed anyway
    detached_end = [e for e in r.trace if e["ev"] == "end" and e.get("detached")]
    assert detached_end and detached_end[0]["t"] == 800


def test_cancel_after_settling_is_a_no_op() -> None:
    class CancelLate:
        name = "cancel-late"

        def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
            handle = ctx.start(batch.calls[0])
            result = yield handle
            assert ctx.cancel(handle) is False
            return [result]

    r = run(scenario([("q", "web_search", {"query": "x"})]), CancelLate(), 1)
    assert r.results[0].outcome is Outcome.OK


def test_scheduler_sees_declared_metadata_only() -> None:
    seen = {}

    class Inspect:
        name = "inspect"

        def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
            for call in batch:
                seen[call.id] = (ctx.declared(call), ctx.resource_keys(call))
            return (yield from Serial()(batch, ctx))

    sc = scenario([("t", "terminal", {"command": "echo x > f"}), ("u", "mystery_tool", "{}")],
                  tools={"terminal": {"declared": {"read_only": True}}}, unknown_tools=["mystery_tool"])
    run(sc, Inspect(), 1)
    declared, keys = seen["t"]
    assert declared is not None and declared.read_only is True  # the lie, as declared
    assert keys == ("terminal:session",)
    assert seen["u"] == (None, ())
