"""Parsed transcript -> scenario data (the plain dict `harness.scenario.scenario_from_data` loads).

Owns the import rules: one batch per assistant turn with tool calls, in model order; call ids kept
(a reused id is disambiguated as `id#2`, `id#3`, with a warning); tool names mapped with the `--map`
file, kept when the scenario will have them (the catalogue, a `--tools` module, a tool the map
declares), and given a generic declared spec (behaviour unknown, conservative metadata) with a
warning otherwise. A call's transcript result is what it returned in production: for a tool whose
behaviour is known it becomes `recorded` (or `recorded_error`), an expectation only, so the call's
value is computed from the simulated world as in any scenario and a stale or torn read shows; for a
tool of unknown behaviour it stays the call's value (`result`; an error result its permanent
`failure`). Arguments a known tool does not take (a model's slip) are kept as sent, the call marked
`check_arguments = false` with a warning. A tool result that answers no call is ignored with a
warning. It never reads files and never runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from harness.scenario.arguments import OPT_OUT, fits
from harness.tools.catalogue import BUILTIN
from harness.tools.spec import ToolSpec
from harness.transcripts.fidelity import Disagreement, summary
from harness.transcripts.mapping import DECLARABLE, ToolMap
from harness.transcripts.parsed import Output, Parsed, TranscriptError

#: The latency of a tool whose behaviour is unknown (transcripts carry no timings).
GENERIC_LATENCY_MS = 100


@dataclass(frozen=True)
class Imported:
    """A scenario as plain data (`data`) and what the user should know about the import: `warnings`
    about the transcript and the mapping, and `fidelity`, the calls whose recorded result the serial
    reference run of the scenario does not reproduce (`harness.transcripts.fidelity`)."""

    data: dict[str, Any]
    warnings: tuple[str, ...] = ()
    fidelity: tuple[Disagreement, ...] = ()

    @property
    def messages(self) -> tuple[str, ...]:
        """Every warning as one line: the import's, then each fidelity disagreement and what they mean."""
        if not self.fidelity:
            return self.warnings
        return self.warnings + tuple(d.line() for d in self.fidelity) + (summary(len(self.fidelity)),)


def generic_spec() -> dict[str, Any]:
    """The declared spec of a transcript tool nothing is known about: it only waits its latency, and
    claims the most conservative metadata (not read-only, external side effect, not idempotent)."""
    return {
        "description": "imported from transcript; behaviour unknown",
        "does": [],
        "latency": {"fixed": GENERIC_LATENCY_MS},
        "declared": {"read_only": False, "side_effect": "external", "idempotent": False},
    }


@dataclass
class _Slot:
    """A call of the scenario waiting for its result."""

    final_id: str
    turn_position: int
    index: int
    row: dict[str, Any]
    answered: bool = False


def build(parsed: Parsed, *, name: str, file: str, tool_map: ToolMap | None = None,
          tools: Mapping[str, ToolSpec] = BUILTIN, tools_modules: Sequence[str] = ()) -> Imported:
    """The scenario data for `parsed`, named `name`; `file` names the transcript in messages. `tools`
    are the tools the scenario will have besides those the map declares (the catalogue and the tools
    of `tools_modules`, which the scenario names)."""
    if not parsed.turns:
        other = "anthropic" if parsed.dialect.startswith("OpenAI") else "openai"
        raise TranscriptError(file, "(top level)", f"at least one assistant turn with tool calls (read as "
                              f"{parsed.dialect}), found none; if it is an {other} transcript, import it "
                              f"with `harness import {other}`", has_got=False)
    if tool_map is not None:
        tool_map.check(tools)
    known = set(tools) | set(tool_map.declared if tool_map is not None else ())
    warnings = list(parsed.warnings)
    original_ids = {call.id for turn in parsed.turns for call in turn.calls}
    used: set[str] = set()
    renamed: dict[str, list[str]] = {}
    slots: dict[str, list[_Slot]] = {}  # by the id the transcript uses
    in_order: list[_Slot] = []
    generic: dict[str, None] = {}
    declared: dict[str, None] = {}
    batches = []
    for turn in parsed.turns:
        rows = []
        for index, call in enumerate(turn.calls):
            final_id = call.id
            if final_id in used:
                n = 2
                while f"{call.id}#{n}" in used or f"{call.id}#{n}" in original_ids:
                    n += 1
                final_id = f"{call.id}#{n}"
                renamed.setdefault(call.id, []).append(final_id)
            used.add(final_id)
            tool, arguments = call.name, call.arguments
            target = tool_map.get(call.name) if tool_map is not None else None
            if target is not None:
                tool = target.tool
                arguments, problem = target.arguments(call.arguments)
                if problem:
                    warnings.append(f"{call.where} ({call.name}): {problem}")
            if tool_map is not None and tool in tool_map.declared:
                declared[tool] = None
            elif tool not in known:
                if not DECLARABLE.fullmatch(tool):
                    raise TranscriptError(file, call.where, "a tool name of letters, digits, '_', '-' "
                                          "or '.' for a generic spec, or a --map entry for it", tool)
                generic[tool] = None
            row: dict[str, Any] = {"id": final_id, "name": tool, "arguments": arguments}
            rows.append(row)
            slot = _Slot(final_id, turn.position, index, row)
            slots.setdefault(call.id, []).append(slot)
            in_order.append(slot)
        batches.append({"label": turn.label, "calls": rows})

    for original, new_ids in renamed.items():
        warnings.append(f"call id {original!r} is used by {len(new_ids) + 1} calls; the later ones are renamed "
                        f"{', '.join(new_ids)} (results pair with the latest earlier turn's unanswered call)")
    for output in parsed.outputs:
        answered = _answered_by(slots.get(output.call_id, []), output)
        if answered is None:
            again = any(s.turn_position < output.position for s in slots.get(output.call_id, []))
            why = "a second result for that call" if again else "no call in the transcript has that id"
            warnings.append(f"{output.where}: tool result for call id {output.call_id!r} ignored ({why})")
            continue
        answered.answered = True
        if answered.row["name"] in known:  # computed from the world; production's result is an expectation
            answered.row["recorded_error" if output.is_error else "recorded"] = output.value
        elif output.is_error:
            answered.row["failure"] = {"rate": 1.0, "permanent": True, "message": output.value}
        else:
            answered.row["result"] = output.value
    # A transcript records what the model sent: arguments its tool does not take stay as sent, marked so
    # that the scenario loads (the tool answers them at run time, as a real one would).
    odd = [slot.row for slot in in_order if slot.row["name"] in tools and not fits(
        tools[slot.row["name"]], slot.row["arguments"], recorded="result" in slot.row)]
    for row in odd:
        row[OPT_OUT] = False
    if odd:
        one = len(odd) == 1
        warnings.append(f"{len(odd)} call{'' if one else 's'} send{'s' if one else ''} arguments "
                        f"{'its' if one else 'their'} tool does not take (kept as sent, marked {OPT_OUT} = false): "
                        f"{_listing([row['id'] for row in odd])}")
    if generic:
        names = list(generic)
        one = len(names) == 1
        warnings.append(f"{len(names)} tool{'' if one else 's'} of unknown behaviour given a generic spec: "
                        f"{', '.join(names)}; a generic tool returns the transcript's result and touches nothing "
                        "in the simulated world, so a stale or torn read or a lost update through it cannot be "
                        "seen (only how a scheduler orders it by its declared metadata); map "
                        f"{'it' if one else 'them'} with --map onto a tool of the catalogue, of a --tools module "
                        "or one the map declares")
    unanswered = [s.final_id for s in in_order if not s.answered]
    if unanswered:
        warnings.append(f"{len(unanswered)} call{'' if len(unanswered) == 1 else 's'} without a result in the "
                        f"transcript (the tool's own value is used): {_listing(unanswered)}")

    calls = sum(len(batch["calls"]) for batch in batches)
    source_name = PurePath(file).name or file
    data: dict[str, Any] = {
        "name": name,
        "description": (f"Imported from the {parsed.dialect} transcript {source_name}: {len(batches)} "
                        f"batch{'' if len(batches) == 1 else 'es'} of {calls} call{'' if calls == 1 else 's'}, "
                        "one per assistant turn. Tools of known behaviour compute their results from the "
                        "simulated world, the transcript's recorded ones are expectations (recorded); tools of "
                        "unknown behaviour return the transcript's (result)."),
        "source": f"transcript {source_name} ({parsed.dialect})",
    }
    if tools_modules:
        data["tools_module"] = tools_modules[0] if len(tools_modules) == 1 else list(tools_modules)
    if generic or declared:
        declarations = tool_map.declared if tool_map is not None else {}
        data["tools"] = {**{tool: dict(declarations[tool]) for tool in declared},
                         **{tool: generic_spec() for tool in generic}}
    data["batches"] = batches
    return Imported(data, tuple(warnings))


def _answered_by(candidates: Sequence[_Slot], output: Output) -> _Slot | None:
    """The call a result answers: among unanswered calls with its id that come before it, the one in
    the latest turn, and within that turn the first (ids reused across turns and within one)."""
    open_slots = [s for s in candidates if not s.answered and s.turn_position < output.position]
    if not open_slots:
        return None
    latest = max(s.turn_position for s in open_slots)
    return min((s for s in open_slots if s.turn_position == latest), key=lambda s: s.index)


def _listing(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")

