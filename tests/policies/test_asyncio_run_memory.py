"""A bridged run is freed when it ends, by reference counting, as a run of a built-in policy is.

Each test fails on the bridge before it: the run's state was kept for good in a weak-key table whose
value held its key (every run's world, trace and tasks leaked), and after that was fixed the state still
sat in reference cycles with its run (sessions, toolbox, blocker, the interrupt's callback, the pump),
so each run waited for the cycle collector. Both made a bridged run several times slower in a long
search (issue 24 item 8).
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import simpy

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.bridges.asyncio import run_state


async def gather_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    values = await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                    for tc in tool_calls))
    return [{"id": tc.id, "result": value} for tc, value in zip(tool_calls, values, strict=True)]


def _states() -> list[run_state.RunState]:
    return [o for o in gc.get_objects() if isinstance(o, run_state.RunState)]


def _registered() -> list[Any]:
    """Environments still naming a run's state (an ended run unregisters its own)."""
    return [o for o in gc.get_objects() if isinstance(o, simpy.Environment)
            and getattr(o, run_state._RUN_ATTRIBUTE, None) is not None]


def test_a_bridged_run_leaves_nothing_behind_without_the_cycle_collector(no_cycle_collector: None) -> None:
    scheduler, sc = from_asyncio(gather_executor), find_scenario("incident-triage")
    for seed in (3, 4, 5):
        result = run(sc, scheduler, seed)
        assert result.status.value == "completed"
    del result
    assert _registered() == []
    assert _states() == []  # freed by reference counting: nothing of the runs sits in a cycle


def test_an_interrupted_bridged_run_is_freed_too(no_cycle_collector: None) -> None:
    scheduler, sc = from_asyncio(gather_executor), find_scenario("interrupt-midbatch")
    for seed in (3, 4):
        run(sc, scheduler, seed)
    assert _registered() == []
    assert _states() == []
