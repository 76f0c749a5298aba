"""Seed 003's executor, pasted unchanged (`seed003_executor`), through `from_asyncio` (issue 11).

It takes only the calls and looks tools up in its module-level `TOOL_REGISTRY`, reads calls as dicts
(`tool_call["name"]`, `tool_call["arguments"]`), reports `call_id`, and holds a module-level
`asyncio.Semaphore(5)` created at import: all of it must work as is, run after run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness import Scenario, find_scenario, run
from harness.bridges import from_asyncio
from harness.model import Outcome
from harness.oracles import check
from harness.testing import check_scheduler
from tests.helpers import scenario
from tests.policies import seed003_executor as seed

PARALLEL = from_asyncio(seed.execute_tools_in_parallel, registry=seed.TOOL_REGISTRY, name="seed003-parallel")
GROUPED = from_asyncio(seed.execute_tool_batch, registry=seed.TOOL_REGISTRY, name="seed003-batch")


def test_gather_runs_incident_triage_in_4000_ms() -> None:
    result = run(find_scenario("incident-triage"), PARALLEL, 1)
    assert result.makespan_ms == 4000 and result.status.value == "completed"
    assert [r.outcome for r in result.results] == [Outcome.OK] * 3
    assert result.results[1].value["database_pool_usage"] == "100%"  # the simulated tool answered
    assert all(v.ok for v in check(result))


def test_a_semaphore_of_one_makes_it_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seed, "tool_semaphore", asyncio.Semaphore(1))
    assert run(find_scenario("incident-triage"), PARALLEL, 1).makespan_ms == 9000


def test_the_grouped_batch_follows_the_seeds_own_metadata() -> None:
    # The seed's last TOOL_METADATA lists only query_service_logs as parallel-safe: the other two
    # queries run one after the other.
    assert run(find_scenario("incident-triage"), GROUPED, 1).makespan_ms == 9000


def _eight_queries() -> Scenario:
    kinds = ["query_service_logs", "query_service_metrics", "query_deployment_history"]
    return scenario([(f"q{i}", kinds[i % 3], {"service_name": f"svc-{i}"} if i % 3 == 2
                      else {"service_name": f"svc-{i}", "minutes": 30}) for i in range(8)])


def test_a_hundred_runs_in_one_process_without_errors() -> None:
    # Eight queries: the module-level Semaphore(5) really waits, so it binds to the loop of the first
    # run (before: "bound to a different event loop" from the second run on, swallowed into results).
    results = [run(_eight_queries(), PARALLEL, 1) for _ in range(100)]
    assert all(r.status.value == "completed" for r in results)
    assert sum(x.outcome is not Outcome.OK for r in results for x in r.results) == 0
    assert len({r.fingerprint for r in results}) == 1
    assert {r.makespan_ms for r in results} == {7000}  # five at once, then three as slots free
    assert seed.tool_semaphore._value == 5  # nothing kept between runs


def test_it_passes_check_scheduler_with_swarm_faults_where_it_is_correct() -> None:
    # Read-only queries it knows; the all-parallel executor is correct there, under swarm faults
    # (failures, interrupts, slow first attempts, latencies at the timeout boundary) too.
    check_scheduler(PARALLEL, scenarios=["incident-triage", "incident-jitter"], profile="quick", generated=False)


def test_tools_it_does_not_know_are_its_own_unknown_tool_errors() -> None:
    result = run(find_scenario("config-clobber"), PARALLEL, 3)
    assert result.status.value == "completed"
    assert {r.error for r in result.results} == {"工具不存在"}


def test_the_registry_is_restored_when_the_run_ends() -> None:
    seen: list[object] = []
    original = seed.execute_tools_in_parallel

    async def watching(tool_calls: Any) -> Any:
        seen.append(seed.TOOL_REGISTRY["query_service_logs"])
        return await original(tool_calls)

    run(find_scenario("incident-triage"), from_asyncio(watching, registry=seed.TOOL_REGISTRY), 1)
    assert seen and seen[0] is not seed.query_service_logs  # bridged while the run is open
    assert seed.TOOL_REGISTRY["query_service_logs"] is seed.query_service_logs  # and restored when it ends
