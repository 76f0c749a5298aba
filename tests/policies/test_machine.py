"""The simulated machine: bridged code reads the scenario's `[machine]`, never the host.

A pool sized by `os.cpu_count()` (`ThreadPoolExecutor()` defaults: min(32, cpus + 4) workers) runs
the same schedule, with the same fingerprint, whatever the host has; the declared cpus change it as
they would on a real machine of that size; a malformed `[machine]` is a clear error; `--cpus`
overrides the scenario and appears in the reproduce line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import threading
import time
from dataclasses import replace
from os import cpu_count as imported_cpu_count  # swapped in this module's globals during a run
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness import find_scenario, run
from harness.bridges.asyncio import from_asyncio
from harness.bridges.threads import from_threads
from harness.cli import main
from harness.run import RunStatus
from harness.scenario import ScenarioError, load_scenario, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.sim.machine import DEFAULT_CPUS, Machine
from tests.helpers import fake_host, scenario

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

#: What the executors below saw of the machine, per run.
seen: list[dict[str, Any]] = []


def pool_defaults(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """A runtime that sizes its pool from the host, as smolagents does: `ThreadPoolExecutor()`."""
    facts: dict[str, Any] = {"os.cpu_count": os.cpu_count(), "imported cpu_count": imported_cpu_count(),
                             "multiprocessing.cpu_count": multiprocessing.cpu_count(),
                             "active_count before": threading.active_count()}
    if hasattr(os, "sched_getaffinity"):
        facts["sched_getaffinity"] = sorted(os.sched_getaffinity(0))
    if hasattr(os, "process_cpu_count"):
        facts["process_cpu_count"] = os.process_cpu_count()
    with concurrent.futures.ThreadPoolExecutor() as pool:
        facts["workers"] = pool._max_workers
        futures = [pool.submit(tools, tc) for tc in tool_calls]
        facts["active_count"] = threading.active_count()
        facts["enumerate"] = [t.name for t in threading.enumerate()]
        results = [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]
    seen.append(facts)
    return results


scheduler = from_threads(pool_defaults)


@pytest.mark.parametrize("cpus", [2, 16])
def test_the_fake_host_would_change_the_pool_outside_a_run(monkeypatch: pytest.MonkeyPatch, cpus: int) -> None:
    """The control: faked like this, a pool made outside the bridge does size itself from the host."""
    fake_host(monkeypatch, cpus)
    with concurrent.futures.ThreadPoolExecutor() as pool:
        assert pool._max_workers == min(32, cpus + 4)


def test_a_pool_sized_by_the_host_runs_the_same_on_2_and_16_host_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    results = []
    for cpus in (2, 16):
        fake_host(monkeypatch, cpus)
        seen.clear()
        results.append(run(find_scenario("fanout-100"), scheduler, seed=1))
        assert os.cpu_count() == cpus  # restored beneath the patches: the harness's own code sees the host
        facts = seen[0]
        assert facts["workers"] == DEFAULT_CPUS + 4
        assert {facts["os.cpu_count"], facts["imported cpu_count"], facts["multiprocessing.cpu_count"],
                facts.get("process_cpu_count", DEFAULT_CPUS)} == {DEFAULT_CPUS}
        assert facts.get("sched_getaffinity", list(range(DEFAULT_CPUS))) == list(range(DEFAULT_CPUS))
    assert results[0].fingerprint == results[1].fingerprint
    assert results[0].makespan_ms == results[1].makespan_ms == 11086


def test_threading_counts_the_runs_own_threads() -> None:
    """`active_count()` / `enumerate()` in bridged code: the executor's thread and the pool's workers,
    the same in every process (not the test runner's threads)."""
    seen.clear()
    run(find_scenario("fanout-100"), scheduler, seed=1)
    facts = seen[0]
    assert facts["active_count before"] == 1
    assert facts["active_count"] == 1 + DEFAULT_CPUS + 4 == len(facts["enumerate"])
    assert facts["enumerate"][0] == "MainThread"
    assert all(name.startswith("ThreadPoolExecutor-") for name in facts["enumerate"][1:])


def test_the_declared_cpus_change_the_makespan_as_a_machine_of_that_size_would() -> None:
    """fanout-100 (100 calls) on a pool of cpus + 4 workers: 6 workers are slower than 20."""
    sc = find_scenario("fanout-100")
    makespans = {}
    for cpus in (2, 16):
        seen.clear()
        makespans[cpus] = run(replace(sc, machine=Machine(cpus)), scheduler, seed=1).makespan_ms
        assert seen[0]["workers"] == cpus + 4 and seen[0]["os.cpu_count"] == cpus
    assert makespans == {2: 21150, 16: 6944}


def test_the_machine_is_read_from_the_scenario_and_written_back() -> None:
    sc = scenario([("a", "web_search", {"query": "q"})], machine={"cpus": 3})
    assert sc.machine == Machine(3)
    assert scenario_to_data(sc)["machine"] == {"cpus": 3}
    assert "machine" not in scenario_to_data(scenario([("a", "web_search", {"query": "q"})]))
    assert scenario([("a", "web_search", {"query": "q"})]).machine.cpus == DEFAULT_CPUS == 8
    assert scenario([("a", "web_search", {"query": "q"})], machine={}).machine.cpus == DEFAULT_CPUS


@pytest.mark.parametrize(("machine", "message"), [
    ({"cpus": 0}, "machine.cpus: expected a positive whole number of CPUs (what os.cpu_count() returns to the "
                  "runtime), got 0"),
    ({"cpus": "eight"}, "machine.cpus: expected a positive whole number of CPUs"),
    ({"cpus": True}, "machine.cpus: expected a positive whole number of CPUs"),
    ({"cpus": 2.5}, "machine.cpus: expected a positive whole number of CPUs"),
    ({"cores": 4}, "machine.cores"),
    (4, "machine: expected a table, got 4"),
])
def test_a_malformed_machine_names_the_file_and_the_field(tmp_path: Path, machine: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario_from_data({"name": "t", "batches": [{"calls": [{"id": "a", "name": "web_search",
                                                                  "arguments": {"query": "q"}}]}],
                            "machine": machine}, "given.toml")
    assert str(info.value).startswith("given.toml: ") and message in str(info.value)
    path = tmp_path / "bad.toml"
    path.write_text('name = "t"\n[machine]\ncpus = -1\n[[batches]]\n[[batches.calls]]\nid = "a"\n'
                    'name = "web_search"\narguments = \'{"query": "q"}\'\n')
    with pytest.raises(ScenarioError, match=r"bad\.toml: machine\.cpus: expected a positive whole number"):
        load_scenario(path)


def test_cpus_on_the_command_line_overrides_the_scenario_and_is_in_the_reproduce_line() -> None:
    spec = f"{__name__}:scheduler"
    makespans = {}
    for cpus in ("2", "16"):
        result = CliRunner().invoke(main, ["run", "fanout-100", "--scheduler", spec, "--cpus", cpus,
                                           "--format", "json"])
        document = json.loads(result.output)
        makespans[cpus] = document["makespan_ms"]
        assert f"--cpus {cpus}" in document["reproduce"]
    assert makespans == {"2": 21150, "16": 6944}
    refused = CliRunner().invoke(main, ["run", "fanout-100", "--scheduler", spec, "--cpus", "0"])
    assert refused.exit_code == 2 and "--cpus" in refused.output


async def hands_host_facts_to_threads(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """An asyncio runtime asking the machine from worker threads (`asyncio.to_thread`)."""
    seen.append({"to_thread(os.cpu_count)": await asyncio.to_thread(os.cpu_count),
                 "to_thread(pool size)": await asyncio.to_thread(lambda: os.cpu_count())})
    return [{"tool_call_id": tc.id, "content": await tools[tc.function.name](**json.loads(tc.function.arguments))}
            for tc in tool_calls]


def test_work_an_asyncio_runtime_hands_to_threads_sees_the_declared_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch, 2)
    seen.clear()
    sc = replace(find_scenario("incident-triage"), machine=Machine(3))
    result = run(sc, from_asyncio(hands_host_facts_to_threads), seed=1)
    assert result.status is RunStatus.COMPLETED
    assert seen == [{"to_thread(os.cpu_count)": 3, "to_thread(pool size)": 3}]


async def sleeps_on_a_thread(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    await asyncio.to_thread(time.sleep, 1)  # `partial(context.run, time.sleep)`: the real sleep, read on the loop
    return [{"tool_call_id": tc.id, "content": await tools[tc.function.name](**json.loads(tc.function.arguments))}
            for tc in tool_calls]


def test_a_function_asyncio_to_thread_wraps_is_the_bridged_one() -> None:
    """`asyncio.to_thread(f)` hands the executor `partial(context.run, f)`: `f` is replaced as
    `run_in_executor(None, f)`'s is. The second of sleep is virtual: 9 s of serial calls plus 1 s."""
    started = time.perf_counter()
    result = run(find_scenario("incident-triage"), from_asyncio(sleeps_on_a_thread), seed=1)
    assert result.status is RunStatus.COMPLETED and result.makespan_ms == 10000
    assert time.perf_counter() - started < 0.9  # the test's own real clock: no real second slept


async def loop_facts(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """An asyncio runtime reading the host on the event loop (sizing a semaphore by the CPUs)."""
    facts: dict[str, Any] = {"os.cpu_count": os.cpu_count(), "imported cpu_count": imported_cpu_count(),
                             "multiprocessing.cpu_count": multiprocessing.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        facts["sched_getaffinity"] = len(os.sched_getaffinity(0))
    if hasattr(os, "process_cpu_count"):
        facts["process_cpu_count"] = os.process_cpu_count()
    seen.append(facts)
    values = await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments)) for tc in tool_calls))
    return [{"id": tc.id, "result": value} for tc, value in zip(tool_calls, values, strict=True)]


@pytest.mark.parametrize("host", [2, 16])
def test_code_on_the_bridged_loop_sees_the_declared_machine(monkeypatch: pytest.MonkeyPatch, host: int) -> None:
    fake_host(monkeypatch, host)
    seen.clear()
    declared = replace(find_scenario("incident-triage"), machine=Machine(3))
    run(declared, from_asyncio(loop_facts), seed=1)
    assert set(seen[0].values()) == {3}
    assert os.cpu_count() == host  # the harness's own code, outside the run, sees the host
