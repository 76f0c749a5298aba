"""Checkpoints: after a rollback the file tree is the snapshot, and only new work changes it.

Owns the label `rollback-mismatch`. For every `rollback` in the trace (the context records the
snapshot's digest and the digest of the tree right after the restore, over the rolled-back scope: the
whole file tree or the paths the runtime named):

- right after the restore, the tree must equal the snapshot (the two digests agree);
- from then on, the restored scope may change only through attempts the runtime starts after the
  rollback. A file touch that changes it (write, truncate, append, remove, mkdir) by an attempt that
  started before the rollback — a call abandoned after a timeout, cancelled, or simply still running —
  lands on the restored tree: the world is no longer the snapshot the runtime believes it restored
  (seed 001's checkpoints; REFERENCE.md pattern 11, a timed-out tool still running).

Ledgers and the shell session are not in a checkpoint, so their changes are not judged here. The
witness names the checkpoint, the rollback, the late call and attempt with its start, and the touch.
It reads the trace; it never steers a run.
"""

from __future__ import annotations

from typing import Any

from harness.oracles.verdict import Verdict, Violation
from harness.run import RunResult
from harness.tools.spec import MUTATING_OPS

NAME = "checkpoints"


def check(result: RunResult) -> Verdict:
    trace = result.trace
    if not any(e["ev"] == "rollback" for e in trace):
        return Verdict.of(NAME, [])
    taken: dict[int, int] = {}  # trace position of a checkpoint -> when it was taken
    starts: dict[tuple[str, int], list[int]] = {}  # (call, attempt) -> seqs of its starts
    violations: list[Violation] = []
    for e in trace:
        if e["ev"] == "checkpoint":
            taken[e["seq"]] = e["t"]
        elif e["ev"] == "start":
            starts.setdefault((e["call"], e["attempt"]), []).append(e["seq"])
        elif e["ev"] == "rollback":
            violations.extend(_judge(e, taken.get(e.get("checkpoint_seq", -1)), trace, starts))
    return Verdict.of(NAME, violations)


def _judge(rollback: dict[str, Any], taken_at: int | None, trace: tuple[dict[str, Any], ...],
           starts: dict[tuple[str, int], list[int]]) -> list[Violation]:
    base = {"checkpoint": rollback["checkpoint"], "label": rollback.get("label", ""), "checkpoint_at_ms": taken_at,
            "rollback_at_ms": rollback["t"], "paths": rollback.get("paths")}
    name = f"checkpoint {rollback['checkpoint']}" + (f" ({rollback['label']})" if rollback.get("label") else "")
    if rollback["restored"] != rollback["digest"]:
        return [Violation("rollback-mismatch", f"right after the rollback to {name} at {rollback['t']} ms the "
                          "file tree differs from the snapshot", {**base, "call": None})]
    scope = set(rollback["paths"]) if rollback.get("paths") is not None else None
    late: dict[tuple[str, int], dict[str, Any]] = {}
    for e in trace[rollback["seq"] + 1:]:
        if e["ev"] != "touch" or e["op"] not in MUTATING_OPS or not e["target"].startswith("/"):
            continue
        if scope is not None and e["target"] not in scope:
            continue
        key = (e["call"], e["attempt"])
        # The attempt's latest start before this touch: started before the rollback, it is not new work.
        began = max((s for s in starts.get(key, []) if s < e["seq"]), default=None)
        if began is not None and began < rollback["seq"] and key not in late:
            late[key] = {**base, "call": e["call"], "attempt": e["attempt"], "started_at_ms": trace[began]["t"],
                         "op": e["op"], "target": e["target"], "changed_at_ms": e["t"]}
    return [Violation("rollback-mismatch",
                      f"{w['call']} (started at {w['started_at_ms']} ms, before the rollback to {name} at "
                      f"{w['rollback_at_ms']} ms) changed {w['target']} ({w['op']}) at {w['changed_at_ms']} ms: the "
                      "restored tree is no longer the snapshot", w) for w in late.values()]
