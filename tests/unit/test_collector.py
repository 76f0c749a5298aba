"""Full garbage collections wait while a large run or its judging executes, and only then."""

from __future__ import annotations

import gc
from collections.abc import Generator
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.schedulers.context import SchedulerContext
from harness.sim import collector
from harness.sim.collector import LARGE_CALLS, held_full_collections
from tests.helpers import scenario


def test_a_hold_raises_only_the_full_collection_threshold_and_puts_it_back() -> None:
    before = gc.get_threshold()
    with held_full_collections(LARGE_CALLS - 1):
        assert gc.get_threshold() == before  # a small run keeps every collection
    with held_full_collections(LARGE_CALLS):
        held = gc.get_threshold()
        assert held[:2] == before[:2] and held[2] > 10**6
        with held_full_collections(10 * LARGE_CALLS):  # nested: one hold
            assert gc.get_threshold() == held
        assert gc.get_threshold() == held
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), held_full_collections(LARGE_CALLS):
        raise RuntimeError("a run that raises")
    assert gc.get_threshold() == before and collector._depth == 0


def test_a_large_run_and_its_judging_hold_full_collections() -> None:
    seen: list[tuple[int, int, int]] = []

    def watching(batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        seen.append(gc.get_threshold())
        return (yield from get_scheduler("parallel")(batch, ctx))

    before = gc.get_threshold()
    calls = [(f"s{i}", "web_search", {"query": "q"}) for i in range(LARGE_CALLS)]
    result = run(scenario(calls), watching, 1)
    assert seen[0][2] > 10**6 and gc.get_threshold() == before
    assert all(v.ok for v in check(result)) and gc.get_threshold() == before
    small = run(scenario(calls[:10]), watching, 1)
    assert seen[-1] == before and small.status.value == "completed"
