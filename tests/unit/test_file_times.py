"""File times in the world are virtual: the initial tree at the epoch, a write at the epoch plus its
virtual time, the same in every run and on every host; a user's own pyfakefs outside a run keeps the
host's times."""

from __future__ import annotations

import time

from pyfakefs.fake_filesystem import FakeFilesystem, FakeOsModule

from harness import find_scenario, get_scheduler, run
from harness.bridges.threads.virtual_time import EPOCH_S as BRIDGES_EPOCH_S
from harness.world.clock import EPOCH_S


def _writes(result: object) -> dict[str, int]:
    """path -> the virtual ms of its last write, from the trace."""
    return {e["target"]: e["t"] for e in result.trace  # type: ignore[attr-defined]
            if e["ev"] == "touch" and e["op"] in ("write", "truncate")}


def test_a_write_stamps_the_file_with_its_virtual_time_and_the_rest_keep_the_epoch() -> None:
    untouched_seen = 0
    for name, policy, seed in (("config-clobber", "serial", 1), ("edit-then-test", "parallel", 4)):
        result = run(find_scenario(name), get_scheduler(policy), seed)
        written = _writes(result)
        assert written
        for path, ms in written.items():
            stamp = result.world.fs.resolve(path).st_mtime
            assert abs(stamp - (EPOCH_S + ms / 1000)) < 1e-6, (path, stamp)
        untouched = [p for p, _ in result.initial.files if p not in written]
        assert all(result.world.fs.resolve(p).st_mtime == EPOCH_S for p in untouched)
        untouched_seen += len(untouched)
        # what a planner's os.stat reads, through pyfakefs' own os module
        os_module = FakeOsModule(result.world.fs)
        assert {os_module.stat(p).st_mtime for p in written} == {EPOCH_S + ms / 1000 for ms in written.values()}
    assert untouched_seen

def test_file_times_are_the_same_in_every_run() -> None:
    times = []
    for _ in range(2):
        result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 7)
        times.append(sorted((p, result.world.fs.resolve(p).st_mtime) for p, _ in result.world.state().files))
    assert times[0] == times[1]


def test_outside_a_run_pyfakefs_keeps_the_hosts_clock() -> None:
    fs = FakeFilesystem()
    before = time.time()
    fs.create_file("/mine.txt", contents="x")
    assert before - 1 <= fs.resolve("/mine.txt").st_mtime <= time.time() + 1


def test_the_worlds_epoch_is_the_bridges() -> None:
    assert EPOCH_S == BRIDGES_EPOCH_S
