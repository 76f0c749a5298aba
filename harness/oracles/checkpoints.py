"""Checkpoints: a snapshot copies whole files, and after a rollback the file tree is the snapshot, and
only new work changes it.

Owns the label `torn-snapshot`: a snapshot that takes time (`SchedulerContext.snapshot`, the runtime's
`checkpoints` option) copies each file at a moment of its own (`snapshot_read`); a file copied while
another call's write to it was in progress (that attempt changed the file before the copy and again
after it: `write_file`'s truncate then write, a torn write's halves) is in the snapshot half written,
and a rollback to it restores the half-written file (hermes-agent's checkpoint manager snapshots while
sibling calls of a parallel batch write). The witness names the checkpoint (the call it was taken for),
the file and when it was copied, and the write (call, attempt, its changes to the file).

And the label `rollback-mismatch`. For every `rollback` in the trace (the context records the
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

from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult
from harness.tools.spec import MUTATING_OPS

NAME = "checkpoints"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    trace = result.trace
    kinds = RunFacts.of(result).kinds  # the trace's kinds of events, read once for every oracle
    torn = _torn_snapshots(trace) if "snapshot_read" in kinds else []
    if "rollback" not in kinds:
        return Verdict.of(NAME, torn) if torn else _PASSED
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
    return Verdict.of(NAME, [*torn, *violations])


def _torn_snapshots(trace: tuple[dict[str, Any], ...]) -> list[Violation]:
    """Each file a snapshot copied while one attempt's changes to it were under way (one per
    checkpoint, file and writing attempt)."""
    changes: dict[str, dict[tuple[str, int], list[dict[str, Any]]]] = {}  # file -> attempt -> its changes
    begun: dict[int, dict[str, Any]] = {}
    for e in trace:
        if e["ev"] == "touch" and e["op"] in MUTATING_OPS and e["target"].startswith("/"):
            changes.setdefault(e["target"], {}).setdefault((e["call"], e["attempt"]), []).append(e)
        elif e["ev"] == "checkpoint_begin":
            begun[e["checkpoint"]] = e
    done = {e["checkpoint"]: e for e in trace if e["ev"] == "checkpoint" and e["checkpoint"] in begun}
    violations: list[Violation] = []
    for read in (e for e in trace if e["ev"] == "snapshot_read"):
        for (call, attempt), made in changes.get(read["target"], {}).items():
            if not (made[0]["seq"] < read["seq"] < made[-1]["seq"]):
                continue
            start = begun[read["checkpoint"]]
            end = done.get(read["checkpoint"])
            before = start.get("before")
            name = f"checkpoint {read['checkpoint']}" + (f" (before {before})" if before else "")
            steps = ", ".join(f"{m['op']} at {m['t']} ms" for m in made)
            violations.append(Violation(
                "torn-snapshot",
                f"{name} copied {read['target']} at {read['t']} ms while {call} was writing it ({steps}): "
                "the snapshot holds the file half written, and a rollback to it restores that",
                {"checkpoint": read["checkpoint"], "label": start.get("label"), "before": before,
                 "began_at_ms": start["t"], "taken_at_ms": end["t"] if end is not None else None,
                 "target": read["target"], "read_at_ms": read["t"], "copied": read.get("digest"),
                 "call": call, "attempt": attempt, "writes": [{"t": m["t"], "op": m["op"]} for m in made]}))
    return violations


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
