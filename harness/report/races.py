"""The trace touches a violation's witness is about: `racing_touches` (for a torn read: the read,
the truncate before it and the write after it), each with its role, and `race_label`.

What the Gantt chart labels, the Perfetto trace links with flow arrows, the interleaving story tells
and the likelihood rules read. It only looks touches up in the trace; a witness it cannot read gives
no touches. It never judges and never words a violation (`harness.report.explain` does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.oracles.verdict import Violation
from harness.report.explain_words import MUTATING, RunView
from harness.run import RunResult


def _pick(run: RunView, found: list[dict[str, Any]], call: object, target: object, t: object, role: str,
          ops: Callable[[str], bool]) -> None:
    if not isinstance(call, str) or not isinstance(target, str) or not (t is None or isinstance(t, int)):
        return
    touch = run.touch(call, target, t, ops, last=role in ("write", "overwrite"))
    if touch is not None and all(f["seq"] != touch["seq"] for f in found):
        found.append({"t": touch["t"], "seq": touch["seq"], "call": call, "op": touch["op"], "target": target,
                      "role": role})


def racing_touches(violation: Violation, result: RunResult) -> list[dict[str, Any]]:
    """The trace touches the witness is about, in trace order, each with its `role` (e.g. the torn
    read, the truncate before it, the write after it). Empty for labels about results or time."""
    w, run = violation.witness, RunView(result)
    found: list[dict[str, Any]] = []
    mutating, reading = (lambda op: op in MUTATING), (lambda op: op not in MUTATING)
    label = violation.label.removeprefix("cross-agent-")
    try:
        if label in ("torn-read", "stale-read", "future-read") and "read_at_ms" in w:
            _pick(run, found, w["call"], w["target"], w["read_at_ms"], "read", reading)
            if "cached_by" in w:  # a read cache's answer: the read whose copy it kept races the write
                _pick(run, found, w["cached_by"], w["target"], w["cached_at_ms"], "read the cache kept", reading)
            if label == "torn-read":
                _pick(run, found, w["writer"], w["target"], w["truncated_at_ms"], "truncate", mutating)
            _pick(run, found, w["writer"], w["target"], w.get("written_at_ms"), "write", mutating)
        elif label == "lost-update":
            lost, other, target = w["lost"], w["overwritten_by"], w["target"]
            if "write_order" not in w:
                read = run.read_before(other, target, w["lost_write_at_ms"])
                if read is not None:
                    _pick(run, found, other, target, read["t"], "read", reading)
            _pick(run, found, lost, target, w["lost_write_at_ms"], "write", mutating)
            _pick(run, found, other, target, w["overwrite_at_ms"], "overwrite", mutating)
        elif label == "reordered-effect" and "target" in w:
            _pick(run, found, w["call"], w["target"], w["landed_at_ms"], "append", lambda op: op == "append")
            _pick(run, found, w.get("overtaken_by"), w["target"], None, "append", lambda op: op == "append")
        elif label == "ghost-effect":
            for effect in w["effects"]:
                _pick(run, found, w["call"], effect["target"], effect["t"], "effect", mutating)
        elif label == "duplicate-effect":
            target = w.get("target") or (f"ledger:{w['ledger']}" if "ledger" in w else None)
            if isinstance(target, str):
                for touch in run.touches:
                    if touch["call"] == w.get("call", w.get("duplicated")) and touch["target"] == target \
                            and touch["op"] in MUTATING:
                        _pick(run, found, touch["call"], target, touch["t"], "effect", mutating)
        elif label == "hint-violated":
            effect = w["effect"]
            _pick(run, found, w["call"], effect["target"], effect["at_ms"], f"contradicts {w['hint']}", mutating)
        elif label == "divergent-world" and "target" in w:
            for writer in w.get("writers") or ():
                _pick(run, found, writer, w["target"], None, "write", mutating)
    except (KeyError, TypeError):
        pass
    return sorted(found, key=lambda f: f["seq"])


def race_label(violation: Violation, touch: Mapping[str, Any]) -> str:
    """A short label for one racing touch, e.g. 'torn-read: read'."""
    return f"{violation.label}: {touch['role']}"
