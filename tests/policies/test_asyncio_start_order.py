"""`asyncio.as_completed` over coroutines replays identically in a fresh process (issue 24, item 7).

Before, it made tasks of its coroutines in the order of their addresses (it iterates `set(fs)`):
the in-process self-check passed while a saved reproducer replayed in a fresh interpreter as
"nondeterministic" (exit 5). During a bridged run the start order is drawn from the run's seed
(`harness.bridges.start_order`): the same in every process, different across seeds.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from asyncio import as_completed
from pathlib import Path
from typing import Any

import pytest

from harness import __version__, find_scenario, run
from harness.bridges import from_asyncio, start_order
from harness.reproducers.replay import reproducer_of, save
from tests.policies.test_asyncio_bridge import as_completed_executor

ROOT = Path(__file__).resolve().parents[2]


async def imported_as_completed(tool_calls: list[Any], tools: Any) -> list[Any]:
    """The same executor with `from asyncio import as_completed` (a name bound at import)."""
    async def one(tc: Any) -> dict[str, Any]:
        return {"id": tc.id, "success": True,
                "result": await tools[tc.function.name](**json.loads(tc.function.arguments))}

    return [await done for done in as_completed([one(tc) for tc in tool_calls])]


ATTRIBUTE = from_asyncio(as_completed_executor, name="as_completed")
IMPORTED = from_asyncio(imported_as_completed, name="imported-as_completed")


def _fingerprints() -> str:
    return " ".join(run(find_scenario(name), scheduler, seed).fingerprint
                    for scheduler in (ATTRIBUTE, IMPORTED)
                    for name, seed in (("incident-triage", 1), ("incident-triage", 4), ("fanout-100", 3)))


def _starts(scheduler: Any, seed: int) -> list[str]:
    return [e["call"] for e in run(find_scenario("incident-triage"), scheduler, seed).trace if e["ev"] == "start"]


def test_the_start_order_is_the_seed_s_in_a_fresh_process_under_another_hash_seed() -> None:
    script = "from tests.policies.test_asyncio_start_order import _fingerprints\nprint(_fingerprints())\n"
    prints = {subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed}, cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip() for seed in ("0", "4242")}
    assert prints == {_fingerprints()}


def test_in_one_process_runs_agree_however_the_coroutines_are_placed_in_memory() -> None:
    # What made the old test see two orders within 200 runs: objects kept alive move the addresses.
    first = [_starts(ATTRIBUTE, 1), _starts(IMPORTED, 1)]
    kept: list[list[object]] = []
    for n in range(60):
        kept.append([object() for _ in range(1 + 37 * n % 101)])
        assert [_starts(ATTRIBUTE, 1), _starts(IMPORTED, 1)] == first


def test_seeds_draw_different_start_orders_that_the_imported_name_shares() -> None:
    orders = {tuple(_starts(ATTRIBUTE, seed)) for seed in range(1, 13)}
    assert len(orders) >= 4  # of the 6 a real process could show
    assert all(_starts(ATTRIBUTE, seed) == _starts(IMPORTED, seed) for seed in range(1, 6))


def test_a_saved_reproducer_replays_in_a_fresh_interpreter(tmp_path: Path) -> None:
    # Before: `harness replay` of this file exited 5 (nondeterministic) in most fresh interpreters.
    result = run(find_scenario("incident-triage"), ATTRIBUTE, 5)
    path = save(reproducer_of(result, "tests.policies.test_asyncio_start_order:ATTRIBUTE", "out-of-order",
                              "protocol", "test"), tmp_path, version=__version__)
    command = [sys.executable, "-c", "from harness.cli import main; main()", "replay", str(path),
               "--trust-module", "tests.policies.test_asyncio_start_order", "--expect", "reproduces"]
    for seed in ("0", "99"):
        done = subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": seed}, cwd=ROOT, capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_stand_in_is_installed_only_while_a_run_is_open() -> None:
    assert asyncio.as_completed is start_order.ORIGINAL and asyncio.tasks.as_completed is start_order.ORIGINAL
    seen: list[bool] = []

    async def execute(tool_calls: list[Any], tools: Any) -> list[Any]:
        seen.append(asyncio.as_completed is start_order.as_completed and as_completed is start_order.as_completed)
        return await imported_as_completed(tool_calls, tools)

    run(find_scenario("incident-triage"), from_asyncio(execute), 1)
    assert seen == [True]
    assert asyncio.as_completed is start_order.ORIGINAL and as_completed is start_order.ORIGINAL

    async def outside() -> list[int]:  # outside a run: the real one, results as they complete
        async def value(x: int) -> int:
            await asyncio.sleep(0)
            return x

        return sorted([await f for f in asyncio.as_completed([value(2), value(1)])])

    assert asyncio.run(outside()) == [1, 2]


def test_a_coroutine_passed_directly_is_still_a_type_error() -> None:
    async def execute(tool_calls: list[Any], tools: Any) -> list[Any]:
        async def nothing() -> None:
            return None

        coro = nothing()
        try:
            with pytest.raises(TypeError):
                list(asyncio.as_completed(coro))  # type: ignore[arg-type]
        finally:
            coro.close()
        return list(await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                           for tc in tool_calls)))

    assert run(find_scenario("incident-triage"), from_asyncio(execute), 1).status.value == "completed"
