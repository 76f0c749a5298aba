"""Checkpoints (issue 12, item 4): `ctx.checkpoint` / `ctx.rollback` restore the file tree, and the
`checkpoints` oracle catches a rollback that a still-running call undoes."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from harness import get_scheduler, run
from harness.model import Batch, CallResult
from harness.oracles import ORACLES
from harness.run import RunResult
from harness.scheduling import SchedulerContext
from tests.catalogue import buggy
from tests.catalogue.cases import local
from tests.helpers import scenario

SLOW_BUILD_SEED = 4  # the build takes 3.14 s: longer than the 2 s timeout


def verdict_of(result: RunResult) -> list[dict[str, Any]]:
    verdict = ORACLES["checkpoints"](result)
    assert all(v.label == "rollback-mismatch" for v in verdict.violations)
    return [dict(v.witness) for v in verdict.violations]


def rollbacks(result: RunResult) -> list[dict[str, Any]]:
    return [e for e in result.trace if e["ev"] == "rollback"]


def test_rolling_back_while_the_timed_out_build_runs_is_caught() -> None:
    result = run(local("slow-build")(), buggy.RollbackOnTimeout(), SLOW_BUILD_SEED)
    (found,) = verdict_of(result)
    assert (found["checkpoint"], found["label"], found["call"], found["target"]) == (
        1, "before build", "build", "/repo/build.log")
    assert found["checkpoint_at_ms"] == found["started_at_ms"] < found["rollback_at_ms"] < found["changed_at_ms"]
    assert found["rollback_at_ms"] == found["started_at_ms"] + 2000
    # The restore itself was right; the build's late write is what broke it.
    (rollback,) = rollbacks(result)
    assert rollback["digest"] == rollback["restored"]
    assert "/repo/build.log" in result.final.file_map


def test_waiting_for_the_abandoned_attempt_before_restoring_passes() -> None:
    result = run(local("slow-build")(), buggy.RollbackOnTimeout(wait=True), SLOW_BUILD_SEED)
    assert verdict_of(result) == []
    assert "/repo/build.log" not in result.final.file_map  # the rollback undid the late build
    (rollback,) = rollbacks(result)
    assert rollback["digest"] == rollback["restored"] and "paths" not in rollback  # the whole tree


def test_no_rollback_no_verdict_and_no_trace_change() -> None:
    sc = local("slow-build")()
    result = run(sc, get_scheduler("serial"), SLOW_BUILD_SEED)
    assert ORACLES["checkpoints"](result).ok
    assert not [e for e in result.trace if e["ev"] in ("checkpoint", "rollback")]


class ScopedRollback:
    """Checkpoint, run the calls one at a time, then roll `paths` back, optionally while a last
    call (started just before the rollback) is still running."""

    name = "scoped_rollback"

    def __init__(self, paths: Sequence[str] | None, straggler: str | None = None) -> None:
        self.paths, self.straggler = paths, straggler

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        checkpoint = ctx.checkpoint("before the batch")
        results: dict[str, CallResult] = {}
        late = None
        for call in batch:
            if call.id == self.straggler:
                late = ctx.start(call)  # left running across the rollback
                continue
            results[call.id] = yield ctx.start(call)
        ctx.rollback(checkpoint, self.paths)
        if late is not None:
            results[late.call.id] = yield late
        return [results[call.id] for call in batch]


FILES = {"/repo/a.txt": "a0", "/repo/b.txt": "b0"}
WRITES = [("wa", "write_file", {"path": "a.txt", "content": "a1"}),
          ("wb", "write_file", {"path": "b.txt", "content": "b1"}),
          ("wc", "write_file", {"path": "c.txt", "content": "c1"})]


def test_a_scoped_rollback_restores_only_its_paths() -> None:
    result = run(scenario(WRITES, files=FILES), ScopedRollback(["/repo/a.txt", "/repo/c.txt"]), 1)
    files = result.final.file_map
    assert files["/repo/a.txt"] == "a0"  # content back
    assert "/repo/c.txt" not in files  # created after the checkpoint: removed
    assert files["/repo/b.txt"] == "b1"  # outside the scope: kept
    (rollback,) = rollbacks(result)
    assert rollback["paths"] == ["/repo/a.txt", "/repo/c.txt"] and rollback["digest"] == rollback["restored"]
    assert verdict_of(result) == []


def test_a_whole_tree_rollback_restores_everything() -> None:
    result = run(scenario(WRITES, files=FILES), ScopedRollback(None), 1)
    assert result.final.file_map == FILES
    assert verdict_of(result) == []


def test_a_late_write_counts_only_inside_the_rolled_back_scope() -> None:
    """A slow atomic write started first is still running when the rollback comes (after two 500 ms
    writes); it lands at 2000 ms."""
    tools = {"write_file_atomic": {"latency": {"fixed": 2000}}, "write_file": {"latency": {"fixed": 500}}}

    def late(path: str) -> RunResult:
        calls = [("slow", "write_file_atomic", {"path": path, "content": "late"}), *WRITES[1:]]
        return run(scenario(calls, files=FILES, tools=tools), ScopedRollback(["/repo/a.txt"], straggler="slow"), 1)

    inside = late("a.txt")
    (found,) = verdict_of(inside)
    assert (found["call"], found["op"], found["target"]) == ("slow", "write", "/repo/a.txt")
    assert (found["started_at_ms"], found["rollback_at_ms"], found["changed_at_ms"]) == (0, 1000, 2000)
    assert inside.final.file_map["/repo/a.txt"] == "late"
    assert verdict_of(late("b.txt")) == []  # b.txt is outside the rolled-back scope


def test_ledgers_are_not_in_a_checkpoint() -> None:
    """A ticket is an external effect: a rollback of the file tree leaves it where it is."""
    sc = scenario([("t", "create_ticket", {"title": "outage"}), *WRITES[:1]], files=FILES)
    result = run(sc, ScopedRollback(None), 1)
    assert len(result.final.ledger("tickets")) == 1
    assert result.final.file_map == FILES


def test_a_failed_calls_effect_that_the_rollback_undid_is_no_ghost() -> None:
    # Waiting for the abandoned build, then restoring, passes every oracle: serializability excuses the
    # build's write because a rollback to a snapshot taken before it restored the file after it.
    from harness.oracles import check

    result = run(local("slow-build")(), buggy.RollbackOnTimeout(wait=True), SLOW_BUILD_SEED)
    assert [v.oracle for v in check(result) if not v.ok] == []
    # Rolling back at once is still a ghost: the build writes again after the restore.
    labels = {v.label for v in check(run(local("slow-build")(), buggy.RollbackOnTimeout(), SLOW_BUILD_SEED))}
    assert {"rollback-mismatch", "ghost-effect"} <= labels


class RollbackClobbersSibling:
    """Everything at once under one snapshot; when any call fails, wait for all, then restore the whole
    tree: the sibling that succeeded loses its write (the model was told it succeeded)."""

    name = "rollback-clobbers-sibling"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Sequence[CallResult]]:
        checkpoint = ctx.checkpoint("before the batch")
        handles = [ctx.start(call) for call in batch]
        results = []
        for handle in handles:
            results.append((yield ctx.with_timeout(handle, 2000)))
        if any(not r.ok for r in results):
            yield ctx.all_of([h.process for h in handles if h.process is not None and h.process.is_alive])
            ctx.rollback(checkpoint)
        return results


def test_a_rollback_that_undoes_a_sibling_reported_ok_is_a_misreported_outcome() -> None:
    """The serial reference replays the rollback too, so the world is what a serial run's rollback
    leaves; what is wrong is the report: note is told ok though its write is gone."""
    from harness.oracles import check

    sc = scenario([("note", "write_file", {"path": "notes.txt", "content": "done"}),
                   ("fail", "read_file", {"path": "missing.txt"})])
    result = run(sc, RollbackClobbersSibling(), 1)
    assert ORACLES["checkpoints"](result).ok  # the restore itself was exact
    assert ORACLES["serializability"](result).ok  # the serial run rolls back as well
    (found,) = [v for v in ORACLES["protocol"](result).violations]
    assert found.label == "misreported-outcome"
    assert (found.witness["call"], found.witness["checkpoint"], found.witness["target"]) == (
        "note", 1, "/repo/notes.txt")
    assert {v.label for verdict in check(result) for v in verdict.violations} == {"misreported-outcome"}
    assert "/repo/notes.txt" not in result.final.file_map
