"""A bridged runtime that gives up on a tool while the tool waits for the user's approval.

Under the bridges the tools ask (docs/approvals.md): `ops-approvals`' cache wipe asks a user who never
answers and would wait 20 s. The README's executor times every call out after 10 s (`wait_for(...,
10)`), so it gives up first and reports the `TimeoutError` as that call's result. That is the
runtime giving up on a call that never ran, not an exception the executor swallowed before the call
started (the user trial's false `scheduler-error`); its result stays what the executor reported. The
tool stops waiting when the runtime does, so nothing about the call happens after the batch. An
exception really swallowed before a call started is still a scheduler error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.bridges.threads import from_threads
from harness.model import Outcome
from harness.oracles import check
from harness.run import RunResult, RunStatus
from harness.testing import check_scheduler
from tests.policies.test_bridges_crew import readme_execute

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

OPS = "ops-approvals"


def failures(result: RunResult) -> list[tuple[str, str | None]]:
    return [(v.oracle, v.label) for v in check(result) if not v.ok]


def events(result: RunResult, call: str) -> list[tuple[int, str]]:
    return [(e["t"], e["ev"]) for e in result.trace if e.get("call") == call]


def assert_gave_up_on_the_cache_wipe(result: RunResult, at_ms: int, outcome: Outcome = Outcome.ERROR) -> None:
    assert result.status is RunStatus.COMPLETED, result.error
    assert failures(result) == []
    by_id = {r.call_id: r for r in result.results}
    assert by_id["restart"].ok and by_id["ticket"].ok and by_id["logs"].ok
    assert by_id["rollback"].outcome is Outcome.ERROR and "denied by the user" in (by_id["rollback"].error or "")
    cache = by_id["clear-cache"]
    assert cache.outcome is outcome and cache.attempts == 0  # as the executor reported it
    # Asked at 0 ms, given up when the runtime stopped waiting; never started, nothing traced later
    # (no refusal at the 20 s approval timeout).
    assert events(result, "clear-cache") == [(0, "approval_requested"), (at_ms, "note")]
    assert "/srv/order-service/cache/index.db" in result.final.file_map


@pytest.mark.parametrize("seed", [1, 13])
def test_the_readme_executor_times_out_a_call_waiting_for_approval(seed: int) -> None:
    result = run(find_scenario(OPS), from_asyncio(readme_execute), seed)
    assert_gave_up_on_the_cache_wipe(result, 10_000)
    assert result.makespan_ms == 10_000
    cache = next(r for r in result.results if r.call_id == "clear-cache")
    # The executor kept only `str(TimeoutError())`, which is empty: that is what its model reads, and
    # what the result says (the harness does not put words in the runtime's mouth).
    assert cache.error == ""


def test_an_executor_reporting_the_timeout_error_itself_keeps_its_text() -> None:
    async def execute(tool_calls: Any, tools: Any) -> list[Any]:
        async def one(tc: Any) -> Any:
            return await asyncio.wait_for(tools[tc.function.name](**json.loads(tc.function.arguments)), 10)
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls), return_exceptions=True))

    result = run(find_scenario(OPS), from_asyncio(execute), 13)
    assert_gave_up_on_the_cache_wipe(result, 10_000, Outcome.TIMEOUT)  # a TimeoutError returned is a timeout


def test_check_scheduler_passes_an_asyncio_runtime_with_a_per_call_timeout_under_the_approval_timeout() -> None:
    check_scheduler(from_asyncio(readme_execute), scenarios=[OPS], profile="quick", seed=5, generated=False)


def test_a_sync_tool_on_a_thread_the_executor_stops_waiting_for_stops_asking() -> None:
    async def execute(tool_calls: Any, tools: Any) -> list[Any]:
        async def one(tc: Any) -> dict[str, Any]:
            def sync_tool() -> Any:
                return tools[tc.function.name](**json.loads(tc.function.arguments))
            try:
                return {"id": tc.id, "result": await asyncio.wait_for(asyncio.to_thread(sync_tool), 10)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    result = run(find_scenario(OPS), from_asyncio(execute), 13)
    assert_gave_up_on_the_cache_wipe(result, 10_000)


def per_call_timeout(tool_calls: Any, run_tool: Any) -> list[Any]:
    """A pool and `future.result(timeout=10)` per call, in model order."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    results = []
    for tc, future in zip(tool_calls, futures, strict=True):
        try:
            results.append({"tool_call_id": tc.id, "content": future.result(timeout=10)})
        except Exception as error:
            results.append({"tool_call_id": tc.id, "success": False, "error": str(error)})
    pool.shutdown(wait=False, cancel_futures=True)
    return results


def test_a_thread_executor_whose_future_result_times_out_during_the_approval_wait() -> None:
    result = run(find_scenario(OPS), from_threads(per_call_timeout), 13)
    # restart ends at 6945 ms; the executor then waits 10 s more for the cache wipe's future.
    assert_gave_up_on_the_cache_wipe(result, 16_945)
    assert result.makespan_ms == 16_945


# -- real executor bugs are still caught ---------------------------------------------------------


def test_an_exception_swallowed_before_the_tool_was_called_is_still_a_scheduler_error() -> None:
    async def execute(tool_calls: Any, tools: Any) -> list[Any]:
        async def one(tc: Any) -> dict[str, Any]:
            try:
                arguments = json.loads(tc.function.arguments)
                if tc.function.name == "terminal":
                    arguments = arguments["cmd"]  # glue bug: KeyError before the tool is ever called
                return {"id": tc.id, "result": await asyncio.wait_for(tools[tc.function.name](**arguments), 10)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    result = run(find_scenario(OPS), from_asyncio(execute), 13)
    assert result.status is RunStatus.SCHEDULER_ERROR
    error = result.error or ""
    assert "reported clear-cache as error" in error and "without ever starting it" in error


def test_a_tool_coroutine_made_but_never_awaited_is_still_a_scheduler_error() -> None:
    """Claiming a call is not asking for it: the coroutine never ran, so its tool never asked."""
    async def execute(tool_calls: Any, tools: Any) -> list[Any]:
        async def one(tc: Any) -> dict[str, Any]:
            try:
                pending = tools[tc.function.name](**json.loads(tc.function.arguments))
                if tc.function.name == "terminal":
                    pending.close()
                    raise RuntimeError("glue bug after making the awaitable")
                return {"id": tc.id, "result": await asyncio.wait_for(pending, 10)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    result = run(find_scenario(OPS), from_asyncio(execute), 13)
    assert result.status is RunStatus.SCHEDULER_ERROR
    assert "reported clear-cache as error" in (result.error or "")


def test_a_runtime_that_waits_long_enough_still_gets_the_refusal() -> None:
    """Nothing changes for an executor that outwaits the approval timeout: the tool's refusal."""
    async def execute(tool_calls: Any, tools: Any) -> list[Any]:
        async def one(tc: Any) -> dict[str, Any]:
            try:
                arguments = json.loads(tc.function.arguments)
                return {"id": tc.id, "result": await asyncio.wait_for(tools[tc.function.name](**arguments), 30)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    result = run(find_scenario(OPS), from_asyncio(execute), 13)
    assert result.status is RunStatus.COMPLETED and failures(result) == []
    cache = next(r for r in result.results if r.call_id == "clear-cache")
    assert cache.outcome is Outcome.ERROR
    assert cache.error == "no answer from the user within 20000 ms, treated as denied: terminal was not run"
    assert events(result, "clear-cache") == [(0, "approval_requested"), (20_000, "skip")]
