"""Execution policies compose with plan-based policies: caps, timeouts, retries, idempotency keys,
the same-signature limit, interrupts with a poll interval, sibling-failure policy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Outcome
from harness.oracles import check
from harness.policies.partition import Partition
from harness.run import RunResult
from harness.scheduling import ExecutionPolicy
from tests.helpers import scenario


def labels(result: RunResult) -> set[str]:
    return {v.label for v in check(result) if not v.ok and v.label}


def notes(result: RunResult) -> list[str]:
    return [e["text"] for e in result.trace if e["ev"] == "note"]


FLAKY = scenario([("q", "query_service_logs", {"service_name": "api"})],
                 tools={"query_service_logs": {"failure": {"attempts": [1, 2]}}})


def test_retries_with_exponential_backoff_until_success() -> None:
    result = run(FLAKY, Partition(ExecutionPolicy(retries=3, backoff_ms=1000)), 1)
    r = result.results[0]
    assert (r.outcome, r.attempts) == (Outcome.OK, 3)
    starts = [e["t"] for e in result.trace if e["ev"] == "start"]
    # each failed attempt dies half way (1500 ms); then 1 s, then 2 s of backoff
    assert starts == [0, 1500 + 1000, 2500 + 1500 + 2000]
    assert not labels(result)


def test_retries_stop_at_the_limit_and_injected_failures_have_no_effect() -> None:
    result = run(FLAKY, Partition(ExecutionPolicy(retries=1, backoff_ms=10)), 1)
    assert (result.results[0].outcome, result.results[0].attempts) == (Outcome.ERROR, 2)
    assert "transient failure" in (result.results[0].error or "")
    assert not labels(result)


def test_non_idempotent_tools_are_not_retried_unless_asked() -> None:
    sc = scenario([("t", "create_ticket", {"title": "x"})], tools={"create_ticket": {"failure": {"attempts": [1]}}})
    assert run(sc, Partition(ExecutionPolicy(retries=2)), 1).results[0].attempts == 1
    forced = run(sc, Partition(ExecutionPolicy(retries=2, retry_non_idempotent=True)), 1)
    assert forced.results[0].attempts == 2 and forced.results[0].ok


def test_timeout_abandons_the_call() -> None:
    sc = find_scenario("incident-triage")
    result = run(sc, Partition(ExecutionPolicy(timeout_ms=3500)), 1)
    outcomes = {r.call_id: r.outcome for r in result.results}
    assert outcomes == {"call-logs": Outcome.OK, "call-metrics": Outcome.TIMEOUT, "call-deploys": Outcome.OK}
    assert result.makespan_ms == 3500 and not labels(result)


def test_same_signature_limit_marks_the_tool_unavailable() -> None:
    """Seed 004: after N identical failures the tool is disabled for the rest of the run."""
    sc = scenario([("a", "query_service_logs", {"service_name": "api"})],
                  extra_batches=[[("b", "query_service_logs", {"service_name": "db"})]],
                  tools={"query_service_logs": {"failure": {"rate": 1.0, "permanent": True}}})
    result = run(sc, Partition(ExecutionPolicy(retries=5, backoff_ms=10, same_signature_limit=2)), 1)
    first, second = result.results
    assert first.attempts == 3  # two identical failures allowed, the third marks the tool unavailable
    assert second.attempts == 0 and "unavailable after 3 identical failures" in (second.error or "")
    assert any("marked unavailable" in n for n in notes(result))


def test_sibling_failure_cancels_running_siblings() -> None:
    sc = scenario([("a", "query_service_logs", {"service_name": "x"}),
                   ("b", "query_service_metrics", {"service_name": "x"}),
                   ("c", "query_deployment_history", {"service_name": "x"})],
                  tools={"query_deployment_history": {"failure": {"attempts": [1]}}})
    isolated = run(sc, get_scheduler("partition"), 1)
    assert [r.outcome for r in isolated.results] == [Outcome.OK, Outcome.OK, Outcome.ERROR]
    cascade = run(sc, get_scheduler("partition_cancel"), 1)
    assert [r.outcome for r in cascade.results] == [Outcome.CANCELLED, Outcome.CANCELLED, Outcome.ERROR]
    assert cascade.results[0].error == "Cancelled: parallel tool call c errored"
    assert cascade.makespan_ms == 1000


def test_interrupt_noticed_late_lets_calls_start_after_it() -> None:
    sc = scenario([(f"t{i}", "terminal", {"command": "true"}) for i in range(6)],
                  tools={"terminal": {"latency": {"fixed": 100}}}, interrupt={"at_ms": 150, "grace_ms": 500})
    prompt = run(sc, get_scheduler("hermes_gate"), 1)  # terminal is not safe-listed: serial
    assert not labels(prompt)
    assert [r.outcome for r in prompt.results] == [Outcome.OK, Outcome.OK] + [Outcome.CANCELLED] * 4
    late = run(replace(sc, execution=ExecutionPolicy(poll_interval_ms=1000)), get_scheduler("hermes_gate"), 1)
    assert "start-after-interrupt" in labels(late)  # the batch ended before the next poll at 1000 ms
    # the interrupt-midbatch scenario: its 6 s test run outlives the grace period when noticed late
    midbatch = find_scenario("interrupt-midbatch")
    slow = replace(midbatch, execution=ExecutionPolicy(poll_interval_ms=5000))
    noticed_late = run(slow, get_scheduler("hermes_gate"), 1)
    assert "grace-exceeded" in labels(noticed_late)
    assert any("interrupt noticed (polling every 5000 ms)" in n for n in notes(noticed_late))
    assert not labels(run(midbatch, get_scheduler("hermes_gate"), 1))


def test_tool_caps_from_the_policy() -> None:
    sc = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(4)])
    result = run(sc, Partition(ExecutionPolicy(tool_caps={"web_search": 1})), 1)
    assert sorted(r.start_ms for r in result.results) == [0, 1200, 2400, 3600]


def test_scenario_execution_table_is_validated(tmp_path: object) -> None:
    from harness.scenario import ScenarioError, scenario_from_data

    base = {"name": "x", "batches": [{"calls": [{"id": "a", "name": "web_search", "arguments": '{"query": "q"}'}]}]}
    assert scenario_from_data({**base, "execution": {"retries": 2}}).execution.retries == 2
    for bad, words in (({"retries": "two"}, "retries must be int"), ({"retrys": 1}, "one of the keys"),
                       ({"on_failure": "explode"}, "on_failure must be")):
        with pytest.raises(ScenarioError, match=words):
            scenario_from_data({**base, "execution": bad})


def test_batch_deadline_leaves_the_effect_unknown_and_the_oracle_accepts_either() -> None:
    """hermes' batch deadline: running calls are reported `unknown`, the rest skipped. Whether the
    unknown call's effect landed (a ticket ignores cancellation) or not (an atomic write stops),
    model-order serializability holds."""
    deadline = Partition(ExecutionPolicy(batch_deadline_ms=300))
    landed = scenario([("t", "create_ticket", {"title": "x"}),
                       ("w", "write_file_atomic", {"path": "a", "content": "1"})], files={"/repo/a": "0"})
    result = run(landed, deadline, 1)
    assert [(r.outcome, r.end_ms) for r in result.results] == [(Outcome.UNKNOWN, 300), (Outcome.CANCELLED, 300)]
    assert "effect unknown" in (result.results[0].error or "")
    assert len(result.final.ledger("tickets")) == 1  # created at 400 ms, after the deadline
    assert not labels(result)
    stopped = scenario([("w", "write_file_atomic", {"path": "a", "content": "1"})], files={"/repo/a": "0"},
                       tools={"write_file_atomic": {"latency": {"fixed": 1000}}})
    result = run(stopped, deadline, 1)
    assert result.results[0].outcome is Outcome.UNKNOWN and result.final.file_map["/repo/a"] == "0"
    assert not labels(result)


def test_an_interrupt_during_backoff_stops_the_retry() -> None:
    interrupted = replace(FLAKY, interrupt=__import__("harness").scenario.Interrupt(2000, 500))
    result = run(interrupted, Partition(ExecutionPolicy(retries=3, backoff_ms=5000)), 1)
    assert (result.results[0].outcome, result.results[0].attempts) == (Outcome.ERROR, 1)
    assert result.makespan_ms == 2000 and not labels(result)


def test_a_crash_stops_everything_the_scheduler_spawned() -> None:
    """Regression: the plan runtime's per-call processes kept starting calls after a crash."""
    sc = scenario([("a", "web_search", {"query": "1"}), ("b", "terminal", {"command": "true"}),
                   ("c", "web_search", {"query": "2"})], faults={"crash": {"at_ms": 100}})
    result = run(sc, get_scheduler("partition"), 1)  # segments [a] [b] [c]: b and c would start later
    starts = [e["call"] for e in result.trace if e["ev"] == "start"]
    assert starts == ["a"] and not labels(result)
    assert not [e for e in result.trace if e["ev"] in ("note", "skip") and e["t"] > 100]


def test_a_slot_freed_in_the_instant_of_an_interrupt_starts_nothing() -> None:
    """Regression: with a cap of one, the second call's slot frees at the very millisecond of the
    interrupt; it used to start anyway (start-after-interrupt)."""
    sc = scenario([("a", "web_search", {"query": "1"}), ("b", "web_search", {"query": "2"})],
                  tools={"web_search": {"latency": {"fixed": 100}}}, max_concurrency=1,
                  interrupt={"at_ms": 100, "grace_ms": 0})
    result = run(sc, get_scheduler("partition"), 1)
    assert [r.outcome for r in result.results] == [Outcome.OK, Outcome.CANCELLED]
    assert not labels(result)
