"""openai-agents 0.24 through `from_asyncio`: the SDK's `Runner` runs a turn's function tools all at
once (a lost update on `config-clobber`, as the built-in `parallel`), reports them in model order,
keeps a failing tool's siblings, and a tool timeout leaves a ghost ticket behind. Sync function tools
go to a thread (4 s on sync-tool-on-loop); before 0.8 they ran on the loop (9 s, the loop held)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents.testing")

from harness import get_scheduler
from harness.oracles import check
from harness.recipes.openai_agents import scheduler
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.runtimes.findings import OFFLOADED, ON_LOOP, reported, sync_tools_run, tried


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_function_tools_of_one_turn_run_in_parallel_and_lose_an_update(seed: int) -> None:
    result, found = tried("config-clobber", scheduler, seed)
    builtin, expected = tried("config-clobber", get_scheduler("parallel"), seed)
    assert set(found) == {"lost-update"} and found["lost-update"] == expected["lost-update"]
    assert result.makespan_ms == builtin.makespan_ms == {1: 825, 2: 839, 3: 765}[seed]
    assert [(r.start_ms, r.outcome.value) for r in result.results] == [(0, "ok"), (0, "ok")]


def test_check_scheduler_names_the_lost_update() -> None:
    with pytest.raises(SchedulerCheckFailed, match="lost-update"):
        check_scheduler(scheduler, scenarios=["config-clobber"], profile="quick", generated=False, swarm=False)


def test_results_come_back_in_model_order_in_the_parallel_makespan() -> None:
    result, found = tried("incident-triage", scheduler)
    assert found == {} and result.makespan_ms == 4000
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]


def test_a_tool_timeout_leaves_a_ghost_ticket() -> None:
    # duplicate-ticket: [execution] timeout_ms = 500 (the glue's timeout_seconds); the ticket API
    # creates the ticket at 450 ms and answers at 900. The SDK's wait_for gives up at 500 ms and tells
    # the model "timed out"; the ticket exists anyway.
    result, found = tried("duplicate-ticket", scheduler)
    assert set(found) == {"ghost-effect"} and result.makespan_ms == 500
    assert found["ghost-effect"] == {"call": "open-ticket", "reported": "timeout", "reported_at_ms": 500,
                                     "effects": [{"t": 450, "op": "append", "target": "ledger:tickets"}]}
    assert result.results[0].error == "Tool 'create_ticket' timed out after 0.5 seconds."


def test_a_failing_tool_leaves_its_siblings_running_to_the_end() -> None:
    result, found = tried("cascade-cancel", scheduler, seed=2)  # web_search fails at 311 ms
    assert found == {} and result.makespan_ms == 1159
    assert reported(result) == [("build", "ok"), ("search", "error"), ("readme", "ok")]


def test_same_seed_same_fingerprint() -> None:
    assert tried("config-clobber", scheduler, 2)[0].fingerprint == tried("config-clobber", scheduler, 2)[0].fingerprint


def test_identical_calls_with_different_ids_each_run_once() -> None:
    result, found = tried("restart-rollback-restart", scheduler)
    assert sorted(r.call_id for r in result.results if r.attempts == 1) == ["restart-1", "restart-2", "rollback"]
    assert set(found) == {"reordered-effect"}  # what pydantic-ai and smolagents show: parallel effects reorder


def test_sync_function_tools_go_to_a_thread_as_since_0_8() -> None:
    # sync-tool-on-loop: the glue gives the SDK the two sync tools as plain functions (`function_tool`),
    # which since 0.8 runs them with `asyncio.to_thread`: the three queries at once, nothing holds the loop.
    result, found = tried("sync-tool-on-loop", scheduler)
    assert found == {} and sync_tools_run(result) == OFFLOADED
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]


def test_before_0_8_sync_function_tools_froze_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.7.0's `function_tool` called a sync function in place (`result = the_func(...)`) where 0.8 has
    # `await asyncio.to_thread(the_func, ...)`, the only change to that path: here 0.24 with that line
    # put back. (docs/recipes/openai-agents.md: 0.7.0 itself, in a venv of its own, gives the same run.)
    import asyncio

    import agents.tool

    class InPlace:
        def __getattr__(self, name: str) -> Any:
            return getattr(asyncio, name)

        @staticmethod
        async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

    monkeypatch.setattr(agents.tool, "asyncio", InPlace())
    result, found = tried("sync-tool-on-loop", scheduler)
    assert sync_tools_run(result) == ON_LOOP
    # The liveness oracle names the frozen loop: each sync tool held it while the other calls' tasks were
    # ready, so the check tells 0.7 from 0.8 (the results themselves are right, only late).
    assert set(found) == {"loop-blocked"} and found["loop-blocked"]["by"] == "sync-tool"
    holds = [x for verdict in check(result) for x in verdict.violations if x.label == "loop-blocked"]
    assert {str(x.witness["what"]) for x in holds} == {
        "the sync tool query_service_logs (call-logs)", "the sync tool query_service_metrics (call-metrics)"}
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]
