"""Sync tools inside an asyncio runtime: work `from_asyncio` hands to a thread runs on the thread bridge.

openai-agents, LangGraph, pydantic-ai and smolagents' async variants run a SYNC tool function in a
thread (`asyncio.to_thread`, `loop.run_in_executor`); the tool calls the simulated tool and blocks its
thread until the call ends, while the loop goes on with other tasks. Here that thread is a bridge
thread on the turnstile: one thread (or the loop) runs at a time, on the virtual clock, and `tools[name]`
called in it returns the value instead of an awaitable. The oracles judge what such an executor did;
runs are deterministic, order-first runs order the thread switches, and no real thread outlives a run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.explore.engine import explore
from harness.model import Outcome
from harness.oracles import check
from harness.reproducers.replay import reproducer_of, verify
from harness.run import RunStatus
from harness.sim.arbiter import Tape

ROOT = Path(__file__).resolve().parents[2]


def failed(result: Any) -> list[str]:
    return sorted({violation.label for verdict in check(result) for violation in verdict.violations})


#: Every test: no thread outlives it, the patches are gone, and nothing reached stderr.
pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


# -- the executors: a runtime's sync tools handed to threads --------------------------------------


def _arguments(tc: Any) -> dict[str, Any]:
    return dict(json.loads(tc.function.arguments))


async def to_thread_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Every call's sync tool on a thread of its own (`asyncio.to_thread`), all at once."""

    def sync_tool(name: str, arguments: dict[str, Any]) -> Any:
        return tools[name](**arguments)  # in a thread: blocks until the simulated call ends

    async def one(tc: Any) -> dict[str, Any]:
        try:
            return {"id": tc.id, "result": await asyncio.to_thread(sync_tool, tc.function.name, _arguments(tc))}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": str(error)}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


async def semaphore_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """The same, one thread at a time (`asyncio.Semaphore(1)` around each hand-off)."""
    gate = asyncio.Semaphore(1)

    def sync_tool(name: str, arguments: dict[str, Any]) -> Any:
        return tools[name](**arguments)

    async def one(tc: Any) -> dict[str, Any]:
        async with gate:
            return {"id": tc.id, "result": await asyncio.to_thread(sync_tool, tc.function.name, _arguments(tc))}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


#: A runtime's module-level table of sync tools (seed 003's shape, sync): pointed at the simulation.
SYNC_TOOLS: dict[str, Any] = {"query_service_logs": None, "query_service_metrics": None,
                              "query_deployment_history": None}


async def registry_executor(tool_calls: list[Any]) -> list[dict[str, Any]]:
    """`loop.run_in_executor(None, partial(TABLE[name], **arguments))`: no context reaches the thread."""
    loop = asyncio.get_running_loop()
    futures = [loop.run_in_executor(None, functools.partial(SYNC_TOOLS[tc["name"]], **tc["arguments"]))
               for tc in tool_calls]
    return [{"id": tc["id"], "result": value}
            for tc, value in zip(tool_calls, await asyncio.gather(*futures), strict=True)]


async def backoff_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """A sync tool that sleeps 1 s (virtual, `time.sleep` in its thread) before calling the tool."""

    def sync_tool(name: str, arguments: dict[str, Any]) -> Any:
        time.sleep(1.0)
        return tools[name](**arguments)

    values = await asyncio.gather(*(asyncio.to_thread(sync_tool, tc.function.name, _arguments(tc))
                                    for tc in tool_calls))
    return [{"id": tc.id, "result": value} for tc, value in zip(tool_calls, values, strict=True)]


async def impatient_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Stops waiting for a thread after 2 s; the thread (and its call) cannot be cancelled and run on."""

    def sync_tool(name: str, arguments: dict[str, Any]) -> Any:
        return tools[name](**arguments)

    async def one(tc: Any) -> dict[str, Any]:
        try:
            value = await asyncio.wait_for(asyncio.to_thread(sync_tool, tc.function.name, _arguments(tc)), 2.0)
            return {"id": tc.id, "result": value}
        except TimeoutError:
            return {"id": tc.id, "outcome": "timeout"}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


def _compute(n: int) -> int:
    return sum(range(n))


async def pure_work_executor(tool_calls: list[Any], tools: Any) -> list[Any]:
    """Pure work handed to threads takes no virtual time and gives its value (or its error)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await asyncio.to_thread(_compute, 10) == 45
    assert await loop.run_in_executor(None, _compute, 5) == 10
    with pytest.raises(ZeroDivisionError):
        await asyncio.to_thread(lambda: 1 // 0)
    assert loop.time() == start
    return list(await asyncio.gather(*(tools[tc.function.name](**_arguments(tc)) for tc in tool_calls)))


# -- what they do ---------------------------------------------------------------------------------


def test_sync_tools_on_threads_run_in_parallel_and_a_semaphore_serialises_them() -> None:
    parallel = run(find_scenario("incident-triage"), from_asyncio(to_thread_executor), seed=1)
    assert parallel.status is RunStatus.COMPLETED and failed(parallel) == []
    assert parallel.makespan_ms == 4000  # the 4 s query; serial would take 9 s
    assert [r.start_ms for r in parallel.results] == [0, 0, 0]
    assert all(r.outcome is Outcome.OK and r.value is not None for r in parallel.results)
    serial = run(find_scenario("incident-triage"), from_asyncio(semaphore_executor), seed=1)
    assert serial.status is RunStatus.COMPLETED and failed(serial) == []
    assert serial.makespan_ms == 9000


def test_a_module_table_of_sync_tools_dispatches_from_threads_without_a_context() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(registry_executor, registry=SYNC_TOOLS), seed=1)
    assert result.status is RunStatus.COMPLETED and failed(result) == []
    assert result.makespan_ms == 4000
    assert all(value is None for value in SYNC_TOOLS.values())  # the table is restored


def test_time_sleep_in_a_sync_tool_counts_virtual_time() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(backoff_executor), seed=1)
    assert failed(result) == [] and result.makespan_ms == 5000
    assert [r.start_ms for r in result.results] == [1000, 1000, 1000]


def test_pure_work_on_a_thread_takes_no_virtual_time() -> None:
    results = [run(find_scenario("incident-triage"), from_asyncio(pure_work_executor), 1) for _ in range(2)]
    assert [r.makespan_ms for r in results] == [4000, 4000] and failed(results[0]) == []
    assert results[0].fingerprint == results[1].fingerprint


def test_a_lost_update_through_sync_tools_is_caught_and_its_reproducer_replays() -> None:
    scheduler = from_asyncio(to_thread_executor)
    result = run(find_scenario("config-clobber"), scheduler, seed=3)
    assert "lost-update" in failed(result)
    reproducer = reproducer_of(result, "to-thread", "lost-update", "serializability", "test")
    assert verify(reproducer, scheduler=scheduler).ok
    serial = run(find_scenario("config-clobber"), from_asyncio(semaphore_executor), seed=3)
    assert failed(serial) == []


def test_a_thread_the_executor_stopped_waiting_for_leaves_its_call_running() -> None:
    # A thread cannot be cancelled: `wait_for` gives up on the 4 s query, which runs on unsupervised.
    result = run(find_scenario("incident-triage"), from_asyncio(impatient_executor), seed=1)
    assert result.status is RunStatus.COMPLETED
    assert "orphaned-call" in failed(result)
    assert [r.outcome for r in result.results].count(Outcome.TIMEOUT) >= 1


def test_order_first_runs_order_thread_switches_and_replay() -> None:
    sc = find_scenario("config-clobber")
    scheduler = from_asyncio(to_thread_executor)
    ordered = run(sc, scheduler, seed=1, chooser=Tape())
    assert any(entry.startswith("@thread:") for entry in ordered.tape or ())
    again = run(sc, scheduler, seed=1, chooser=Tape(ordered.tape or ()))
    assert again.fingerprint == ordered.fingerprint
    found = explore(sc, scheduler, "pct", runs=20, seed=1, shrink=False).found
    assert found is not None and found.label == "lost-update"
    replayed = run(found.result.scenario, scheduler, found.result.seed, chooser=Tape(found.result.tape or ()))
    assert replayed.fingerprint == found.result.fingerprint


_FRESH = """
import json
# imported under the name pytest gives it: the executor's default scheduler name is its module and
# qualified name, and the name is in the trace
from tests.policies.test_sync_tools_in_asyncio import to_thread_executor
from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.sim.arbiter import Tape
out = {}
for name in ("incident-triage", "config-clobber"):
    out[name] = run(find_scenario(name), from_asyncio(to_thread_executor), seed=3).fingerprint
    ordered = run(find_scenario(name), from_asyncio(to_thread_executor), seed=2, chooser=Tape())
    out[name + "/order-first"] = [ordered.fingerprint, list(ordered.tape)]
print(json.dumps(out))
"""


def test_fingerprints_match_in_fresh_processes_under_other_hash_seeds() -> None:
    runs = [json.loads(subprocess.run([sys.executable, "-c", _FRESH], cwd=ROOT, capture_output=True, text=True,
                                      timeout=120, check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout)
            for seed in ("0", "4242")]
    assert runs[0] == runs[1]
    here = run(find_scenario("config-clobber"), from_asyncio(to_thread_executor), seed=3)
    assert runs[0]["config-clobber"] == here.fingerprint


# -- no real thread outlives a run ----------------------------------------------------------------


async def waits_forever(tool_calls: list[Any], tools: Any) -> list[Any]:
    await asyncio.to_thread(lambda: threading.Event().wait())  # made in the thread: bridged; nobody sets it
    return []


async def leaves_a_thread_behind(tool_calls: list[Any], tools: Any) -> list[Any]:
    loop = asyncio.get_running_loop()
    loop.run_in_executor(None, time.sleep, 3600.0)  # never awaited: still asleep when the run ends
    return list(await asyncio.gather(*(tools[tc.function.name](**_arguments(tc)) for tc in tool_calls)))


def test_a_thread_that_never_ends_is_a_hang_and_is_released() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(waits_forever), seed=1)
    assert result.status is RunStatus.HANG
    # (the autouse fixture checks that every thread is gone and every patch restored)


def test_a_thread_left_running_is_released_at_the_end_of_the_run() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(leaves_a_thread_behind), seed=1)
    assert result.status is RunStatus.COMPLETED and result.makespan_ms == 4000 and failed(result) == []
