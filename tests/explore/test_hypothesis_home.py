"""The hypothesis strategy and check_scheduler's generated part: they write nothing in the current
directory (Hypothesis's constants cache goes to a temporary home, removed after the search), a home
directory the user chose is put back, and its runs to a failure do not count Hypothesis's shrinking."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import configuration

from harness import find_scenario
from harness.explore.engine import explore


def _forget_scanned_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Hypothesis remembers of the modules it has scanned, forgotten: the next search scans them
    again and would write its cache now (else an earlier test in this process may have written it)."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import constants_from_module

    constants_from_module.cache_clear()
    monkeypatch.setattr(providers, "_seen_modules", set())
    monkeypatch.setattr(providers, "_sys_modules_len", None)


@pytest.mark.slow
def test_check_schedulers_generated_part_leaves_no_hypothesis_directory(pytester: pytest.Pytester) -> None:
    """A user's project under pytest, in a fresh process (Hypothesis scans the modules of the working
    directory once a process): the generated part leaves no .hypothesis/ there."""
    pytester.makepyfile(mypolicy="from harness.policies import Serial\n\nPOLICY = Serial()\n",
                        test_mine="""
        from harness.testing import check_scheduler

        def test_mine():
            check_scheduler("mypolicy:POLICY", scenarios=[], profile="quick")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-no-database")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".hypothesis").exists()


def test_a_hypothesis_exploration_leaves_no_hypothesis_directory(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    _forget_scanned_modules(monkeypatch)
    chosen = tmp_path / "mine"
    previous = vars(configuration).get("__hypothesis_home_directory")
    configuration.set_hypothesis_home_dir(chosen)
    try:
        explore(find_scenario("config-clobber"), "serial", "hypothesis", runs=20, seed=5, shrink=False)
        assert vars(configuration).get("__hypothesis_home_directory") == chosen
    finally:
        configuration.set_hypothesis_home_dir(previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither ./.hypothesis nor the chosen home


def test_runs_to_failure_counts_to_the_first_failing_example_not_the_shrinking() -> None:
    exploration = explore(find_scenario("config-clobber"), "parallel", "hypothesis", runs=10, seed=5)
    assert exploration.found is not None and exploration.runs_to_failure is not None
    # The budget is 10 examples; shrinking runs more, and those are not 'runs to the failure'.
    assert exploration.runs_to_failure <= 10 < exploration.runs
