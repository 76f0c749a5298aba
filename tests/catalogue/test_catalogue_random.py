"""Random exploration catches every bug of the catalogue, and not because its scenario is broken.

For each case of `tests.catalogue.cases.CASES`: 200 random runs (latencies drawn from the scenario,
seeds 1, 2, ...) find one of the expected labels, and the serial reference on the same scenario and
seeds reports none of them. Cases today's harness cannot expose carry a `harness_gap` and are
strict xfails, so the day the gap closes the test says so.
"""

from __future__ import annotations

import pytest

from harness.explore.engine import explore
from tests.catalogue.cases import CASES, Case

RUNS = 200
SEED = 1


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=case.harness_gap)] if case.harness_gap else []
    return pytest.param(case, id=case.name, marks=marks)


def test_the_catalogue_is_complete() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)) >= 22
    for pattern in range(1, 13):
        assert any(f"REFERENCE #{pattern}" in case.reference for case in CASES), f"no case for REFERENCE #{pattern}"


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_random_exploration_finds_the_bug(case: Case) -> None:
    scenario = case.load()
    # No shrinking: the test asks whether the bug is found, and shrinking re-explores per call.
    exploration = explore(scenario, case.scheduler, "random", runs=RUNS, seed=SEED, shrink=False)
    found = exploration.found
    assert found is not None, f"{case.name}: no violation in {RUNS} random runs of {scenario.name}"
    assert found.label in case.expected_labels, (
        f"{case.name}: found {found.label} ({found.message}) at run {found.run_index}, "
        f"expected one of {case.expected_labels}")
    # The scenario must not fail on its own: the serial reference (for a loop's bug, the scenario's own
    # loop) never shows the bug's labels.
    plain, reference_scheduler = case.baseline()
    reference = explore(plain, reference_scheduler, "random", runs=RUNS, seed=SEED, shrink=False, keep_going=True)
    shown = sorted({f.label for f in reference.findings} & set(case.expected_labels))
    assert not shown, f"{case.name}: the reference also reports {shown} on {scenario.name}"
