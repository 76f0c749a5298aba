"""What the default scenarios added by issue 23 (item 5) bring: each catches a realistic bug that every
earlier default lets through, and the correct per-batch policies pass it.

The generated batches' `cd` and the loop conformance scenarios have tests of their own
(tests/properties/test_strategies_cd.py, tests/oracles/test_loop_policy.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scheduling import Scheduler
from harness.testing import DEFAULT_SCENARIOS, SchedulerCheckFailed, check_scheduler
from tests.catalogue import buggy

#: The defaults issue 23 added: two capped tools interleaved, one scheduler serving two agents.
ADDED = ("interleaved-caps", "two-agents-one-runtime")
EARLIER = [name for name in DEFAULT_SCENARIOS if name not in ADDED]

BUGS = [
    ("two-agents-one-runtime", buggy.SessionLockOnTheRuntime(), buggy.SessionLockOnTheRuntime(in_session=True)),
    ("interleaved-caps", buggy.PermitOnTheExecutor(), None),
]


@pytest.mark.parametrize(("scenario", "bug", "fix"), BUGS, ids=[name for name, _, _ in BUGS])
def test_an_added_default_catches_what_the_earlier_ones_let_through(scenario: str, bug: Scheduler,
                                                                      fix: Scheduler | None) -> None:
    check_scheduler(bug, scenarios=EARLIER, generated=False, profile="quick")
    with pytest.raises(SchedulerCheckFailed, match=f"on scenario '{scenario}'"):
        check_scheduler(bug, scenarios=[scenario], generated=False, profile="quick")
    if fix is not None:
        check_scheduler(fix, scenarios=[scenario], generated=False, profile="ci")


@pytest.mark.parametrize("policy", ["serial", "partition", "rwlock"])
def test_the_correct_policies_pass_the_added_defaults(policy: str) -> None:
    check_scheduler(policy, scenarios=list(ADDED), generated=False, profile="ci")


def test_one_instance_serves_both_agents_of_the_crew() -> None:
    """Both agents of two-agents-one-runtime run the scheduler under test (no agent names its own), in
    sessions of their own, with turns that overlap in time."""
    from harness import find_scenario, get_scheduler, run

    scenario = find_scenario("two-agents-one-runtime")
    assert [a.scheduler for a in scenario.agents] == [None, None]
    assert all(a.workdir for a in scenario.agents) and scenario.catalogue["save_daily_report"].file_lock
    result = run(scenario, get_scheduler("rwlock"), 1)
    first = {run.agent: run for run in reversed(result.batches)}
    api, web = first["api"], first["web"]
    assert api.start_ms < web.start_ms < api.end_ms  # web's first turn arrives while api's runs
    assert {outcome.status for outcome in result.agents.values()} == {"final_answer"}


def test_the_defaults_include_them() -> None:
    assert set(ADDED) <= set(DEFAULT_SCENARIOS)


def test_check_scheduler_with_a_loop_judges_the_loop() -> None:
    """A loop that never disables a tool failing the same way fails the check; seed 004's policy passes."""
    from harness.testing import LOOP_SCENARIOS

    with pytest.raises(SchedulerCheckFailed) as failure:
        check_scheduler("serial", loop=buggy.RetryKeyedByCallId(), only=list(LOOP_SCENARIOS), profile="quick")
    assert {(f.scenario, f.label) for f in failure.value.failures} == {("tool-disabled", "retry-limit-exceeded")}
    report = check_scheduler("serial", loop="taskloop", only=list(LOOP_SCENARIOS), profile="quick")
    assert [c.scenario for c in report.scenarios] == list(LOOP_SCENARIOS)
    assert all("loop-policy" in c.oracles for c in report.scenarios)


@pytest.mark.slow
def test_a_loop_given_by_name_gets_an_explore_line_that_runs_as_printed(tmp_path: Path) -> None:
    from harness.testing import LOOP_SCENARIOS
    from tests.helpers import as_printed

    with pytest.raises(SchedulerCheckFailed) as failure:
        check_scheduler("serial", loop="tests.catalogue.buggy:RetryKeyedByCallId", only=list(LOOP_SCENARIOS),
                        profile="quick")
    (found,) = failure.value.failures
    assert found.reproduce is not None and found.reproduce.endswith(
        "--label retry-limit-exceeded --loop tests.catalogue.buggy:RetryKeyedByCallId")
    done = as_printed(found.reproduce + " --no-save", tmp_path)
    assert done.returncode == 3 and "FOUND retry-limit-exceeded" in done.stdout, done.stdout + done.stderr


def test_only_leaving_none_of_the_loop_scenarios_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"loop='taskloop': only= and skip= leave none of the loop scenarios"):
        check_scheduler("serial", loop="taskloop", only=["config-clobber"], profile="quick")
