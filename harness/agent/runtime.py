"""What a loop policy works with: the `Task` (model, settings, event bus, run-unique call ids) and
the two requests it yields to the run (`RunCalls`: give this batch to the scheduler; `Pause`: let
virtual time pass, e.g. the model thinking or the user typing).

Owns the loop-side bookkeeping every policy shares: the results the loop has reported to the model,
the ids each scripted call was emitted under (a rule that fires again gets `id@round`, and references
to `id` in `args_from`, `depends_on` and conditions follow the latest one), the tools a policy has
disabled, and the agent events (seed 004's event bus) written into the trace as `agent` events. It
never runs a batch or touches the clock itself: the runner answers the requests.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from harness.agent.spec import Action, AgentSpec, EmittedCall, Message, Model, Transcript
from harness.model import CallResult, JSONValue
from harness.sim.kernel import Kernel
from harness.tools.inputs import Source, parse_reference

#: Seed 004's event types (its EventBus constants).
AGENT_STARTED = "AGENT_STARTED"
AGENT_FINISHED = "AGENT_FINISHED"
PLANNER_DECISION = "PLANNER_DECISION"
TOOL_STARTED = "TOOL_STARTED"
TOOL_FINISHED = "TOOL_FINISHED"
TOOL_ERROR = "TOOL_ERROR"
CONTEXT_UPDATED = "CONTEXT_UPDATED"
HUMAN_CONFIRM_REQUIRED = "HUMAN_CONFIRM_REQUIRED"
EVENTS = (AGENT_STARTED, AGENT_FINISHED, PLANNER_DECISION, TOOL_STARTED, TOOL_FINISHED, TOOL_ERROR,
          CONTEXT_UPDATED, HUMAN_CONFIRM_REQUIRED)


@dataclass(frozen=True)
class RunCalls:
    """Request: run these calls as one batch under the scheduler; the runner sends back the results
    the scheduler reported (a tuple of `CallResult`, in its order)."""

    calls: tuple[EmittedCall, ...]
    label: str


@dataclass(frozen=True)
class Pause:
    """Request: let `ms` of virtual time pass (`purpose` names the timer: think, user)."""

    ms: int
    purpose: str


Request = RunCalls | Pause


class ModelFailed(Exception):
    """The model raised while deciding (a Python model of the user's): the task ends as `model-error`.
    Anything else a loop lets escape is the loop's own failure (`loop-error`), which the loop-policy
    oracle reports: a loop under test must not crash its task."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


@dataclass(frozen=True)
class Outcome:
    """How the task ended: `status` is final_answer, max_round, ask_user (run_agent returns the
    question), stopped (the run ended the turn: scheduler failure, crash, interrupt, time bound),
    model-error (the model raised while deciding; one that cannot be loaded stops the run before it
    starts, a load error) or loop-error (the loop policy raised, or
    yielded something that is no request)."""

    status: str
    answer: str = ""
    rounds: int = 0
    invalid: int = 0
    tool_calls: int = 0
    unavailable: tuple[str, ...] = ()
    detail: str = ""
    #: Seed 004's TaskReport: the calls run per tool (name, count, in the order first run) and the
    #: tokens the task's decisions read and wrote, estimated from their text (`estimate_tokens`).
    per_tool: tuple[tuple[str, int], ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Every result the loop reported to the model (`Task.record`: what its transcript's `results`
    #: held at the end), in the order recorded; set by the runner when the task ends, whatever the
    #: policy returned. The loop-policy oracle reads it; reports and run JSON do not show it.
    reported: tuple[CallResult, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "answer": self.answer, "rounds": self.rounds, "invalid": self.invalid,
                "tool_calls": self.tool_calls, "unavailable": list(self.unavailable), "detail": self.detail,
                "per_tool": dict(self.per_tool),
                "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens, "estimated": True}}


def combined(outcomes: Mapping[str, Outcome]) -> Outcome:
    """Several agents' outcomes as one task's: reached its final answer only if every agent that
    started did (else the first agent's that did not, named in `detail`); rounds, invalid decisions and
    tool calls summed. A subagent nobody delegated to is left out."""
    outcomes = {name: o for name, o in outcomes.items() if o.status != "not-delegated"}  # never started
    missed = next(((name, o) for name, o in outcomes.items() if o.status != "final_answer"), None)
    status, detail = "final_answer", ""
    if missed is not None:
        name, outcome = missed
        status, detail = outcome.status, f"agent {name}: {outcome.status}" + (
            f" ({outcome.detail})" if outcome.detail else "")
    return Outcome(status, "; ".join(f"{name}: {o.answer}" for name, o in outcomes.items() if o.answer),
                   sum(o.rounds for o in outcomes.values()), sum(o.invalid for o in outcomes.values()),
                   sum(o.tool_calls for o in outcomes.values()),
                   tuple(dict.fromkeys(t for o in outcomes.values() for t in o.unavailable)), detail,
                   per_tool=_summed(o.per_tool for o in outcomes.values()),
                   prompt_tokens=sum(o.prompt_tokens for o in outcomes.values()),
                   completion_tokens=sum(o.completion_tokens for o in outcomes.values()),
                   reported=tuple(r for o in outcomes.values() for r in o.reported))


def _summed(counts: Iterable[tuple[tuple[str, int], ...]]) -> tuple[tuple[str, int], ...]:
    total: dict[str, int] = {}
    for each in counts:
        for name, n in each:
            total[name] = total.get(name, 0) + n
    return tuple(total.items())


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` is to a model: a token per 4 ASCII characters and one per other
    character (a CJK character is a token or more). An estimate, said so wherever it is shown: the
    scripted model has no tokenizer."""
    ascii_chars = sum(1 for ch in text if ch < "\x80")
    return -(-ascii_chars // 4) + (len(text) - ascii_chars)


class LoopPolicy(Protocol):
    """An agent loop: drives a task to its end by yielding requests, returns how it ended.

    A policy may also declare the limits it enforces, `limits(spec: AgentSpec) -> LoopLimits` (its
    defaults, overridden by the scenario's `loop = { ... }` settings as the policy reads them): the
    loop-policy oracle holds it to them (see `declared_limits`)."""

    name: str

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]: ...


@dataclass(frozen=True)
class LoopLimits:
    """The limits a loop policy declares it enforces on a task.

    `max_round`: at most this many model decisions (seed 004's AGENT_MAX_ROUND, seed 003's
    `range(8)`). `retry_same_signature`: after the same tool with the same arguments has failed with
    the same error `retry_same_signature + 1` times in a row, the tool is disabled for the rest of
    the task — it runs no more, and a later call to it is answered with the policy's refusal (seed
    004's ToolRetryPolicy: 2, so the third identical failure disables it). None: no such limit."""

    max_round: int | None = None
    retry_same_signature: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"max_round": self.max_round, "retry_same_signature": self.retry_same_signature}


def declared_limits(policy: object, spec: AgentSpec) -> LoopLimits | None:
    """The limits `policy` declares for an agent with `spec` (its `limits(spec)`), or None when it
    declares none (a policy without `limits`, or one that returns None)."""
    limits = getattr(policy, "limits", None)
    if not callable(limits):
        return None
    declared = limits(spec)
    if declared is not None and not isinstance(declared, LoopLimits):
        raise TypeError(f"loop policy {getattr(policy, 'name', policy)!r}: limits() returned {declared!r}, "
                        "not a LoopLimits")
    return declared


@dataclass
class Task:
    spec: AgentSpec
    model: Model
    kernel: Kernel
    known_tools: frozenset[str]
    results: dict[str, CallResult] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    unavailable: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    decisions: list[Action] = field(default_factory=list)
    tool_calls: int = 0
    per_tool: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The agent's name in a `[[agents]]` scenario: it prefixes call ids (`name/id`), labels events
    #: and keys the random streams; None for a scenario's single agent.
    agent: str | None = None
    #: Every id `assign_ids` gave out: a call id is never given twice, even when the loop reports no
    #: result for the call that had it.
    issued: set[str] = field(default_factory=set)

    # -- the event bus -----------------------------------------------------------------------

    def emit(self, event: str, **fields: JSONValue) -> None:
        """An agent event, into the trace (seed 004's EventBus, with the trace as its subscriber)."""
        self.kernel.record("agent", event=event, agent=self.agent, **fields)

    # -- time ---------------------------------------------------------------------------------

    def think(self, round_: int) -> Pause:
        """The model's think time for a round, from the stream `model/think/<round>`."""
        stream = self.kernel.streams.stream("model", self._keyed("think"), round_)
        return Pause(self.spec.think.sample(stream, 1), "think")

    def reply_pause(self, action: Action, round_: int) -> Pause:
        stream = self.kernel.streams.stream("user", self._keyed("reply"), round_)
        return Pause(action.reply_latency.sample(stream, 1), "user")

    def _keyed(self, key: str) -> str:
        return key if self.agent is None else f"{self.agent}/{key}"

    # -- decisions ----------------------------------------------------------------------------

    def transcript(self, round_: int, messages: Sequence[Message], *, reprompted: bool) -> Transcript:
        return Transcript(self.spec.task, round_, tuple(messages), dict(self.results), dict(self.latest),
                          tuple(self.unavailable), reprompted, tuple(self.replies), tuple(self.decisions))

    def decide(self, round_: int, messages: Sequence[Message], *,
               reprompted: bool = False) -> Generator[Request, Any, Action]:
        """Ask the model (after its think time) and record the decision as PLANNER_DECISION."""
        yield self.think(round_)
        try:
            action = self.model.decide(self.transcript(round_, messages, reprompted=reprompted))
        except Exception as exc:  # the model's own failure, told apart from the loop's (see ModelFailed)
            raise ModelFailed(exc) from exc
        self.prompt_tokens += sum(estimate_tokens(m.content) for m in messages)
        self.completion_tokens += estimate_tokens(" ".join([action.content, action.reason,
                                                            *(f"{c.name} {c.arguments}" for c in action.calls)]))
        if action.kind.value == "tool_call":
            action = replace(action, calls=self.assign_ids(action.calls, round_))
        self.decisions.append(action)
        self.emit(PLANNER_DECISION, round=round_, type=action.kind.value, rule=action.rule,
                  calls=[c.id for c in action.calls] or None, tools=[c.name for c in action.calls] or None,
                  content=action.content or None, reason=action.reason or None, problem=action.problem or None)
        return action

    def assign_ids(self, calls: Iterable[EmittedCall], round_: int) -> tuple[EmittedCall, ...]:
        """Run-unique ids: a scripted id emitted before becomes `id@round`; `args_from` and
        `depends_on` that name a scripted id follow the id it was last emitted under (this batch's
        calls included)."""
        taken = set(self.results) | set(self.latest.values()) | self.issued
        # Within a crew, every agent's ids are prefixed by its name, so no two agents' ids meet.
        renamed: dict[str, str] = {}
        prefix = "" if self.agent is None else f"{self.agent}/"
        for call in calls:
            base = call.base or call.id
            new = prefix + base if base not in taken and prefix + base not in taken else f"{prefix}{base}@{round_}"
            suffix = 2
            while new in taken:  # the same id twice in one batch
                new, suffix = f"{prefix}{base}@{round_}.{suffix}", suffix + 1
            taken.add(new)
            self.issued.add(new)
            renamed[base] = new
        fixed: list[EmittedCall] = []
        latest = {**self.latest, **renamed}
        for call in calls:
            base = call.base or call.id
            fixed.append(replace(call, id=renamed[base], base=base,
                                 args_from={k: _retarget(v, latest) for k, v in call.args_from.items()},
                                 depends_on=tuple(latest.get(d, d) for d in call.depends_on)))
        self.latest.update(renamed)
        return tuple(fixed)

    def ran(self, calls: Iterable[EmittedCall]) -> None:
        """Count calls the loop handed to the scheduler (the task report's per-tool counts)."""
        for call in calls:
            self.tool_calls += 1
            self.per_tool[call.name] = self.per_tool.get(call.name, 0) + 1

    def record(self, results: Iterable[CallResult]) -> None:
        for result in results:
            self.results[result.call_id] = result

    def outcome(self, status: str, answer: str = "", rounds: int = 0, invalid: int = 0, detail: str = "") -> Outcome:
        return Outcome(status, answer, rounds, invalid, self.tool_calls, tuple(self.unavailable), detail,
                       per_tool=tuple(self.per_tool.items()), prompt_tokens=self.prompt_tokens,
                       completion_tokens=self.completion_tokens)


def _retarget(text: str, latest: Mapping[str, str]) -> str:
    """A reference (or template) with each call id replaced by the id it was last emitted under."""
    try:
        source = Source.parse(text)
    except ValueError:
        return text
    if not source.template:
        ref = source.refs[0]
        return ".".join((latest.get(ref.call, ref.call), "value", *ref.path))
    out = text
    for ref in source.refs:
        new = ".".join((latest.get(ref.call, ref.call), "value", *ref.path))
        out = out.replace("{" + ref.text + "}", "{" + new + "}")
    return out


def observation(result: CallResult) -> str:
    """A tool result as the model reads it (seed 003: the JSON of the result, one field a line)."""
    import json

    body: dict[str, JSONValue] = {"call_id": result.call_id, "outcome": result.outcome.value}
    if result.ok:
        body["value"] = result.value
    else:
        body["error"] = result.error
    return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True)


def producer_ids(call: EmittedCall) -> tuple[str, ...]:
    ids: list[str] = []
    for text in call.args_from.values():
        try:
            ids.extend(Source.parse(text).producers)
        except ValueError:
            continue
    return tuple(dict.fromkeys(ids))


__all__ = ["EVENTS", "LoopLimits", "LoopPolicy", "Outcome", "Pause", "Request", "RunCalls", "Task", "declared_limits",
           "observation", "parse_reference", "producer_ids"]
