"""A real runtime's released code checked by name, as a CI job would: `check_scheduler` then runs it in
a supervised child process (the default for a `module:attribute` name), and still tells pydantic-ai's
all-parallel default (a lost update) from its sequential writers (which pass)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai.models.function")

from harness.testing import SchedulerCheckFailed, check_scheduler

RACES = ["config-clobber", "edit-then-test"]


def test_the_buggy_default_fails_and_the_fix_passes_in_an_isolated_child() -> None:
    with pytest.raises(SchedulerCheckFailed) as failed:
        check_scheduler("harness.recipes.pydantic_ai:scheduler", scenarios=RACES, profile="quick", generated=False,
                        swarm=False, seed=5)
    assert failed.value.report.isolated
    assert {f.label for f in failed.value.failures} >= {"lost-update"}
    report = check_scheduler("harness.recipes.pydantic_ai:writers_sequential", scenarios=RACES, profile="quick",
                             generated=False, swarm=False, seed=5)
    assert report.isolated and report.passed and report.calls_started > 0
