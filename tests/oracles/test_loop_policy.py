"""The loop-policy oracle: a loop keeps the limits it declares (rounds, same-signature retries) and
tells the model when it disables a tool; `loop_conformance_scenarios` runs the built-in loop
scenarios under any loop policy."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.agent import Task
from harness.agent.registry import UnknownLoopError
from harness.agent.runtime import LoopLimits, Outcome, Request
from harness.agent.spec import AgentSpec
from harness.agent.taskloop import TaskLoop
from harness.model import CallResult
from harness.oracles import LABELS, ORACLES, check, exit_code
from harness.oracles.loop_policy import CONFORMANCE_SCENARIOS, loop_conformance_scenarios
from harness.oracles.verdict import Kind, Verdict
from harness.run import RunResult
from harness.scenario import Scenario, find_scenario, scenario_from_data
from harness.testing import LOOP_SCENARIOS, SchedulerCheckFailed, check_scheduler
from tests.catalogue.buggy import RetryKeyedByCallId

#: tool-disabled's CRM, and a model that calls it every round whatever it is told (it never gives up).
STUBBORN: dict[str, Any] = {
    "name": "stubborn-crm", "loop": "taskloop",
    "tools": {"query_crm": {"latency": {"fixed": 400},
                            "declared": {"read_only": True, "side_effect": "none", "idempotent": True},
                            "failure": {"rate": 1.0, "permanent": True, "message": "503 Service Unavailable"},
                            "does": [{"op": "wait"}]}},
    "model": {"task": "查一下客户 acme 的合同金额。", "think": {"fixed": 600},
              "rules": [{"name": "again", "times": 20, "action": "tool_call",
                         "calls": [{"id": "crm", "name": "query_crm", "arguments": '{"customer": "acme"}'}]}]},
}


def verdict(result: RunResult) -> Verdict:
    return ORACLES["loop-policy"](result)


def under(scenario: Scenario, loop: object, **settings: int) -> Scenario:
    assert scenario.agent is not None
    name = loop if isinstance(loop, str) else "test"
    spec = replace(scenario.agent, loop=name, policy=None if isinstance(loop, str) else loop,
                   settings={**scenario.agent.settings, **settings})
    return replace(scenario, agent=spec)


class OffByOne:
    """Seed 004's pseudocode checks `round > max_round` after the round ran: one decision too many."""

    name = "off_by_one"

    def limits(self, spec: AgentSpec) -> LoopLimits:
        return TaskLoop().limits(spec)

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        declared = self.limits(task.spec).max_round or 0
        task.spec = replace(task.spec, settings={**task.spec.settings, "max_round": declared + 1})
        return (yield from TaskLoop()(task))


class Forgets:
    """taskloop, but the results it hands the model leave out its refusals (`refusals`) or every failure."""

    def __init__(self, what: str) -> None:
        self.what, self.name = what, f"forgets_{what}"

    def limits(self, spec: AgentSpec) -> LoopLimits:
        return TaskLoop().limits(spec)

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        record = task.record

        def keep(result: CallResult) -> bool:
            return result.ok or (self.what == "refusals" and result.attempts > 0)

        task.record = lambda results: record([r for r in results if keep(r)])  # type: ignore[method-assign]
        return (yield from TaskLoop()(task))


class Crashes:
    """taskloop with a typo that only the first results reach (`results[0].valu`): it raises then."""

    name = "crashes"

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        loop = TaskLoop()(task)
        request = next(loop)
        while True:
            answer = yield request
            if answer:
                answer[0].valu  # noqa: B018  # the bug: an attribute the result does not have
            request = loop.send(answer)


class NoLimits:
    """A loop that declares nothing: seed 003's run_agent without `limits`."""

    name = "no_limits"

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        from harness.agent.run_agent import RunAgent

        return (yield from RunAgent()(task))


def test_the_labels_are_registered() -> None:
    assert {"round-limit-exceeded", "retry-limit-exceeded", "tool-disabled-silently"} <= set(LABELS)
    assert "loop-policy" in ORACLES


@pytest.mark.parametrize("loop", ["taskloop", "run_agent"])
@pytest.mark.parametrize("scheduler", ["serial", "parallel"])
def test_the_built_in_loops_keep_their_limits(loop: str, scheduler: str) -> None:
    for scenario in loop_conformance_scenarios(loop):
        assert scenario.agent is not None and scenario.agent.loop == loop
        for seed in (1, 2):
            found = verdict(run(scenario, get_scheduler(scheduler), seed))
            assert found.ok, (loop, scenario.name, found.message)


def test_a_loop_that_never_disables_the_tool_is_caught_with_the_policys_own_limit() -> None:
    tool_disabled = loop_conformance_scenarios(RetryKeyedByCallId(), ["tool-disabled"])[0]
    result = run(tool_disabled, get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "max_round"  # 15 rounds of the same 503
    others = [v.ok for v in ORACLES.values() for v in [v(result)] if v.oracle != "loop-policy"]
    assert others == [True] * (len(ORACLES) - 1)
    found = verdict(result)
    assert [v.label for v in found.violations] == ["retry-limit-exceeded"]
    witness = found.violations[0].witness
    assert witness["call"] == "crm@4" and witness["failures"] == ["crm", "crm@2", "crm@3"]
    assert witness["limits"] == {"max_round": 15, "retry_same_signature": 2}
    assert found.violations[0].kind is Kind.LIVENESS
    # The limit is the policy's, with the scenario's settings: one retry allowed, the third call is over.
    stricter = run(under(find_scenario("tool-disabled"), RetryKeyedByCallId(), retry_same_signature=1),
                   get_scheduler("serial"), 1)
    assert verdict(stricter).violations[0].witness["call"] == "crm@3"
    # taskloop under the same setting disables after two failures and passes.
    strict = run(under(find_scenario("tool-disabled"), "taskloop", retry_same_signature=1), get_scheduler("serial"), 1)
    assert strict.agent is not None and strict.agent.unavailable == ("query_crm",) and verdict(strict).ok


def test_a_loop_without_a_retry_limit_is_not_held_to_one() -> None:
    """run_agent declares no same-signature limit (seed 003 has none): 8 identical 503s are no violation."""
    result = run(under(find_scenario("tool-disabled"), "run_agent"), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.tool_calls == 8
    assert verdict(result).ok


def test_a_round_too_many_is_caught() -> None:
    result = run(under(find_scenario("max-round-exceeded"), OffByOne()), get_scheduler("serial"), 1)
    found = verdict(result)
    assert [v.label for v in found.violations] == ["round-limit-exceeded"]
    assert found.violations[0].witness["decisions"] == 16 and found.violations[0].witness["max_round"] == 15
    fewer = run(under(find_scenario("max-round-exceeded"), "taskloop", max_round=5), get_scheduler("serial"), 1)
    assert fewer.agent is not None and fewer.agent.rounds == 5 and verdict(fewer).ok
    over = run(under(find_scenario("max-round-exceeded"), OffByOne(), max_round=5), get_scheduler("serial"), 1)
    assert verdict(over).violations[0].witness["decisions"] == 6


def test_the_model_must_be_told_the_tool_is_disabled() -> None:
    stubborn = scenario_from_data(STUBBORN)
    told = run(stubborn, get_scheduler("serial"), 1)  # taskloop answers each later call with its refusal
    assert told.agent is not None and told.agent.tool_calls == 3 and verdict(told).ok
    refusals = [r for r in told.agent.reported if r.attempts == 0]
    assert refusals and all(not r.ok and "unavailable" in (r.error or "") for r in refusals)

    silent = verdict(run(under(stubborn, Forgets("refusals")), get_scheduler("serial"), 1))
    assert [v.label for v in silent.violations] == ["tool-disabled-silently"]
    assert silent.violations[0].witness["call"] == "crm@4" and silent.violations[0].witness["why"] == "no-result"
    assert silent.violations[0].kind is Kind.LIVENESS

    unseen = verdict(run(under(stubborn, Forgets("failures")), get_scheduler("serial"), 1))
    assert [v.label for v in unseen.violations] == ["tool-disabled-silently"]
    assert unseen.violations[0].witness == {**unseen.violations[0].witness, "call": "crm@3",
                                            "why": "failure-unreported"}


def test_a_task_that_ends_with_the_failing_batch_owes_the_model_nothing() -> None:
    """max_round 3 ends the task with the third failure: no later decision, nothing left untold (a
    crash or a stop after that batch is the same)."""
    result = run(under(scenario_from_data(STUBBORN), Forgets("failures"), max_round=3), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "max_round" and result.agent.tool_calls == 3
    assert verdict(result).ok


def test_a_loop_that_declares_no_limits_is_not_judged() -> None:
    found = verdict(run(under(find_scenario("max-round-exceeded"), NoLimits()), get_scheduler("serial"), 1))
    assert found.ok and "declares no limits" in found.note
    assert verdict(run(find_scenario("config-clobber"), get_scheduler("serial"), 1)).note == "not a loop run"


def test_conformance_scenarios_by_name_object_and_unknown_name() -> None:
    assert [s.name for s in loop_conformance_scenarios("run_agent")] == list(CONFORMANCE_SCENARIOS)
    ours = loop_conformance_scenarios(TaskLoop())
    assert all(s.agent is not None and s.agent.loop == "taskloop" for s in ours)
    buggy = loop_conformance_scenarios(RetryKeyedByCallId())
    assert all(s.agent is not None and s.agent.loop == "tests.catalogue.buggy:RetryKeyedByCallId" for s in buggy)
    with pytest.raises(UnknownLoopError, match="valid: run_agent, taskloop"):
        loop_conformance_scenarios("no_such_loop")
    with pytest.raises(ValueError, match="has no \\[model\\]"):
        loop_conformance_scenarios("taskloop", ["config-clobber"])


def test_check_scheduler_judges_a_loop_through_its_conformance_scenarios() -> None:
    check_scheduler("serial", scenarios=[], extra_scenarios=loop_conformance_scenarios("taskloop"),
                    generated=False, profile="quick")
    with pytest.raises(SchedulerCheckFailed, match="loop-policy violated on scenario 'tool-disabled': "
                                                   "retry-limit-exceeded"):
        check_scheduler("serial", scenarios=[], extra_scenarios=loop_conformance_scenarios(RetryKeyedByCallId()),
                        generated=False, profile="quick")


def test_each_agent_of_a_crew_is_held_to_its_own_loops_limits() -> None:
    """Two agents retry the same broken CRM: the one under taskloop stops at three, the one whose loop
    never disables is caught, named by its agent; each agent's calls and decisions count alone."""
    model = STUBBORN["model"]
    crew = {"name": "two-stubborn", "tools": STUBBORN["tools"],
            "agents": [{"name": "careful", "loop": "taskloop", "model": model},
                       {"name": "keyed", "loop": "tests.catalogue.buggy:RetryKeyedByCallId", "model": model}]}
    result = run(scenario_from_data(crew, trust=["tests.catalogue.buggy"]), get_scheduler("serial"), 1)
    found = verdict(result)
    assert [(v.label, v.witness["agent"], v.witness["call"]) for v in found.violations] == [
        ("retry-limit-exceeded", "keyed", "keyed/crm@4")]
    assert result.agents["careful"].tool_calls == 3 and result.agents["keyed"].tool_calls == 15


def test_a_loop_that_raises_is_a_loop_error_not_the_models() -> None:
    """Whatever limits it declares (this one declares none), a loop that crashes ends its task as
    loop-error, with the rounds and calls it made: a contract violation of the loop (exit 4)."""
    result = run(under(find_scenario("sales-report"), Crashes()), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "loop-error"
    assert "AttributeError" in result.agent.detail and (result.agent.rounds, result.agent.tool_calls) == (1, 2)
    found = verdict(result)
    assert [v.label for v in found.violations] == ["loop-error"] and "crashes" in found.message
    assert exit_code(check(result)) == 4


def test_a_model_that_raises_is_the_models_error_not_the_loops() -> None:
    data = {"name": "py-model", "model": "tests.agent.py_model:raises", "world": {}, "tools": {}}
    result = run(scenario_from_data(data, trust=["tests.agent"]), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "model-error"
    assert verdict(result).ok


def test_check_scheduler_fails_a_crashing_loop() -> None:
    with pytest.raises(SchedulerCheckFailed) as failure:
        check_scheduler("serial", loop=Crashes(), only=list(LOOP_SCENARIOS), profile="quick")
    assert {f.label for f in failure.value.failures} == {"loop-error"}
