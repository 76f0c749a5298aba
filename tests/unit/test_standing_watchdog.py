"""One standing watchdog for every run of a `wall_limit_per_run` block (issue 27, item 3): a run makes
no system call for it, yet a run that spins is still stopped at its own limit, whatever ran before it,
and watchdogs nested inside or around the block keep their own deadlines."""

from __future__ import annotations

import gc
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.policies import get_scheduler
from harness.run import RunStatus, run
from harness.scenario import find_scenario
from harness.sim.realtime import (
    ImportTimeout,
    WallClockExceeded,
    standing_watchdog,
    wall_clock_watchdog,
    wall_limit_per_run,
    watched_build,
)

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the watchdog needs SIGALRM")

SCENARIO = find_scenario("config-clobber")


def spinning(batch: Any, ctx: Any) -> Iterator[Any]:
    while True:  # never yields to the simulation: only a real-time watchdog stops it
        pass
    yield


def _spin_run(seed: int = 5) -> tuple[float, WallClockExceeded]:
    started = time.monotonic()
    with pytest.raises(WallClockExceeded) as caught:
        run(SCENARIO, spinning, seed)
    return time.monotonic() - started, caught.value


def _quick_runs_for(seconds: float) -> int:
    policy, ends, done = get_scheduler("serial"), time.monotonic() + seconds, 0
    while time.monotonic() < ends:
        assert run(SCENARIO, policy, done).status is RunStatus.COMPLETED
        done += 1
    return done


def test_a_run_that_spins_is_stopped_at_its_own_limit_after_runs_that_took_longer_together() -> None:
    # (A limit with room: on a loaded CI machine one quick run once took past 0.5 s, a full collection
    # of a long-lived test worker's heap, and its expiry is now raised, not lost in a gc callback.)
    with wall_limit_per_run(1.0):
        assert standing_watchdog(1.0) is not None
        assert _quick_runs_for(2.2) > 2  # together past the limit: none of them is stopped
        took, exc = _spin_run(seed=9)
    assert 1.0 <= took < 6.0
    assert "the run of 'config-clobber' under function, seed 9, took more than 1 s of real time" in str(exc)
    assert exc.result is not None and exc.result.status is RunStatus.HANG and exc.result.wall_clock_exceeded


def test_runs_under_the_block_make_no_signal_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for name in ("setitimer", "getitimer", "signal"):
        real = getattr(signal, name)
        monkeypatch.setattr(signal, name, lambda *a, _real=real, _name=name: (calls.append(_name), _real(*a))[1])
    policy = get_scheduler("serial")
    with wall_limit_per_run(60):
        armed = len(calls)
        for seed in range(30):
            run(SCENARIO, policy, seed)
        assert len(calls) == armed
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_block_leaves_no_timer_and_the_handler_it_found() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with wall_limit_per_run(1.0):
        _spin_run()
        run(SCENARIO, get_scheduler("serial"), 1)  # the standing watchdog serves the next run too
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before


def test_an_import_limit_inside_the_block_keeps_its_own_deadline_and_the_block_its_own_after() -> None:
    def spin() -> None:
        while True:
            pass

    with wall_limit_per_run(30):
        started = time.monotonic()
        with pytest.raises(ImportTimeout):
            watched_build(spin, 0.3, "importing a scheduler that spins")
        assert time.monotonic() - started < 5.0  # not the block's 30 s
    with wall_limit_per_run(0.4):
        watched_build(lambda: None, 600, "importing a quick one")
        took, _ = _spin_run()
    assert 0.4 <= took < 5.0


def test_a_deadline_pending_around_the_block_still_fires_first() -> None:
    """An outer timer (pytest-timeout's, `harness replay`'s whole-replay limit) due before the per-run
    limit: the block stands nothing, and the outer deadline stops the spinning run."""
    with wall_clock_watchdog(0.4, "the whole replay"), wall_limit_per_run(30):
        assert standing_watchdog(30) is None
        took, exc = _spin_run()
    assert took < 5.0 and "the whole replay" in str(exc)


def test_a_nested_block_with_another_limit_stands_its_own_and_gives_the_outer_one_back() -> None:
    with wall_limit_per_run(30):
        outer = standing_watchdog(30)
        with wall_limit_per_run(30):
            assert standing_watchdog(30) is outer  # the same limit: the same watchdog serves both
        with wall_limit_per_run(0.3):
            assert standing_watchdog(30) is None and standing_watchdog(0.3) is not None
            took, _ = _spin_run()
            assert took < 5.0
        assert standing_watchdog(30) is outer
    with wall_limit_per_run(0.3), wall_limit_per_run(30):
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


class _SlowCollection:
    """A garbage collector callback that, once armed, takes `seconds` of real time, as a profiler's or
    Hypothesis's may on a loaded machine. A signal handler's exception raised inside it is only
    printed by Python ("Exception ignored in ..."), not propagated."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.armed, self.ran, self.finished = seconds, False, 0, False

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and self.armed:
            self.armed = False
            self.ran += 1
            ends = time.monotonic() + self.seconds
            while time.monotonic() < ends:
                pass
            self.finished = True  # not reached when the watchdog's expiry ends the callback


_kept: list[list[Any]] = []


def _allocate() -> None:
    """Containers that outlive a young collection's count (one freed at once is never counted)."""
    _kept.append([])
    if len(_kept) > 5000:
        _kept.clear()


def _spins_through_a_slow_collection(slow: _SlowCollection, gives_up_after: float) -> Callable[..., Any]:
    def scheduler(batch: Any, ctx: Any) -> Iterator[Any]:
        slow.armed = True
        ends = time.monotonic() + gives_up_after
        while time.monotonic() < ends:  # young collections keep starting, the slow one first
            _allocate()
        return []
        yield

    return scheduler


@pytest.fixture
def slow_collection() -> Iterator[_SlowCollection]:
    slow = _SlowCollection(0.6)
    gc.callbacks.append(slow)
    try:
        yield slow
    finally:
        gc.callbacks.remove(slow)


def test_an_expiry_python_swallows_is_raised_again_and_stops_the_run(slow_collection: _SlowCollection) -> None:
    """The limit (0.2 s) passes inside the slow collection (0.6 s): the expiry ends the callback and
    Python swallows it there. It is raised again a moment later, in the scheduler's loop, instead of
    the run spinning on until it gives up (3 s)."""
    hook = sys.unraisablehook
    with wall_limit_per_run(0.2):
        assert standing_watchdog(0.2) is not None
        started = time.monotonic()
        with pytest.raises(WallClockExceeded) as caught:
            run(SCENARIO, _spins_through_a_slow_collection(slow_collection, 3.0), 1)
        took = time.monotonic() - started
    assert slow_collection.ran == 1 and not slow_collection.finished and 0.2 <= took < 2.5
    assert "took more than 0.2 s of real time" in str(caught.value)
    assert caught.value.result is not None and caught.value.result.status is RunStatus.HANG
    assert sys.unraisablehook is hook and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_runs_own_watchdog_raises_a_swallowed_expiry_again(slow_collection: _SlowCollection) -> None:
    hook = sys.unraisablehook
    started = time.monotonic()
    with pytest.raises(WallClockExceeded), wall_clock_watchdog(0.2, "the loop"):
        slow_collection.armed = True
        while time.monotonic() < started + 3.0:
            _allocate()
    assert slow_collection.ran == 1 and not slow_collection.finished
    assert 0.2 <= time.monotonic() - started < 2.5
    assert sys.unraisablehook is hook and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_run_that_spends_nearly_all_its_time_in_slow_collections_is_stopped_too() -> None:
    """Every young collection takes 15 ms in a callback (a profiler's, say) and the scheduler's own
    loop only microseconds between them: the expiry lands in a callback nearly every time, and must
    still reach the scheduler soon after. (A retry a millisecond later often landed in the next
    callback again: measured 0.6-1.6 s here, and 3.5 s for a user's 0.5 s limit.)"""

    def slow(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            ends = time.monotonic() + 0.015
            while time.monotonic() < ends:
                pass

    def scheduler(batch: Any, ctx: Any) -> Iterator[Any]:
        ends = time.monotonic() + 8.0
        while time.monotonic() < ends:
            _allocate()
        return []
        yield

    gc.callbacks.append(slow)
    try:
        with wall_limit_per_run(0.3):
            started = time.monotonic()
            with pytest.raises(WallClockExceeded):
                run(SCENARIO, scheduler, 1)
            took = time.monotonic() - started
    finally:
        gc.callbacks.remove(slow)
    assert 0.3 <= took < 1.5


def test_other_unraisable_exceptions_still_reach_the_hook_that_was_there(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_value))

    class Noisy:
        def __del__(self) -> None:
            raise KeyError("from __del__")

    with wall_clock_watchdog(30, "the block"):
        Noisy()
    assert [type(e) for e in seen] == [KeyError]
