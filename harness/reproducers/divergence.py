"""A reproducer run again and compared with its recording: where the traces diverge, and why.

Owns `replay` (run it again, under the scheduler it names or an instance given), `Replay` (the run
and its first difference from the recorded trace), and `likely_cause`: what two runs of the same
code from the same inputs that differ most likely depend on (iteration over a set of tasks, object
addresses, wall-clock time, state kept between runs). It never judges a fix (`harness.reproducers.judgement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.reproducers.file import Reproducer
from harness.run import RunResult
from harness.scheduling import Scheduler
from harness.sim.trace import canonical_json

#: (index, recorded event, event now) of the first difference of two traces; None for "nothing".
Divergence = tuple[int, dict[str, Any] | None, dict[str, Any] | None]


def first_difference(recorded: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]) -> Divergence | None:
    """The first event where two traces differ (an event missing from one side is None), or None."""
    for index in range(max(len(recorded), len(now))):
        a = dict(recorded[index]) if index < len(recorded) else None
        b = dict(now[index]) if index < len(now) else None
        if a != b:
            return index, a, b
    return None


def describe_divergence(divergence: Divergence | None) -> str:
    if divergence is None:
        return "trace identical but the final world differs from the recorded one"
    index, expected, actual = divergence
    return (f"diverged at trace event {index}: expected {canonical_json(expected) if expected else 'nothing'}, "
            f"got {canonical_json(actual) if actual else 'nothing'}")


@dataclass(frozen=True)
class Replay:
    reproducer: Reproducer
    result: RunResult
    #: (index, expected event, actual event) of the first difference; None when identical.
    divergence: Divergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None and self.result.fingerprint == self.reproducer.fingerprint

    def describe(self) -> str:
        if self.identical:
            return f"reproduced: same fingerprint {self.result.fingerprint[:16]}"
        return describe_divergence(self.divergence)

    def cause(self) -> str:
        """The likely cause of a difference, when nothing changed ('likely cause: ...')."""
        return likely_cause(self.reproducer.trace, self.result.trace, self.divergence)


def replay(reproducer: Reproducer, scheduler: Scheduler | None = None) -> Replay:
    """Run the reproducer again (under `scheduler`, an instance, if given) and compare traces."""
    result = reproducer.run(scheduler)
    return Replay(reproducer, result, first_difference(reproducer.trace, result.trace))


def likely_cause(recorded: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]],
                 divergence: Divergence | None) -> str:
    """Why two runs of the same code from the same inputs differ, read from their first difference."""
    if divergence is None:
        return "likely cause: state kept between runs changed the world (a module-level cache or counter)"
    _, expected, actual = divergence
    kind = (expected or actual or {}).get("ev")
    if _same_instant_reorder([dict(e) for e in recorded], [dict(e) for e in now], divergence[0]):
        return ("likely cause: start order follows iteration over a set of tasks (asyncio.as_completed, "
                "asyncio.wait, a set of futures or coroutines): the same events happened in the same "
                "millisecond in another order, and a set iterates in object-address order, which changes "
                "from run to run; iterate a list in model order instead")
    if kind in ("start", "skip", "note", "abandon"):
        return ("likely cause: the scheduler decides from something outside the seed: object addresses "
                "(id(), sets of tasks or handles), wall-clock time, global random, or state kept between runs")
    return ("likely cause: a tool or the scheduler keeps state between runs (a module-level semaphore, "
            "cache or counter) or reads something outside the simulation")


def _same_instant_reorder(recorded: list[dict[str, Any]], now: list[dict[str, Any]], index: int) -> bool:
    """Whether the traces differ first by a start (or abandon) that both runs made in the same
    millisecond, in another order: what iterating a set of tasks does."""
    if index >= len(recorded) or index >= len(now):
        return False
    expected, actual = recorded[index], now[index]
    if expected.get("ev") not in ("start", "abandon") or actual.get("ev") != expected.get("ev"):
        return False
    t = expected.get("t")

    def bare(event: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in event.items() if k != "seq"}

    def instant(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [bare(e) for e in trace[index:] if e.get("t") == t and e.get("ev") == expected.get("ev")]

    mine, theirs = instant(recorded), instant(now)
    return actual.get("t") == t and bare(actual) in mine and bare(expected) in theirs


