"""Approvals (issue 12, item 4): runtimes ask the scripted user before a call that needs confirmation,
run only what was approved, and the `approvals` oracle catches every way of running one unapproved."""

from __future__ import annotations

import tomllib
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, Outcome
from harness.oracles import ORACLES, check
from harness.run import RunResult
from harness.scenario import scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scenario.load import ScenarioError
from harness.scheduling import SchedulerContext
from tests.catalogue import buggy
from tests.helpers import scenario

OPS = "ops-approvals"


def failures(result: RunResult) -> list[tuple[str, str | None, str]]:
    return [(v.oracle, v.label, v.message) for v in check(result) if not v.ok]


def approvals(result: RunResult) -> list[tuple[str, str, int]]:
    return [(e["call"], e["answer"], e["t"]) for e in result.trace if e["ev"] == "approval"]


def start_of(result: RunResult, call: str) -> int | None:
    return next((e["t"] for e in result.trace if e["ev"] == "start" and e["call"] == call), None)


# -- correct runtimes -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["serial", "parallel", "resource_keys", "partition", "hermes_segments", "dag"])
@pytest.mark.parametrize("seed", [1, 2])
def test_built_in_runtimes_run_only_what_the_user_approved(name: str, seed: int) -> None:
    result = run(find_scenario(OPS), get_scheduler(name), seed)
    assert failures(result) == []
    by_id = {r.call_id: r for r in result.results}
    assert by_id["restart"].ok and by_id["ticket"].ok and by_id["logs"].ok
    assert by_id["rollback"].outcome is Outcome.ERROR
    assert by_id["rollback"].error == "denied by the user: rollback_deployment was not run"
    assert by_id["clear-cache"].outcome is Outcome.ERROR
    assert by_id["clear-cache"].error == ("no answer from the user within 20000 ms, treated as denied: terminal was "
                                          "not run")
    # Denied and unanswered calls never started; the approved ones started after their approval.
    assert start_of(result, "rollback") is None and start_of(result, "clear-cache") is None
    answered = {call: t for call, answer, t in approvals(result) if answer == "approve"}
    restart_start = start_of(result, "restart")
    assert restart_start is not None and restart_start >= answered["restart"]
    # The world: the restart happened, the rollback did not, the cache is still there.
    assert [e.payload["op"] for e in result.final.ledger("operations")] == ["restart"]
    assert "/srv/order-service/cache/index.db" in result.final.file_map


def test_the_user_s_latency_comes_from_a_named_stream() -> None:
    """The restart's answer is drawn from approval/restart/1 (uniform 1-3 s): it depends on the seed,
    not on the scheduler."""
    times = {seed: dict((c, t) for c, _, t in approvals(run(find_scenario(OPS), get_scheduler("parallel"), seed)))
             for seed in (1, 2, 3)}
    assert len({t["restart"] for t in times.values()}) > 1
    for seed in (1, 2, 3):
        serial = dict((c, t) for c, _, t in approvals(run(find_scenario(OPS), get_scheduler("serial"), seed)))
        # Serial asks later (after the reads), but the user takes exactly as long.
        requested = next(e["t"] for e in run(find_scenario(OPS), get_scheduler("serial"), seed).trace
                         if e["ev"] == "approval_requested" and e["call"] == "restart")
        assert serial["restart"] - requested == times[seed]["restart"]


def test_without_approvals_every_tool_is_pre_approved() -> None:
    """No [approvals]: nothing is asked (no trace event), and a runtime that never asks passes."""
    sc = find_scenario("restart-rollback-restart")
    assert sc.approvals is None
    result = run(sc, NeverAsks(), 1)
    assert not [e for e in result.trace if e["ev"].startswith("approval")]
    assert ORACLES["approvals"](result).ok


def test_a_late_answer_is_a_denial_and_still_traced() -> None:
    sc = scenario([("t", "create_ticket", {"title": "outage"})], execution={"approval_timeout_ms": 500},
                  approvals={"default": {"answer": "approve", "latency": {"fixed": 2000}}})
    result = run(sc, get_scheduler("serial"), 1)
    assert result.results[0].outcome is Outcome.ERROR
    assert result.results[0].error is not None and result.results[0].error.startswith("no answer from the user within "
                                                                                        "500 ms")
    assert start_of(result, "t") is None
    assert failures(result) == []


def test_an_interrupt_while_waiting_for_approval_skips_the_call() -> None:
    sc = scenario([("t", "create_ticket", {"title": "outage"})], interrupt={"at_ms": 300, "grace_ms": 0},
                  approvals={"default": {"answer": "approve", "latency": {"fixed": 2000}}})
    for name in ("serial", "resource_keys", "parallel"):  # parallel started after the prompt before
        result = run(sc, get_scheduler(name), 1)
        assert result.results[0].outcome is Outcome.CANCELLED, name
        assert start_of(result, "t") is None
        assert failures(result) == []


# -- broken runtimes --------------------------------------------------------------------------------


class NeverAsks:
    """Starts every call at once and never asks anybody."""

    name = "never_asks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        handles = [ctx.start(call) for call in batch]
        yield ctx.all_of(handles)
        return [h.result for h in handles]


def unapproved(result: RunResult) -> list[dict[str, Any]]:
    verdict = ORACLES["approvals"](result)
    assert all(v.label == "unapproved-effect" for v in verdict.violations)
    return [dict(v.witness) for v in verdict.violations]


def test_a_runtime_that_never_asks_is_caught() -> None:
    found = {w["call"]: w for w in unapproved(run(find_scenario(OPS), NeverAsks(), 1))}
    assert sorted(found) == ["clear-cache", "restart", "rollback", "ticket"]  # the logs query needs no approval
    assert found["rollback"]["requested_at_ms"] is None and found["rollback"]["answer"] is None
    assert found["rollback"]["effects"] == [{"t": 1500, "op": "append", "target": "ledger:operations"}]


def test_starting_while_the_prompt_is_shown_is_caught() -> None:
    result = run(find_scenario(OPS), buggy.OptimisticApproval(), 1)
    found = {w["call"]: w for w in unapproved(result)}
    assert sorted(found) == ["clear-cache", "restart", "rollback", "ticket"]
    restart = found["restart"]
    assert restart["requested_at_ms"] == restart["started_at_ms"] == 0 and restart["answer"] is None
    assert restart["answer_after_start"]["answer"] == "approve"
    # The rollback the user denied landed anyway: cancelling does not unsend the request.
    assert found["rollback"]["answer_after_start"] == {"answer": "deny", "t": 1500}
    assert [e.payload["op"] for e in result.final.ledger("operations")] == ["rollback", "restart"]


def test_silence_taken_for_consent_is_caught() -> None:
    result = run(find_scenario(OPS), buggy.SilenceIsConsent(), 1)
    (found,) = unapproved(result)
    assert found["call"] == "clear-cache" and found["tool"] == "terminal"
    assert found["answer"] is None and found["started_at_ms"] - found["requested_at_ms"] == 20000
    assert found["effects"][0]["op"] == "remove"
    assert "/srv/order-service/cache/index.db" not in result.final.file_map


def test_a_retried_denial_is_caught() -> None:
    result = run(find_scenario(OPS), buggy.RetryDenied(), 1)
    found = {w["call"]: w for w in unapproved(result)}
    assert sorted(found) == ["clear-cache", "rollback"]  # the refused rollback, and the unanswered wipe
    rollback = found["rollback"]
    assert rollback["answer"] == "deny" and rollback["attempt"] == 2
    assert rollback["answered_at_ms"] < rollback["started_at_ms"]
    assert "after the user denied it" in ORACLES["approvals"](result).message


# -- the scenario file --------------------------------------------------------------------------------


def test_the_script_round_trips_through_a_reproducer() -> None:
    sc = find_scenario(OPS)
    again = scenario_from_data(scenario_to_data(sc), "<again>")
    assert again.approvals == sc.approvals
    assert run(again, get_scheduler("parallel"), 3).fingerprint == run(sc, get_scheduler("parallel"), 3).fingerprint


def _ops_data() -> dict[str, Any]:
    path = Path(__file__).parents[2] / "scenarios" / f"{OPS}.toml"
    return tomllib.loads(path.read_text())


@pytest.mark.parametrize(("change", "message"), [
    ({"approvals": {"users": {}}},
     "approvals.users: expected one of the keys calls, default, guard, patterns, tools (unknown key)"),
    ({"approvals": {"default": {"answer": "maybe"}}},
     'approvals.default.answer: expected one of "approve", "deny" or "none" (the user never answers), got \'maybe\''),
    ({"approvals": {"calls": {"clear-cache": {"answer": "none", "latency": {"fixed": 1}}}}},
     'approvals.calls.clear-cache.latency: expected no latency with answer = "none" (the user never answers)'),
    ({"approvals": {"calls": {"restart": {"latency": {"fixed": -1}}}}}, "approvals.calls.restart.latency: expected"),
    ({"approvals": {"tools": {"restart_servce": {}}}},
     "approvals.tools.restart_servce: expected a tool of the scenario (did you mean 'restart_service'?)"),
    ({"approvals": {"tools": {"read_file": {}}}},
     "approvals.tools.read_file: expected a tool declared needs_confirmation ('read_file' is not"),
    ({"approvals": {"calls": {"restrat": {}}}},
     "approvals.calls.restrat: expected the id of a call of the scenario (did you mean 'restart'?)"),
    ({"approvals": {"calls": {"logs": {}}}},
     "approvals.calls.logs: expected a call of a tool declared needs_confirmation ('logs' calls"),
    ({"approvals": "yes"}, "approvals: expected a table, got 'yes'"),
])
def test_bad_input_names_the_file_field_and_expectation(change: dict[str, Any], message: str) -> None:
    data = {**_ops_data(), **change}
    with pytest.raises(ScenarioError) as error:
        scenario_from_data(data, "ops.toml")
    assert str(error.value).startswith(f"ops.toml: {message}")


def test_a_loop_scenario_gets_approvals_through_its_scheduler() -> None:
    """incident-ticket-notify with a user who denies the ticket: the runtime does not open it, the
    notification gets no ticket id, and the model's final rule never fires."""
    path = Path(__file__).parents[2] / "scenarios" / "incident-ticket-notify.toml"
    data = tomllib.loads(path.read_text())
    data["approvals"] = {"calls": {"open-ticket": {"answer": "deny", "latency": {"fixed": 700}}}}
    sc = scenario_from_data(data, str(path))
    result = run(sc, get_scheduler("dag"), 1)
    ((call, answer, at),) = approvals(result)
    assert (call, answer) == ("open-ticket", "deny")
    assert at > result.batches[0].end_ms  # asked in the second turn, after the queries
    assert start_of(result, "open-ticket") is None
    assert ORACLES["approvals"](result).ok
    with pytest.raises(ScenarioError, match=r"approvals\.calls\.open-tickt: expected the id of a call"):
        scenario_from_data({**data, "approvals": {"calls": {"open-tickt": {}}}}, str(path))


def test_the_timeline_shows_requests_answers_and_rollbacks() -> None:
    from harness.report.run_text import describe_event

    result = run(find_scenario(OPS), get_scheduler("serial"), 1)
    lines = [(e.get("call"), describe_event(e)) for e in result.trace if e["ev"] in ("approval_requested", "approval")]
    assert ("rollback", "asks the user for approval") in lines and ("rollback", "the user answers deny") in lines
    assert ("clear-cache", "the user answers none") not in lines  # a user who never answers says nothing
    built = run(local_slow_build(), buggy.RollbackOnTimeout(), 4)
    words = [describe_event(e) for e in built.trace if e["ev"] in ("checkpoint", "rollback")]
    assert words[0] is not None and words[0].startswith("checkpoint 1 'before build' taken (file tree ")
    assert words[1] == "rolled back to checkpoint 1 'before build'"


def local_slow_build() -> Any:
    from tests.catalogue.cases import local

    return local("slow-build")()


def test_a_runtime_run_unchanged_through_a_bridge_gets_tools_that_ask() -> None:
    """A real executor has no approval step the harness can see: its tools ask the user first (as
    hermes' terminal tool does), a refusal is the tool's exception, and nothing unapproved runs."""
    import asyncio

    from harness.bridges import from_asyncio, from_threads
    from tests.policies.seed000_executor import execute as seed000

    async def gather(tool_calls: Any, tools: Any) -> list[dict[str, Any]]:
        async def one(tc: Any) -> dict[str, Any]:
            try:
                return {"id": tc.id, "success": True, "result": await tools[tc.function.name](**buggy._args(tc))}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}

        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    for scheduler in (from_asyncio(gather, name="gather"), from_threads(seed000)):
        result = run(find_scenario(OPS), scheduler, 1)
        assert failures(result) == [], scheduler.name
        assert start_of(result, "rollback") is None and start_of(result, "clear-cache") is None
        errors = {r.call_id: r.error or "" for r in result.results if not r.ok}
        assert sorted(errors) == ["clear-cache", "rollback"]
        assert "denied by the user" in errors["rollback"]


def test_a_shrunk_finding_keeps_a_loadable_script() -> None:
    """Shrinking drops calls; the reproducer keeps only the rules of the calls left, loads, and
    replays to the same fingerprint."""
    from harness.explore.engine import explore

    exploration = explore(find_scenario(OPS), buggy.SilenceIsConsent(), "random", runs=5, seed=1, shrink=True)
    finding = exploration.shrunk or exploration.found
    assert finding is not None and finding.label == "unapproved-effect"
    assert [call.id for call in finding.result.scenario.calls] == ["clear-cache"]
    data = scenario_to_data(finding.result.replayable)
    assert data["approvals"]["calls"] == {"clear-cache": {"answer": "none"}}
    again = run(scenario_from_data(data, "<reproducer>"), buggy.SilenceIsConsent(), finding.result.seed)
    assert again.fingerprint == finding.result.fingerprint


class AsksAnyway:
    """Asks before every call, whatever the scenario says."""

    name = "asks_anyway"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        results = []
        for call in batch:
            approval = yield ctx.approval(call)
            assert approval.approved and approval.requested_ms == approval.answered_ms == ctx.now
            results.append((yield ctx.start(call)))
        return results


def test_asking_in_auto_approve_mode_is_answered_at_once() -> None:
    result = run(find_scenario("restart-rollback-restart"), AsksAnyway(), 1)
    assert result.status.value == "completed"
    asked = [(e["ev"], e["call"], e.get("mode")) for e in result.trace if e["ev"].startswith("approval")]
    assert asked[:2] == [("approval_requested", "restart-1", "auto"), ("approval", "restart-1", "auto")]
    assert failures(result) == []


def test_an_approval_prompt_without_a_timeout_hangs_on_silence() -> None:
    result = run(find_scenario(OPS), buggy.PromptWithoutTimeout(), 1)
    (hang,) = ORACLES["liveness"](result).violations
    assert hang.label == "hang" and "clear-cache" in hang.message
