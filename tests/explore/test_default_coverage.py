"""What the proposed default scenarios add (issue 23, item 5): each catches a realistic bug that every
earlier default lets through, and the correct per-batch policies pass it.

`tests.catalogue.cases.PROPOSED_DEFAULTS` names them; the generated batches' `cd` and the loop
conformance scenarios have tests of their own (tests/properties/test_strategies_cd.py,
tests/oracles/test_loop_policy.py).
"""

from __future__ import annotations

import pytest

from harness.schedulers import Scheduler
from harness.testing import DEFAULT_SCENARIOS, SchedulerCheckFailed, check_scheduler
from tests.catalogue import buggy
from tests.catalogue.cases import PROPOSED_DEFAULTS

EARLIER = [name for name in DEFAULT_SCENARIOS if name not in PROPOSED_DEFAULTS]

BUGS = [
    ("two-agents-one-runtime", buggy.SessionLockOnTheRuntime(), buggy.SessionLockOnTheRuntime(in_session=True)),
    ("interleaved-caps", buggy.PermitOnTheExecutor(), None),
]


@pytest.mark.parametrize(("scenario", "bug", "fix"), BUGS, ids=[name for name, _, _ in BUGS])
def test_a_proposed_default_catches_what_the_earlier_ones_let_through(scenario: str, bug: Scheduler,
                                                                      fix: Scheduler | None) -> None:
    check_scheduler(bug, scenarios=EARLIER, generated=False, profile="quick")
    with pytest.raises(SchedulerCheckFailed, match=f"on scenario '{scenario}'"):
        check_scheduler(bug, scenarios=[scenario], generated=False, profile="quick")
    if fix is not None:
        check_scheduler(fix, scenarios=[scenario], generated=False, profile="ci")


@pytest.mark.parametrize("policy", ["serial", "partition", "rwlock"])
def test_the_correct_policies_pass_the_proposed_defaults(policy: str) -> None:
    check_scheduler(policy, scenarios=list(PROPOSED_DEFAULTS), generated=False, profile="ci")


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
