"""What shrinking costs: each smaller scenario gets `refind_budget` runs (twice what finding the bug
took, at least MIN_REFIND_RUNS), and a pass goes on after a removal instead of starting over, so a
check's many findings shrink in a fraction of the runs they took with the exploration's whole budget
per candidate, to the same calls."""

from __future__ import annotations

from dataclasses import replace

import pytest

import harness.explore.shrink as shrink
from harness.explore.engine import explore
from harness.explore.shrink import MIN_REFIND_RUNS, refind_budget, shrink_finding
from harness.policies import get_scheduler
from harness.scenario import find_scenario


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs shrinking makes (every plan run of a refind goes through `execute_plan`)."""
    made = [0]
    real = shrink.execute_plan

    def counting(*args: object, **kwargs: object) -> object:
        made[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shrink, "execute_plan", counting)
    return made


def test_the_refind_budget_follows_what_finding_took() -> None:
    found = explore(find_scenario("config-clobber"), "parallel", "random", runs=20, seed=3, shrink=False).found
    assert found is not None
    assert refind_budget(replace(found, run_index=0), 60) == MIN_REFIND_RUNS
    assert refind_budget(replace(found, run_index=9), 60) == 20
    assert refind_budget(replace(found, run_index=45), 60) == 60  # never more than the exploration's budget
    assert refind_budget(replace(found, run_index=0), 5) == 5


@pytest.mark.parametrize("name", ["shared-shell-cwd", "scrape-fanout", "two-agents-one-runtime"])
def test_a_bug_found_early_shrinks_to_the_same_calls_in_far_fewer_runs(name: str, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    policy = get_scheduler("parallel")
    found = explore(find_scenario(name), policy, "random", runs=60, seed=2, shrink=False).found
    assert found is not None and found.run_index < 4
    made = _counted(monkeypatch)
    shrunk = shrink_finding(found, policy, 2, 3)
    cheap = made[0]
    monkeypatch.setattr(shrink, "MIN_REFIND_RUNS", 60)  # the whole budget for every smaller scenario, as before
    made[0] = 0
    whole = shrink_finding(found, policy, 2, 3)
    assert [c.id for c in shrunk.result.scenario.calls] == [c.id for c in whole.result.scenario.calls]
    assert len(shrunk.result.scenario.calls) < len(found.result.scenario.calls)
    assert shrunk.label == found.label
    assert cheap * 3 < made[0]
