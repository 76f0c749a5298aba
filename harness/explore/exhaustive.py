"""Bounded exhaustive exploration: every order of steps, up to equivalence, up to a bound.

Owns a stateless depth-first search over order tapes with sleep sets (Godefroid 1996; the reduction
loom and shuttle use): after exploring step `t` at a node, later siblings put `t` to sleep for as
long as only steps independent of it run, so two orders that differ by swapping independent steps
(disjoint footprints, see `footprints`) are explored once. Steps that complete their calls are
always dependent, because a scheduler may react to the order of completions (three one-step reads
are 3! classes); the reduction bites on the inner steps of multi-step calls. Each run re-executes from the start with
a prefix of choices. When the stack empties within the bound, every equivalence class of orders has
been run: "no violation in N classes" is then a proof for this scenario and scheduler (given the
footprints). It never shrinks or saves (the engine does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from harness.explore.footprints import Footprint, independent
from harness.run import RunResult


@dataclass
class _Node:
    step: int
    enabled: tuple[str, ...]
    asleep: dict[str, bool]
    chosen: str
    completes: dict[str, bool]


@dataclass
class SleepSetChooser:
    prefix: tuple[str, ...]
    asleep: dict[str, bool]
    prints: dict[str, Footprint]
    nodes: list[_Node] = field(default_factory=list)
    blocked: bool = False
    taken: dict[str, int] = field(default_factory=dict)

    def _completes(self, call: str) -> bool:
        footprint = self.prints.get(call)
        return footprint is None or self.taken.get(call, 0) + 1 >= footprint.steps

    def choose(self, enabled: Sequence[str], step: int) -> str:
        completes = {call: self._completes(call) for call in enabled}
        if step < len(self.prefix) and self.prefix[step] in enabled:
            chosen = self.prefix[step]
        else:
            awake = [call for call in enabled if call not in self.asleep]
            if not awake:
                self.blocked = True  # every continuation is covered by another branch
            chosen = awake[0] if awake else enabled[0]
            if not self.blocked:
                self.nodes.append(_Node(step, tuple(enabled), dict(self.asleep), chosen, completes))
            self.asleep = {s: c for s, c in self.asleep.items()
                           if independent(s, c, chosen, completes[chosen], self.prints)}
        self.taken[chosen] = self.taken.get(chosen, 0) + 1
        return chosen


@dataclass(frozen=True)
class ExhaustiveStep:
    result: RunResult
    counted: bool  # False for a sleep-blocked (redundant) run


class ExhaustiveSearch:
    """Iterate over the runs of the search; afterwards `exhausted` says whether the whole space
    was covered within `max_runs`, and `classes` how many distinct classes of orders were run."""

    def __init__(self, execute: Callable[[SleepSetChooser], RunResult], prints: dict[str, Footprint],
                 max_runs: int) -> None:
        self.execute, self.prints, self.max_runs = execute, prints, max_runs
        self.exhausted = False
        self.classes = 0
        self.runs = 0

    def __iter__(self) -> Iterator[ExhaustiveStep]:
        stack: list[tuple[tuple[str, ...], dict[str, bool]]] = [((), {})]
        while stack and self.runs < self.max_runs:
            prefix, asleep = stack.pop()
            chooser = SleepSetChooser(prefix, asleep, self.prints)
            result = self.execute(chooser)
            self.runs += 1
            tape = result.tape or ()
            for node in reversed(chooser.nodes):
                explored = {node.chosen: node.completes[node.chosen]}
                for alternative in node.enabled:
                    if alternative == node.chosen or alternative in node.asleep:
                        continue
                    sleeping = {**node.asleep, **explored}
                    stack.append(((*tape[:node.step], alternative),
                                  {s: c for s, c in sleeping.items()
                                   if independent(s, c, alternative, node.completes[alternative], self.prints)}))
                    explored[alternative] = node.completes[alternative]
            self.exhausted = not stack
            if not chooser.blocked:
                self.classes += 1
            yield ExhaustiveStep(result, not chooser.blocked)
