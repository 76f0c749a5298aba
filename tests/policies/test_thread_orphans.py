"""The thread bridge reports what a runtime leaves running; it never tidies it away (issue 24, item 6).

A pool the executor leaves behind (`pool.shutdown(wait=False)` without `cancel_futures`, on the
interrupt) goes on in a real process: the worker finishes the call it runs (a thread cannot be
cancelled), then starts the queued ones. Under `from_threads` the executor's report of the running
call as `unknown` no longer abandons it, and the threads it left run on in virtual time after the
batch (up to `RUN_ON_MS` after the run's last one, `harness.bridges.leftovers`), so what they do
lands in the run: the call outlives the turn (`orphaned-call`), the queued ones start after the
interrupt (`start-after-interrupt`). A pool that cancels what it has not started and waits for what
runs leaves nothing behind and passes; idle workers are released at once, adding nothing to the run.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.leftovers import RUN_ON_MS
from harness.bridges.threads import from_threads
from harness.oracles import check
from tests.helpers import scenario
from tests.policies.test_thread_bridge import serial_and_attentive

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


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


def cancels_and_waits(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[dict[str, Any]]:
    """The same pool, correct: on the interrupt, queued calls are cancelled and the running one is
    waited for (the scenario's grace covers it), so nothing is left behind."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    while True:
        _, not_done = concurrent.futures.wait(futures, timeout=0.5)
        if not not_done or interrupted.is_set():
            break
    pool.shutdown(wait=True, cancel_futures=True)
    return [{"tool_call_id": tc.id, "outcome": "cancelled", "content": "skipped: interrupted"} if f.cancelled()
            else {"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]


def labels(result: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for verdict in check(result):
        for v in verdict.violations:
            found.setdefault(v.label, set()).add(str(v.witness.get("call")))
    return found


def test_a_pool_left_running_after_the_interrupt_runs_on_as_in_a_real_process() -> None:
    result = run(find_scenario("interrupt-midbatch"), from_threads(leaves_its_pool), 1)
    ends = {e["call"]: (e["t"], e["outcome"]) for e in result.trace if e["ev"] == "end"}
    starts = {e["call"]: e["t"] for e in result.trace if e["ev"] == "start"}
    found = labels(result)
    # The worker runs the tests to their end (6 s after they started at 1.2 s), then the queued calls.
    assert ends["tests"] == (7200, "ok") and "tests" in found["orphaned-call"]
    assert starts["notes"] >= 7200 and starts["metrics"] >= 7200
    assert {"notes", "metrics"} <= found["start-after-interrupt"]
    # Reported as the runtime reported it, when it returned; nothing was abandoned for it.
    assert not [e for e in result.trace if e["ev"] == "abandon"]
    assert {r.call_id: r.outcome.value for r in result.results}["tests"] == "unknown"
    assert any("still alive, inside tests" in e["text"] for e in result.trace if e["ev"] == "note")


def test_a_pool_that_cancels_and_waits_leaves_nothing_behind() -> None:
    # With the scenario's 1 s of grace, waiting out the 6 s tests is late, and only that is reported.
    result = run(find_scenario("interrupt-midbatch"), from_threads(cancels_and_waits), 1)
    assert labels(result) == {"grace-exceeded": {"tests"}}
    # With a grace that covers them (a runtime that promises as much), it passes.
    midbatch = find_scenario("interrupt-midbatch")
    assert midbatch.interrupt is not None
    generous = dataclasses.replace(midbatch, interrupt=dataclasses.replace(midbatch.interrupt, grace_ms=10_000))
    result = run(generous, from_threads(cancels_and_waits), 1)
    assert labels(result) == {}
    assert not [e for e in result.trace if e["ev"] == "note" and "still alive" in e["text"]]


def test_a_running_call_given_up_without_waiting_is_an_orphan() -> None:
    """A serial executor that gives up its running call on the interrupt (`unknown`) and returns: the
    call runs on in its worker past the turn and the grace, as it would in a real process."""
    result = run(find_scenario("interrupt-midbatch"), from_threads(serial_and_attentive), 1)
    found = labels(result)
    assert set(found) == {"orphaned-call", "grace-exceeded"} and found["orphaned-call"] == found["grace-exceeded"]


def test_what_a_leftover_thread_does_later_lands_in_the_run_until_the_horizon() -> None:
    """A thread the executor leaves polling every 20 s: its calls keep landing while it polls, within
    `RUN_ON_MS` of the run's last batch; then it is released (never beyond)."""
    sc = scenario([("a", "web_search", {"query": "q"}), ("b", "web_search", {"query": "r"})])

    def leaves_a_poller(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
        first = run_tool(tool_calls[0])

        def later() -> None:
            stop = threading.Event()
            while not stop.wait(20):
                run_tool(tool_calls[1])

        threading.Thread(target=later).start()
        return [{"tool_call_id": tool_calls[0].id, "content": first},
                {"tool_call_id": tool_calls[1].id, "outcome": "cancelled", "content": "not run"}]

    result = run(sc, from_threads(leaves_a_poller), 1)
    returned = next(e["t"] for e in result.trace if e["ev"] == "batch_end")
    b_starts = [e["t"] for e in result.trace if e["ev"] == "start" and e["call"] == "b"]
    assert len(b_starts) >= 2 and b_starts[0] >= returned + 20_000
    assert all(t <= returned + RUN_ON_MS for t in b_starts)
    assert "orphaned-call" in labels(result)


def test_idle_workers_are_released_at_once() -> None:
    """A pool never shut down: its idle workers wait for work nobody submits. They cannot act, so
    nothing runs on and the run is as short as its batch."""

    def never_shuts_down(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
        return [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]

    result = run(find_scenario("incident-triage"), from_threads(never_shuts_down), 1)
    assert labels(result) == {}
    assert max(e["t"] for e in result.trace) == result.makespan_ms
    assert not [e for e in result.trace if e["ev"] == "note" and "still alive" in e["text"]]
