"""What a run did differently from the serial reference, in the world and in what calls observed.

Owns the text of `world_diff.txt` (and the run page's world section): every file that differs with
a unified diff (serial's content against the run's), files, directories and links created or
removed, ledger entries added, missing or reordered, the shell's working directory and variables;
and, because a torn or stale read can leave the world identical while a call saw something else,
the calls whose result differs from serial's, with the two observations side by side (and the
violation's explanation when an oracle named one). It never re-runs (the caller runs serial) and
never judges.
"""

from __future__ import annotations

import difflib
import json
import textwrap
from collections.abc import Sequence
from typing import Any

from harness.oracles.verdict import Verdict
from harness.report.explain import explain
from harness.run import RunResult
from harness.world.state import WorldState, entry_changes, tree_shape_changes

#: Labels whose witness holds what the call observed and what model order would have shown it.
_OBSERVATIONS = ("torn-read", "stale-read", "future-read", "divergent-result", "duplicate-effect",
                 "reordered-effect")
_MAX_DIFF_LINES = 60
_COLUMN = 44


def report(reference: RunResult, result: RunResult, verdicts: Sequence[Verdict] = ()) -> str:
    """The whole report; `reference` is the serial run on the same seed."""
    world = world_lines(reference.final, result.final)
    observed = _observations(reference, result, verdicts)
    head = f"{result.scheduler} against serial (same scenario, seed {result.seed})"
    out = [head, "=" * len(head), ""]
    if world:
        out += ["The final world differs from serial's:", "", *world]
    else:
        out += textwrap.wrap("The final world is identical to serial's"
                             + (", but an observation differs: a call saw something serial would not have shown "
                                "it." if observed else ", and every call observed what it observes under serial."),
                             100)
    if observed:
        out += ["", *observed]
    return "\n".join(out).rstrip() + "\n"


def world_lines(before: WorldState, after: WorldState) -> list[str]:
    """Differences from `before` (serial) to `after`; empty when the worlds are equal."""
    lines: list[str] = []
    old, new = before.file_map, after.file_map
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            lines.append(f"- file {path} absent here (serial leaves it with {len(old[path])} chars)")
        elif path not in old:
            lines.append(f"+ file {path} created ({len(new[path])} chars; serial does not create it)")
            lines += [f"    +{line}" for line in new[path].splitlines()[:10]]
        elif old[path] != new[path]:
            lines.append(f"~ file {path} changed")
            hunk = list(difflib.unified_diff(old[path].splitlines(), new[path].splitlines(), f"serial:{path}",
                                             f"this run:{path}", lineterm="", n=2))
            if len(hunk) > _MAX_DIFF_LINES:
                hunk = [*hunk[:_MAX_DIFF_LINES], f"... {len(hunk) - _MAX_DIFF_LINES} more lines"]
            lines += [f"    {line}" for line in hunk]
    lines += tree_shape_changes(before, after)
    old_ledgers, new_ledgers = dict(before.ledgers), dict(after.ledgers)
    for name in sorted(old_ledgers.keys() | new_ledgers.keys()):
        a, b = old_ledgers.get(name, ()), new_ledgers.get(name, ())
        if a == b:
            continue
        lines.append(f"~ ledger {name}: {_entries(len(a))} under serial, {_entries(len(b))} here")
        if sorted((e.call_id, _json(e.payload)) for e in a) == sorted((e.call_id, _json(e.payload)) for e in b):
            lines.append(f"    same entries in another order: serial {', '.join(e.call_id for e in a)}; "
                         f"here {', '.join(e.call_id for e in b)}")
            continue
        lines += entry_changes(a, b)
    if before.cwd != after.cwd:
        lines.append(f"~ shell working directory: serial {before.cwd}, here {after.cwd}")
    old_env, new_env = dict(before.env), dict(after.env)
    for variable in sorted(old_env.keys() | new_env.keys()):
        if old_env.get(variable) != new_env.get(variable):
            lines.append(f"~ shell variable {variable}: serial {old_env.get(variable)!r}, here "
                         f"{new_env.get(variable)!r}")
    return lines


def _observations(reference: RunResult, result: RunResult, verdicts: Sequence[Verdict]) -> list[str]:
    """Calls that observed something else than under serial: the violation's words when an oracle
    explained it, then serial's observation and this run's side by side."""
    lines: list[str] = []
    explained: set[str] = set()
    for verdict in verdicts:
        for violation in verdict.violations:
            w = violation.witness
            call = w.get("call")
            if violation.label not in _OBSERVATIONS or not isinstance(call, str) or call in explained:
                continue
            if not isinstance(w.get("expected"), dict) or not isinstance(w.get("observed"), dict):
                continue
            explained.add(call)
            lines += [*textwrap.wrap(f"{call} ({violation.label}): {explain(violation, result)}", 100), "",
                      *side_by_side(w["expected"], w["observed"], "serial (model order)", result.scheduler), ""]
    theirs = {r.call_id: r for r in reference.results}
    for mine in result.results:
        other = theirs.get(mine.call_id)
        if other is None or mine.call_id in explained:
            continue
        a = {"outcome": other.outcome.value, "value": other.value, "error": other.error}
        b = {"outcome": mine.outcome.value, "value": mine.value, "error": mine.error}
        if a != b:
            explained.add(mine.call_id)
            lines += [f"{mine.call_id} returned something else than under serial:", "",
                      *side_by_side(a, b, "serial", result.scheduler), ""]
    return lines


def side_by_side(left: Any, right: Any, left_title: str, right_title: str, width: int = _COLUMN) -> list[str]:
    """Two JSON values in two aligned columns (long lines wrap); rows that differ are marked `|`,
    a line only on the left `<`, only on the right `>`."""
    a, b = _pretty(left), _pretty(right)
    rows = [f"  {left_title[:width]:<{width}}   {right_title[:width]}", f"  {'-' * width}   {'-' * width}"]
    pairs: list[tuple[str, str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            pairs += [(x, y, " ") for x, y in zip(a[i1:i2], b[j1:j2], strict=True)]
        else:
            left_part, right_part = a[i1:i2], b[j1:j2]
            for k in range(max(len(left_part), len(right_part))):
                x = left_part[k] if k < len(left_part) else ""
                y = right_part[k] if k < len(right_part) else ""
                pairs.append((x, y, "|" if x and y else ("<" if x else ">")))
    for x, y, mark in pairs:
        xs, ys = textwrap.wrap(x, width) or [""], textwrap.wrap(y, width) or [""]
        for k in range(max(len(xs), len(ys))):
            rows.append(f"  {(xs[k] if k < len(xs) else ''):<{width}} {mark if k == 0 else ' '} "
                        f"{ys[k] if k < len(ys) else ''}".rstrip())
    return rows


def _pretty(value: Any) -> list[str]:
    if isinstance(value, dict) and set(value) == {"outcome", "value", "error"}:  # a call's observation
        shown = {"outcome": value["outcome"]}
        shown.update({"value": value["value"]} if value["outcome"] == "ok" else {"error": value["error"]})
        value = shown
    return json.dumps(value, indent=1, sort_keys=True, default=str).splitlines()


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
