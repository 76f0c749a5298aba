"""A scheduler that raises, yields garbage, returns garbage or never returns is contained."""

import contextlib
from collections.abc import Generator
from typing import Any

from harness.model import Batch, CallResult
from harness.run import RunStatus, run
from harness.scheduling import SchedulerContext
from tests.helpers import scenario

SC = scenario([("a", "web_search", {"query": "x"}), ("b", "web_search", {"query": "y"})], time_bound_ms=60_000)


class Raises:
    name = "raises"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        yield ctx.start(batch.calls[0])
        raise RuntimeError("boom")


class RaisesImmediately:
    name = "raises-immediately"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> list[CallResult]:
        raise KeyError("no generator at all")


class YieldsGarbage:
    name = "garbage"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        yield "not an event"
        return []


class ReturnsGarbage:
    name = "returns-garbage"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        yield ctx.sleep(1)
        return {"a": "ok"}


class NeverReturns:
    name = "never-returns"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        ctx.start(batch.calls[0])
        yield ctx.env.event()  # waits for an event nobody will trigger
        return []


class Spins:
    name = "spins"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        while True:
            yield ctx.sleep(0)


class SleepsForever:
    name = "sleeps"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        while True:
            yield ctx.sleep(1000)


class OrphanProcess:
    """Spawns a sub-process that fails with nobody waiting for it."""

    name = "orphan"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        def bad() -> Generator[Any, Any, None]:
            yield ctx.sleep(1)
            raise ValueError("in a side process")

        ctx.env.process(bad())
        yield ctx.sleep(10)
        return []


class CatchesAndRecovers:
    """Failed events are thrown into the scheduler, which may handle them."""

    name = "recovers"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        def bad() -> Generator[Any, Any, None]:
            yield ctx.sleep(1)
            raise ValueError("expected")

        with contextlib.suppress(ValueError):
            yield ctx.env.process(bad())
        results = []
        for call in batch:
            results.append((yield ctx.start(call)))
        return results


def test_raising_scheduler_is_reported() -> None:
    for scheduler in (Raises(), RaisesImmediately()):
        r = run(SC, scheduler, 1)
        assert r.status is RunStatus.SCHEDULER_ERROR
        assert r.error is not None and ("boom" in r.error or "no generator" in r.error)


def test_garbage_is_a_contract_error() -> None:
    for scheduler, words in ((YieldsGarbage(), "yielded 'not an event'"), (ReturnsGarbage(), "not a list")):
        r = run(SC, scheduler, 1)
        assert r.status is RunStatus.CONTRACT_ERROR and r.error is not None and words in r.error


def test_deadlock_is_a_hang_naming_pending_calls() -> None:
    r = run(SC, NeverReturns(), 1)
    assert r.status is RunStatus.HANG
    assert r.error is not None and "idle" in r.error


def test_virtual_livelock_and_endless_sleep_hit_the_limits() -> None:
    spin = run(scenario([("a", "web_search", {"query": "x"})], event_budget=1000), Spins(), 1)
    assert spin.status is RunStatus.HANG and spin.error is not None and "event-budget" in spin.error
    sleeps = run(SC, SleepsForever(), 1)
    assert sleeps.status is RunStatus.HANG and sleeps.error is not None and "time-bound" in sleeps.error


def test_hang_names_calls_still_pending() -> None:
    class StartsAndWaitsForever:
        name = "waits"

        def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
            ctx.start(batch.calls[0])
            while True:
                yield ctx.sleep(10_000)

    long_call = scenario([("slow", "web_search", {"query": "x"})], time_bound_ms=5_000,
                         tools={"web_search": {"latency": {"fixed": 100_000}}})
    r = run(long_call, StartsAndWaitsForever(), 1)
    assert r.status is RunStatus.HANG and r.error is not None and "pending: slow" in r.error


def test_orphan_failure_is_contained() -> None:
    r = run(SC, OrphanProcess(), 1)
    assert r.status is RunStatus.SCHEDULER_ERROR and r.error is not None and "in a side process" in r.error


def test_failed_event_is_thrown_into_the_scheduler() -> None:
    r = run(SC, CatchesAndRecovers(), 1)
    assert r.status is RunStatus.COMPLETED and [x.call_id for x in r.results] == ["a", "b"]


class ReyieldsForever:
    name = "reyields"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        done = ctx.sleep(0)
        while True:
            yield done  # processed: SimPy resumes at once, inside the same step


def test_reyielding_a_processed_event_spends_the_event_budget() -> None:
    """Every resume counts as a step (issue 15, C2): the spin is a hang at the budget, not forever."""
    r = run(scenario([("a", "web_search", {"query": "x"})], event_budget=1000), ReyieldsForever(), 1)
    assert r.status is RunStatus.HANG and r.error is not None and "event-budget" in r.error


def test_matplotlib_cache_goes_to_the_user_cache_dir(tmp_path: Any) -> None:
    """matplotlib's font cache lands under $XDG_CACHE_HOME/harness/matplotlib (or ~/.cache/...), never
    in a surprise place; a MPLCONFIGDIR the user set is kept."""
    import os
    import subprocess
    import sys

    code = ("from harness.report.plots import _pyplot; import os; _pyplot(); print(os.environ['MPLCONFIGDIR'])")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME")}
    home = tmp_path / "home"
    home.mkdir()
    shown = subprocess.run([sys.executable, "-c", code], env={**env, "HOME": str(home)}, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert shown == str(home / ".cache" / "harness" / "matplotlib")
    assert sorted(p.name for p in home.iterdir()) == [".cache"]
    chosen = tmp_path / "mine"
    shown = subprocess.run([sys.executable, "-c", code], env={**env, "HOME": str(home), "MPLCONFIGDIR": str(chosen)},
                           capture_output=True, text=True, check=True).stdout.strip()
    assert shown == str(chosen)
