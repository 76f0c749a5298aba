"""The `[model]` and `loop` keys of a scenario file: a scripted model (or a Python one, by name) and
the loop policy that drives it, validated into an `AgentSpec`.

Owns that part of the file format. Like the rest of a scenario it is data: rules are parsed, never
executed; `model = "pkg.mod:decide"` is a name, imported only when the scenario runs. Every error
names the field and what was expected (the loader adds the file), never a traceback.

```toml
loop = "taskloop"                       # or { policy = "run_agent", max_round = 8 }
[model]
task = "..."                            # the user's request
think = { fixed = 800 }                 # the model's think time per turn (any latency model)
[[model.rules]]                         # the first rule whose `when` holds (and has fired < times) decides
when = { round = 1 }                    # round, min_round, max_round, ok, failed, missing, outcome,
action = "tool_call"                    #   error_contains, equals, unavailable, reprompted, replied
[[model.rules.calls]]
id = "q-this"
name = "query_sales_data"
arguments = '{"start_date": "2025-05-12", "end_date": "2025-05-18"}'
args_from = { current = "q.value.total_amount" }   # also latency, failure, result, depends_on
```
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from harness.agent.model import Conditions, PythonModel, Rule, ScriptedModel
from harness.agent.registry import loop_names, loop_tools
from harness.agent.spec import LOOP_SETTINGS, Action, ActionKind, AgentEntry, AgentSpec, EmittedCall, ModelSource
from harness.faults.failures import FailureSpecError, parse_failure
from harness.faults.latency import Fixed, LatencyModel, LatencySpecError, parse_latency
from harness.scenario.arguments import OPT_OUT
from harness.suggest import FieldError, below, check_keys, did_you_mean
from harness.tools.inputs import ArgsFromError, Source, parse_reference


class ModelSpecError(FieldError):
    """A malformed `[model]` or `loop`: the field and what was expected."""


_MODEL_KEYS = {"task", "think", "rules", "python", "fallback"}
_RULE_KEYS = {"name", "when", "times", "action", "calls", "text", "reason", "raw", "problem", "reply",
              "reply_latency"}
_CALL_KEYS = {"id", "name", "arguments", "latency", "failure", "result", "depends_on", "args_from", OPT_OUT}
_WHEN_KEYS = {"round", "min_round", "max_round", "ok", "failed", "missing", "outcome", "error_contains", "equals",
              "unavailable", "reprompted", "replied"}
_OUTCOMES = ("ok", "error", "timeout", "cancelled", "unknown")
_PROBLEMS = ("unparseable", "unknown_tool", "wrong_fields")


def parse_agent(model: Any, loop: Any, tools: set[str], unknown_tools: set[str],
                earlier: Collection[str] = ()) -> AgentSpec:
    """The agent of a scenario: `model` (the `[model]` table or a `pkg.mod:decide` string) and `loop`
    (a policy name, or a table with `policy` and settings); `tools` the catalogue's tool names;
    `earlier` the ids of the fixed batches that run before the model decides (its rules may refer to them)."""
    policy, settings = _loop(loop)
    if isinstance(model, str):
        return AgentSpec(_python(model, "model"), loop=policy, settings=settings, data={"python": model})
    if not isinstance(model, Mapping):
        raise ModelSpecError("model", 'a table ([model] with rules) or "package.module:function"')
    _keys(model, "model", _MODEL_KEYS)
    task = _string(model.get("task", ""), "model.task", empty=True)
    think: LatencyModel = Fixed(0)
    if "think" in model:
        think = _latency(model["think"], "model.think")
    source: ModelSource
    if "python" in model:
        if "rules" in model:
            raise ModelSpecError("model.rules", "no rules next to model.python (the Python model decides)")
        source = _python(model["python"], "model.python")
    else:
        source = _script(model, tools | set(loop_tools(policy)), unknown_tools, earlier)
    return AgentSpec(source, task, think, policy, settings, data=_plain(model))


_AGENT_KEYS = {"name", "model", "loop", "scheduler", "workdir", "start_ms", "delegated"}
#: An agent's name prefixes its calls' ids (`sales/report`) and labels its events: a plain word.
_AGENT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")


def parse_agents(value: Any, tools: set[str], unknown_tools: set[str],
                 scheduler_names: Collection[str]) -> tuple[AgentEntry, ...]:
    """`[[agents]]`: several agents at once on one world, each a `[model]` (and `loop`) of its own,
    with an optional runtime (`scheduler`, one of `scheduler_names`), task directory (`workdir`, an
    absolute path) and virtual start time (`start_ms`), or `delegated = true`: a subagent that starts when
    another agent's `delegate` call names it."""
    if not isinstance(value, list) or not value or not all(isinstance(a, Mapping) for a in value):
        raise ModelSpecError("agents", "a non-empty array of tables ([[agents]] with name and model)")
    entries: list[AgentEntry] = []
    seen: set[str] = set()
    for i, table in enumerate(value):
        at = f"agents[{i}]"
        _keys(table, at, _AGENT_KEYS)
        name = table.get("name")
        if not isinstance(name, str) or not _AGENT_NAME.match(name):
            raise ModelSpecError(f"{at}.name", "a short name of letters, digits, - and _, starting with a letter "
                                 f"(it prefixes the agent's call ids), got {name!r:.60}")
        if name in seen:
            raise ModelSpecError(f"{at}.name", f"a name no other agent has ({name!r} is used twice)")
        seen.add(name)
        if "model" not in table:
            raise ModelSpecError(f"{at}.model", "a table ([agents.model] with rules) or \"package.module:function\"")
        try:
            spec = parse_agent(table["model"], table.get("loop"), tools, unknown_tools)
        except ModelSpecError as exc:
            raise ModelSpecError(f"{at}.{exc.field}", exc.expected) from None
        scheduler = table.get("scheduler")
        if scheduler is not None and (not isinstance(scheduler, str) or scheduler not in scheduler_names):
            raise ModelSpecError(f"{at}.scheduler", f"a built-in scheduler ({', '.join(sorted(scheduler_names))}), "
                                 f"got {scheduler!r:.60}")
        workdir = table.get("workdir")
        if workdir is not None and (not isinstance(workdir, str) or not workdir.startswith("/")):
            raise ModelSpecError(f"{at}.workdir", f"an absolute path (the task's own directory), got {workdir!r:.60}")
        start = table.get("start_ms", 0)
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise ModelSpecError(f"{at}.start_ms", f"a whole number of milliseconds >= 0, got {start!r:.60}")
        delegated = table.get("delegated", False)
        if not isinstance(delegated, bool):
            raise ModelSpecError(f"{at}.delegated", f"true or false, got {delegated!r:.60}")
        if delegated and "start_ms" in table:
            raise ModelSpecError(f"{at}.start_ms", "no start time for a delegated agent (it starts when delegated to)")
        entries.append(AgentEntry(name, spec, scheduler, workdir, start, delegated))
    if all(entry.delegated for entry in entries):
        raise ModelSpecError("agents", "at least one agent that is not delegated (someone has to start)")
    return tuple(entries)


def agents_to_data(agents: Sequence[AgentEntry], tools: set[str]) -> dict[str, Any]:
    """The `agents` (and `unknown_tools`) keys that load back into `agents`: the inverse of `parse_agents`."""
    rows: list[dict[str, Any]] = []
    unknown: set[str] = set()
    for entry in agents:
        data = agent_to_data(entry.spec, tools)
        unknown.update(data.pop("unknown_tools", ()))
        row: dict[str, Any] = {"name": entry.name, **data}
        if entry.scheduler is not None:
            row["scheduler"] = entry.scheduler
        if entry.workdir is not None:
            row["workdir"] = entry.workdir
        if entry.start_ms:
            row["start_ms"] = entry.start_ms
        if entry.delegated:
            row["delegated"] = True
        rows.append(row)
    out: dict[str, Any] = {"agents": rows}
    if unknown:
        out["unknown_tools"] = sorted(unknown)
    return out


#: Loop settings where 0 switches the mechanism off.
_ZERO_ALLOWED = ("replan_every", "retry_same_signature", "failure_hint_after", "ask_when_stuck",
                 "ask_after_failed_rounds")


def _loop(value: Any) -> tuple[str, dict[str, int]]:
    if value is None:
        return "taskloop", {}
    if isinstance(value, str):
        return _policy(value, "loop"), {}
    if not isinstance(value, Mapping):
        raise ModelSpecError("loop", f"a loop policy name ({', '.join(loop_names())}) or a table "
                             "{ policy = ..., max_round = ... }")
    _keys(value, "loop", {"policy", *LOOP_SETTINGS})
    settings = {}
    for name in LOOP_SETTINGS:
        if name in value:
            number = value[name]
            least = 0 if name in _ZERO_ALLOWED else 1
            if not isinstance(number, int) or isinstance(number, bool) or number < least:
                raise ModelSpecError(f"loop.{name}", f"a whole number >= 1 (0 allowed for "
                                     f"{', '.join(_ZERO_ALLOWED)}), got {number!r}")
            settings[name] = number
    return _policy(value.get("policy", "taskloop"), "loop.policy"), settings


def _policy(value: Any, field: str) -> str:
    name = _string(value, field)
    if name not in loop_names() and ":" not in name:
        raise ModelSpecError(field, f"a loop policy ({did_you_mean(name, loop_names())}valid: "
                             f"{', '.join(loop_names())}, or package.module:attribute), got {name!r}")
    return name


def _python(value: Any, field: str) -> PythonModel:
    spec = _string(value, field)
    module, _, attribute = spec.partition(":")
    if not module or not attribute or not all(part.isidentifier() for part in (*module.split("."), attribute)):
        raise ModelSpecError(field, f'a Python model named "package.module:function", got {spec!r}')
    return PythonModel(spec)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _script(model: Mapping[str, Any], tools: set[str], unknown_tools: set[str],
            earlier: Collection[str] = ()) -> ScriptedModel:
    rules_value = model.get("rules")
    if not isinstance(rules_value, list) or not rules_value:
        raise ModelSpecError("model.rules", "a non-empty array of tables ([[model.rules]]), or model.python")
    # Ids scripted anywhere (for references across rules); a malformed `calls` is named by _rule below.
    scripted = {c.get("id") for r in rules_value if isinstance(r, Mapping)
                for c in _list(r.get("calls")) if isinstance(c, Mapping) and isinstance(c.get("id"), str)}
    scripted.update(earlier)  # the fixed batches before the model: its transcript holds their results
    rules = tuple(_rule(value, f"model.rules[{i}]", tools, unknown_tools, scripted)
                  for i, value in enumerate(rules_value))
    names = [r.name for r in rules]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ModelSpecError(f"model.rules[{i}].name", f"a rule name not used by another rule, got {name!r}")
    kwargs: dict[str, Any] = {}
    if "fallback" in model:
        _template(_string(model["fallback"], "model.fallback"), "model.fallback", scripted)
        kwargs["fallback"] = Action(ActionKind.FINAL_ANSWER, content=_string(model["fallback"], "model.fallback"),
                                    rule="(fallback)")
    return ScriptedModel(rules, data=_plain(model), **kwargs)


def _rule(value: Any, field: str, tools: set[str], unknown_tools: set[str], scripted: set[Any]) -> Rule:
    _keys(value, field, _RULE_KEYS)
    name = _string(value.get("name", field.removeprefix("model.")), f"{field}.name")
    times = value.get("times", 1)
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise ModelSpecError(f"{field}.times", f"how often the rule may fire, a whole number >= 1, got {times!r}")
    if "action" not in value:
        raise ModelSpecError(f"{field}.action", f"one of {', '.join(k.value for k in ActionKind)}")
    try:
        kind = ActionKind(value["action"])
    except ValueError:
        raise ModelSpecError(f"{field}.action", f"one of {', '.join(k.value for k in ActionKind)}, "
                             f"got {value['action']!r}") from None
    when = _when(value.get("when", {}), f"{field}.when", scripted)
    reason = _string(value.get("reason", ""), f"{field}.reason", empty=True)
    allowed = {ActionKind.TOOL_CALL: {"calls"}, ActionKind.FINAL_ANSWER: {"text"},
               ActionKind.ASK_USER: {"text", "reply", "reply_latency"}, ActionKind.INVALID: {"raw", "problem"}}[kind]
    for key in ("calls", "text", "raw", "problem", "reply", "reply_latency"):
        if key in value and key not in allowed:
            raise ModelSpecError(f"{field}.{key}", f"no {key} for action {kind.value!r} (it takes "
                                 f"{', '.join(sorted(allowed))})")
    if kind is ActionKind.TOOL_CALL:
        calls = value.get("calls")
        if not isinstance(calls, list) or not calls:
            raise ModelSpecError(f"{field}.calls", "a non-empty array of tables ([[model.rules.calls]])")
        emitted: list[EmittedCall] = []
        for c, call in enumerate(calls):
            emitted.append(_call(call, f"{field}.calls[{c}]", tools, unknown_tools, scripted,
                                 {e.id for e in emitted}))
        action = Action(kind, tuple(emitted), reason=reason)
    elif kind is ActionKind.INVALID:
        problem = value.get("problem", "unparseable")
        if problem not in _PROBLEMS:
            raise ModelSpecError(f"{field}.problem", f"one of {', '.join(_PROBLEMS)}, got {problem!r}")
        action = Action(kind, content=_string(value.get("raw", ""), f"{field}.raw", empty=True), reason=reason,
                        problem=problem)
    else:
        if "text" not in value:
            raise ModelSpecError(f"{field}.text", "the answer (final_answer) or question (ask_user); it may "
                                 "quote results as {CALL.value.key}")
        reply = None
        if "reply" in value:
            reply = _string(value["reply"], f"{field}.reply", empty=True)
        latency: LatencyModel = Fixed(0)
        if "reply_latency" in value:
            latency = _latency(value["reply_latency"], f"{field}.reply_latency")
        text = _string(value["text"], f"{field}.text", empty=True)
        _template(text, f"{field}.text", scripted)
        action = Action(kind, content=text, reason=reason, reply=reply, reply_latency=latency)
    return Rule(name, when, action, times)


def _call(value: Any, field: str, tools: set[str], unknown_tools: set[str], scripted: set[Any],
          siblings: set[str]) -> EmittedCall:
    _keys(value, field, _CALL_KEYS)
    for required in ("id", "name"):
        if required not in value:
            raise ModelSpecError(f"{field}.{required}", "a non-empty string")
    call_id = _string(value["id"], f"{field}.id")
    if "@" in call_id:
        raise ModelSpecError(f"{field}.id", f"an id without '@' (the loop names a call emitted again id@round), "
                             f"got {call_id!r}")
    if call_id in siblings:
        raise ModelSpecError(f"{field}.id", f"an id not used by another call of the rule, got {call_id!r}")
    name = _string(value["name"], f"{field}.name")
    if name not in tools and name not in unknown_tools:
        raise ModelSpecError(f"{field}.name", f"a known tool ({did_you_mean(name, tools)}or list it in "
                             "unknown_tools to script a model that calls a tool the runtime does not know), got "
                             f"{name!r}")
    arguments = value.get("arguments", "{}")
    if isinstance(arguments, Mapping):
        try:
            arguments = json.dumps(_plain(arguments))
        except (TypeError, ValueError):
            raise ModelSpecError(f"{field}.arguments", "an inline table of JSON values") from None
    elif not isinstance(arguments, str):
        raise ModelSpecError(f"{field}.arguments", f"the raw JSON string the model emits (malformed is allowed), or "
                             f"an inline table, got {arguments!r:.60}")
    args_from = value.get("args_from", {})
    if not isinstance(args_from, Mapping):
        raise ModelSpecError(f"{field}.args_from", 'a table of argument = "CALL.value.key"')
    for arg, text in args_from.items():
        where = f"{field}.args_from.{arg}"
        try:
            source = Source.parse(text)
        except ArgsFromError as exc:
            raise ModelSpecError(where, str(exc)) from None
        for producer in source.producers:
            if producer not in scripted:
                emits = ", ".join(sorted(map(str, scripted)))
                raise ModelSpecError(where, f"a reference to a call the model emits ({emits}), got {producer!r}")
    depends = value.get("depends_on", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) and d in siblings for d in depends):
        raise ModelSpecError(f"{field}.depends_on", f"a list of ids of earlier calls of the same rule, got {depends!r}")
    latency = _latency(value["latency"], f"{field}.latency") if "latency" in value else None
    failure = None
    if "failure" in value:
        try:
            failure = parse_failure(value["failure"])
        except FailureSpecError as exc:
            raise ModelSpecError(below(f"{field}.failure", exc.field), str(exc).removeprefix("expected ")) from None
    result = _plain(value["result"], f"{field}.result") if "result" in value else None
    if not isinstance(value.get(OPT_OUT, True), bool):
        raise ModelSpecError(f"{field}.{OPT_OUT}", f"true or false, got {value[OPT_OUT]!r:.60}")
    return EmittedCall(call_id, name, arguments, call_id, {str(k): str(v) for k, v in args_from.items()},
                       tuple(depends), latency, failure, "result" in value, result)


def _when(value: Any, field: str, scripted: set[Any]) -> Conditions:
    _keys(value, field, _WHEN_KEYS)
    kwargs: dict[str, Any] = {}
    for key in ("round", "min_round", "max_round"):
        if key in value:
            number = value[key]
            if not isinstance(number, int) or isinstance(number, bool) or number < 1:
                raise ModelSpecError(f"{field}.{key}", f"a round number >= 1, got {number!r}")
            kwargs[key] = number
    for key in ("ok", "failed", "missing"):
        if key in value:
            ids = [value[key]] if isinstance(value[key], str) else value[key]
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
                raise ModelSpecError(f"{field}.{key}", f"a call id or a list of them, got {value[key]!r}")
            for call_id in ids:
                _scripted(call_id, f"{field}.{key}", scripted)
            kwargs[key] = tuple(ids)
    if "outcome" in value:
        table = _table_of_strings(value["outcome"], f"{field}.outcome")
        for call_id, outcome in table.items():
            _scripted(call_id, f"{field}.outcome", scripted)
            if outcome not in _OUTCOMES:
                raise ModelSpecError(f"{field}.outcome.{call_id}", f"one of {', '.join(_OUTCOMES)}, got {outcome!r}")
        kwargs["outcome"] = table
    if "error_contains" in value:
        table = _table_of_strings(value["error_contains"], f"{field}.error_contains")
        for call_id in table:
            _scripted(call_id, f"{field}.error_contains", scripted)
        kwargs["error_contains"] = table
    if "equals" in value:
        equals = value["equals"]
        if not isinstance(equals, Mapping):
            raise ModelSpecError(f"{field}.equals", 'a table of "CALL.value.key" = value')
        for reference in equals:
            try:
                ref = parse_reference(reference)
            except ArgsFromError as exc:
                raise ModelSpecError(f"{field}.equals", str(exc)) from None
            _scripted(ref.call, f"{field}.equals", scripted)
        kwargs["equals"] = {k: _plain(v, f"{field}.equals") for k, v in equals.items()}
    if "unavailable" in value:
        tools = [value["unavailable"]] if isinstance(value["unavailable"], str) else value["unavailable"]
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ModelSpecError(f"{field}.unavailable", "a tool name or a list of them (tools the loop disabled)")
        kwargs["unavailable"] = tuple(tools)
    if "reprompted" in value:
        if not isinstance(value["reprompted"], bool):
            raise ModelSpecError(f"{field}.reprompted", f"true or false, got {value['reprompted']!r}")
        kwargs["reprompted"] = value["reprompted"]
    if "replied" in value:
        kwargs["replied"] = _string(value["replied"], f"{field}.replied", empty=True)
    return Conditions(**kwargs)


def _template(text: str, field: str, scripted: set[Any]) -> None:
    """An answer's or question's `{CALL.value.key}` references name calls the model emits, and a braced
    text that starts with such a call is a reference: a misspelt one would be printed as written, or
    as null, in every run."""
    for inner in _BRACED.findall(text):
        try:
            ref = parse_reference(inner)
        except ArgsFromError:
            head = inner.strip().split(".")[0]
            if head in scripted:
                raise ModelSpecError(field, f"a reference {{{head}.value}} or {{{head}.value.KEY...}} to call "
                                     f"{head!r}, got {{{inner}}}") from None
            continue  # braces that name no call are text (a JSON example, a placeholder for the user)
        _scripted(ref.call, f"{field} ({{{inner}}})", scripted)


_BRACED = re.compile(r"\{([^{}]+)\}")


def _scripted(call_id: str, field: str, scripted: set[Any]) -> None:
    if call_id not in scripted:
        ids = sorted(map(str, scripted))
        raise ModelSpecError(field, f"the id of a call the model emits ({did_you_mean(call_id, ids)}ids: "
                             f"{', '.join(ids) or 'none'}), got {call_id!r}")


def _table_of_strings(value: Any, field: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ModelSpecError(field, "a table of call id = text")
    return {str(k): v for k, v in value.items()}


def _keys(value: Any, field: str, allowed: set[str]) -> None:
    if not isinstance(value, Mapping):
        raise ModelSpecError(field, f"a table, got {value!r:.60}")
    check_keys(value, allowed, field, ModelSpecError)


def _string(value: Any, field: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise ModelSpecError(field, f"{'a string' if empty else 'a non-empty string'}, got {value!r:.60}")
    return value


def _latency(value: Any, field: str) -> LatencyModel:
    try:
        return parse_latency(value)
    except LatencySpecError as exc:
        raise ModelSpecError(below(field, exc.field), str(exc).removeprefix("expected ")) from None


def _plain(value: Any, field: str = "model") -> Any:
    """TOML data as JSON data (what a reproducer writes back); dates and times have no JSON form."""
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ModelSpecError(field, "a finite number (JSON has no nan or inf)")
        return value
    if isinstance(value, list):
        return [_plain(item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{field}.{k}") for k, v in value.items()}
    raise ModelSpecError(field, f"a JSON value (string, number, boolean, array or table), got {value!r:.60}")


def agent_to_data(agent: AgentSpec, tools: set[str]) -> dict[str, Any]:
    """The `model`, `loop` and (for tools the model calls that the catalogue lacks) `unknown_tools` keys
    that load back into `agent`: the inverse of `parse_agent`."""
    data: dict[str, Any] = {"model": _plain(dict(agent.data))}
    data["loop"] = {"policy": agent.loop, **agent.settings} if agent.settings else agent.loop
    model = agent.model
    if isinstance(model, ScriptedModel):
        unknown = sorted({c.name for r in model.rules for c in r.action.calls if c.name not in tools})
        if unknown:
            data["unknown_tools"] = unknown
    return data


def agent_modules(model: Any, loop: Any) -> list[tuple[str, str]]:
    """(field, module) of the code a scenario's `model` and `loop` name: a Python model, a
    `module:attr` loop policy. A file is data: these are imported only when trusted
    (`harness.scenario.trust`)."""
    found = []
    python = model if isinstance(model, str) else model.get("python") if isinstance(model, Mapping) else None
    if isinstance(python, str) and ":" in python:
        found.append(("model" if isinstance(model, str) else "model.python", python.partition(":")[0]))
    policy = loop if isinstance(loop, str) else loop.get("policy") if isinstance(loop, Mapping) else None
    if isinstance(policy, str) and ":" in policy:
        found.append(("loop" if isinstance(loop, str) else "loop.policy", policy.partition(":")[0]))
    return found


def code_modules(scenario: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, module) of the code a scenario's data names in its `[model]`/`loop` and in each of its
    `[[agents]]`: what running it (or replaying a reproducer of it) imports, only when trusted."""
    found = agent_modules(scenario.get("model"), scenario.get("loop"))
    agents = scenario.get("agents")
    for i, table in enumerate(agents if isinstance(agents, list) else []):
        if isinstance(table, Mapping):
            found.extend((f"agents[{i}].{field}", module)
                         for field, module in agent_modules(table.get("model"), table.get("loop")))
    return found


def loop_modules(specs: Sequence[AgentSpec]) -> list[str]:
    """The modules of the Python models and loop policies these agents name."""
    return [module for spec in specs for _, module in agent_modules(spec.data, spec.loop)]
