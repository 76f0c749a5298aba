"""Blocking on the bridged event loop: virtual clocks, `time.sleep` and sync tools hold the loop.

Code a bridged asyncio runtime runs on its loop reads virtual time from every clock (`time.*`,
`datetime`, the loop's own), and a blocking call there — `time.sleep`, a tool the scenario declares
`sync` called directly on the loop, a tool's declared `blocking_ms` — takes virtual time and holds the
loop: no other task runs, no timer fires, and what comes after starts later. Work handed to a thread
(`asyncio.to_thread`) blocks only its thread. Each case has the broken runtime and the correct one.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
from dataclasses import replace
from time import monotonic as imported_monotonic  # swapped in this module's globals during a run
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.bridges.threads.virtual_time import EPOCH_S
from harness.explore.engine import explore
from harness.oracles import check
from harness.report.hang import hang_lines
from harness.report.run_json import loop_holds
from harness.run import RunStatus
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.spec import Interrupt

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

#: (Swapped during a run like any name imported from a patched module, as `from datetime import datetime`.)
REAL_DATETIME = datetime.datetime


def failed(result: Any) -> list[str]:
    return sorted({violation.label for verdict in check(result) for violation in verdict.violations})


def starts(result: Any) -> dict[str, int]:
    return {e["call"]: e["t"] for e in result.trace if e["ev"] == "start"}


# -- executors ---------------------------------------------------------------------------------


async def sync_on_loop(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """openai-agents before 0.8: a sync function tool is called directly on the event loop."""

    async def one(tc: Any) -> dict[str, Any]:
        name, args = tc.function.name, json.loads(tc.function.arguments)
        if tools.is_sync(name):
            return {"id": tc.id, "result": tools[name](**args)}
        return {"id": tc.id, "result": await tools[name](**args)}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


async def sync_to_thread(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """The fix: a sync function tool is handed to a thread."""

    async def one(tc: Any) -> dict[str, Any]:
        name, args = tc.function.name, json.loads(tc.function.arguments)
        if tools.is_sync(name):
            return {"id": tc.id, "result": await asyncio.to_thread(tools[name], **args)}
        return {"id": tc.id, "result": await tools[name](**args)}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


def blocking_lookup() -> None:
    """A sync helper a tool calls first (a blocking HTTP client, say): one second of `time.sleep`."""
    time.sleep(1)


async def sleep_on_loop(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Each call's sync helper runs on the loop before the async tool: the loop is held meanwhile."""

    async def one(tc: Any) -> dict[str, Any]:
        blocking_lookup()
        return {"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


async def sleep_to_thread(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    async def one(tc: Any) -> dict[str, Any]:
        await asyncio.to_thread(blocking_lookup)
        return {"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


# -- a sync tool among async ones (the built-in scenario, from seed 003) --------------------------


def test_sync_tools_called_on_the_loop_collapse_parallel_to_serial_and_are_named() -> None:
    sc = find_scenario("sync-tool-on-loop")
    serial = run(sc, "serial", 5)
    parallel = run(sc, "parallel", 5)
    assert (serial.makespan_ms, parallel.makespan_ms) == (9000, 4000)
    frozen = run(sc, from_asyncio(sync_on_loop), 5)
    # A sync tool is a call, not a contract error; the frozen loop is what is wrong.
    assert frozen.status is RunStatus.COMPLETED and failed(frozen) == ["loop-blocked"]
    assert frozen.makespan_ms == serial.makespan_ms
    assert starts(frozen) == {"call-logs": 0, "call-metrics": 3000, "call-deploys": 7000}
    assert [(h["what"], h["at_ms"], h["held_ms"]) for h in loop_holds(frozen.trace)] == [
        ("the sync tool query_service_logs (call-logs)", 0, 3000),
        ("the sync tool query_service_metrics (call-metrics)", 3000, 4000)]
    assert [r.value["tool"] for r in frozen.results] == [  # type: ignore[index]
        "query_service_logs", "query_service_metrics", "query_deployment_history"]
    offloaded = run(sc, from_asyncio(sync_to_thread), 5)
    assert offloaded.makespan_ms == parallel.makespan_ms and not failed(offloaded)
    assert loop_holds(offloaded.trace) == [] and set(starts(offloaded).values()) == {0}


def test_holds_are_deterministic_and_in_the_fingerprint() -> None:
    sc = find_scenario("sync-tool-on-loop")
    first, again = run(sc, from_asyncio(sync_on_loop), 9), run(sc, from_asyncio(sync_on_loop), 9)
    assert first.fingerprint == again.fingerprint
    assert first.fingerprint != run(sc, from_asyncio(sync_to_thread), 9).fingerprint


@pytest.mark.parametrize("strategy", ["pct", "exhaustive"])
def test_order_first_search_sees_the_hold_exactly(strategy: str) -> None:
    # The frozen loop is found on the first run of every strategy, and nothing else is: the holds are
    # exact (no race appears that a real process could not show); offloaded, nothing is found at all.
    sc = find_scenario("sync-tool-on-loop")
    frozen = explore(sc, from_asyncio(sync_on_loop), strategy, runs=30, seed=3, shrink=False, keep_going=True)
    assert frozen.found is not None and frozen.found.label == "loop-blocked" and frozen.found.run_index == 0
    assert {finding.label for finding in frozen.findings} == {"loop-blocked"}
    exploration = explore(sc, from_asyncio(sync_to_thread), strategy, runs=30, seed=3, shrink=False)
    assert exploration.found is None, strategy


def test_the_report_and_json_name_the_blocking_call() -> None:
    from rich.console import Console

    from harness.report.run_json import run_to_json
    from harness.report.run_text import render_run

    result = run(find_scenario("sync-tool-on-loop"), from_asyncio(sync_on_loop), 2)
    console = Console(record=True, width=200)
    render_run(result, console, version="test")
    text = console.export_text()
    assert ("blocking     the sync tool query_service_metrics (call-metrics) held the event loop 4000 ms from 3000 ms"
            in text)
    document = run_to_json(result, version="test")
    assert document["blocking"][1] == {"what": "the sync tool query_service_metrics (call-metrics)", "at_ms": 3000,
                                       "held_ms": 4000, "returned": True}
    quiet = run_to_json(run(find_scenario("sync-tool-on-loop"), from_asyncio(sync_to_thread), 2), version="test")
    assert quiet["blocking"] == []


# -- time.sleep on the loop ------------------------------------------------------------------------


def test_time_sleep_on_the_loop_holds_it_and_to_thread_does_not() -> None:
    sc = find_scenario("incident-triage")
    held = run(sc, from_asyncio(sleep_on_loop), 4)
    # Each helper holds the loop for 1 s: the calls start one second apart, one after the other's sleep.
    assert starts(held) == {"call-logs": 1000, "call-metrics": 2000, "call-deploys": 3000}
    assert held.makespan_ms == 6000 and failed(held) == ["loop-blocked"]
    # The first two sleeps kept the other calls' tasks waiting; the last had nothing left to delay.
    blocked = [x for verdict in check(held) for x in verdict.violations if x.label == "loop-blocked"]
    assert [(x.witness["since_ms"], x.witness["by"]) for x in blocked] == [(0, "sleep"), (1000, "sleep")]
    assert [(h["what"], h["at_ms"], h["held_ms"]) for h in loop_holds(held.trace)] == [
        ("time.sleep(1) in blocking_lookup", 0, 1000), ("time.sleep(1) in blocking_lookup", 1000, 1000),
        ("time.sleep(1) in blocking_lookup", 2000, 1000)]
    threaded = run(sc, from_asyncio(sleep_to_thread), 4)
    assert starts(threaded) == {"call-logs": 1000, "call-metrics": 1000, "call-deploys": 1000}
    assert threaded.makespan_ms == 5000 and loop_holds(threaded.trace) == [] and not failed(threaded)


def test_no_timer_fires_and_no_task_runs_while_the_loop_is_held() -> None:
    seen: list[tuple[str, float]] = []

    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        loop = asyncio.get_running_loop()

        async def ticker() -> None:
            await asyncio.sleep(0.5)
            seen.append(("tick", loop.time()))

        async def blocker(offload: bool) -> None:
            await asyncio.sleep(0)
            if offload:
                await asyncio.to_thread(time.sleep, 2)
            else:
                time.sleep(2)
            seen.append(("slept", loop.time()))

        offload = tool_calls[0].function.name == "query_service_logs" and len(seen) == 0 and _OFFLOAD[0]
        await asyncio.gather(ticker(), blocker(offload))
        return [{"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}
                for tc in tool_calls]

    sc = find_scenario("incident-triage")
    _OFFLOAD[0] = False
    run(sc, from_asyncio(execute), 1)
    assert seen == [("slept", 2.0), ("tick", 2.0)]  # the 0.5 s timer could only fire once the loop was free
    seen.clear()
    _OFFLOAD[0] = True
    run(sc, from_asyncio(execute), 1)
    assert seen == [("tick", 0.5), ("slept", 2.0)]


_OFFLOAD = [False]


# -- every clock is virtual --------------------------------------------------------------------------


def test_every_clock_bridged_code_reads_is_virtual() -> None:
    readings: dict[str, Any] = {}

    def read(label: str) -> None:
        readings[label] = (time.monotonic(), time.perf_counter(), time.time(), time.monotonic_ns(), time.time_ns(),
                           imported_monotonic(), datetime.datetime.now(), datetime.datetime.utcnow(),
                           datetime.datetime.now(datetime.UTC), datetime.date.today(),
                           asyncio.get_running_loop().time())

    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        read("start")
        results = [{"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}
                   for tc in tool_calls]
        read("end")
        stamp = datetime.datetime(2020, 1, 1)  # made during the run: a real datetime all the same
        readings["made"] = (type(stamp).__module__ == "datetime", isinstance(stamp, datetime.datetime),
                            isinstance(REAL_DATETIME.now(), datetime.datetime),
                            issubclass(datetime.datetime, datetime.date))
        return results

    before_real = time.time()
    run(find_scenario("incident-triage"), from_asyncio(execute), 6)
    epoch = REAL_DATETIME(2026, 1, 1)
    assert readings["start"] == (0.0, 0.0, float(EPOCH_S), 0, EPOCH_S * 10**9, 0.0, epoch, epoch,
                                 epoch.replace(tzinfo=datetime.UTC), datetime.date(2026, 1, 1), 0.0)
    end = readings["end"]
    assert end[:6] == (9.0, 9.0, EPOCH_S + 9.0, 9 * 10**9, (EPOCH_S + 9) * 10**9, 9.0)  # serial: 3 + 4 + 2 s
    assert end[6] == epoch + datetime.timedelta(seconds=9) and end[10] == 9.0
    assert readings["made"] == (True, True, True, True)
    # Outside bridged code (here, after the run) every clock is the real one again.
    assert datetime.datetime is REAL_DATETIME and time.time() >= before_real
    assert datetime.datetime.now().year >= 2026 and time.monotonic() != 9.0


def test_the_harness_and_foreign_threads_keep_the_real_clocks_during_a_run() -> None:
    outside: list[float] = []

    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        worker = threading.Thread(target=lambda: outside.append(time.time()))  # a real thread: real time
        worker.start()
        worker.join()
        return [{"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}
                for tc in tool_calls]

    before = time.time()
    run(find_scenario("incident-triage"), from_asyncio(execute), 1)
    assert outside and outside[0] >= before


# -- declared blocking work ---------------------------------------------------------------------------


def _scenario(tool_table: dict[str, Any]) -> Any:
    return scenario_from_data({
        "name": "blocking-work", "description": "three queries, one with blocking work",
        "tools": tool_table,
        "batches": [{"label": "b", "calls": [
            {"id": "a", "name": "query_service_logs", "arguments": '{"service_name": "s", "minutes": 1}'},
            {"id": "b", "name": "query_service_metrics", "arguments": '{"service_name": "s", "minutes": 1}'},
            {"id": "c", "name": "query_deployment_history", "arguments": '{"service_name": "s"}'}]}],
    }, "blocking-work.toml")


async def plain_gather(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    async def one(tc: Any) -> dict[str, Any]:
        return {"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


def test_declared_blocking_work_holds_the_loop_before_the_call() -> None:
    sc = _scenario({"query_service_logs": {"blocking_ms": 500}})
    result = run(sc, from_asyncio(plain_gather), 1)
    # The logs query does 500 ms of sync work on the loop first: every call after it starts later.
    assert starts(result) == {"a": 500, "b": 500, "c": 500}
    assert [(h["what"], h["at_ms"], h["held_ms"]) for h in loop_holds(result.trace)] == [
        ("the tool query_service_logs (a): its blocking work", 0, 500)]
    assert result.makespan_ms == 4500
    assert run(_scenario({}), from_asyncio(plain_gather), 1).makespan_ms == 4000


def test_sync_and_blocking_ms_are_validated() -> None:
    with pytest.raises(ScenarioError, match=r"blocking-work.toml: tools.query_service_logs.sync: expected"):
        _scenario({"query_service_logs": {"sync": "yes"}})
    with pytest.raises(ScenarioError, match=r"tools.query_service_logs.blocking_ms: expected a whole number"):
        _scenario({"query_service_logs": {"blocking_ms": -1}})


# -- threads the bridge does not run ------------------------------------------------------------------


def test_a_sync_tool_on_a_real_worker_thread_is_a_hang_that_names_the_thread() -> None:
    workers: list[threading.Thread] = []

    async def anyio_like(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        """pydantic-ai without `using_thread_executor`: sync tools on anyio's own real worker thread."""
        loop = asyncio.get_running_loop()

        async def one(tc: Any) -> dict[str, Any]:
            future = loop.create_future()

            def work() -> None:
                try:
                    value = tools[tc.function.name](**json.loads(tc.function.arguments))
                except Exception as error:
                    failure = error
                    loop.call_soon_threadsafe(lambda: None if future.done() else future.set_exception(failure))
                else:
                    loop.call_soon_threadsafe(lambda: None if future.done() else future.set_result(value))

            worker = threading.Thread(target=work, name="AnyIO worker thread")
            workers.append(worker)
            worker.start()
            return {"id": tc.id, "result": await future}

        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))

    result = run(find_scenario("sync-tool-on-loop"), from_asyncio(anyio_like), 1)
    for worker in workers:
        worker.join(5)
    assert result.status is RunStatus.HANG and result.makespan_ms == 0
    lines = "\n".join(hang_lines(result))
    assert "thread 'AnyIO worker thread' (unbridged): a real thread started from the event loop" in lines
    assert "asyncio.to_thread / loop.run_in_executor" in lines and "using_thread_executor" in lines
    fixed = run(find_scenario("sync-tool-on-loop"), from_asyncio(sync_to_thread), 1)
    assert fixed.status is RunStatus.COMPLETED and "unbridged" not in "\n".join(hang_lines(fixed))


def test_a_blocking_call_that_never_returns_freezes_the_loop_and_the_witness_names_it() -> None:
    sc = _scenario({"query_service_logs": {"sync": True, "latency": {"fixed": 700_000}}})  # past the time bound
    frozen = run(sc, from_asyncio(sync_on_loop), 1)
    assert frozen.status is RunStatus.HANG and frozen.makespan_ms == 0
    assert starts(frozen) == {"a": 0}  # the other tasks never got the loop back: they started nothing
    lines = "\n".join(hang_lines(frozen))
    assert ("event loop (held): held by the sync tool query_service_logs (a), which never returned" in lines)
    assert loop_holds(frozen.trace) == [{"what": "the sync tool query_service_logs (a)", "at_ms": 0, "held_ms": 0,
                                         "returned": False}]
    offloaded = run(sc, from_asyncio(sync_to_thread), 1)  # the other calls go on; only the thread waits
    assert offloaded.status is RunStatus.HANG and set(starts(offloaded)) == {"a", "b", "c"}
    assert "event loop (held)" not in "\n".join(hang_lines(offloaded))


def test_a_leftover_task_sleeping_in_the_drain_takes_no_time() -> None:
    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        async def leftover() -> None:
            try:
                await asyncio.sleep(100)
            finally:
                time.sleep(30)  # cleanup that blocks, run by the end-of-run drain: the run's time is over

        asyncio.get_running_loop().create_task(leftover())
        return [{"id": tc.id, "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}
                for tc in tool_calls]

    started = time.monotonic()
    result = run(find_scenario("incident-triage"), from_asyncio(execute), 1)
    assert result.status is RunStatus.COMPLETED and time.monotonic() - started < 10


async def plain_function_tools(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """Glue that hands the runtime a plain function for every tool, which the runtime calls on the loop."""

    def tool_function(name: str, arguments: dict[str, Any]) -> Any:
        return tools[name](**arguments)

    async def one(tc: Any) -> dict[str, Any]:
        return {"id": tc.id, "result": tool_function(tc.function.name, json.loads(tc.function.arguments))}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


def test_an_async_tool_called_like_a_plain_function_says_to_declare_it_sync() -> None:
    broken = run(find_scenario("incident-triage"), from_asyncio(plain_function_tools), 1)
    assert broken.status is RunStatus.SCHEDULER_ERROR
    assert "un-awaited coroutine of the tool query_service_logs" in str(broken.error)
    assert "`[tools.query_service_logs] sync = true`" in str(broken.error)
    declared = _scenario({name: {"sync": True} for name in
                          ("query_service_logs", "query_service_metrics", "query_deployment_history")})
    fixed = run(declared, from_asyncio(plain_function_tools), 1)
    # Declared sync, the calls run: serially, the loop frozen by each (what the oracle names).
    assert fixed.status is RunStatus.COMPLETED and failed(fixed) == ["loop-blocked"] and fixed.makespan_ms == 9000


def test_a_thread_the_interrupt_cannot_stop_runs_on_and_is_an_orphan() -> None:
    # Ctrl-C cancels the executor and the futures it awaited, never the threads running the sync
    # tools: in a real process logs and metrics go on to 3000 and 4000 ms. The bridge reports them
    # unknown and lets them run, so the oracles see them outlive the turn (before, it abandoned them
    # at the interrupt for the runtime and every oracle passed).
    sc = replace(find_scenario("sync-tool-on-loop"), interrupt=Interrupt(1000, 500))
    result = run(sc, from_asyncio(sync_to_thread), 5)
    ends = {e["call"]: e["t"] for e in result.trace if e["ev"] == "end"}
    assert ends["call-logs"] == 3000 and ends["call-metrics"] == 4000
    # The async deploys query was cancelled with the task awaiting it; only the threads run on.
    assert [e["call"] for e in result.trace if e["ev"] == "abandon"] == ["call-deploys"]
    orphans = {str(x.witness["call"]) for verdict in check(result) for x in verdict.violations
               if x.label == "orphaned-call"}
    assert {"call-logs", "call-metrics"} <= orphans
    assert {r.call_id: r.error for r in result.results}["call-logs"] == (
        "interrupted: the runtime stopped awaiting it, but the thread running it cannot be cancelled; effect unknown")
