"""Full garbage collections wait while a large run or its judging executes, and only then."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Generator
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.scheduling.context import SchedulerContext
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


class _Node:
    """A weakly referenceable object kept alive only by a reference cycle through `link`."""

    def __init__(self, link: list[Any]) -> None:
        self.link = link
        link.append(self)


def test_a_frozen_heap_leaves_old_objects_out_and_gives_them_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # The permanent generation's size is not a stable measure: a frozen object freed by reference
    # counting (a thread an earlier test started, ending now) leaves it. So the freezes are counted.
    freezes: list[str] = []
    real_freeze, real_unfreeze = gc.freeze, gc.unfreeze
    monkeypatch.setattr(gc, "freeze", lambda: (freezes.append("freeze"), real_freeze())[1])
    monkeypatch.setattr(gc, "unfreeze", lambda: (freezes.append("unfreeze"), real_unfreeze())[1])
    assert gc.get_freeze_count() == 0
    old_cycle: list[Any] = []
    old = weakref.ref(_Node(old_cycle))
    with collector.frozen_heap():
        assert gc.get_freeze_count() > 0  # what was alive is out of every generation
        del old_cycle
        gc.collect()
        assert old() is not None  # alive when the block began: out of every collection
        with collector.frozen_heap():  # nested: one freeze
            assert freezes == ["freeze"]
        assert freezes == ["freeze"]
        # What the block makes is collected as usual: a cycle dropped inside is freed by a collection.
        cycle: list[Any] = []
        cycle.append(cycle)
        gone = weakref.ref(_Node(cycle))
        del cycle
        gc.collect()
        assert gone() is None and freezes == ["freeze"]
    assert freezes == ["freeze", "unfreeze"]
    assert gc.get_freeze_count() == 0 and collector._frozen == 0
    gc.collect()
    assert old() is None  # given back to the collector when the block ends
    with pytest.raises(RuntimeError), collector.frozen_heap():
        raise RuntimeError("a search that raises")
    assert gc.get_freeze_count() == 0 and collector._frozen == 0


def test_a_heap_someone_else_froze_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.freeze()
    try:
        calls: list[str] = []
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with collector.frozen_heap():
            assert gc.get_freeze_count() > 0
        assert calls == [] and collector._frozen == 0  # neither frozen again nor unfrozen by the block
    finally:
        monkeypatch.undo()
        gc.unfreeze()


def test_check_schedulers_generated_search_runs_as_a_long_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.testing import generated as testing

    seen: list[tuple[int, int]] = []
    real_run = testing.run

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return real_run(*args, **kwargs)

    before = gc.get_threshold()
    monkeypatch.setattr(testing, "run", counting)
    assert not testing.explore_generated(get_scheduler("serial"), 5, 1).findings
    assert seen and all(count > 0 and young == collector.SEARCH_YOUNG_THRESHOLD for count, young in seen[:5])
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_long_search_raises_the_young_threshold_only_and_puts_it_back() -> None:
    before = gc.get_threshold()
    with collector.long_search():
        assert gc.get_threshold() == (collector.SEARCH_YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
        with collector.long_search():  # nested: one setting
            assert gc.get_threshold()[0] == collector.SEARCH_YOUNG_THRESHOLD
        # A large run inside: its hold changes the full threshold only, and puts back only that.
        with held_full_collections(LARGE_CALLS):
            assert gc.get_threshold()[0] == collector.SEARCH_YOUNG_THRESHOLD and gc.get_threshold()[2] > 10**6
        assert gc.get_threshold() == (collector.SEARCH_YOUNG_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector.long_search():
        raise RuntimeError("a search that raises")
    assert gc.get_threshold() == before and collector._young_depth == 0


def test_a_young_threshold_of_zero_or_above_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    try:
        for young in (0, 50_000):
            gc.set_threshold(young, *before[1:])
            with collector.long_search():
                assert gc.get_threshold()[0] == young
            assert gc.get_threshold()[0] == young
    finally:
        gc.set_threshold(*before)


def test_an_exploration_and_a_sweep_run_as_a_long_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import sweep as sweep_module
    from harness.explore import engine

    seen: list[int] = []

    def watching(batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        seen.append(gc.get_threshold()[0])
        return (yield from get_scheduler("serial")(batch, ctx))

    engine.explore(scenario([("a", "web_search", {"query": "q"})]), watching, "random", runs=3, shrink=False)
    real = sweep_module.run_cell
    monkeypatch.setattr(sweep_module, "run_cell",
                        lambda cell, *limits: (seen.append(gc.get_threshold()[0]), real(cell, *limits))[1])
    sweep_module.sweep(sweep_module.grid(["config-clobber"], ["serial"], [1, 2]), processes=1)
    assert len(seen) >= 5 and set(seen) == {collector.SEARCH_YOUNG_THRESHOLD}
