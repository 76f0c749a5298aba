"""Shrinking a finding of several agents (`[[agents]]`): fewer turns and calls, agents still concurrent.

Owns `fixed_crew` (a crew run as a crew scenario again, each agent's model replaced by one that emits
exactly the turns it emitted in the run, one a round, with their think time, then answers) and
`without_call` (that scenario minus one call and the calls that name it in `args_from` or
`depends_on`; a turn left empty is dropped). A crew run cannot shrink into plain batches as a single
agent's can: batches run one after another would lose the concurrency between agents that the
finding is about. Both work on the scenario's data, so whatever they make loads (and is saved in a
reproducer) like any scenario file. It never runs anything; the engine's shrink loop does.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from harness.run import RunResult
from harness.scenario.dump import scenario_to_data
from harness.scenario.load import scenario_from_data
from harness.scenario.model_load import agents_to_data
from harness.scenario.spec import Scenario
from harness.scenario.trust import VETTED
from harness.tools.inputs import Source, with_consumers


def fixed_crew(result: RunResult) -> dict[str, Any]:
    """The data of a crew scenario whose agents emit exactly the turns `result` shows."""
    source = result.replayable
    realized = scenario_to_data(result.scenario)
    crew = agents_to_data(source.agents, set(source.catalogue))
    renamed: dict[str, str] = {}  # run-unique id -> the id the fixed script gives it
    turns: dict[str, list[list[dict[str, Any]]]] = {entry.name: [] for entry in source.agents}
    taken_by: dict[str, set[str]] = {}  # agent -> the fixed ids given so far (unique within an agent)
    for run_batch, row in zip(sorted(result.batches, key=lambda b: b.index), realized["batches"], strict=True):
        agent = run_batch.agent or ""
        calls = []
        taken = taken_by.setdefault(agent, set())
        for call in row["calls"]:
            base = re.sub(r"[@.]", "-", call["id"].removeprefix(f"{agent}/"))
            while base in taken:  # ids are the agent's own: unique within it
                base += "-"
            taken.add(base)
            renamed[call["id"]] = base
            calls.append({**call, "id": base})
        turns[agent].append(calls)
    for call in (c for agent_turns in turns.values() for turn in agent_turns for c in turn):
        if "args_from" in call:
            call["args_from"] = {arg: _retarget(text, renamed) for arg, text in call["args_from"].items()}
        if "depends_on" in call:
            call["depends_on"] = [renamed.get(d, d) for d in call["depends_on"]]
    for row in crew["agents"]:
        model = row["model"] if isinstance(row["model"], dict) else {}
        answer = result.agents.get(row["name"])
        rules: list[dict[str, Any]] = [{"name": f"turn-{i + 1}", "action": "tool_call", "calls": calls}
                                       for i, calls in enumerate(turns[row["name"]])]
        rules.append({"name": "answer", "action": "final_answer",
                      "text": (answer.answer if answer is not None and answer.answer else "done").replace(
                          "{", "(").replace("}", ")")})
        fixed = {"task": model.get("task", ""), "rules": rules}
        if "think" in model:
            fixed["think"] = model["think"]
        row["model"] = fixed
    data = {key: value for key, value in realized.items() if key != "batches"}
    data["name"] = source.name
    data.update(crew)
    return data


def _retarget(text: str, renamed: dict[str, str]) -> str:
    """A reference or template with each run-unique call id replaced by its fixed-script id."""
    for old, new in sorted(renamed.items(), key=lambda item: -len(item[0])):
        text = re.sub(rf"(^|\{{){re.escape(old)}(?=\.value)", rf"\g<1>{_escaped(new)}", text)
    return text


def _escaped(replacement: str) -> str:
    return replacement.replace("\\", "\\\\")


def without_call(data: dict[str, Any], agent: str, call_id: str) -> dict[str, Any] | None:
    """`data` (from `fixed_crew`) minus the call `call_id` of `agent` and every call of that agent that
    names it, directly or through another such call, in `args_from` or `depends_on` (so the smaller
    crew loads again; a turn left empty is dropped). None if no call would be left."""
    smaller = copy.deepcopy(data)
    for row in smaller["agents"]:
        if row["name"] != agent:
            continue
        gone = _with_referrers([c for rule in row["model"]["rules"] for c in rule.get("calls", [])], call_id)
        kept_rules = []
        for rule in row["model"]["rules"]:
            if "calls" in rule:
                rule["calls"] = [c for c in rule["calls"] if c["id"] not in gone]
                if not rule["calls"]:
                    continue
            kept_rules.append(rule)
        row["model"]["rules"] = kept_rules
    if not any("calls" in rule for row in smaller["agents"] for rule in row["model"]["rules"]):
        return None
    return smaller


def _with_referrers(calls: list[dict[str, Any]], call_id: str) -> set[str]:
    """`call_id` and the ids of the calls (of one agent's script) that name it, transitively."""
    named_by: dict[str, set[str]] = {}
    for call in calls:
        producers = list(call.get("depends_on", []))
        for text in call.get("args_from", {}).values():
            try:
                producers += Source.parse(text).producers
            except ValueError:
                continue
        for producer in producers:
            named_by.setdefault(producer, set()).add(call["id"])
    return with_consumers(named_by, call_id)


def calls_of(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(agent, call id) of every call the fixed crew emits, in the agents' order."""
    return [(row["name"], call["id"]) for row in data["agents"] for rule in row["model"]["rules"]
            for call in rule.get("calls", [])]


def load(data: dict[str, Any], like: Scenario) -> Scenario:
    """The fixed crew as a scenario (tools modules as the original's, trusted as its were: it is a copy)."""
    return scenario_from_data(data, like.path or "<shrunk crew>", tools_modules=like.tools_modules, trust=VETTED)
