"""The thread bridge still tidies away what a runtime leaves running (issue 24, item 6; open).

A pool the executor leaves behind (`pool.shutdown(wait=False)` without `cancel_futures`, on the
interrupt) goes on in a real process: the worker finishes the call it runs (a thread cannot be
cancelled), then starts the queued ones. Under `from_threads`, the executor's report of the running
call as `unknown` abandons it (a cancel-honouring tool stops at once, which no thread could make it
do) and the batch's end releases the worker, which starts the queued calls in that very instant. The
asyncio bridge lets such leftovers run on (`RUN_ON_MS`); the thread bridge's `_BatchRun.close()` and
`read_results` (owned by the thread-bridge work) do not yet. Kept as a strict xfail: it turns into a
failure the day the bridge is fixed, so the test is then made a plain one.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from harness import find_scenario, run
from harness.oracles import check
from harness.schedulers.bridge_threads import from_threads


def leaves_its_pool(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[dict[str, Any]]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    while True:
        _, not_done = concurrent.futures.wait(futures, timeout=0.5)
        if not not_done or interrupted.is_set():
            break
    pool.shutdown(wait=False)  # the bug: queued calls not cancelled, the running one not waited for
    return [{"tool_call_id": tc.id, "content": f.result()} if f.done() and f.exception() is None
            else {"tool_call_id": tc.id, "outcome": "unknown", "content": "interrupted"}
            for tc, f in zip(tool_calls, futures, strict=True)]


@pytest.mark.xfail(strict=True, reason="from_threads abandons the running call for the runtime and releases the "
                                       "pool's worker at the end of the batch (see the module docstring)")
def test_a_pool_left_running_after_the_interrupt_runs_on_as_in_a_real_process() -> None:
    result = run(find_scenario("interrupt-midbatch"), from_threads(leaves_its_pool), 1)
    ends = {e["call"]: (e["t"], e["outcome"]) for e in result.trace if e["ev"] == "end"}
    starts = {e["call"]: e["t"] for e in result.trace if e["ev"] == "start"}
    orphans = {v.witness["call"] for verdict in check(result) for v in verdict.violations
               if v.label == "orphaned-call"}
    # The worker runs the tests to their end (6 s after they started at 1.2 s), then the queued calls.
    assert ends["tests"] == (7200, "ok") and "tests" in orphans
    assert starts["notes"] >= 7200 and starts["metrics"] >= 7200
