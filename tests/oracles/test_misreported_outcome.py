"""`misreported-outcome`: the outcome a scheduler reports must be what the call did. A success
reported as a failure (hermes-agent's "[Result unavailable]") and a failure reported as a success are
caught; timeouts, cancels, retries, interrupts, skips, rollbacks and ties with the scheduler's own
timer are not misreports, and no other label of the protocol oracle says the same thing twice."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest
import simpy
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness import find_scenario, get_scheduler, run, scheduler_names
from harness.cli import main
from harness.exitcodes import ExitCode
from harness.faults.failures import FailureModel
from harness.model import Batch, CallResult, Outcome
from harness.oracles import ORACLES, check, exit_code
from harness.oracles.verdict import Kind, Violation
from harness.policies import Parallel
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.scheduling import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.strategies import batches
from harness.testing import SchedulerCheckFailed, check_scheduler
from harness.world import World
from tests.catalogue import buggy
from tests.helpers import scenario
from tests.oracles import schedulers as broken

LABEL = "misreported-outcome"
Process = Generator[simpy.Event, Any, list[CallResult]]


def misreported(result: RunResult) -> list[Violation]:
    return [v for v in ORACLES["protocol"](result).violations if v.label == LABEL]


def labels(result: RunResult) -> list[str]:
    return [v.label for verdict in check(result) for v in verdict.violations]


# -- a success reported as a failure -------------------------------------------------------------------


def test_results_stubbed_out_after_the_calls_succeeded_are_caught() -> None:
    result = run(find_scenario("compare-three-files"), broken.StubsResults(), 3)
    found = misreported(result)
    assert [v.witness["call"] for v in found] == ["read-a", "read-b", "read-c"]
    w = found[0].witness
    assert (w["actual"], w["attempt"], w["abandoned"], w["reported"], w["reported_error"]) == (
        "ok", 1, False, "error", "[Result unavailable]")
    assert w["ended_at_ms"] == 193 < w["reported_at_ms"] == result.makespan_ms
    # Reads change nothing: before this label every oracle passed.
    assert labels(result) == [LABEL] * 3
    assert exit_code(check(result)) is ExitCode.SAFETY_VIOLATION
    assert all(v.kind is Kind.SAFETY for v in found)


@pytest.mark.parametrize("outcome", [Outcome.TIMEOUT, Outcome.CANCELLED, Outcome.UNKNOWN])
def test_every_failed_outcome_counts(outcome: Outcome) -> None:
    found = misreported(run(find_scenario("compare-three-files"), broken.StubsResults(outcome, None), 3))
    assert len(found) == 3 and {v.witness["reported"] for v in found} == {outcome.value}


def test_a_stubbed_write_is_also_a_ghost_effect_of_the_world() -> None:
    # The report is wrong (protocol) and the world holds an effect the model is told did not happen
    # (serializability): two oracles, two findings, as for fabricated and mispaired results.
    sc = scenario([("w", "write_file_atomic", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"})
    assert labels(run(sc, broken.StubsResults(), 1)) == [LABEL, "ghost-effect"]


def test_the_command_line_and_check_scheduler_catch_it() -> None:
    ran = CliRunner().invoke(main, ["run", "compare-three-files", "--seed", "5",
                                    "--scheduler", "tests.oracles.schedulers:StubsResults"])
    assert ran.exit_code == ExitCode.SAFETY_VIOLATION, ran.output
    assert f"FAILED ({LABEL})" in ran.output
    assert "why (misreported-outcome): read-a ended ok at" in " ".join(ran.output.split())
    with pytest.raises(SchedulerCheckFailed) as failure:
        check_scheduler(broken.StubsResults(), profile="quick")
    assert LABEL in {found.label for found in failure.value.failures}


def test_the_catalogue_entry_is_invisible_to_every_other_oracle() -> None:
    result = run(find_scenario("code-review"), buggy.ResultUnavailable(), 2)
    assert set(labels(result)) == {LABEL}
    # The four reads ran as one segment; the last to end did so in the millisecond the batch answered.
    assert len(misreported(result)) == 3


# -- a failure reported as a success ---------------------------------------------------------------


def test_a_failure_reported_ok_is_caught_once_not_also_as_mispaired() -> None:
    sc = scenario([("a", "web_search", {"query": "a"}), ("b", "web_search", {"query": "b"})],
                  tools={"web_search": {"latency": {"fixed": 200}}})
    sc = replace(sc, call_failures={"b": FailureModel(attempts=(1,))})
    result = run(sc, broken.SwallowsFailures(), 1)
    protocol = ORACLES["protocol"](result).violations
    assert [v.label for v in protocol] == [LABEL]
    w = protocol[0].witness
    assert (w["call"], w["reported"], w["actual"], w["ended_at_ms"], w["abandoned"]) == ("b", "ok", "error", 100, False)
    assert w["actual_error"].startswith("transient failure")


def test_a_timed_out_call_reported_ok_is_caught() -> None:
    sc = scenario([("slow", "web_search", {"query": "a"})], tools={"web_search": {"latency": {"fixed": 500}}})
    (found,) = misreported(run(sc, broken.SwallowsFailures(timeout_ms=100), 1))
    assert (found.witness["actual"], found.witness["abandoned"], found.witness["ended_at_ms"]) == ("timeout", True, 100)


def test_fabricated_and_mispaired_results_keep_their_own_labels() -> None:
    triage = find_scenario("incident-triage")
    assert {v.label for v in ORACLES["protocol"](run(triage, broken.Fabricates(), 1)).violations} == {
        "fabricated-result"}
    assert {v.label for v in ORACLES["protocol"](run(triage, broken.Relabels(), 1)).violations} == {
        "mispaired-result"}


# -- what is not a misreport -----------------------------------------------------------------------


def test_a_timeout_imposed_while_the_call_ran_is_not_a_misreport() -> None:
    # The ticket lands after the timeout: a ghost effect (serializability), not a misreported outcome.
    ticket = scenario([("t", "create_ticket", {"title": "outage"})])
    assert misreported(run(ticket, broken.TimesOut(100), 1)) == []
    assert "ghost-effect" in labels(run(ticket, broken.TimesOut(100), 1))


RETRIED = """
name = "retried"
[execution]
timeout_ms = 500
retries = 1
backoff_ms = 100
honest_outcomes = {honest}
[tools.create_ticket]
latency = {{ per_attempt = [900, 300] }}
declared = {{ idempotent = true }}
[[batches]]
[[batches.calls]]
id = "t"
name = "create_ticket"
arguments = '{{"title": "outage"}}'
failure = {{ attempts = [2] }}
"""


@pytest.mark.parametrize("honest", [True, False])
def test_a_retry_is_judged_by_its_last_attempt(honest: bool, tmp_path: Any) -> None:
    # Attempt 1 times out and lands later, detached; attempt 2 fails: the runtime saw a failure.
    from harness import load_scenario

    path = tmp_path / "retried.toml"
    path.write_text(RETRIED.format(honest=str(honest).lower()))
    result = run(load_scenario(path), get_scheduler("partition"), 1)
    (reported,) = result.results
    assert reported.outcome is (Outcome.UNKNOWN if honest else Outcome.ERROR) and reported.attempts == 2
    assert misreported(result) == []
    # Without honest outcomes the landed first attempt is serializability's ghost effect.
    assert ("ghost-effect" in labels(result)) is not honest


def test_unknown_after_an_abandoned_attempt_is_honest() -> None:
    sc = scenario([("t", "create_ticket", {"title": "outage"})],
                  tools={"create_ticket": {"latency": {"per_attempt": [900, 300]}}})

    def careful(batch: Batch, ctx: SchedulerContext) -> Process:
        call = batch.calls[0]
        first = yield ctx.with_timeout(ctx.start(call, idempotency_key="k"), 500)
        second = yield ctx.start(call, attempt=2, idempotency_key="k")
        yield ctx.sleep(1)
        # Attempt 2 succeeded, but attempt 1 may land too: the runtime says it cannot tell.
        assert first.outcome is Outcome.TIMEOUT and second.ok
        return [CallResult(call.id, Outcome.UNKNOWN, None, "effect unknown", 2, 0, ctx.now)]

    assert misreported(run(sc, careful, 1)) == []  # type: ignore[arg-type]

    def careless(batch: Batch, ctx: SchedulerContext) -> Process:
        call = batch.calls[0]
        second = yield ctx.start(call, attempt=1)
        yield ctx.sleep(1)
        return [CallResult(call.id, Outcome.UNKNOWN, None, "effect unknown", 1, 0, ctx.now)] if second.ok else []

    (found,) = misreported(run(sc, careless, 1))  # type: ignore[arg-type]
    assert found.witness["reported"] == "unknown"


def rolls_back(undo: bool, path: str) -> Any:
    """Runs the batch's calls one by one after a checkpoint, rolls back (`path` only) if `undo`, and
    reports every call failed."""
    def scheduler(batch: Batch, ctx: SchedulerContext) -> Process:
        checkpoint = ctx.checkpoint("before the batch")
        for call in batch:
            yield ctx.start(call)
        if undo:
            ctx.rollback(checkpoint, [path])
        yield ctx.sleep(1)
        return [CallResult(c.id, Outcome.ERROR, None, "rolled back", 1, 0, ctx.now) for c in batch]
    return scheduler


def test_a_failure_reported_after_a_rollback_undid_the_call_is_honest() -> None:
    sc = scenario([("w", "write_file_atomic", {"path": "a.txt", "content": "new"}),
                   ("r", "read_file", {"path": "a.txt"}), ("other", "read_file", {"path": "b.txt"})],
                  files={"/repo/a.txt": "old", "/repo/b.txt": "b"})
    # The rollback restored a.txt: the write is undone and the read saw a state that is gone; b.txt's
    # read is untouched by it, and its result was dropped.
    assert [v.witness["call"] for v in misreported(run(sc, rolls_back(True, "/repo/a.txt"), 1))] == ["other"]
    assert [v.witness["call"] for v in misreported(run(sc, rolls_back(False, "/repo/a.txt"), 1))] == [
        "w", "r", "other"]


def test_a_call_that_ends_in_the_millisecond_of_the_answer_is_not_judged() -> None:
    # The scheduler's own timer falls on the tool's return: it may have given up first (a `wait_for`
    # at exactly its timeout), and nothing in the trace says which came first.
    sc = scenario([("q", "web_search", {"query": "a"})], tools={"web_search": {"latency": {"fixed": 100}}})

    def times_out_at(ms: int) -> Any:
        def scheduler(batch: Batch, ctx: SchedulerContext) -> Process:
            ctx.start(batch.calls[0])
            yield ctx.sleep(ms, "timeout")
            return [CallResult("q", Outcome.TIMEOUT, None, f"timed out after {ms} ms", 1, 0, ctx.now)]
        return scheduler

    on_the_dot = run(sc, times_out_at(100), 1)
    assert [(e["t"], e["outcome"]) for e in on_the_dot.trace if e["ev"] == "end"] == [(100, "ok")]
    assert on_the_dot.batches[0].end_ms == 100 and misreported(on_the_dot) == []
    # A millisecond later the result was there to be read.
    assert [v.witness["ended_at_ms"] for v in misreported(run(sc, times_out_at(101), 1))] == [100]


def test_skipped_denied_and_dropped_calls_are_not_misreports() -> None:
    # Never started: dropped-call (liveness) says it, once.
    capped = run(find_scenario("incident-triage"), buggy.CapsByCancelling(), 5)
    assert "dropped-call" in labels(capped) and misreported(capped) == []
    for seed in (1, 2, 3):
        approvals = run(find_scenario("ops-approvals"), get_scheduler("partition"), seed)
        assert misreported(approvals) == []


@pytest.mark.parametrize("name", ["cascade-cancel", "interrupt-midbatch", "interrupt-search-fanout", "ticket-retry",
                                  "duplicate-ticket", "tool-disabled", "max-round-exceeded", "ops-approvals"])
def test_built_in_policies_report_what_happened(name: str) -> None:
    sc = find_scenario(name)
    for scheduler in scheduler_names():
        for seed in (1, 2, 3, 4):
            assert misreported(run(sc, get_scheduler(scheduler), seed, jitter=0.5)) == [], (scheduler, seed)


# -- properties ----------------------------------------------------------------------------------------

FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/src/c.txt": "gamma\n"}
TOOLS = ("read_file", "write_file", "patch", "search_files", "web_search", "terminal", "create_ticket", "run_tests")
POLICIES = ("serial", "parallel", "partition", "partition_cancel", "resource_keys", "hermes_segments", "rwlock")


def generated(batch: Batch, failure_rate: float, timeout_ms: int | None, retries: int,
              interrupt_at: int | None) -> Scenario:
    from harness.scenario.spec import Interrupt

    world = World(cwd="/repo")
    world.populate(files=sorted(FILES.items()))
    return Scenario(name="generated", batches=(batch,), world=world.state(),
                    tool_failures={tool: FailureModel(rate=failure_rate) for tool in TOOLS} if failure_rate else {},
                    execution=ExecutionPolicy(timeout_ms=timeout_ms, retries=retries, backoff_ms=50),
                    interrupt=None if interrupt_at is None else Interrupt(interrupt_at, 300))


@given(batches(max_size=5, tools=TOOLS), st.sampled_from(POLICIES), st.sampled_from([0.0, 0.3]),
       st.none() | st.sampled_from([200, 600, 1000]), st.integers(0, 2),
       st.none() | st.integers(0, 2000), st.integers(0, 1000))
def test_built_in_policies_never_misreport(batch: Batch, policy: str, failure_rate: float, timeout_ms: int | None,
                                           retries: int, interrupt_at: int | None, seed: int) -> None:
    """Whatever the batch, failures, timeouts, retries and interrupts, a built-in policy reports each
    call as it ended, or as it was given up on."""
    result = run(generated(batch, failure_rate, timeout_ms, retries, interrupt_at), get_scheduler(policy), seed)
    assert misreported(result) == []


class StubsSome:
    """Parallel, then the results of the calls in `stub` replaced by an error a millisecond later."""

    name = "stubs-some"

    def __init__(self, stub: frozenset[str]) -> None:
        self.stub = stub

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from Parallel()(batch, ctx)
        yield ctx.sleep(1)
        return [CallResult(r.call_id, Outcome.ERROR, None, "[Result unavailable]", r.attempts, r.start_ms, ctx.now)
                if r.call_id in self.stub else r for r in results]


@given(batches(max_size=5, tools=TOOLS), st.sets(st.integers(1, 5)), st.sampled_from([0.0, 0.3]),
       st.integers(0, 1000))
def test_exactly_the_stubbed_successes_are_reported(batch: Batch, stubbed: set[int], failure_rate: float,
                                                   seed: int) -> None:
    stub = frozenset(f"call-{i}" for i in stubbed)
    sc = generated(batch, failure_rate, None, 0, None)
    honest = run(sc, get_scheduler("parallel"), seed)
    expected = [r.call_id for r in honest.results if r.ok and r.call_id in stub]
    result = run(sc, StubsSome(stub), seed)
    assert [v.witness["call"] for v in misreported(result)] == expected


# -- in words --------------------------------------------------------------------------------------


def test_the_story_shows_what_the_call_did_and_what_the_model_was_told() -> None:
    from harness.report.story import render, story

    result = run(find_scenario("compare-three-files"), broken.StubsResults(), 3)
    told = story(misreported(result)[0], result)
    assert told is not None and told.model_order == ("read-a",)
    assert [(s.t, s.text, s.race) for s in told.steps] == [
        (0, "start", None), (193, "end ok", "what it did"),
        (result.makespan_ms, "reported error: [Result unavailable]", "what the model was told")]
    lines = render(told)
    assert lines[2].endswith("<- misreported-outcome: what it did")
    assert "only read-a takes part" in lines[-1]


def test_the_why_line_of_a_failure_reported_ok() -> None:
    from harness.report.explain import explain

    sc = scenario([("slow", "web_search", {"query": "a"})], tools={"web_search": {"latency": {"fixed": 500}}})
    result = run(sc, broken.SwallowsFailures(timeout_ms=100), 1)
    assert explain(misreported(result)[0], result) == (
        "Batch 0 reported slow ok at 100 ms, but none of its attempts succeeded: its last was given up on as timeout "
        "at 100 ms. The model is told about work that did not happen and acts on a result no attempt returned.")
