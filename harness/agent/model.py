"""Scripted models: a deterministic decision procedure over the transcript.

Owns the two kinds a scenario can name. A `ScriptedModel` is ordered rules (from the scenario's
`[model]` table): each round the first rule whose conditions hold and that has fired fewer than its
`times` produces the action; when none does, the model answers with `fallback` (by default a final
answer saying it has nothing left to do, so a script cannot spin forever by accident). A `PythonModel`
is a user's callable `pkg.mod:decide` taking the transcript, imported only when a run starts (a
scenario file is data; naming code in it is trusted like a `module:attr` scheduler). It never runs
tools, never advances time and never assigns the run-unique call ids (the loop runtime does).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.agent.spec import Action, ActionKind, EmittedCall, Model, Transcript
from harness.faults.latency import Fixed
from harness.model import JSONValue, Outcome
from harness.sim.realtime import sigint_mark
from harness.tools.guard import described, users_ctrl_c
from harness.tools.inputs import parse_reference


@dataclass(frozen=True)
class Conditions:
    """All must hold. Call ids are the script's ids (the latest call emitted under that id)."""

    round: int | None = None
    min_round: int | None = None
    max_round: int | None = None
    ok: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    outcome: Mapping[str, str] = field(default_factory=dict)
    error_contains: Mapping[str, str] = field(default_factory=dict)
    equals: Mapping[str, JSONValue] = field(default_factory=dict)
    unavailable: tuple[str, ...] = ()
    reprompted: bool | None = None
    replied: str | None = None

    def hold(self, t: Transcript) -> bool:
        if self.round is not None and t.round != self.round:
            return False
        if self.min_round is not None and t.round < self.min_round:
            return False
        if self.max_round is not None and t.round > self.max_round:
            return False
        for call in self.ok:
            result = t.result(call)
            if result is None or not result.ok:
                return False
        for call in self.failed:
            result = t.result(call)
            if result is None or result.ok:
                return False
        if any(t.result(call) is not None for call in self.missing):
            return False
        for call, outcome in self.outcome.items():
            result = t.result(call)
            if result is None or result.outcome.value != outcome:
                return False
        for call, text in self.error_contains.items():
            result = t.result(call)
            if result is None or result.error is None or text not in result.error:
                return False
        for reference, wanted in self.equals.items():
            found, value = lookup_in(t, reference)
            if not found or value != wanted:
                return False
        if any(tool not in t.unavailable for tool in self.unavailable):
            return False
        if self.reprompted is not None and t.reprompted != self.reprompted:
            return False
        return self.replied is None or bool(t.replies and self.replied in t.replies[-1])


def lookup_in(t: Transcript, reference: str) -> tuple[bool, JSONValue]:
    ref = parse_reference(reference)
    result = t.result(ref.call)
    if result is None or result.outcome is not Outcome.OK:
        return False, None
    return ref.extract(result.value)


def render(template: str, t: Transcript) -> str:
    """A final answer or question with `{CALL.value.key}` references filled from the transcript
    (`null` where the model has no such value: a model quoting a result it never got)."""
    def fill(match: re.Match[str]) -> str:
        try:
            found, value = lookup_in(t, match.group(1))
        except ValueError:
            return match.group(0)  # braces that are not a reference stay as written
        if found and isinstance(value, str):
            return value
        return json.dumps(value if found else None, ensure_ascii=False)

    return _BRACED.sub(fill, template)


_BRACED = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class Rule:
    name: str
    when: Conditions
    action: Action
    times: int = 1


@dataclass(frozen=True)
class ScriptedModel:
    """The `[model]` rules of a scenario; `start()` gives a fresh per-run model."""

    rules: tuple[Rule, ...]
    fallback: Action = field(default_factory=lambda: Action(ActionKind.FINAL_ANSWER,
                                                            content="(the script has no rule for this state)",
                                                            rule="(fallback)"))
    data: Mapping[str, Any] = field(default_factory=dict)

    def start(self) -> Model:
        return _ScriptRun(self)

    def to_data(self) -> Any:
        return dict(self.data)


class _ScriptRun:
    def __init__(self, script: ScriptedModel) -> None:
        self.script = script
        self.fired = [0] * len(script.rules)

    def decide(self, transcript: Transcript) -> Action:
        for index, rule in enumerate(self.script.rules):
            if self.fired[index] < rule.times and rule.when.hold(transcript):
                self.fired[index] += 1
                action = rule.action
                if action.kind is ActionKind.FINAL_ANSWER or action.kind is ActionKind.ASK_USER:
                    action = replace(action, content=render(action.content, transcript))
                return replace(action, rule=rule.name)
        return self.script.fallback


class ModelLoadError(LookupError):
    """A Python model named by a scenario cannot be imported or is not callable."""


@dataclass(frozen=True)
class PythonModel:
    """`model = "pkg.mod:decide"`: a callable (or a class, instantiated per run) taking the transcript
    and returning an `Action` or a dict `{"type": ..., "calls": [...], "content": ...}`."""

    spec: str

    @property
    def module(self) -> str:
        return self.spec.partition(":")[0]

    def start(self) -> Model:
        module_name, _, attribute = self.spec.partition(":")
        mark = sigint_mark()
        try:
            target = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ModelLoadError(f"cannot load the model {self.spec!r} ({exc})") from None
        except BaseException as exc:  # SystemExit too: the model's module must not choose the exit code
            if users_ctrl_c(exc, mark):
                raise
            raise ModelLoadError(f"cannot load the model {self.spec!r}: importing {module_name} raised "
                                 f"{described(exc)}") from None
        if isinstance(target, type):
            try:
                target = target()
            except BaseException as exc:
                if users_ctrl_c(exc, mark):
                    raise
                raise ModelLoadError(f"cannot load the model {self.spec!r}: calling {attribute}() raised "
                                     f"{described(exc)}") from None
        decide = getattr(target, "decide", target)
        if not callable(decide):
            raise ModelLoadError(f"the model {self.spec!r} is not callable")
        return _PythonRun(decide)

    def to_data(self) -> Any:
        return self.spec


class _PythonRun:
    def __init__(self, decide: Any) -> None:
        self._decide = decide

    def decide(self, transcript: Transcript) -> Action:
        return as_action(self._decide(transcript))


def as_action(value: Any) -> Action:
    """An `Action`, or one built from a dict; anything else is an `invalid` action (seed 004's
    DecisionParser never raises: what it cannot read, the loop must re-prompt)."""
    if isinstance(value, Action):
        return value
    if not isinstance(value, Mapping):
        return Action(ActionKind.INVALID, content=repr(value)[:200], problem="unparseable")
    kind = value.get("type", value.get("kind"))
    try:
        action_kind = ActionKind(kind)
    except ValueError:
        return Action(ActionKind.INVALID, content=json.dumps(value, default=str)[:200], problem="wrong_fields")
    calls = []
    for raw in value.get("calls", []) or []:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
            return Action(ActionKind.INVALID, content=json.dumps(value, default=str)[:200], problem="wrong_fields")
        arguments = raw.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(EmittedCall(raw["id"], raw["name"], arguments, raw["id"],
                                 dict(raw.get("args_from", {}) or {}), tuple(raw.get("depends_on", ()) or ())))
    latency = value.get("reply_latency_ms", 0)
    return Action(action_kind, tuple(calls), str(value.get("content", "")), str(value.get("reason", "")),
                  value.get("reply"), Fixed(int(latency)) if isinstance(latency, int) else Fixed(0),
                  str(value.get("problem", "")))
