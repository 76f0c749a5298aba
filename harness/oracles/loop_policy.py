"""Loop-policy conformance: does the agent loop keep the limits it declares?

Owns the `loop-policy` oracle and `loop_conformance_scenarios`, the built-in loop scenarios that
exercise it under a loop policy of the caller's choosing. A loop policy declares its limits
(`limits(spec) -> LoopLimits`, see `harness.agent.runtime`; taskloop: 15 rounds and seed 004's
ToolRetryPolicy of 2 retries, run_agent: 8 steps and no retry limit); the oracle reads them from the
policy the run used, with the scenario's settings applied, never from constants of its own. On each
agent's task:

- `round-limit-exceeded`: the loop asked its model for more decisions (`PLANNER_DECISION`) than
  `max_round`;
- `retry-limit-exceeded`: a call of a tool ran (was handed to the scheduler) after a decision that
  came once the tool had failed `retry_same_signature + 1` times in a row with the same arguments and
  the same error (seed 004: "对同一工具相同参数签名最多重试两次。第三次如果还是相同错误直接把该工具标记为'当前不可用'");
  failures are counted per (tool, canonical arguments) over the calls the model's decisions emitted,
  in the order the loop saw their results; a success of that signature starts the count again;
- `tool-disabled-silently`: once the tool is disabled, the model is not told: the failure that
  disabled it, or a later call to the disabled tool that the loop did not run, got no result the
  model reads (`Outcome.reported`). A decision that also calls a tool the catalogue lacks is left
  out: a loop may reject it as a whole (taskloop re-prompts it) and says so in its context.

All three are liveness violations: seed 004's "可控制" — a loop must stop itself (and tell its model
why) instead of running on. A policy that declares no limits is not judged by them (the verdict's
note says so). Whatever its limits, a loop that raises (or yields something that is no request) ends
its task as `loop-error`, a contract violation of the loop: its own failure, never the model's. The
oracle reads the trace's agent events, the batches and the results the loop reported; it never runs
a loop.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.agent.registry import UnknownLoopError, loop_of
from harness.agent.runtime import PLANNER_DECISION, LoopLimits, LoopPolicy, Outcome, declared_limits
from harness.agent.spec import AgentSpec
from harness.model import CallResult
from harness.oracles.verdict import Kind, Verdict, Violation, passing
from harness.run import RunResult
from harness.scenario import Scenario, find_scenario

NAME = "loop-policy"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_NOT_A_LOOP = passing(NAME, "not a loop run")
LABELS = ("round-limit-exceeded", "retry-limit-exceeded", "tool-disabled-silently", "loop-error")

#: The built-in loop scenarios that exercise a loop policy's limits, and what each provokes:
#: `tool-disabled` (the same 503 again and again: the same-signature limit, and telling the model),
#: `max-round-exceeded` (a model that never concludes: the round limit), `unknown-tool-recovery`
#: (unparseable output and a made-up tool before the real query), `sales-report` (seed 004's demo:
#: a loop must still get a plain task done).
CONFORMANCE_SCENARIOS = ("tool-disabled", "max-round-exceeded", "unknown-tool-recovery", "sales-report")


def _signature(name: str, arguments: str) -> tuple[str, str]:
    """A call's tool and canonical arguments (the raw text when it is not JSON)."""
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return name, arguments


def _error(result: CallResult) -> str:
    return result.error or result.outcome.value


@dataclass
class _Streak:
    """Identical failures in a row of one (tool, arguments) signature."""

    error: str
    calls: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Disabled:
    """A tool the policy must have disabled: when, and the failures that did it."""

    tool: str
    arguments: str
    error: str
    calls: tuple[str, ...]
    batch: int
    #: (time, trace position) of the batch's end: the loop can tell the model from then on.
    at: tuple[int, int]


def _agent_runs(result: RunResult) -> list[tuple[str | None, AgentSpec, Outcome | None]]:
    source = result.source
    if source is None:
        return []
    if source.agent is not None:
        return [(None, source.agent, result.agent)]
    return [(entry.name, entry.spec, result.agents.get(entry.name)) for entry in source.agents]


def check(result: RunResult) -> Verdict:
    runs = _agent_runs(result)
    if not runs:
        return _NOT_A_LOOP
    violations: list[Violation] = []
    notes: list[str] = []
    for agent, spec, outcome in runs:
        who = f"agent {agent}: " if agent is not None else ""
        try:
            policy = loop_of(spec)
        except UnknownLoopError as exc:
            notes.append(f"{who}{exc}")
            continue
        if outcome is not None and outcome.status == "loop-error":
            name = str(getattr(policy, "name", spec.loop))
            violations.append(Violation(
                "loop-error", f"{who}the loop policy {name!r} failed: {outcome.detail}",
                {"loop": name, "error": outcome.detail, "rounds": outcome.rounds, "tool_calls": outcome.tool_calls,
                 **({"agent": agent} if agent else {})}, Kind.CONTRACT))
        try:
            limits = declared_limits(policy, spec)
        except TypeError as exc:
            notes.append(f"{who}{exc}")
            continue
        if limits is None:
            notes.append(f"{who}loop policy {spec.loop!r} declares no limits (limits(spec) -> LoopLimits)")
            continue
        violations.extend(_check_agent(result, agent, spec, policy, limits, outcome))
    return Verdict.of(NAME, violations, note="; ".join(notes))


def _check_agent(result: RunResult, agent: str | None, spec: AgentSpec, policy: LoopPolicy, limits: LoopLimits,
                 outcome: Outcome | None) -> list[Violation]:
    loop = str(getattr(policy, "name", spec.loop))
    base: dict[str, Any] = {"loop": loop, "limits": limits.to_json(), **({"agent": agent} if agent else {})}
    decisions = [e for e in result.trace
                 if e["ev"] == "agent" and e.get("event") == PLANNER_DECISION and e.get("agent") == agent]
    violations: list[Violation] = []
    if limits.max_round is not None and len(decisions) > limits.max_round:
        over = decisions[limits.max_round]
        violations.append(Violation(
            "round-limit-exceeded",
            f"{loop} asked its model for {len(decisions)} decisions; its max_round is {limits.max_round}",
            {**base, "max_round": limits.max_round, "decisions": len(decisions), "round": over.get("round"),
             "at_ms": over["t"]}, Kind.LIVENESS))
    if limits.retry_same_signature is not None:
        violations.extend(_retries(result, agent, decisions, limits.retry_same_signature, loop, base, outcome))
    return violations


def _retries(result: RunResult, agent: str | None, decisions: Sequence[Mapping[str, Any]], retries: int,
             loop: str, base: Mapping[str, Any], outcome: Outcome | None) -> list[Violation]:
    # The calls the model's decisions emitted, and the decision (its position) that emitted each.
    decided = {call: i for i, e in enumerate(decisions) for call in e.get("calls") or ()}
    decision_at = [(e["t"], e["seq"]) for e in decisions]
    streaks: dict[tuple[str, str], _Streak] = {}
    disabled: dict[str, _Disabled] = {}
    violations: list[Violation] = []
    ran: set[str] = set()
    ends = {e["index"]: e["seq"] for e in result.trace if e["ev"] == "batch_end"}
    for run in result.batches:
        if run.agent != agent:
            continue
        reported = {r.call_id: r for r in run.results}
        found: list[_Disabled] = []
        for call in run.batch:
            if call.id not in decided:
                continue  # a fixed batch's call: history, not a decision of the loop
            ran.add(call.id)
            done = disabled.get(call.name)
            if done is not None and not any(v.label == "retry-limit-exceeded" for v in violations):
                violations.append(Violation(
                    "retry-limit-exceeded",
                    f"{call.id} ({call.name}) ran after {call.name} had failed {len(done.calls)} times with the same "
                    f"arguments and error ({', '.join(done.calls)}); {loop}'s retry_same_signature is {retries}",
                    {**base, "call": call.id, "tool": call.name, "failures": list(done.calls), "error": done.error,
                     "arguments": done.arguments, "retry_same_signature": retries, "disabled_after_batch": done.batch,
                     "started_batch": run.index, "at_ms": run.start_ms}, Kind.LIVENESS))
            r = reported.get(call.id)
            if r is None:
                continue  # no result: the protocol oracle's business
            signature = _signature(call.name, call.arguments)
            if r.ok:
                streaks.pop(signature, None)
                continue
            streak = streaks.get(signature)
            if streak is None or streak.error != _error(r):
                streak = streaks[signature] = _Streak(_error(r))
            streak.calls.append(call.id)
            if len(streak.calls) >= retries + 1 and call.name not in disabled:
                found.append(_Disabled(call.name, signature[1], streak.error, tuple(streak.calls[-(retries + 1):]),
                                       run.index, (run.end_ms, ends[run.index])))
        for each in found:  # the loop can act on a batch's failures only once it has them all
            disabled.setdefault(each.tool, each)
    if outcome is not None and disabled:
        violations.extend(_untold(disabled, decisions, decided, decision_at, ran, outcome, loop, base,
                                  result.scenario.catalogue))
    return violations


def _untold(disabled: Mapping[str, _Disabled], decisions: Sequence[Mapping[str, Any]], decided: Mapping[str, int],
            decision_at: Sequence[tuple[int, int]], ran: set[str], outcome: Outcome, loop: str,
            base: Mapping[str, Any], known: Collection[str]) -> list[Violation]:
    told = {r.call_id: r for r in outcome.reported}
    for tool, done in disabled.items():
        last = done.calls[-1]
        if not any(at > done.at for at in decision_at):
            continue  # the task ended with that batch (an answer, a crash, a stop): nothing to tell
        if last not in told:
            return [Violation(
                "tool-disabled-silently",
                f"{tool} failed {len(done.calls)} times with the same arguments and error, and the model never "
                f"received the last failure ({last})",
                {**base, "tool": tool, "call": last, "failures": list(done.calls), "error": done.error,
                 "why": "failure-unreported"}, Kind.LIVENESS)]
        after = decided[last]
        for i, e in enumerate(decisions):
            if i <= after:
                continue
            calls, tools = list(e.get("calls") or ()), list(e.get("tools") or ())
            if any(name not in known for name in tools):
                continue  # a call to a tool nobody has: the loop may reject the whole decision, and say so
            for call, name in zip(calls, tools, strict=False):
                if name != tool or call in ran:
                    continue
                answer = told.get(call)
                if answer is None or answer.ok:
                    return [Violation(
                        "tool-disabled-silently",
                        f"{loop} did not run {call} ({tool}, disabled after {', '.join(done.calls)}) and gave the "
                        "model " + ("no result for it" if answer is None else "an ok result for it"),
                        {**base, "tool": tool, "call": call, "round": e.get("round"), "at_ms": decision_at[i][0],
                         "failures": list(done.calls), "error": done.error,
                         "why": "no-result" if answer is None else "ok-result"}, Kind.LIVENESS)]
    return []


def loop_conformance_scenarios(loop: str | LoopPolicy, names: Sequence[str] = CONFORMANCE_SCENARIOS
                               ) -> list[Scenario]:
    """The built-in loop scenarios `names` set to run under loop policy `loop` — a registry name or
    `package.module:attribute` (as `harness run --loop NAME`), or a policy object — so that
    `explore(scenario, scheduler, ...)` and `check_scheduler(..., extra_scenarios=...)` judge the loop
    with the `loop-policy` oracle, next to every other. Each keeps its scripted model and settings; a
    name that is no loop policy raises `UnknownLoopError` listing the valid ones. An object runs in
    this process only: a saved reproducer names its class (`module:qualname`)."""
    from harness.agent.registry import BUILTIN_LOOPS, get_loop

    if isinstance(loop, str):
        get_loop(loop)  # an unknown name fails here, with the valid ones
        name, policy = loop, None
    else:
        builtin = BUILTIN_LOOPS.get(str(getattr(loop, "name", "")))
        same = builtin is not None and type(loop) is builtin
        name = str(loop.name) if same else f"{type(loop).__module__}:{type(loop).__qualname__}"
        policy = loop
    chosen = []
    for scenario_name in names:
        scenario = find_scenario(scenario_name)
        if scenario.agents:
            agents = tuple(replace(a, spec=replace(a.spec, loop=name, policy=policy)) for a in scenario.agents)
            chosen.append(replace(scenario, agents=agents))
        elif scenario.agent is not None:
            chosen.append(replace(scenario, agent=replace(scenario.agent, loop=name, policy=policy)))
        else:
            raise ValueError(f"scenario {scenario_name!r} has no [model]: no loop drives it")
    return chosen
