"""What an exploration reports, and how a run's verdicts are read for it.

Owns `Finding` (a violation a run showed, with the run), `Exploration` (the runs made, the findings,
the bound or proof and the scope), `NondeterministicScheduler`, and the readings every strategy makes
of a run: its first violation, its labels, whether an oracle limited its check, and which tools it
started. It never runs anything (the strategies do) and never shrinks (`harness.explore.shrink`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.oracles import Verdict, check
from harness.oracles.facts import RunFacts
from harness.run import RunResult


@dataclass(frozen=True)
class Finding:
    label: str
    oracle: str
    message: str
    witness: dict[str, Any]
    result: RunResult
    run_index: int
    swarm: tuple[str, ...] = ()
    #: How the run that found it was made (e.g. "pct(d=2)", "random+swarm", "exhaustive").
    found_by: str = ""


@dataclass
class Exploration:
    strategy: str
    scenario: str
    scheduler: str
    runs: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: Calls started through the scheduler, by tool name, summed over the runs (what was exercised).
    started: dict[str, int] = field(default_factory=dict)
    bound: dict[str, Any] | None = None
    exhausted: bool | None = None
    classes: int | None = None
    shrunk: Finding | None = None
    #: What the runs covered, and what any claim covers (see the module docstring).
    scope: dict[str, Any] = field(default_factory=dict)

    @property
    def found(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def runs_to_failure(self) -> int | None:
        return self.found.run_index + 1 if self.found else None

    @property
    def proven(self) -> bool:
        """True only when exhaustive search ran every class within its bound, found nothing, and no
        oracle had to limit its check on any run."""
        return (self.strategy == "exhaustive" and bool(self.exhausted) and not self.findings
                and not self.scope.get("limited_checks"))


class NondeterministicScheduler(Exception):
    """A run did not repeat when run again from the same plan: the scheduler (or a tool) depends
    on something outside the seed."""


def first_violation(result: RunResult, label: str | Collection[str] | None = None
                    ) -> tuple[str, str, str, dict[str, Any]] | None:
    """(label, oracle, message, witness) of the first violation (with `label`, or one of the labels,
    if given)."""
    return first_in(check(result), label)


def first_in(verdicts: Sequence[Verdict], label: str | Collection[str] | None
             ) -> tuple[str, str, str, dict[str, Any]] | None:
    """`first_violation` of verdicts already made."""
    wanted = (label,) if isinstance(label, str) else label
    for verdict in verdicts:
        for violation in verdict.violations:
            if wanted is None or violation.label in wanted:
                return violation.label, verdict.oracle, violation.message, dict(violation.witness)
    return None


def labels_in(verdicts: Sequence[Verdict], label: Collection[str] | None) -> tuple[str, ...]:
    """Every distinct label of the verdicts (those in `label`, if given), in report order."""
    found = (v.label for verdict in verdicts for v in verdict.violations)
    return tuple(dict.fromkeys(name for name in found if label is None or name in label))


def started_tools(result: RunResult) -> dict[str, int]:
    """How many calls of each tool the run started through the scheduler (first attempts only: a
    retry exercises the same call again). Read from the attempts the oracles read the trace into (one
    pass over the trace for both): each `start` event is an opened attempt, in trace order."""
    counts: dict[str, int] = {}
    for attempt in RunFacts.of(result).attempts:
        if attempt.opened and attempt.attempt == 1:
            counts[attempt.tool] = counts.get(attempt.tool, 0) + 1
    return counts


def add_started(exploration: Exploration, counts: dict[str, int]) -> None:
    for tool, count in counts.items():
        exploration.started[tool] = exploration.started.get(tool, 0) + count


def check_limited(verdicts: Sequence[Verdict]) -> bool:
    """Whether an oracle had to limit its check (it then passes what it could not establish)."""
    return any(v.note.startswith("check limited") for v in verdicts)

