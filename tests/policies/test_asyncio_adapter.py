"""from_asyncio: seed 003's asyncio executor, unchanged, on the virtual clock."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness import find_scenario, run
from harness.bridges.asyncio import from_asyncio
from harness.model import Outcome
from harness.oracles import check
from tests.helpers import scenario


def seed_003_executor(max_concurrency: int | None = None, timeout_s: float = 10) -> Any:
    """execute_tools_in_parallel from seed 003: gather, wait_for and an optional semaphore."""

    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None

        async def execute_one_tool(tool_call: Any) -> dict[str, Any]:
            tool = tools.get(tool_call.function.name)
            if tool is None:
                return {"id": tool_call.id, "success": False, "error": "unknown tool"}
            try:
                arguments = json.loads(tool_call.function.arguments)
                if semaphore is None:
                    result = await asyncio.wait_for(tool(**arguments), timeout=timeout_s)
                else:
                    async with semaphore:
                        result = await asyncio.wait_for(tool(**arguments), timeout=timeout_s)
                return {"id": tool_call.id, "success": True, "result": result}
            except TimeoutError:
                return {"id": tool_call.id, "success": False, "error": f"tool took longer than {timeout_s} s"}
            except Exception as error:
                return {"id": tool_call.id, "success": False, "error": str(error)}

        return list(await asyncio.gather(*(execute_one_tool(tc) for tc in tool_calls)))

    return execute


def test_gather_runs_the_incident_queries_in_parallel_on_virtual_time() -> None:
    sc = find_scenario("incident-triage")
    result = run(sc, from_asyncio(seed_003_executor(), name="seed-003"), 1)
    assert result.makespan_ms == 4000
    assert [r.outcome for r in result.results] == [Outcome.OK] * 3
    assert result.results[0].value["main_error"] == "Database connection pool exhausted"
    assert all(v.ok for v in check(result))


def test_a_semaphore_of_one_makes_it_serial() -> None:
    result = run(find_scenario("incident-triage"), from_asyncio(seed_003_executor(max_concurrency=1)), 1)
    assert result.makespan_ms == 9000


def test_wait_for_times_out_in_virtual_seconds_and_the_ghost_is_caught() -> None:
    sc = find_scenario("incident-triage")
    result = run(sc, from_asyncio(seed_003_executor(timeout_s=3.5)), 1)
    assert result.makespan_ms == 3500
    metrics = result.results[1]
    assert metrics.outcome is Outcome.ERROR and "longer than 3.5 s" in (metrics.error or "")
    ticket = scenario([("t", "create_ticket", {"title": "outage"})])  # 800 ms, lands at 400 ms
    late = run(ticket, from_asyncio(seed_003_executor(timeout_s=0.6)), 1)
    assert late.results[0].outcome is Outcome.ERROR and len(late.final.ledger("tickets")) == 1
    assert {v.label for v in check(late) if not v.ok} == {"ghost-effect"}


def test_the_lost_update_of_an_all_parallel_executor_is_caught() -> None:
    result = run(find_scenario("config-clobber"), from_asyncio(seed_003_executor()), 3)
    assert "lost-update" in {v.label for v in check(result) if not v.ok}


def test_results_without_ids_pair_by_position_and_a_crashing_executor_is_contained() -> None:
    async def positional(tool_calls: list[Any], tools: Any) -> list[Any]:
        return [await tools[tc.function.name](**json.loads(tc.function.arguments)) for tc in tool_calls]

    result = run(find_scenario("incident-triage"), from_asyncio(positional), 1)
    assert result.makespan_ms == 9000 and [r.call_id for r in result.results] == ["call-logs", "call-metrics",
                                                                                  "call-deploys"]
    assert all(v.ok for v in check(result))

    async def broken(tool_calls: list[Any], tools: Any) -> list[Any]:
        await asyncio.sleep(1)
        raise RuntimeError("executor bug")

    crashed = run(find_scenario("incident-triage"), from_asyncio(broken), 1)
    assert crashed.status.value == "scheduler-error" and "executor bug" in (crashed.error or "")


SEED_003 = from_asyncio(seed_003_executor(timeout_s=3.5), name="seed-003")


def test_asyncio_runs_are_deterministic_across_processes_and_hash_seeds() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = ("from harness import find_scenario, run\n"
              "from tests.policies.test_asyncio_adapter import SEED_003\n"
              "print(run(find_scenario('code-review'), SEED_003, 7).fingerprint)\n")
    root = Path(__file__).resolve().parents[2]
    prints = {subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed}, cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip() for seed in ("0", "999")}
    assert prints == {run(find_scenario("code-review"), SEED_003, 7).fingerprint}
