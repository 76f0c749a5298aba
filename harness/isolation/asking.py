"""Order-first runs across the process boundary: the child's run asks, the parent's chooser answers.

An explorer's chooser (PCT's priorities, the exhaustive search's sleep sets, Hypothesis's choices)
decides each step of an order-first run while the run goes on (harness.sim.arbiter). In an isolated
session the run is in the child and the chooser stays in the parent, where the user's code cannot
reach it: the child's arbiter is given an `AskingChooser`, which sends each question (the enabled
entries, the step, and what the arbiter knows of the pending steps, which a chooser's `bind` may
read) and waits for the answer; the parent answers with `Answering`, which puts the same questions
to the real chooser through an `ArbiterView` standing for the child's arbiter. A question whose
fields are not of the expected types is `wire.WireError` (the child's code wrote on the channel);
if the chooser itself raises, the parent kills the child, whose run waits for an answer.
It never runs a scenario and never judges.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from harness.isolation import wire
from harness.sim.arbiter import entry_of


class AskingChooser:
    """The child's chooser: each choice is the parent's."""

    def __init__(self, index: int, inbox: int, outbox: int) -> None:
        self.index, self.inbox, self.outbox = index, inbox, outbox
        self.arbiter: Any = None

    def bind(self, arbiter: Any) -> None:
        self.arbiter = arbiter

    def choose(self, enabled: Sequence[str], step: int) -> str:
        return str(self._ask("choose", (tuple(enabled), step)))

    def choose_fault(self, token: str, drawn: bool, step: int) -> bool | None:
        decided = self._ask("fault", (token, drawn, step))
        return None if decided is None else bool(decided)

    def _ask(self, kind: str, question: tuple[Any, ...]) -> Any:
        arbiter = self.arbiter
        pending = [(r.call_id, r.attempt, r.final, r.earliest, r.latest) for r in arbiter.pending] if arbiter else []
        taken = list(arbiter.steps_taken.items()) if arbiter else []
        wire.write_frame(self.outbox, (kind, self.index, *question, pending, taken))
        answer = wire.read_frame(self.inbox)
        if answer is None or answer[0] != "chose":  # the parent is gone, or ends the session
            os._exit(0)
        return answer[2]


@dataclass(frozen=True)
class PendingStep:
    """A step the child's arbiter holds, as the parent sees it (harness.sim.arbiter.StepRequest's data)."""

    call_id: str
    attempt: int
    final: bool = False
    earliest: int = 0
    latest: float = math.inf

    @property
    def entry(self) -> str:
        return entry_of(self.call_id, self.attempt)


@dataclass
class ArbiterView:
    """What a chooser bound to the child's arbiter may read of it, as of the current question."""

    pending: list[PendingStep] = field(default_factory=list)
    steps_taken: dict[tuple[str, int], int] = field(default_factory=dict)

    def request(self, entry: str) -> PendingStep | None:
        return next((r for r in self.pending if r.entry == entry), None)


class Answering:
    """The parent's side of one order-first run: answers the child's questions with `chooser`."""

    def __init__(self, chooser: Any) -> None:
        self.chooser = chooser
        self.view = ArbiterView()
        bind = getattr(chooser, "bind", None)
        if bind is not None:
            bind(self.view)

    def reply(self, message: Any, index: int) -> tuple[str, int, Any]:
        """The answer to the child's question `message` (a tuple the child wrote: checked here)."""
        try:
            kind, number = message[0], message[1]
            if number != index:
                raise ValueError(f"a question out of turn (for run {number!r}, expected run {index})")
            if kind == "choose":
                enabled, step, pending, taken = message[2:]
                _check(enabled, tuple, str, "the enabled entries")
                if not enabled or type(step) is not int:
                    raise ValueError("no entry enabled, or a step that is not a number")
                self._see(pending, taken)
                chosen = self.chooser.choose(enabled, step)
                return ("chose", index, chosen)
            if kind == "fault":
                token, drawn, step, pending, taken = message[2:]
                if type(token) is not str or type(drawn) is not bool or type(step) is not int:
                    raise ValueError("a fault question of the wrong types")
                self._see(pending, taken)
                choose_fault = getattr(self.chooser, "choose_fault", None)
                return ("chose", index, choose_fault(token, drawn, step) if choose_fault is not None else None)
            raise ValueError(f"an unknown question {kind!r}")
        except (ValueError, TypeError, IndexError) as exc:
            raise wire.WireError(f"a question of the wrong shape ({exc})") from None

    def _see(self, pending: Any, taken: Any) -> None:
        _check(pending, list, tuple, "the pending steps")
        _check(taken, list, tuple, "the steps taken")
        steps = []
        for call_id, attempt, final, earliest, latest in pending:
            if (type(call_id) is not str or type(attempt) is not int or type(final) is not bool
                    or type(earliest) is not int or type(latest) not in (int, float)):
                raise ValueError("a pending step of the wrong types")
            steps.append(PendingStep(call_id, attempt, final, earliest, latest))
        counts: dict[tuple[str, int], int] = {}
        for (call_id, attempt), count in taken:
            if type(call_id) is not str or type(attempt) is not int or type(count) is not int:
                raise ValueError("a step count of the wrong types")
            counts[call_id, attempt] = count
        self.view.pending, self.view.steps_taken = steps, counts


def _check(value: Any, container: type, item: type, what: str) -> None:
    if type(value) is not container or any(type(v) is not item for v in cast(Iterable[Any], value)):
        raise ValueError(f"{what} are not a {container.__name__} of {item.__name__}")
