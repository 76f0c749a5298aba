"""Bounded exhaustive exploration: every order of steps and timers, and every choice of up to K
injected faults, up to equivalence, up to a run bound.

Owns a stateless depth-first search over order tapes with sleep sets (Godefroid 1996; the reduction
loom and shuttle use): after exploring step `t` at a node, later siblings put `t` to sleep for as
long as only steps independent of it run, so two orders that differ by swapping independent steps
(disjoint footprints, see `footprints`) are explored once. Steps that complete their calls are
always dependent, because a scheduler may react to the order of completions (three one-step reads
are 3! classes); the reduction bites on the inner steps of multi-step calls. Letting time run to the
next timer (`TIME`) is dependent on every step: a timer may cancel, retry or interrupt anything.
A fault decision (an attempt that may fail, be delivered twice or tear its write) is a node whose
two branches are different worlds, not two orders: both are explored, at most `fault_bound`
injected faults per run. Each run re-executes from the start with a prefix of choices. When the
stack empties within the bound, every equivalence class has been run: "no violation in N classes"
is then a proof for this scenario and scheduler, for the orders, timers and faults it enumerated
(given the footprints, learnt in model order). It never shrinks or saves (the engine does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from harness.explore.footprints import Footprint, independent
from harness.run import RunResult
from harness.sim.arbiter import FAULT, NO_FAULT, Arbiter


@dataclass
class _Node:
    step: int
    enabled: tuple[str, ...]
    asleep: dict[str, bool]
    chosen: str
    completes: dict[str, bool]
    fault: bool = False  # a fault decision: its branches are worlds, not orders


@dataclass
class SleepSetChooser:
    prefix: tuple[str, ...]
    asleep: dict[str, bool]
    prints: dict[str, Footprint]
    fault_bound: int = 0
    nodes: list[_Node] = field(default_factory=list)
    blocked: bool = False
    arbiter: Arbiter | None = None
    injected: int = 0

    def bind(self, arbiter: Arbiter) -> None:
        self.arbiter = arbiter

    def _completes(self, call: str) -> bool:
        """Whether the call's pending step may end its attempt (when unsure: yes, the safe side)."""
        footprint = self.prints.get(call)
        request = self.arbiter.request(call) if self.arbiter is not None else None
        if footprint is None or request is None or request.final:
            return True
        taken = self.arbiter.steps_taken.get((call, request.attempt), 0) if self.arbiter is not None else 0
        return taken + 1 >= footprint.steps

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
            # (Within the prefix the sleep set is already the one of the branch being explored.)
            self.asleep = {s: c for s, c in self.asleep.items()
                           if independent(s, c, chosen, completes[chosen], self.prints)}
        return chosen

    def choose_fault(self, token: str, drawn: bool, step: int) -> bool:
        if step < len(self.prefix) and self.prefix[step] in (FAULT + token, NO_FAULT + token):
            injected = self.prefix[step] == FAULT + token
        else:
            # The first branch takes no fault; the other is explored while the bound allows.
            injected = False
            if not self.blocked:
                options = (NO_FAULT + token, FAULT + token) if self.injected < self.fault_bound else (NO_FAULT + token,)
                self.nodes.append(_Node(step, options, dict(self.asleep), NO_FAULT + token, {}, fault=True))
        self.injected += injected
        return injected


@dataclass(frozen=True)
class ExhaustiveStep:
    result: RunResult
    counted: bool  # False for a sleep-blocked (redundant) run


class ExhaustiveSearch:
    """Iterate over the runs of the search; afterwards `exhausted` says whether the whole space
    was covered within `max_runs`, and `classes` how many distinct classes of orders were run."""

    def __init__(self, execute: Callable[[SleepSetChooser], RunResult], prints: dict[str, Footprint],
                 max_runs: int, fault_bound: int = 0) -> None:
        self.execute, self.prints, self.max_runs = execute, prints, max_runs
        self.fault_bound = fault_bound
        self.exhausted = False
        self.classes = 0
        self.runs = 0

    def __iter__(self) -> Iterator[ExhaustiveStep]:
        stack: list[tuple[tuple[str, ...], dict[str, bool]]] = [((), {})]
        while stack and self.runs < self.max_runs:
            prefix, asleep = stack.pop()
            chooser = SleepSetChooser(prefix, asleep, self.prints, self.fault_bound)
            result = self.execute(chooser)
            self.runs += 1
            tape = result.tape or ()
            for node in reversed(chooser.nodes):
                if node.fault:
                    stack.extend(((*tape[:node.step], other), dict(node.asleep))
                                 for other in node.enabled if other != node.chosen)
                    continue
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
