"""Parsed transcript -> scenario data (the plain dict `harness.scenario.scenario_from_data` loads).

Owns the import rules: one batch per assistant turn with tool calls, in model order; call ids kept
(a reused id is disambiguated as `id#2`, `id#3`, with a warning); each call's transcript result
becomes its `result` (the value the mock returns), a result marked as an error its permanent
`failure`; tool names are mapped with the `--map` file, kept when the catalogue has them, and given
a generic declared spec (behaviour unknown, conservative metadata) with a warning otherwise. A tool
result that answers no call is ignored with a warning. It never reads files and never runs anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from harness.tools.catalogue import BUILTIN
from harness.transcripts.mapping import ToolMap
from harness.transcripts.parsed import Output, Parsed, TranscriptError

#: Names a scenario may declare a tool under (the scenario loader's rule).
_DECLARABLE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")

#: The latency of a tool whose behaviour is unknown (transcripts carry no timings).
GENERIC_LATENCY_MS = 100


@dataclass(frozen=True)
class Imported:
    """A scenario as plain data (`data`) and what the user should know about the import."""

    data: dict[str, Any]
    warnings: tuple[str, ...] = ()


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


def build(parsed: Parsed, *, name: str, file: str, tool_map: ToolMap | None = None) -> Imported:
    """The scenario data for `parsed`, named `name`; `file` names the transcript in messages."""
    if not parsed.turns:
        other = "anthropic" if parsed.dialect.startswith("OpenAI") else "openai"
        raise TranscriptError(file, "(top level)", f"at least one assistant turn with tool calls (read as "
                              f"{parsed.dialect}), found none; if it is an {other} transcript, import it "
                              f"with `harness import {other}`", has_got=False)
    warnings = list(parsed.warnings)
    original_ids = {call.id for turn in parsed.turns for call in turn.calls}
    used: set[str] = set()
    renamed: dict[str, list[str]] = {}
    slots: dict[str, list[_Slot]] = {}  # by the id the transcript uses
    in_order: list[_Slot] = []
    generic: dict[str, None] = {}
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
            elif tool not in BUILTIN:
                if not _DECLARABLE.fullmatch(tool):
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
        if output.is_error:
            answered.row["failure"] = {"rate": 1.0, "permanent": True, "message": output.value}
        else:
            answered.row["result"] = output.value
    if generic:
        names = list(generic)
        one = len(names) == 1
        warnings.append(f"{len(names)} tool{'' if one else 's'} {'has' if one else 'have'} no mapping and "
                        f"{'was' if one else 'were'} given {'a generic spec' if one else 'generic specs'}: "
                        f"{', '.join(names)}; map {'it' if one else 'them'} with --map")
    unanswered = [s.final_id for s in in_order if not s.answered]
    if unanswered:
        warnings.append(f"{len(unanswered)} call{'' if len(unanswered) == 1 else 's'} without a result in the "
                        f"transcript (the mock tool's own value is used): {_listing(unanswered)}")

    calls = sum(len(batch["calls"]) for batch in batches)
    source_name = PurePath(file).name or file
    data: dict[str, Any] = {
        "name": name,
        "description": (f"Imported from the {parsed.dialect} transcript {source_name}: {len(batches)} "
                        f"batch{'' if len(batches) == 1 else 'es'} of {calls} call{'' if calls == 1 else 's'}, "
                        "one per assistant turn, with the transcript's tool results as return values."),
        "source": f"transcript {source_name} ({parsed.dialect})",
    }
    if generic:
        data["tools"] = {tool: generic_spec() for tool in generic}
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

