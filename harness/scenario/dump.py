"""A scenario back to plain data, the inverse of `load.scenario_from_data`.

Owns the serialisation that reproducers use to carry their scenario inline: only what differs from
the built-in tools, the named tool modules and the defaults is written; tools the scenario declares
are written whole, Python tools by the module that provides them; loading the data again gives a
scenario that runs identically (same fingerprint). It never writes files.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

from harness.faults.failures import FailureModel
from harness.model import ToolCall
from harness.scenario.approvals_load import approvals_to_data
from harness.scenario.arguments import OPT_OUT, fits
from harness.scenario.model_load import agent_to_data, agents_to_data
from harness.scenario.spec import Scenario
from harness.scenario.tools_load import NEW_TOOL_DECLARED, declared_from_hints
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.sim.machine import Machine
from harness.tools.catalogue import Catalogue, base_catalogue
from harness.tools.modules import module_of
from harness.tools.options import configure
from harness.tools.script import Script
from harness.tools.spec import DEFAULT_LATENCY, Declared, ResourceKeys

_DECLARED = ("read_only", "idempotent", "interactive", "needs_confirmation", "honours_cancel", "exclusive",
             "category", "side_effect")


def _failure(model: FailureModel) -> dict[str, Any]:
    return {"rate": model.rate, "permanent": model.permanent, "message": model.message,
            "attempts": list(model.attempts)}


def _declared_changes(base: Declared, now: Declared, tool: str = "") -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for name in _DECLARED:
        value = getattr(now, name)
        if value != getattr(base, name):
            changes[name] = value.value if name == "side_effect" else value
    if now.resource_keys != base.resource_keys:
        changes["resource_keys"] = _key_templates(tool, now.resource_keys)
    return changes


def _hinted(base: Declared, now: Declared, override: dict[str, Any]) -> Declared:
    """The declared metadata the loader derives before `declared` applies: `base` with `now`'s MCP hints, if
    they differ from `base`'s (and then written as `annotations`)."""
    if now.hints is None or now.hints == base.hints:
        return base
    override["annotations"] = now.hints.to_data()
    return declared_from_hints(base, now.hints)


class NotSerializable(ValueError):
    """A scenario uses a tool that data cannot name: a Python tool no importable module provides."""


def _modules_needed(scenario: Scenario) -> tuple[str, ...]:
    """The scenario's tool modules, plus the module of any Python tool that lists it in its TOOLS (a
    scenario built in Python from a user's module): a reproducer must be able to import it again."""
    modules = list(scenario.tools_modules)
    known = base_catalogue(scenario.tools_modules)
    for name, spec in scenario.catalogue.items():
        if name in known or isinstance(spec.behaviour, Script) or spec.delegates:
            continue  # (`delegate` comes back with the delegated agents that brought it)
        home = module_of(spec, [str(getattr(spec.behaviour, "__module__", ""))])
        if home is None:
            raise NotSerializable(
                f"tool {name!r} is defined in Python outside a tools module, so a reproducer cannot bring it "
                "back: list its ToolSpec in a module's TOOLS and name the module (tools_module = \"pkg.mod\", "
                "--tools pkg.mod), or declare it in the scenario file")
        modules.append(home)
    return tuple(dict.fromkeys(modules))


def _tools(scenario: Scenario, base: Catalogue) -> dict[str, Any]:
    """Each tool that differs from `base`: overrides of base tools, declared tools whole."""
    tools: dict[str, Any] = {}
    for name, spec in scenario.catalogue.items():
        origin = base.get(name)
        override: dict[str, Any] = {}
        replaces = origin is not None and isinstance(spec.behaviour, Script) and spec.behaviour is not origin.behaviour
        if origin is None or replaces:  # (a tool of the catalogue is replaced by an MCP tool of its name)
            if spec.delegates or not isinstance(spec.behaviour, Script):
                continue  # a module tool: _modules_needed put its module in the base
            override["description"] = spec.description
            override["does"] = spec.behaviour.to_json()
            if spec.behaviour.has_result:
                override["result"] = spec.behaviour.result
            if replaces or (spec.parameters is not None and not spec.parameters.closed):
                # Only an MCP tool (input_schema) may replace one of the catalogue, and say "and others too".
                schema = spec.parameters.to_json_schema() if spec.parameters is not None else {
                    "type": "object", "additionalProperties": True}
                override["input_schema"] = json.dumps(schema)
            elif spec.parameters is not None:
                override["parameters"] = spec.parameters.to_data()
            override["declared"] = _declared_changes(_hinted(NEW_TOOL_DECLARED, spec.declared, override), spec.declared,
                                                     name)
            origin = replace(spec, latency=DEFAULT_LATENCY, stops_on_cancel=True, file_lock=False, sync=False,
                             blocking_ms=0, server=None)
        elif spec.behaviour is not origin.behaviour and not _options_of(origin, spec):
            raise NotSerializable(f"tool {name!r} has a behaviour other than its catalogue's; data cannot carry "
                                  "it (declare a tool under a new name instead)")
        else:
            changes = _declared_changes(_hinted(origin.declared, spec.declared, override), spec.declared, name)
            if changes:
                override["declared"] = changes
        if spec.latency != origin.latency:
            override["latency"] = spec.latency.to_json()
        if spec.stops_on_cancel != origin.stops_on_cancel:
            override["stops_on_cancel"] = spec.stops_on_cancel
        if spec.file_lock != origin.file_lock:
            override["file_lock"] = spec.file_lock
        if spec.sync != origin.sync:
            override["sync"] = spec.sync
        if spec.blocking_ms != origin.blocking_ms:
            override["blocking_ms"] = spec.blocking_ms
        if spec.server != origin.server and spec.server is not None:
            override["server"] = spec.server
        override.update(spec.options)  # the options a scenario chose for a tool of the catalogue
        if name in scenario.tool_failures:
            override["failure"] = _failure(scenario.tool_failures[name])
        if name in scenario.tool_caps:
            override["max_concurrency"] = scenario.tool_caps[name]
        if override:
            tools[name] = override
    return tools


def _options_of(origin: Any, spec: Any) -> bool:
    """Whether `spec` is `origin` with the options it carries (then data carries it: the options)."""
    if not spec.options or origin.options:
        return False
    try:
        return bool(configure(origin, dict(spec.options)).behaviour == spec.behaviour)
    except ValueError:
        return False


def _key_templates(name: str, keys: ResourceKeys) -> list[str]:
    if keys.path_args or keys.default_path is not None:
        raise NotSerializable(f"tool {name!r} declares resource keys from path arguments, which a scenario file "
                              'writes as templates: resource_keys = ["file:{path}"]')
    return [key.replace("{", "{{").replace("}", "}}") for key in keys.fixed] + list(keys.templates)


def _fits(scenario: Scenario, call: ToolCall) -> bool:
    """Whether the call's arguments load back without `check_arguments = false`."""
    spec = scenario.catalogue.get(call.name)
    return spec is None or fits(spec, call.arguments, tuple(scenario.args_from.get(call.id, ())),
                                recorded=call.id in scenario.catalogue.results)


def scenario_to_data(scenario: Scenario) -> dict[str, Any]:
    """The scenario as data; raises `NotSerializable` for a tool that data cannot name."""
    state = scenario.world
    world: dict[str, Any] = {"cwd": state.cwd, "home": state.home, "case_sensitive": state.case_sensitive,
                             "env": dict(state.env), "dirs": list(state.dirs), "files": dict(state.files)}
    if state.symlinks:
        world["symlinks"] = dict(state.symlinks)
    if state.hardlinks:
        world["hardlinks"] = [list(group) for group in state.hardlinks]
    if state.users:
        world["users"] = dict(state.users)
    linked = {path for group in state.hardlinks for path in group[1:]}
    world["files"] = {path: content for path, content in state.files if path not in linked}
    modules = _modules_needed(scenario)
    tools = _tools(scenario, base_catalogue(modules))
    batches = []
    for batch in scenario.batches:
        calls = []
        for call in batch:
            row: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
            if call.id in scenario.call_latency:
                row["latency"] = scenario.call_latency[call.id].to_json()
            if call.id in scenario.call_failures:
                row["failure"] = _failure(scenario.call_failures[call.id])
            if call.id in scenario.depends_on:
                row["depends_on"] = list(scenario.depends_on[call.id])
            if call.id in scenario.catalogue.results:
                row["result"] = scenario.catalogue.results[call.id]
            recorded = scenario.recorded.get(call.id)
            if recorded is not None:
                if recorded.failed:
                    row["recorded_error"] = recorded.error
                else:
                    row["recorded"] = recorded.value
            if call.id in scenario.args_from:
                row["args_from"] = dict(scenario.args_from[call.id])
            if scenario.check_arguments and not _fits(scenario, call):
                row[OPT_OUT] = False  # as it ran (a Python-built or shrunk call's arguments may not fit)
            calls.append(row)
        batches.append({"label": batch.label, "calls": calls})
    data: dict[str, Any] = {"name": scenario.name, "description": scenario.description, "source": scenario.source,
                            "world": world, "tools": tools, "batches": batches}
    if modules:
        data["tools_module"] = list(modules)
    if not scenario.check_arguments:
        data[OPT_OUT] = False
    if scenario.reference is not None:
        data["reference"] = scenario.reference
    if scenario.agent is not None:  # a loop scenario: its model decides the batches (after any fixed ones)
        if not scenario.batches:
            del data["batches"]
        data.update(agent_to_data(scenario.agent, set(scenario.catalogue)))
    elif scenario.agents:  # several agents at once: their models decide the batches
        del data["batches"]
        data.update(agents_to_data(scenario.agents, set(scenario.catalogue)))
    if scenario.approvals is not None:
        data["approvals"] = approvals_to_data(scenario.approvals,
                                              {call.id for call in scenario.calls} if scenario.batches else None)
    defaults = Limits()
    if scenario.limits.time_bound_ms != defaults.time_bound_ms:
        data["time_bound_ms"] = scenario.limits.time_bound_ms
    if scenario.limits.event_budget != defaults.event_budget:
        data["event_budget"] = scenario.limits.event_budget
    if scenario.max_concurrency is not None:
        data["max_concurrency"] = scenario.max_concurrency
    if scenario.machine != Machine():
        data["machine"] = {"cpus": scenario.machine.cpus}
    if scenario.interrupt is not None:
        data["interrupt"] = {"at_ms": scenario.interrupt.at_ms, "grace_ms": scenario.interrupt.grace_ms}
    default_policy = ExecutionPolicy()
    execution = {f.name: getattr(scenario.execution, f.name) for f in fields(ExecutionPolicy)
                 if getattr(scenario.execution, f.name) != getattr(default_policy, f.name)}
    if "tool_caps" in execution:
        execution["tool_caps"] = dict(execution["tool_caps"])
    if execution:
        data["execution"] = execution
    if not scenario.faults.empty:
        data["faults"] = scenario.faults.to_json()
    unknown = sorted({call.name for call in scenario.calls if call.name not in scenario.catalogue})
    if unknown:
        data["unknown_tools"] = unknown  # a Python-built scenario may call tools the runtime does not know
    return data
