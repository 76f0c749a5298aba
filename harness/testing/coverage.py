"""What a `check_scheduler` call covered, and its report: a pass that says what it means.

Owns `ScenarioCoverage` (per scenario: the runs, the calls started through the scheduler by tool,
the tools it never started, the timers order-first runs fired, the faults the runs met, the oracles
that had something to check, the labels found, the time taken), `CheckReport` (every scenario's
coverage and every failure of one check) and their text and JSON forms. A scenario none of whose
calls ever started through the scheduler was *not exercised*: its pass would mean nothing, so the
report says so and `check_scheduler` fails unless the user excluded it. It never runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.explore.findings import Exploration
from harness.explore.scope import fault_sources
from harness.oracles.applicable import applicable, labels_of
from harness.scenario import Scenario

if TYPE_CHECKING:
    from harness.testing.failures import Failure


@dataclass(frozen=True)
class ScenarioCoverage:
    """What the check's runs of one scenario exercised."""

    scenario: str
    runs: int
    #: Calls started through the scheduler, by tool, over every run (first attempts).
    started: Mapping[str, int]
    #: The tools the scenario's calls name (for a loop scenario, the tools its model called).
    tools: tuple[str, ...]
    #: Timers order-first runs fired before a waiting call step (timeouts, the interrupt, a grace period...).
    timers: tuple[str, ...]
    #: Fault sources the runs met: the scenario's own and the swarm kinds switched on.
    faults: tuple[str, ...]
    #: Oracles that had something to check (see `harness.oracles.applicable`).
    oracles: tuple[str, ...]
    #: Labels of the failures found on it, worst first.
    labels: tuple[str, ...] = ()
    seconds: float = 0.0

    @classmethod
    def of(cls, scenario: Scenario | None, exploration: Exploration, seconds: float,
           labels: tuple[str, ...] = ()) -> ScenarioCoverage:
        """The coverage of `exploration` (of `scenario`, or of batches generated run by run: None)."""
        started = dict(sorted(exploration.started.items()))
        calls = scenario.calls if scenario is not None else ()
        tools = tuple(sorted({call.name for call in calls} | set(started)))
        faults = [*(fault_sources(scenario) if scenario is not None else ()), *exploration.scope.get("swarm_seen", ())]
        return cls(exploration.scenario, exploration.runs, started, tools,
                   tuple(exploration.scope.get("timers_chosen", ())), tuple(dict.fromkeys(faults)),
                   applicable(scenario, started), labels, seconds)

    @property
    def calls_started(self) -> int:
        return sum(self.started.values())

    @property
    def never_started(self) -> tuple[str, ...]:
        """Tools the scenario calls that no run started through the scheduler."""
        return tuple(tool for tool in self.tools if not self.started.get(tool))

    @property
    def exercised(self) -> bool:
        """Whether any call started through the scheduler: otherwise nothing was checked."""
        return self.calls_started > 0

    def line(self, width: int) -> str:
        found = f"FAILED {', '.join(self.labels)}" if self.labels else ("ok" if self.exercised else "NOT EXERCISED")
        head = (f"  {self.scenario:<{width}}  {_count(self.runs, 'run'):>9}  {_count(self.calls_started, 'call'):>11} "
                f"started  {self.seconds:5.1f} s  {found}")
        if not self.exercised:
            tools = f"; never started: {', '.join(self.never_started)}" if self.never_started else ""
            return f"{head}\n  {'':<{width}}  nothing checked: no call started through the scheduler{tools}"
        never = f"; never started: {', '.join(self.never_started)}" if self.never_started else ""
        faults = f"; faults: {', '.join(self.faults)}" if self.faults else ""
        timers = f"; timers: {', '.join(self.timers)}" if self.timers else ""
        return f"{head}\n  {'':<{width}}  checked: {', '.join(self.oracles)}{timers}{faults}{never}"

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "runs": self.runs, "calls_started": self.calls_started,
                "started": dict(self.started), "never_started": list(self.never_started),
                "exercised": self.exercised, "timers": list(self.timers), "faults": list(self.faults),
                "oracles": list(self.oracles), "could_fire": list(labels_of(self.oracles)),
                "labels": list(self.labels), "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class CheckReport:
    """One `check_scheduler` call: what it covered and what failed (worst first)."""

    scheduler: str
    profile: str
    seed: int
    scenarios: tuple[ScenarioCoverage, ...]
    failures: tuple[Failure, ...] = ()
    seconds: float = 0.0
    #: Why the check stopped before the end (fail_fast, a scheduler that spun), if it did.
    stopped: str | None = None
    #: Scenarios the caller excluded (`skip=`), by name.
    skipped: tuple[str, ...] = field(default=())
    #: Whether the runs happened in a supervised child process (harness.isolation).
    isolated: bool = False
    #: What the scheduler's code tried in its isolated process and was refused (real-disk writes, new
    #: processes), each once.
    refused: tuple[str, ...] = field(default=())

    @property
    def not_exercised(self) -> tuple[ScenarioCoverage, ...]:
        return tuple(coverage for coverage in self.scenarios if not coverage.exercised)

    @property
    def passed(self) -> bool:
        return not self.failures and not self.not_exercised and self.stopped is None

    @property
    def runs(self) -> int:
        return sum(coverage.runs for coverage in self.scenarios)

    @property
    def calls_started(self) -> int:
        return sum(coverage.calls_started for coverage in self.scenarios)

    def headline(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return (f"check_scheduler({self.scheduler}) {verdict}: {_count(len(self.scenarios), 'scenario')}, "
                f"{_count(self.runs, 'run')}, {_count(self.calls_started, 'call')} started through the scheduler, "
                f"{self.seconds:.1f} s (profile {self.profile}, seed {self.seed}"
                + (", isolated)" if self.isolated else ")"))

    def not_exercised_message(self) -> str | None:
        """Why the check fails although no oracle did: scenarios where nothing ran. None if none."""
        idle = self.not_exercised
        if not idle:
            return None
        missing = sorted({tool for coverage in idle for tool in coverage.never_started})
        names = ", ".join(f"{c.scenario} ({', '.join(c.never_started) or 'no call was made'})" for c in idle)
        head = (f"not exercised: {len(idle)} of {len(self.scenarios)} scenarios never started a call through the "
                f"scheduler, so nothing was checked there: {names}.")
        if not missing:  # a loop whose model never got to call a tool: nothing about tool tables
            return head + ("\n  No call was made at all: a loop that ends (or fails) before its model's first "
                           "call, or a scheduler that answers without starting any.")
        return (f"{head}\n  Tools your scheduler never started: {', '.join(missing)}. If your runtime does not "
                "have them, exclude those scenarios (skip=[...] or only=[...]); if it should, its tools do not "
                "reach the harness's (an executor with its own tool table: from_asyncio(..., registry=TABLE)), or "
                "something kept it from starting them (a semaphore or lock an earlier run left held?).")

    def summary(self) -> str:
        """The coverage table, one entry per scenario."""
        width = max([len(c.scenario) for c in self.scenarios] + [8])
        lines = [self.headline(), *(coverage.line(width) for coverage in self.scenarios)]
        if self.skipped:
            lines.append(f"  skipped on request: {', '.join(self.skipped)}")
        if self.stopped:
            lines.append(f"  stopped early: {self.stopped}")
        lines.extend(f"  isolated run refused {what}" for what in self.refused)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler, "profile": self.profile, "seed": self.seed, "passed": self.passed,
                "runs": self.runs, "calls_started": self.calls_started, "seconds": round(self.seconds, 3),
                "stopped": self.stopped, "skipped": list(self.skipped), "isolated": self.isolated,
                "refused": list(self.refused),
                "not_exercised": [c.scenario for c in self.not_exercised],
                "scenarios": [c.to_json() for c in self.scenarios],
                "failures": [f.to_json() for f in self.failures]}


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
