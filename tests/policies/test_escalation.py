"""Escalation to a person (issue 28, item 4; notes 002/004): a timed-out call of a tool not declared
idempotent is handed to the scripted user instead of retried (`[execution] escalate_timeouts`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Outcome
from harness.oracles import check
from harness.run import RunResult
from harness.scenario import Scenario
from harness.scheduling.approvals import ApprovalRule, ApprovalScript
from harness.scheduling.execution import ExecutionPolicy


def escalation(**execution: Any) -> Scenario:
    sc = find_scenario("ticket-escalation")
    return replace(sc, execution=replace(sc.execution, **execution))


def labels(result: RunResult) -> set[str]:
    return {v.label for verdict in check(result) for v in verdict.violations}


def tickets(result: RunResult) -> int:
    return len(result.final.ledger("tickets"))


@pytest.mark.parametrize("policy", ["partition", "hermes_gate", "resource_keys"])
def test_a_retrying_runtime_duplicates_the_ticket_and_an_escalating_one_does_not(policy: str) -> None:
    retried = run(escalation(escalate_timeouts=False), get_scheduler(policy), 1)
    assert "duplicate-effect" in labels(retried) and tickets(retried) == 2

    escalated = run(escalation(), get_scheduler(policy), 1)
    assert labels(escalated) == set() and tickets(escalated) == 1
    (result,) = escalated.batches[0].results
    assert (result.outcome, result.attempts) == (Outcome.UNKNOWN, 1)
    assert result.error is not None and "the user, asked whether to run it again, said no" in result.error
    # The question is asked after the timeout, and the answer is what the runtime waited for.
    asked = [e for e in escalated.trace if e["ev"] in ("approval_requested", "approval")]
    assert [(e["ev"], e["t"]) for e in asked] == [("approval_requested", 500), ("approval", 2500)]
    assert escalated.batches[0].end_ms == 2500


def test_a_user_who_approves_gets_the_retry() -> None:
    sc = escalation()
    sc = replace(sc, approvals=ApprovalScript(default=ApprovalRule("approve")))
    result = run(sc, get_scheduler("partition"), 1)
    assert tickets(result) == 2  # the user said run it again: the runtime obeys (the duplicate is theirs)
    assert result.batches[0].results[0].attempts == 2


def test_without_a_scripted_user_a_timed_out_call_is_not_retried() -> None:
    result = run(replace(escalation(), approvals=None), get_scheduler("partition"), 1)
    assert tickets(result) == 1 and not [e for e in result.trace if e["ev"] == "approval_requested"]
    (reported,) = result.batches[0].results
    assert reported.error is not None and "no user is there to ask" in reported.error


def test_an_idempotent_tool_is_retried_as_before() -> None:
    """Escalation is for calls that cannot be safely retried: the duplicate-ticket scenario declares the
    API idempotent (with keys) and its retry is unchanged."""
    sc = find_scenario("duplicate-ticket")
    plain = run(sc, get_scheduler("partition"), 1)
    escalating = run(replace(sc, execution=sc.execution.merged(escalate_timeouts=True)), get_scheduler("partition"), 1)
    assert escalating.fingerprint == plain.fingerprint


def test_the_option_is_read_from_a_scenario() -> None:
    assert ExecutionPolicy.from_data({"escalate_timeouts": True}).escalate_timeouts
    with pytest.raises(ValueError, match="escalate_timeouts must be bool"):
        ExecutionPolicy.from_data({"escalate_timeouts": "yes"})
