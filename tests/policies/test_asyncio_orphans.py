"""Orphans are reported, never tidied away (issue 24, items 6 and 7): what a runtime leaves running
after its turn ended or was cancelled runs on in virtual time, its effects land in the run, and the
liveness oracle names it; a call the bridge reported skipped and the runtime's leftover task started
later is `start-after-interrupt`.

The broken executor is pydantic-ai's Ctrl-C bug as it is written: tool tasks made with
`create_task`, awaited, and on `CancelledError` the executor re-raises without cancelling them.
Before, the bridge abandoned their calls for it at the interrupt and cancelled the tasks at the end
of the run: every oracle passed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.bridges.asyncio.settling import SKIPPED_BY_BRIDGE
from harness.bridges.leftovers import RUN_ON_MS
from harness.oracles import check
from harness.run import RunResult
from harness.scenario.spec import Interrupt
from tests.helpers import scenario


def _found(result: RunResult) -> list[tuple[str, dict[str, Any], str]]:
    return [(v.label, dict(v.witness), v.message) for verdict in check(result) for v in verdict.violations]


def _labels(result: RunResult) -> set[str]:
    return {label for label, _, _ in _found(result)}


def _reply(tool_calls: list[Any], tasks: list[asyncio.Task[Any]]) -> list[dict[str, Any]]:
    return [{"id": tc.id, "success": True, "result": t.result()} if t.exception() is None
            else {"id": tc.id, "success": False, "error": str(t.exception())}
            for tc, t in zip(tool_calls, tasks, strict=True)]


async def leaves_tool_tasks(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """pydantic-ai before the fix: Ctrl-C cancels the run, the tool tasks it made go on."""
    tasks = [asyncio.create_task(tools[tc.function.name](**json.loads(tc.function.arguments))) for tc in tool_calls]
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        raise  # the bug: the tool tasks are not cancelled
    return _reply(tool_calls, tasks)


async def cancels_tool_tasks(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """The same executor, fixed: on CancelledError it cancels its tool tasks before re-raising."""
    tasks = [asyncio.create_task(tools[tc.function.name](**json.loads(tc.function.arguments))) for tc in tool_calls]
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        raise
    return _reply(tool_calls, tasks)


def _slow_write() -> Any:
    # The write takes 5 s; the user interrupts at 1 s with a 500 ms grace.
    return scenario([("probe", "read_file", {"path": "/repo/a.txt"}),
                     ("save", "write_file", {"path": "/repo/out.txt", "content": "saved\n"})],
                    files={"/repo/a.txt": "a\n"}, tools={"write_file": {"latency": {"fixed": 5000}}},
                    interrupt={"at_ms": 1000, "grace_ms": 500})


def test_tool_tasks_left_running_after_the_interrupt_are_orphans_whose_effects_land() -> None:
    result = run(_slow_write(), from_asyncio(leaves_tool_tasks), 3)
    found = {label: (witness, message) for label, witness, message in _found(result)}
    assert set(found) == {"orphaned-call", "grace-exceeded"}
    witness, message = found["orphaned-call"]
    assert witness == {"batch": 0, "call": "save", "status": "completed", "returned_at_ms": 1000,
                       "call_ended_at_ms": 5000, "interrupt_at_ms": 1000}
    assert message.startswith("save was left running by the runtime after its turn was cancelled by the user "
                              "interrupt at 1000 ms")
    # The write ran on after the turn and landed: the world shows it, the trace says the bridge let it.
    assert result.world.fs.get_object("/repo/out.txt").contents == "saved\n"
    end = next(e for e in result.trace if e["ev"] == "end" and e["call"] == "save")
    assert (end["t"], end["outcome"]) == (5000, "ok")
    notes = [e["text"] for e in result.trace if e["ev"] == "note"]
    assert any("left the tool task of save running after the interrupt" in n for n in notes), notes
    reported = {r.call_id: r.outcome.value for r in result.results}
    assert reported == {"probe": "ok", "save": "unknown"}


def test_a_runtime_that_cancels_its_tool_tasks_passes() -> None:
    result = run(_slow_write(), from_asyncio(cancels_tool_tasks), 3)
    assert _labels(result) == set()
    for name in ("interrupt-midbatch", "interrupt-search-fanout"):
        for seed in (1, 2, 3):
            assert _labels(run(find_scenario(name), from_asyncio(cancels_tool_tasks), seed)) == set(), (name, seed)


def test_the_broken_runtime_is_caught_under_the_default_delivery_on_the_builtin_interrupt_scenario() -> None:
    result = run(find_scenario("interrupt-midbatch"), from_asyncio(leaves_tool_tasks), 1)
    orphans = sorted(w["call"] for label, w, _ in _found(result) if label == "orphaned-call")
    assert orphans == ["metrics", "tests"]


async def returns_and_acts_later(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Answers the first call and leaves a task that makes the second one 4 s after the turn."""
    first, second = tool_calls

    async def later() -> None:
        await asyncio.sleep(4)
        await tools[second.function.name](**json.loads(second.function.arguments))

    value = await tools[first.function.name](**json.loads(first.function.arguments))
    asyncio.get_running_loop().create_task(later())
    return [{"id": first.id, "success": True, "result": value},
            {"id": second.id, "success": False, "error": "deferred"}]


def test_a_leftover_task_that_acts_after_the_run_s_last_batch_runs_on_and_its_effect_lands() -> None:
    sc = scenario([("probe", "read_file", {"path": "/repo/a.txt"}),
                   ("save", "write_file", {"path": "/repo/out.txt", "content": "late\n"})],
                  files={"/repo/a.txt": "a\n"})
    result = run(sc, from_asyncio(returns_and_acts_later, allow_unstarted_errors=True), 5)
    returned = result.batches[0].end_ms
    orphans = [(w, m) for label, w, m in _found(result) if label == "orphaned-call"]
    assert len(orphans) == 1
    witness, message = orphans[0]
    assert witness["call"] == "save" and witness["started_at_ms"] == returned + 4000
    assert message.startswith(f"save was started at {returned + 4000} ms by work the runtime left running after "
                              "its turn ended")
    assert result.world.fs.get_object("/repo/out.txt").contents == "late\n"
    # Before: the task was cancelled quietly when the run ended, the write never happened, nothing was reported.


_GATE = asyncio.Event()


async def waits_forever(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Leaves a task waiting on an event nobody sets: it is cancelled after the run-on, not run forever."""

    async def stuck() -> None:
        try:
            await _GATE.wait()
        except asyncio.CancelledError:
            seen.append(asyncio.get_running_loop().time())
            raise

    asyncio.get_running_loop().create_task(stuck())
    return list(await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                       for tc in tool_calls)))


seen: list[float] = []


def test_a_task_that_never_ends_is_cancelled_at_the_horizon() -> None:
    seen.clear()
    result = run(find_scenario("incident-triage"), from_asyncio(waits_forever), 1)
    assert _labels(result) == set()  # it made no call: nothing to report but the notes
    # Waiting on an event, it has no timer: the kernel runs out of events and the run-on stops at once.
    quiesce = next(e for e in result.trace if e["ev"] == "quiesce")
    assert quiesce["t"] <= result.makespan_ms + RUN_ON_MS and len(seen) == 1
    notes = [e["text"] for e in result.trace if e["ev"] == "note"]
    assert any("still pending after the run-on are cancelled: waits_forever.<locals>.stuck" in n for n in notes), notes


async def sleeps_long(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    async def nap() -> None:
        await asyncio.sleep(3600)

    asyncio.get_running_loop().create_task(nap())
    return list(await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                       for tc in tool_calls)))


def test_the_run_on_is_bounded_in_virtual_time() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(sleeps_long), 1)
    quiesce = next(e for e in result.trace if e["ev"] == "quiesce")
    assert quiesce["t"] == result.makespan_ms + RUN_ON_MS


# -- item 7: a call reported skipped and started later -------------------------------------------------


def test_a_call_the_bridge_reported_skipped_and_the_runtime_started_later_is_start_after_interrupt() -> None:
    # ops-approvals with an interrupt at 500 ms (as swarm makes it): the tool tasks waiting for the user's
    # approval were left running; ticket and restart are approved later and start then.
    sc = replace(find_scenario("ops-approvals"), interrupt=Interrupt(500, 500))
    result = run(sc, from_asyncio(leaves_tool_tasks), 1)
    found = _found(result)
    late = {w["call"]: (w, m) for label, w, m in found if label == "start-after-interrupt"}
    assert set(late) == {"ticket", "restart"}
    witness, message = late["ticket"]
    assert witness == {"call": "ticket", "interrupt_at_ms": 500, "started_at_ms": 1000, "skipped_at_ms": 500}
    assert "though it had been reported skipped at 500 ms" in message and "asyncio bridge" in message
    orphans = {w["call"] for label, w, _ in found if label == "orphaned-call"}
    assert orphans == {"logs"}, "a call that started after the interrupt is not also an orphan"
    skips = {e["call"]: e["reason"] for e in result.trace if e["ev"] == "skip" and e["t"] == 500}
    assert skips["ticket"] == SKIPPED_BY_BRIDGE
    assert "reported by the harness's asyncio bridge" in SKIPPED_BY_BRIDGE

    fixed = run(sc, from_asyncio(cancels_tool_tasks), 1)
    assert _labels(fixed) == set()
