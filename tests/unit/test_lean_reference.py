"""The benchmarks' fair reference gives `run()`'s fingerprint, or its ratio compares unequal work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import get_scheduler, run

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> tuple[object, object]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_run
        import lean_reference
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_run, lean_reference


@pytest.mark.parametrize("policy", ["serial", "parallel"])
@pytest.mark.parametrize("seed", [1, 4, 13])
def test_the_lean_program_gives_the_runs_fingerprint(bench: tuple, policy: str, seed: int) -> None:
    bench_run, lean_reference = bench
    scenario = bench_run.bench_scenario()
    world = scenario.world
    lean = lean_reference.lean_fingerprint(scenario.name, dict(world.files), list(world.dirs), world.cwd,
                                           world.home, bench_run.CALLS, policy, seed)
    assert lean == run(scenario, get_scheduler(policy), seed).fingerprint


def test_a_lean_program_that_drops_a_touch_is_told_apart(bench: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    # The equality above is a real check: a reference that does less work gives another fingerprint.
    bench_run, lean_reference = bench
    scenario = bench_run.bench_scenario()
    world = scenario.world
    listed = lean_reference.LeanWorld.list_files

    def list_without_touch(self: object, root: str, touch: object) -> list[str]:
        return listed(self, root, lambda op, target, digest: None)

    monkeypatch.setattr(lean_reference.LeanWorld, "list_files", list_without_touch)
    lean = lean_reference.lean_fingerprint(scenario.name, dict(world.files), list(world.dirs), world.cwd,
                                           world.home, bench_run.CALLS, "parallel", 1)
    assert lean != run(scenario, get_scheduler("parallel"), 1).fingerprint
