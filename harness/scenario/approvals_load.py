"""The `[approvals]` table of a scenario file: the scripted user who answers approval requests.

Owns its spelling, validation and the way back to data (reproducers carry it). Each rule is an
answer — `approve`, `deny` or `none` (the user never answers) — and, except for `none`, a latency as
every latency is spelled (`{ fixed = 2000 }`, `{ uniform = [500, 3000] }`, ...; 1 s when omitted):

    [approvals]
    default = { answer = "approve", latency = { fixed = 1000 } }     # optional: every other request
    [approvals.tools.restart_service]                                # every call of one tool
    answer = "approve"
    latency = { uniform = [500, 3000] }
    [approvals.calls.wipe-cache]                                     # one call, by id (wins)
    answer = "deny"

hermes' command guard: `guard = "hermes"` asks about terminal commands by hermes' dangerous-command
patterns (`harness.scheduling.command_guard`), and `[approvals.patterns."recursive delete"]` scripts
the answer to a pattern (after a call's own rule, before its tool's); there the answer may also be
`session` (approve, and do not ask again about those patterns for the rest of the run).

A rule names tools declared `needs_confirmation` (they are the ones a runtime asks about) and calls
of the scenario (for a loop scenario, the ids its `[model]` rules emit). Bad input is an
`ApprovalsError` naming the field and what was expected. It never runs anything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

from harness.faults.latency import LatencySpecError, parse_latency
from harness.model import Batch
from harness.scheduling.approvals import ANSWERS, DEFAULT_LATENCY, PATTERN_ANSWERS, ApprovalRule, ApprovalScript
from harness.scheduling.command_guard import KEYS as PATTERN_KEYS
from harness.suggest import FieldError, below, check_keys, did_you_mean
from harness.tools.catalogue import Catalogue

_KEYS = {"default", "tools", "calls", "guard", "patterns"}
_RULE_KEYS = {"answer", "latency"}


class ApprovalsError(FieldError):
    """A malformed `[approvals]` table: `field` and what was `expected` there (and what it got)."""

    def __init__(self, field: str, expected: str, got: Any = None, *, has_got: bool = True) -> None:
        super().__init__(field, expected)
        self.args = (f"{field}: expected {expected}" + (f", got {got!r}" if has_got else ""),)
        self.got, self.has_got = got, has_got


def scripted_calls(top: Mapping[str, Any], batches: Sequence[Batch]) -> dict[str, str] | None:
    """The calls a scenario can make (id -> tool): its batches, or the calls its `[model]` rules
    emit; None when they cannot be known before the run (a Python model, several agents)."""
    if batches:
        return {call.id: call.name for batch in batches for call in batch}
    model = top.get("model")
    if "agents" in top or not isinstance(model, Mapping) or "python" in model:
        return None
    calls: dict[str, str] = {}
    rules = model.get("rules", [])
    for rule in rules if isinstance(rules, list) else []:
        emitted = rule.get("calls", []) if isinstance(rule, Mapping) else []
        for call in emitted if isinstance(emitted, list) else []:
            if isinstance(call, Mapping) and isinstance(call.get("id"), str) and isinstance(call.get("name"), str):
                calls[call["id"]] = call["name"]
    return calls


def parse_approvals(value: Any, catalogue: Catalogue, calls: Mapping[str, str] | None) -> ApprovalScript:
    """The `[approvals]` table as an `ApprovalScript`; raises `ApprovalsError`. `calls` (id -> tool)
    are the calls a `calls.<id>` rule may name; None accepts any id."""
    table = _table(value, "approvals", _KEYS)
    default = _rule(table["default"], "approvals.default") if "default" in table else ApprovalRule()
    tools: dict[str, ApprovalRule] = {}
    for name, rule in _table(table.get("tools", {}), "approvals.tools", None).items():
        field = f"approvals.tools.{name}"
        spec = catalogue.get(name)
        if spec is None:
            raise ApprovalsError(field, f"a tool of the scenario{_hint(name, catalogue)}", name)
        if not spec.declared.needs_confirmation:
            raise ApprovalsError(field, f"a tool declared needs_confirmation ({name!r} is not: a runtime never asks "
                                 f"about it; declare it with tools.{name}.declared.needs_confirmation = true)",
                                 has_got=False)
        tools[name] = _rule(rule, field)
    per_call: dict[str, ApprovalRule] = {}
    for call_id, rule in _table(table.get("calls", {}), "approvals.calls", None).items():
        field = f"approvals.calls.{call_id}"
        if calls is not None:
            if call_id not in calls:
                raise ApprovalsError(field, f"the id of a call of the scenario{_hint(call_id, calls)}", call_id)
            spec = catalogue.get(calls[call_id])
            if spec is None or not spec.declared.needs_confirmation:
                raise ApprovalsError(field, f"a call of a tool declared needs_confirmation ({call_id!r} calls "
                                     f"{calls[call_id]!r}, which a runtime never asks about)", has_got=False)
        per_call[call_id] = _rule(rule, field)
    guard = table.get("guard", "none")
    if guard not in ("none", "hermes"):
        raise ApprovalsError("approvals.guard", '"hermes" (terminal commands asked about by hermes\' dangerous-command '
                             'patterns) or "none"', guard)
    patterns: dict[str, ApprovalRule] = {}
    for key, rule in _table(table.get("patterns", {}), "approvals.patterns", None).items():
        field = f"approvals.patterns.{key}"
        if guard != "hermes":
            raise ApprovalsError(field, 'guard = "hermes" in [approvals] (pattern rules apply to its guard)',
                                 has_got=False)
        if key not in PATTERN_KEYS:
            raise ApprovalsError(field, f"one of hermes' dangerous-command patterns{_hint(key, PATTERN_KEYS)}: "
                                 + ", ".join(repr(k) for k in PATTERN_KEYS), key)
        patterns[key] = _rule(rule, field, PATTERN_ANSWERS)
    return ApprovalScript(default, tools, per_call, "hermes" if guard == "hermes" else "none", patterns)


def _hint(name: str, valid: Collection[str]) -> str:
    """` (did you mean 'x'?)`, or nothing when no valid name is close."""
    hint = did_you_mean(name, valid).strip()
    return f" ({hint})" if hint else ""


def _table(value: Any, field: str, allowed: set[str] | None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ApprovalsError(field, "a table", value)
    if allowed is not None:
        check_keys(value, allowed, field, partial(ApprovalsError, has_got=False))
    return value


def _rule(value: Any, field: str, answers: tuple[str, ...] = ANSWERS) -> ApprovalRule:
    rule = _table(value, field, _RULE_KEYS)
    answer = rule.get("answer", "approve")
    if answer not in answers:
        session = '"session" (approve, and do not ask again for its patterns), ' if "session" in answers else ""
        raise ApprovalsError(f"{field}.answer", f'one of "approve", {session}"deny" or "none" (the user never answers)',
                             answer)
    if "latency" not in rule:
        return ApprovalRule(answer, DEFAULT_LATENCY)
    if answer == "none":
        raise ApprovalsError(f"{field}.latency", 'no latency with answer = "none" (the user never answers)',
                             has_got=False)
    try:
        latency = parse_latency(rule["latency"])
    except LatencySpecError as exc:
        raise ApprovalsError(below(f"{field}.latency", exc.field), str(exc).removeprefix("expected "),
                             has_got=False) from None
    return ApprovalRule(answer, latency)


def approvals_to_data(script: ApprovalScript, calls: Collection[str] | None = None) -> dict[str, Any]:
    """The script as the data `parse_approvals` reads back (rules in name order). With `calls`, only
    the rules of those calls are kept: a shrunk reproducer has dropped some, and their rules could
    never apply (and would not load)."""
    data: dict[str, Any] = {"default": _rule_data(script.default)}
    if script.tools:
        data["tools"] = {name: _rule_data(rule) for name, rule in sorted(script.tools.items())}
    kept = {call_id: _rule_data(rule) for call_id, rule in sorted(script.calls.items())
            if calls is None or call_id in calls}
    if kept:
        data["calls"] = kept
    if script.guard != "none":
        data["guard"] = script.guard
    if script.patterns:
        data["patterns"] = {key: _rule_data(rule) for key, rule in sorted(script.patterns.items())}
    return data


def _rule_data(rule: ApprovalRule) -> dict[str, Any]:
    if rule.answer == "none":
        return {"answer": "none"}
    return {"answer": rule.answer, "latency": rule.latency.to_json()}
