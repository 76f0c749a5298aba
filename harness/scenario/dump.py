"""A scenario back to plain data, the inverse of `load.scenario_from_data`.

Owns the serialisation that reproducers use to carry their scenario inline: only what differs from
the built-in tools and the defaults is written, and loading the data again gives a scenario that
runs identically (same fingerprint). It never writes files.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from harness.faults.failures import FailureModel
from harness.scenario.spec import Scenario
from harness.schedulers.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.tools.catalogue import BUILTIN
from harness.tools.spec import Declared

_DECLARED = ("read_only", "idempotent", "interactive", "needs_confirmation", "honours_cancel", "exclusive",
             "category", "side_effect")


def _failure(model: FailureModel) -> dict[str, Any]:
    return {"rate": model.rate, "permanent": model.permanent, "message": model.message,
            "attempts": list(model.attempts)}


def _declared_changes(base: Declared, now: Declared) -> dict[str, Any]:
    changes = {}
    for name in _DECLARED:
        value = getattr(now, name)
        if value != getattr(base, name):
            changes[name] = value.value if name == "side_effect" else value
    return changes


def scenario_to_data(scenario: Scenario) -> dict[str, Any]:
    state = scenario.world
    world: dict[str, Any] = {"cwd": state.cwd, "home": state.home, "case_sensitive": state.case_sensitive,
                             "env": dict(state.env), "dirs": list(state.dirs), "files": dict(state.files)}
    if state.symlinks:
        world["symlinks"] = dict(state.symlinks)
    if state.hardlinks:
        world["hardlinks"] = [list(group) for group in state.hardlinks]
    linked = {path for group in state.hardlinks for path in group[1:]}
    world["files"] = {path: content for path, content in state.files if path not in linked}
    tools: dict[str, Any] = {}
    for name, spec in scenario.catalogue.items():
        base = BUILTIN.get(name)
        override: dict[str, Any] = {}
        if base is None:
            continue
        if spec.latency != base.latency:
            override["latency"] = spec.latency.to_json()
        changes = _declared_changes(base.declared, spec.declared)
        if changes:
            override["declared"] = changes
        if spec.stops_on_cancel != base.stops_on_cancel:
            override["stops_on_cancel"] = spec.stops_on_cancel
        if name in scenario.tool_failures:
            override["failure"] = _failure(scenario.tool_failures[name])
        if name in scenario.tool_caps:
            override["max_concurrency"] = scenario.tool_caps[name]
        if override:
            tools[name] = override
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
            calls.append(row)
        batches.append({"label": batch.label, "calls": calls})
    data: dict[str, Any] = {"name": scenario.name, "description": scenario.description, "source": scenario.source,
                            "world": world, "tools": tools, "batches": batches}
    defaults = Limits()
    if scenario.limits.time_bound_ms != defaults.time_bound_ms:
        data["time_bound_ms"] = scenario.limits.time_bound_ms
    if scenario.limits.event_budget != defaults.event_budget:
        data["event_budget"] = scenario.limits.event_budget
    if scenario.max_concurrency is not None:
        data["max_concurrency"] = scenario.max_concurrency
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
