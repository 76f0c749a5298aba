"""The turnstile's count of runnable threads (`Turnstile.ready`) is exact at every wait and wake.

The driver, a parking thread and an ending thread skip their scans for the next runnable thread when
the count is zero, so a count that fell behind would leave a runnable thread unrun (a false hang) and
one that ran ahead would only cost a scan. These tests read the count against the threads' states at
every park and wake, for pools, a polling pool, locks and hand-made futures, in plain and order-first
runs, on both carriers; and show the check notices a count that is not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from random import Random
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.bridges.threads.turnstile import RUNNABLE, Turnstile
from harness.explore.pct import PCT
from harness.sim.arbiter import TIME, Tape
from tests.policies.seed000_executor import execute as hermes_pool
from tests.policies.test_thread_bridge import lock_arrival
from tests.policies.test_thread_bridge_futures import futures_by_hand
from tests.policies.test_thread_bridge_garbage import _pool

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


class Counts:
    """What the checks saw: how many ran, and the mismatches they found."""

    def __init__(self) -> None:
        self.checks = 0
        self.mismatches: list[str] = []


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    """Every park and wake reads the count against the threads' states first."""
    counts = Counts()

    def checked(method: Callable[..., Any]) -> Callable[..., Any]:
        def check(self: Turnstile, *args: Any, **kwargs: Any) -> Any:
            counts.checks += 1
            actual = sum(1 for thread in self.threads if thread.state == RUNNABLE)
            if self.threads and self.ready != actual:
                counts.mismatches.append(f"{method.__name__}: ready={self.ready}, runnable={actual}")
            return method(self, *args, **kwargs)
        return check

    monkeypatch.setattr(Turnstile, "park", checked(Turnstile.park))
    monkeypatch.setattr(Turnstile, "wake", checked(Turnstile.wake))
    yield counts


EXECUTORS = {"pool": _pool, "hermes": hermes_pool, "locks": lock_arrival, "futures": futures_by_hand}


def _runs(execute: Callable[..., Any], scenario: str) -> None:
    sc = find_scenario(scenario)
    scheduler = from_threads(execute)
    for seed in (1, 7):
        run(sc, scheduler, seed)
        first = run(sc, scheduler, seed, chooser=Tape())
        entities = (*(c.id for c in first.scenario.calls), TIME)
        run(sc, scheduler, seed, chooser=PCT(Random(seed), entities, max(2 * len(first.tape or ()), 2), depth=2))


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
def test_the_count_of_runnable_threads_is_exact(each_carrier: str, executor: str, counted: Counts) -> None:
    for scenario in ("incident-triage", "interrupt-midbatch", "edit-then-test"):
        _runs(EXECUTORS[executor], scenario)
    assert counted.mismatches == []
    assert counted.checks > 100  # it looked, often

def test_the_check_notices_a_count_not_kept(monkeypatch: pytest.MonkeyPatch, counted: Counts) -> None:
    real_wake = Turnstile.wake  # the checking one: the count is read before the broken wake runs

    def forgetful(self: Turnstile, thread: Any) -> None:
        real_wake(self, thread)
        if self.ready:
            self.ready -= 1  # a wake that forgets to count the thread it made runnable

    monkeypatch.setattr(Turnstile, "wake", forgetful)
    for seed in (1, 2, 3):
        run(find_scenario("incident-triage"), from_threads(_pool), seed)
    assert counted.mismatches
