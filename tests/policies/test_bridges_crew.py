"""Both bridges under several agents at once (`[[agents]]`): each agent's batch is its own executor
invocation, all on the one virtual clock, side by side, as the built-in `parallel` runs them.

The user trial's false failures: a second agent's first batch took the asyncio bridge's loop back
(cancelling the first agent's running executor: `CancelledError escaped execute`), and the thread
bridge's two batches' reapers rescheduled each other at one instant until the event budget ran out
(a false hang at 800 ms).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from time import sleep  # a name the thread bridge swaps in this module while a batch runs
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.bridges import from_asyncio
from harness.bridges.threads import from_threads
from harness.oracles import check
from harness.run import RunResult, RunStatus

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


async def readme_execute(tool_calls: Any, tools: Any) -> list[Any]:
    """The README's asyncio executor (design note 003's), verbatim."""
    async def one(tc: Any) -> dict[str, Any]:
        try:
            result = await asyncio.wait_for(tools[tc.function.name](**json.loads(tc.function.arguments)), 10)
            return {"id": tc.id, "success": True, "result": result}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": str(error)}
    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


def docs_threads_execute(tool_calls: Any, run_tool: Any, interrupted: Any) -> list[Any]:
    """docs/threads.md's first example, verbatim."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    while True:
        _, not_done = concurrent.futures.wait(futures, timeout=5.0)
        if not not_done:
            break
        if interrupted.is_set():
            for future in not_done:
                future.cancel()
            concurrent.futures.wait(not_done, timeout=3.0)
            break
    pool.shutdown(wait=False, cancel_futures=True)

    def answer(tc: Any, f: Any) -> Any:
        if f.cancelled():
            return {"tool_call_id": tc.id, "outcome": "cancelled"}
        if not f.done():
            return {"tool_call_id": tc.id, "outcome": "unknown"}
        return f.exception() or {"tool_call_id": tc.id, "content": f.result()}
    return [answer(tc, f) for tc, f in zip(tool_calls, futures, strict=True)]


BRIDGES = {"asyncio": lambda: from_asyncio(readme_execute), "threads": lambda: from_threads(docs_threads_execute)}


def turns(result: RunResult) -> list[tuple[str | None, str, int, int, list[tuple[str, str, int, int]]]]:
    return [(b.agent, b.batch.label, b.start_ms, b.end_ms,
             [(r.call_id, r.outcome.value, r.start_ms, r.end_ms) for r in b.results]) for b in result.batches]


def labels(result: RunResult) -> list[str]:
    return sorted({v.label or "" for v in check(result) if not v.ok})


@pytest.mark.parametrize("bridge", sorted(BRIDGES))
@pytest.mark.parametrize("name", ["two-agents-report", "subagents-notes"])
def test_concurrent_agents_run_side_by_side_as_parallel_does(bridge: str, name: str) -> None:
    reference = run(find_scenario(name), get_scheduler("parallel"), 5)
    result = run(find_scenario(name), BRIDGES[bridge](), 5)
    assert result.status is RunStatus.COMPLETED, result.error
    assert all(b.status is RunStatus.COMPLETED for b in result.batches)
    # Every agent's turns overlap exactly as under `parallel` (all calls at once), on one clock...
    assert turns(result) == turns(reference)
    assert result.makespan_ms == reference.makespan_ms
    assert {agent: o.status for agent, o in result.agents.items()} == {
        agent: o.status for agent, o in reference.agents.items()}
    # ... so the race between the agents is found, and nothing else (no scheduler-error, orphan, hang).
    assert labels(result) == labels(reference) == ["cross-agent-lost-update"]


@pytest.mark.parametrize("bridge", sorted(BRIDGES))
def test_concurrent_agents_under_a_bridge_are_deterministic(bridge: str) -> None:
    first = run(find_scenario("two-agents-report"), BRIDGES[bridge](), 3)
    again = run(find_scenario("two-agents-report"), BRIDGES[bridge](), 3)
    assert first.fingerprint == again.fingerprint


def test_each_agents_batch_reports_only_its_own_leftover_tasks() -> None:
    """Two agents' executors share the run's loop; a task one leaves pending is named in its own
    batch's note, never in the other agent's batch running at the time."""
    keep: list[asyncio.Task[Any]] = []

    async def leaves_a_task(tool_calls: Any, tools: Any) -> list[Any]:
        if tool_calls[0].id.startswith("ops/"):
            keep.append(asyncio.ensure_future(asyncio.sleep(60)))
        return await readme_execute(tool_calls, tools)

    result = run(find_scenario("two-agents-report"), from_asyncio(leaves_a_task), 5)
    assert result.status is RunStatus.COMPLETED, result.error
    notes = [(e["t"], e["text"]) for e in result.trace
             if e["ev"] == "note" and "still pending" in str(e.get("text"))]
    ops_ends = [b.end_ms for b in result.batches if b.agent == "ops"]
    # Both ops batches, one leftover each; sales/report (3950-4250 ms) overlaps the ops batch that
    # made the second one and reports none.
    assert [t for t, _ in notes] == ops_ends
    assert all("1 task(s)" in text for _, text in notes)
    assert labels(result) == ["cross-agent-lost-update"]


def sleeps_by_name(tool_calls: Any, run_tool: Any) -> list[Any]:
    values = []
    for tc in tool_calls:
        sleep(0.25)  # this module's global, swapped while a batch runs
        values.append({"tool_call_id": tc.id, "content": run_tool(tc)})
        sleep(0.25)
    return values


def sleeps_by_attribute(tool_calls: Any, run_tool: Any) -> list[Any]:
    values = []
    for tc in tool_calls:
        time.sleep(0.25)  # the module attribute, patched while any batch runs
        values.append({"tool_call_id": tc.id, "content": run_tool(tc)})
        time.sleep(0.25)
    return values


def test_names_an_executor_imported_stay_bridged_until_the_last_concurrent_batch_ends() -> None:
    """`from time import sleep` in the executor's module: the batch that swapped the name ends while
    the other agent's batch still sleeps; its sleeps stay virtual (a real sleep would take no virtual
    time and change the timeline)."""
    by_name = run(find_scenario("two-agents-report"), from_threads(sleeps_by_name), 5)
    by_attribute = run(find_scenario("two-agents-report"), from_threads(sleeps_by_attribute), 5)
    assert by_name.status is RunStatus.COMPLETED, by_name.error
    assert turns(by_name) == turns(by_attribute)
    assert by_name.makespan_ms == by_attribute.makespan_ms
    assert sleep is time.sleep  # restored after the run
