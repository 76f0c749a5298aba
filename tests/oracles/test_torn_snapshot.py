"""Checkpoints as hermes takes them (issue 28, item 3): a snapshot before each write, patch and
destructive command that takes virtual time and reads the files it copies; `torn-snapshot` when it
copies a file a sibling is writing; rollbacks replayed by the serial reference."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, CallResult, ToolCall
from harness.oracles import ORACLES, check
from harness.run import RunResult
from harness.scenario import Scenario
from harness.scheduling import SchedulerContext
from harness.scheduling.checkpoints import Checkpoint, destructive, needs_checkpoint
from harness.scheduling.execution import ExecutionPolicy
from tests.helpers import scenario


def race(mode: str = "hermes") -> Scenario:
    sc = find_scenario("checkpoint-race")
    return replace(sc, execution=sc.execution.merged(checkpoints=mode))


def labels(result: RunResult) -> set[str]:
    return {v.label for verdict in check(result) for v in verdict.violations}


def events(result: RunResult, *kinds: str) -> list[dict[str, Any]]:
    return [e for e in result.trace if e["ev"] in kinds]


@pytest.mark.parametrize("seed", [1, 5])
def test_hermes_checkpoints_race_a_sibling_write_and_the_finding_names_both(seed: int) -> None:
    result = run(race(), get_scheduler("hermes_gate"), seed)
    (torn,) = ORACLES["checkpoints"](result).violations
    assert torn.label == "torn-snapshot"
    w = torn.witness
    # The snapshot: taken for write-app, copying config.toml 20 ms in, while write-config writes it.
    assert (w["checkpoint"], w["before"], w["target"], w["call"]) == (1, "write-app", "/repo/config.toml",
                                                                      "write-config")
    assert [m["op"] for m in w["writes"]] == ["truncate", "write"]
    assert w["writes"][0]["t"] < w["read_at_ms"] < w["writes"][-1]["t"]
    assert "checkpoint 1 (before write-app)" in torn.message and "write-config" in torn.message
    # The rollback restored the half-written file, which the serial reference does not: the run fails there too.
    assert result.final.file_map["/repo/config.toml"] == ""
    assert "ghost-effect" in labels(result)


def test_a_write_that_waits_for_the_copy_in_progress_passes() -> None:
    result = run(race("wait"), get_scheduler("hermes_gate"), 1)
    assert labels(result) == set()
    assert result.final.file_map == {"/repo/app.py": "PORT = 8080\n", "/repo/config.toml": "port = 8080\n"}
    (rollback,) = events(result, "rollback")
    assert rollback["digest"] == rollback["restored"]


def test_a_snapshot_takes_virtual_time_and_reads_each_file_it_copies() -> None:
    result = run(race("wait"), get_scheduler("hermes_gate"), 1)
    (begin,) = events(result, "checkpoint_begin")
    reads = events(result, "snapshot_read")
    (done,) = events(result, "checkpoint")
    assert (begin["t"], begin["before"], begin["files"]) == (0, "write-app", 2)
    assert [(r["t"], r["target"]) for r in reads] == [(0, "/repo/app.py"), (20, "/repo/config.toml")]
    assert done["t"] == 40  # two files, 20 ms each (checkpoint_file_ms)
    # Every write waited for the copy (the first because it took it, the second because it finds it running).
    starts = {e["call"]: e["t"] for e in events(result, "start")}
    assert starts["write-app"] == starts["write-config"] == 40 and starts["read-lock"] == 0


def test_without_checkpoints_nothing_is_snapshotted_and_the_trace_is_unchanged() -> None:
    sc = race("none")
    result = run(sc, get_scheduler("hermes_gate"), 1)
    assert not events(result, "checkpoint_begin", "snapshot_read", "checkpoint", "rollback")


def test_a_sibling_that_only_reads_never_waits_and_a_serial_policy_never_tears() -> None:
    for name in ("partition", "lanes"):  # writes one at a time: the snapshot is done before either starts
        assert labels(run(race(), get_scheduler(name), 1)) == set(), name


@pytest.mark.parametrize(("command", "expected"), [
    ("rm -rf build", True), ("mv a b", True), ("sed -i s/a/b/ f", True), ("git reset --hard", True),
    ("git checkout main", True), ("echo x > out.txt", True), ("cd src && rm x", True),
    ("ls -la", False), ("echo x >> log", False), ("git status", False), ("make 2>&1", False),
    ("sed -n p f", False), ("cat a 1>&2", False),
    ("grep rm notes.txt", True),  # the word anywhere, as hermes' pattern: one snapshot too many, never too few
])
def test_hermes_destructive_commands(command: str, expected: bool) -> None:
    assert destructive(command) is expected


def test_which_calls_are_checkpointed() -> None:
    def call(name: str, arguments: str) -> ToolCall:
        return ToolCall("c", name, arguments)

    assert needs_checkpoint(call("write_file", '{"path": "a"}')) and needs_checkpoint(call("patch", "{}"))
    assert needs_checkpoint(call("terminal", '{"command": "rm -f a"}'))
    assert not needs_checkpoint(call("terminal", '{"command": "pytest"}'))
    assert not needs_checkpoint(call("terminal", "not json")) and not needs_checkpoint(call("read_file", "{}"))


def test_a_bad_checkpoints_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="checkpoints must be one of none, hermes, wait, got 'always'"):
        ExecutionPolicy.from_data({"checkpoints": "always"})


# -- rollbacks in the serial reference --------------------------------------------------------------


class UserRollsBack:
    """Runs every call alone, in model order; checkpoints before the first turn's calls and, when the
    second turn begins, restores that checkpoint (the user's `/rollback` between turns). `torn`: the
    snapshot is taken while the first call's write is under way (a broken checkpoint manager)."""

    name = "user_rolls_back"

    def __init__(self, torn: bool = False) -> None:
        self.torn = torn

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        results = []
        if "turn-1" not in ctx.session:
            first = ctx.start(batch.calls[0]) if self.torn else None
            checkpoint: Checkpoint = yield ctx.snapshot("turn 1", file_ms=10)
            ctx.session["turn-1"] = checkpoint
            if first is not None:
                results.append((yield first))
        else:
            ctx.rollback(ctx.session["turn-1"])
        for call in batch.calls[len(results):]:
            results.append((yield ctx.start(call)))
        return results


FILES = {"/repo/a.txt": "a0", "/repo/b.txt": "b0"}
TURN_1 = [("wa", "write_file", {"path": "a.txt", "content": "a1"}),
          ("wb", "write_file", {"path": "b.txt", "content": "b1"})]
TURN_2 = [("ra", "read_file", {"path": "a.txt"}), ("rb", "read_file", {"path": "b.txt"})]


def test_the_serial_reference_replays_a_rollback_between_turns() -> None:
    """Turn 1's writes were reported ok, the user rolled them back, turn 2 reads the restored files.
    Without the rollback in the serial reference the reads would be judged stale (a1, b1 expected)."""
    result = run(scenario(TURN_1, files=FILES, extra_batches=[TURN_2]), UserRollsBack(), 1)
    assert [r.value["content"] for r in result.batches[1].results] == ["a0", "b0"]  # type: ignore[index]
    assert result.final.file_map == FILES
    assert labels(result) == set()


def test_a_rollback_to_a_torn_snapshot_is_judged_against_the_serial_snapshot() -> None:
    """The snapshot copies a.txt while wa writes it: the rollback restores an empty a.txt, the serial
    reference's rollback restores a0, so turn 2's read and the final world are wrong."""
    result = run(scenario(TURN_1, files=FILES, extra_batches=[TURN_2]), UserRollsBack(torn=True), 1)
    found = labels(result)
    assert "torn-snapshot" in found
    serial = ORACLES["serializability"](result)
    assert not serial.ok and {v.witness.get("call") for v in serial.violations} & {"ra"}
    assert result.final.file_map["/repo/a.txt"] == ""
