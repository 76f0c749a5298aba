"""Approvals: the scripted user who answers a runtime's "may I run this?" and the runtime's wait for it.

Owns the script (`ApprovalScript`: per call id, per tool and a default, each an `ApprovalRule` of an
answer — approve, deny or none, a user who never answers — and a latency), the `Approval` value an
answer carries, the user's side of a request (`ask`: the answer arrives after a latency drawn from the
stream `approval/<call id>/<request n>`, written to the trace as `approval_requested` then
`approval`). The runtime's side (`gate`) is `harness.scheduling.approval_gate`. Seeds 001/002: tools with
external effects and destructive commands wait for a person. A scenario without a script runs in
auto-approve mode: every tool is pre-approved and nothing is asked. It never starts a call and
never judges one (the `approvals` oracle does).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy

from harness import moved
from harness.faults.latency import Fixed, LatencyModel
from harness.model import ToolCall
from harness.sim.kernel import Kernel

Answer = Literal["approve", "deny", "none", "session"]
ANSWERS: tuple[Answer, ...] = ("approve", "deny", "none")
#: A rule of a dangerous-command pattern may also answer `session`: approve, and do not ask again for
#: the patterns this command matched for the rest of the run (hermes' "approve for session").
PATTERN_ANSWERS: tuple[Answer, ...] = ("approve", "session", "deny", "none")

#: How long the scripted user takes when the script does not say.
DEFAULT_LATENCY: LatencyModel = Fixed(1000)


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    """What the user answers and how long they take (no latency for `none`: they never answer)."""

    answer: Answer = "approve"
    latency: LatencyModel = DEFAULT_LATENCY

    def __post_init__(self) -> None:
        if self.answer not in PATTERN_ANSWERS:
            raise ValueError(f"answer must be one of {', '.join(PATTERN_ANSWERS)}, got {self.answer!r}")


@dataclass(frozen=True, slots=True)
class ApprovalScript:
    """The scripted user of a scenario: a rule per call id, else per dangerous-command pattern the
    command matches (with `guard`, in hermes' pattern order), else per tool, else the default.
    `guard = "hermes"`: terminal commands are asked about by hermes' dangerous-command patterns
    (`harness.scheduling.command_guard`) instead of the tool's `needs_confirmation`."""

    default: ApprovalRule = field(default_factory=ApprovalRule)
    tools: Mapping[str, ApprovalRule] = field(default_factory=dict)
    calls: Mapping[str, ApprovalRule] = field(default_factory=dict)
    guard: Literal["none", "hermes"] = "none"
    patterns: Mapping[str, ApprovalRule] = field(default_factory=dict)

    def rule_for(self, call: ToolCall, patterns: tuple[str, ...] = ()) -> ApprovalRule:
        by_pattern = next((self.patterns[key] for key in patterns if key in self.patterns), None)
        return self.calls.get(call.id) or by_pattern or self.tools.get(call.name) or self.default


@dataclass(frozen=True, slots=True)
class Approval:
    """The user's answer to one request: `approve` or `deny` (a user who never answers sends none)."""

    call_id: str
    answer: Answer
    request: int
    requested_ms: int
    answered_ms: int

    @property
    def approved(self) -> bool:
        return self.answer in ("approve", "session")


def ask(kernel: Kernel, script: ApprovalScript | None, call: ToolCall, request: int,
        patterns: tuple[str, ...] = ()) -> simpy.Event:
    """Request `request` (1, 2, ...) for `call`: an event that succeeds with the `Approval` when the
    user answers, and never for a user who does not. Without a script (auto-approve mode) it is
    approved at once. Traced: `approval_requested`, then `approval` when the answer comes (with the
    dangerous-command `patterns` it was asked about, when there are some)."""
    answered = kernel.env.event()
    now = kernel.now
    kernel.record("approval_requested", call=call.id, tool=call.name, request=request,
                  mode="auto" if script is None else None)
    if script is None:
        kernel.record("approval", call=call.id, answer="approve", request=request, mode="auto")
        answered.succeed(Approval(call.id, "approve", request, now, now))
        return answered
    rule = script.rule_for(call, patterns)
    if rule.answer == "none":
        return answered  # the user never answers: only the runtime's own timeout ends the wait
    latency = rule.latency.sample(kernel.streams.stream("approval", call.id, request), request)

    def answer() -> Generator[simpy.Event, Any, None]:
        yield kernel.delay(latency, "approval")
        if patterns:
            kernel.record("approval", call=call.id, answer=rule.answer, request=request, patterns=list(patterns))
        else:
            kernel.record("approval", call=call.id, answer=rule.answer, request=request)
        answered.succeed(Approval(call.id, rule.answer, request, now, kernel.now))

    kernel.env.process(answer())
    return answered


# The runtime's side moved to `harness.scheduling.approval_gate` (it needs the context, which needs this
# module): the old names still work, with a warning.
__getattr__ = moved.forward(__name__)
