"""The pytest plugin, driven through pytester."""

from __future__ import annotations

import re

import pytest

TESTS = """
def test_serial(harness):
    harness.check("serial", scenarios=["config-clobber"], generated=False)

def test_parallel(harness):
    harness.check("parallel", scenarios=["config-clobber"], generated=False, swarm=False)
"""


def test_header_failure_section_and_reproducer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=TESTS)
    report_dir = pytester.path / "repro"
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick",
                                f"--harness-report-dir={report_dir}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "harness: seed 7, profile quick, reproducers in *",
        "*serializability violated on scenario 'config-clobber': lost-update*",
        "*harness reproduce*",
        "seed 7, profile quick",
        "rerun this test: pytest test_policies.py::test_parallel --harness-seed=7 --harness-profile=quick",
        "replay the failing run: harness replay *repro*.json",
    ])
    assert list(report_dir.glob("*.json"))


def test_seed_last_reuses_the_previous_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seed="def test_seed(harness):\n    print('SEED', harness.seed)\n")
    first = pytester.runpytest("--harness-seed=random", "-s")
    seed = re.search(r"SEED (\d+)", first.stdout.str())
    assert seed is not None
    again = pytester.runpytest("--harness-seed=last", "-s")
    again.stdout.fnmatch_lines([f"harness: seed {seed.group(1)}, profile *", f"*SEED {seed.group(1)}*"])


def test_ci_profile_defaults_to_a_fixed_seed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_x="def test_x(harness):\n    assert harness.seed == 1 and harness.profile == 'ci'\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_bad_seed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    result = pytester.runpytest("--harness-seed=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-seed must be an integer, 'last' or 'random', got 'soon'*"])
