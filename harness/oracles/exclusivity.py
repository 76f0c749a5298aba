"""Exclusivity and caps: what may not run at the same time.

Owns two oracles over the attempts' real running intervals (from start to the moment the work
really stopped, detached work included):
- exclusivity: an interactive tool (`clarify`) or one declared exclusive never overlaps another call
  (of the same agent, when several agents share the world: another task's work is not its business);
- caps: the scenario's `max_concurrency` (a runtime's pool: each agent's own) and per-tool caps (the
  service behind the tool: everyone's calls) are never exceeded.
It never looks at results or the world.
"""

from __future__ import annotations

from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult

EXCLUSIVITY = "exclusivity"
CAPS = "caps"

#: The passing verdicts, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_EXCLUSIVE_PASSED = passing(EXCLUSIVITY)
_CAPS_PASSED = passing(CAPS)
_NO_CAPS = passing(CAPS, "the scenario declares no caps")


def _overlap(a: Attempt, b: Attempt) -> bool:
    # Zero-length attempts (an unknown tool rejected at once) occupy no time.
    return a.start_t < b.end_t and b.start_t < a.end_t and a.start_t < a.end_t and b.start_t < b.end_t


def _agents(result: RunResult) -> dict[str, str]:
    """Call id -> its agent, on a run of several agents (empty otherwise)."""
    if not result.agents:
        return {}
    return {call.id: run.agent or "" for run in result.batches for call in run.batch}


def check_exclusivity(result: RunResult) -> Verdict:
    facts = RunFacts.of(result)
    exclusive = facts.shape.exclusive
    # A loop, not any() over a generator: this runs for every attempt of every checked run.
    for a in facts.attempts:
        if a.tool in exclusive:
            break
    else:
        return _EXCLUSIVE_PASSED  # no attempt of a tool that excludes others
    catalogue = result.scenario.catalogue
    agent_of = _agents(result)
    violations = []
    reported: set[tuple[str, str]] = set()
    for a in facts.attempts:
        spec = catalogue.get(a.tool)
        if spec is None or not (spec.declared.interactive or spec.declared.exclusive):
            continue
        for b in facts.attempts:
            if b is a or not _overlap(a, b) or (b.call, a.call) in reported:
                continue
            if agent_of.get(a.call) != agent_of.get(b.call):
                continue  # another agent's task: its work is not what this question or call must exclude
            reported.add((a.call, b.call))
            why = "interactive" if spec.declared.interactive else "exclusive"
            violations.append(Violation(
                "exclusivity",
                f"{a.call} ({a.tool}, {why}) ran at the same time as {b.call} ({b.tool})",
                {"call": a.call, "tool": a.tool, "other": b.call, "other_tool": b.tool,
                 "overlap_ms": [max(a.start_t, b.start_t), min(a.end_t, b.end_t)]},
            ))
    return Verdict.of(EXCLUSIVITY, violations) if violations else _EXCLUSIVE_PASSED


def check_caps(result: RunResult) -> Verdict:
    scenario = result.scenario
    if scenario.max_concurrency is None and not scenario.tool_caps:
        return _NO_CAPS
    facts = RunFacts.of(result)
    # Ends sort before starts at the same instant: a slot freed at t can be reused at t.
    events = sorted([(a.start_t, 1, a.start_seq, a) for a in facts.attempts if a.start_t < a.end_t]
                    + [(a.end_t, 0, a.end_seq, a) for a in facts.attempts if a.start_t < a.end_t],
                    key=lambda e: (e[0], e[1], e[2]))
    running: list[Attempt] = []
    violations: list[Violation] = []
    flagged: set[str] = set()
    agent_of = _agents(result)
    for t, is_start, _, attempt in events:
        if not is_start:
            running.remove(attempt)
            continue
        running.append(attempt)
        # max_concurrency is a runtime's own pool: with several agents, each runtime's; a tool's cap is
        # the service's behind it, whoever calls.
        own = [a for a in running if agent_of.get(a.call) == agent_of.get(attempt.call)] if agent_of else running
        limits = [("max_concurrency", scenario.max_concurrency, own)]
        cap = scenario.tool_caps.get(attempt.tool)
        limits.append((f"tools.{attempt.tool}.max_concurrency", cap, [a for a in running if a.tool == attempt.tool]))
        for which, limit, group in limits:
            if limit is not None and len(group) > limit and which not in flagged:
                flagged.add(which)
                violations.append(Violation(
                    "cap-exceeded", f"{len(group)} calls ran at once at {t} ms; {which} is {limit}",
                    {"limit": which, "cap": limit, "t": t, "running": [a.call for a in group]}))
    return Verdict.of(CAPS, violations) if violations else _CAPS_PASSED
