"""The agent loop's vocabulary as frozen values: the four actions a model may take, the calls it
emits, the transcript it decides from, and `AgentSpec` (a scenario's model and loop settings).

Owns these shapes and nothing else: no decision procedure (see `harness.agent.model`), no loop (see
`harness.agent.taskloop`, `harness.agent.run_agent`), no file format (see
`harness.scenario.model_load`). Seed 004's TaskLoop limits its model to four action types — a fifth
would turn the loop into an if-else swamp — so `Action.kind` is one of them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.faults.failures import FailureModel
from harness.faults.latency import Fixed, LatencyModel
from harness.model import CallResult, JSONValue


class ActionKind(enum.StrEnum):
    TOOL_CALL = "tool_call"
    FINAL_ANSWER = "final_answer"
    ASK_USER = "ask_user"
    INVALID = "invalid"


@dataclass(frozen=True)
class EmittedCall:
    """One tool call as the model emitted it: a run-unique id, the raw JSON arguments (possibly
    malformed), and what the scenario scripts for it (latency, failure, recorded result, data flow)."""

    id: str
    name: str
    arguments: str = "{}"
    base: str = ""  # the id the script gave it; a call emitted again gets `base@round`
    args_from: Mapping[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    latency: LatencyModel | None = None
    failure: FailureModel | None = None
    has_result: bool = False
    result: JSONValue = None


@dataclass(frozen=True)
class Action:
    """One model decision. `calls` for tool_call; `content` for final_answer (the answer), ask_user
    (the question) and invalid (the raw output the loop could not parse); `reply`/`reply_latency` the
    scripted user's answer to ask_user; `reason` the model's stated why (seed 004's `reason` field)."""

    kind: ActionKind
    calls: tuple[EmittedCall, ...] = ()
    content: str = ""
    reason: str = ""
    reply: str | None = None
    reply_latency: LatencyModel = field(default_factory=lambda: Fixed(0))
    #: For invalid: what was wrong (unparseable, unknown_tool, wrong_fields).
    problem: str = ""
    #: Which scripted rule produced it (for the trace), if any.
    rule: str | None = None


@dataclass(frozen=True)
class Message:
    """One entry of the loop's context: role is system, user, assistant, tool or error."""

    role: str
    content: str
    call_id: str | None = None


@dataclass(frozen=True)
class Transcript:
    """What the model decides from, at the start of round `round` (1-based).

    `results` holds every result the loop reported to the model, by call id (a call refused by the
    loop, e.g. to a tool it disabled, has a result with the loop's error); `latest` maps a scripted id
    to the id it was last emitted under. `messages` is the loop's context as the loop keeps it (a window
    for taskloop). `reprompted`: the previous decision was invalid and the loop asked again.
    """

    task: str
    round: int
    messages: tuple[Message, ...]
    results: Mapping[str, CallResult]
    latest: Mapping[str, str]
    unavailable: tuple[str, ...]
    reprompted: bool
    replies: tuple[str, ...]
    decisions: tuple[Action, ...]

    def result(self, base_or_id: str) -> CallResult | None:
        """The latest result of a call by its scripted id (or its exact id)."""
        return self.results.get(self.latest.get(base_or_id, base_or_id))


class Model(Protocol):
    """A decision procedure over the transcript. Deterministic: the same transcript, the same action."""

    def decide(self, transcript: Transcript) -> Action: ...


class ModelSource(Protocol):
    """What a scenario names: makes a fresh `Model` for each run (a scripted model counts how often
    its rules fired, per run)."""

    def start(self) -> Model: ...

    def to_data(self) -> Any: ...


#: Loop settings a scenario may set (`loop = { policy = "taskloop", max_round = 15, ... }`).
LOOP_SETTINGS = ("max_round", "context_messages", "observation_chars", "replan_every", "retry_same_signature",
                 "failure_hint_after", "ask_when_stuck", "ask_after_failed_rounds")


@dataclass(frozen=True)
class AgentSpec:
    """A scenario's agent: the model (scripted rules or a Python callable), the user's task, the
    model's think time per turn, and the loop policy with its settings."""

    model: ModelSource
    task: str = ""
    think: LatencyModel = field(default_factory=lambda: Fixed(0))
    loop: str = "taskloop"
    settings: Mapping[str, int] = field(default_factory=dict)
    #: The `[model]` table as validated data (what a reproducer writes back).
    data: Mapping[str, Any] = field(default_factory=dict)
    #: A loop policy object to run instead of looking `loop` up by name (`loop` then names it for
    #: reports and reproducers); in-process only: a file keeps `loop`.
    policy: Any = field(default=None, compare=False, repr=False)

    def setting(self, name: str, default: int) -> int:
        return int(self.settings.get(name, default))


@dataclass(frozen=True)
class AgentEntry:
    """One agent of a `[[agents]]` scenario: concurrent tasks on one world (seed 004's three or four
    tasks at once). Each has its own model and loop (`spec`), its own runtime (`scheduler`, a
    registry name; None runs the run's scheduler), and optionally a task directory `workdir` that the
    runtime confines relative path arguments to (seed 004's fix: a working directory per task), a
    virtual start time, or `delegated`: started by a parent's `delegate` call instead."""

    name: str
    spec: AgentSpec
    scheduler: str | None = None
    workdir: str | None = None
    start_ms: int = 0
    #: A subagent: it starts only when another agent's `delegate` call names it.
    delegated: bool = False
