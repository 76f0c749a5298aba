"""Exclusivity and caps: what may not run at the same time.

Owns two oracles over the attempts' real running intervals (from start to the moment the work
really stopped, detached work included):
- exclusivity: an interactive tool (`clarify`) or one declared exclusive never overlaps another call;
- caps: the scenario's global `max_concurrency` and per-tool caps are never exceeded.
It never looks at results or the world.
"""

from __future__ import annotations

from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Verdict, Violation
from harness.run import RunResult

EXCLUSIVITY = "exclusivity"
CAPS = "caps"


def _overlap(a: Attempt, b: Attempt) -> bool:
    # Zero-length attempts (an unknown tool rejected at once) occupy no time.
    return a.start_t < b.end_t and b.start_t < a.end_t and a.start_t < a.end_t and b.start_t < b.end_t


def check_exclusivity(result: RunResult) -> Verdict:
    facts = RunFacts.of(result)
    catalogue = result.scenario.catalogue
    violations = []
    reported: set[tuple[str, str]] = set()
    for a in facts.attempts:
        spec = catalogue.get(a.tool)
        if spec is None or not (spec.declared.interactive or spec.declared.exclusive):
            continue
        for b in facts.attempts:
            if b is a or not _overlap(a, b) or (b.call, a.call) in reported:
                continue
            reported.add((a.call, b.call))
            why = "interactive" if spec.declared.interactive else "exclusive"
            violations.append(Violation(
                "exclusivity",
                f"{a.call} ({a.tool}, {why}) ran at the same time as {b.call} ({b.tool})",
                {"call": a.call, "tool": a.tool, "other": b.call, "other_tool": b.tool,
                 "overlap_ms": [max(a.start_t, b.start_t), min(a.end_t, b.end_t)]},
            ))
    return Verdict.of(EXCLUSIVITY, violations)


def check_caps(result: RunResult) -> Verdict:
    scenario = result.scenario
    if scenario.max_concurrency is None and not scenario.tool_caps:
        return Verdict.of(CAPS, [], note="the scenario declares no caps")
    facts = RunFacts.of(result)
    # Ends sort before starts at the same instant: a slot freed at t can be reused at t.
    events = sorted([(a.start_t, 1, a.start_seq, a) for a in facts.attempts if a.start_t < a.end_t]
                    + [(a.end_t, 0, a.end_seq, a) for a in facts.attempts if a.start_t < a.end_t],
                    key=lambda e: (e[0], e[1], e[2]))
    running: list[Attempt] = []
    violations: list[Violation] = []
    flagged: set[str] = set()
    for t, is_start, _, attempt in events:
        if not is_start:
            running.remove(attempt)
            continue
        running.append(attempt)
        limits = [("max_concurrency", scenario.max_concurrency, running)]
        cap = scenario.tool_caps.get(attempt.tool)
        limits.append((f"tools.{attempt.tool}.max_concurrency", cap, [a for a in running if a.tool == attempt.tool]))
        for which, limit, group in limits:
            if limit is not None and len(group) > limit and which not in flagged:
                flagged.add(which)
                violations.append(Violation(
                    "cap-exceeded", f"{len(group)} calls ran at once at {t} ms; {which} is {limit}",
                    {"limit": which, "cap": limit, "t": t, "running": [a.call for a in group]}))
    return Verdict.of(CAPS, violations)
