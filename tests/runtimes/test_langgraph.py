"""LangGraph 1.2 through `from_asyncio`: `ToolNode` in a one-node graph gathers a turn's calls all at
once (a lost update on `config-clobber`) and reports them in model order; when one tool fails it
raises out of the graph while a sibling keeps running: `scheduler-error` and `orphaned-call`."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.prebuilt")

from harness import get_scheduler
from harness.recipes.langgraph import scheduler
from tests.runtimes.findings import OFFLOADED, reported, sync_tools_run, tried


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_toolnode_runs_the_turn_in_parallel_and_loses_an_update(seed: int) -> None:
    result, found = tried("config-clobber", scheduler, seed)
    builtin, expected = tried("config-clobber", get_scheduler("parallel"), seed)
    assert set(found) == {"lost-update"} and found["lost-update"] == expected["lost-update"]
    assert result.makespan_ms == builtin.makespan_ms
    assert [r.start_ms for r in result.results] == [0, 0]


def test_results_come_back_in_model_order_in_the_parallel_makespan() -> None:
    result, found = tried("incident-triage", scheduler)
    assert found == {} and result.makespan_ms == 4000
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]


def test_one_failing_tool_raises_while_a_sibling_keeps_running() -> None:
    # cascade-cancel, seed 2: web_search fails (503) at 311 ms. ToolNode's default handle_tool_errors
    # re-raises it, gather propagates it at once and the graph raises, with the build still running.
    _, found = tried("cascade-cancel", scheduler, seed=2)
    assert set(found) == {"scheduler-error", "orphaned-call"}
    assert found["scheduler-error"]["error"] == \
        "ExecutorError: execute raised ToolFailed: transient failure: 503 Service Unavailable"
    # The build is left running by the graph's gather: the bridge lets it run on after the run's batch (it
    # is not cancelled quietly at the end), so it ends, and its effect lands, in the run.
    assert found["orphaned-call"] == {"batch": 0, "call": "build", "status": "scheduler-error",
                                      "returned_at_ms": 311, "call_ended_at_ms": 1159}


def test_without_a_failure_the_same_batch_passes() -> None:
    result, found = tried("cascade-cancel", scheduler, seed=1)
    assert found == {} and result.makespan_ms == 726
    assert reported(result) == [("build", "ok"), ("search", "ok"), ("readme", "ok")]


def test_identical_calls_with_different_ids_each_run_once() -> None:
    result, found = tried("restart-rollback-restart", scheduler)
    assert sorted(r.call_id for r in result.results if r.attempts == 1) == ["restart-1", "restart-2", "rollback"]
    assert set(found) == {"reordered-effect"}  # what pydantic-ai and smolagents show: parallel effects reorder


def test_toolnode_runs_sync_tools_in_the_loops_executor() -> None:
    # The glue gives LangChain the two sync tools as plain functions (`StructuredTool(func=...)`); under
    # `ainvoke` LangChain runs them with `loop.run_in_executor`: the three queries at once.
    result, found = tried("sync-tool-on-loop", scheduler)
    assert found == {} and sync_tools_run(result) == OFFLOADED
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]
