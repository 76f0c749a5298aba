"""hermes_segments scopes a V4A patch by its headers, as hermes' planner does (issue 10, item 9).

hermes-agent's `_extract_parallel_scope_paths` (agent/tool_dispatch_helpers.py): for `patch` with
`mode` "patch" the reserved paths are every `*** Update/Add/Delete File:` header and both sides of
`*** Move File: a -> b` (any spacing), never a possibly-decoy `path=`; no header at all is a barrier.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, ToolCall
from harness.oracles import check
from harness.policies.hermes_paths import v4a_scope_paths
from harness.policies.hermes_segments import scoped_paths
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler
from tests.helpers import run_named, scenario


def scope(arguments: dict[str, Any]) -> list[str] | None:
    return scoped_paths(ToolCall("p", "patch", json.dumps(arguments)), arguments)


def test_every_header_is_scoped_with_any_spacing_and_both_sides_of_a_move() -> None:
    body = ("*** Begin Patch\n***Update File:a.py\n-x\n+y\n*** Add  File:  new/b.py\n+b\n"
            "*** Delete File: c.txt\n***  Move File:  d.py  ->  e/d.py\n*** End Patch\n")
    assert scope({"mode": "patch", "path": "decoy.py", "patch": body}) == [
        "a.py", "new/b.py", "c.txt", "d.py", "e/d.py"]


@pytest.mark.parametrize(("arguments", "paths"), [
    ({"mode": "patch", "path": "a.py", "patch": "no headers here"}, None),  # unknown scope: a barrier
    ({"mode": "patch", "path": "a.py"}, None),
    ({"mode": "replace", "path": "a.py", "old_string": "x", "new_string": "y"}, ["a.py"]),
    ({"path": "a.py", "old_string": "x", "new_string": "y"}, ["a.py"]),  # replace is the default mode
    ({"mode": None, "path": "a.py"}, ["a.py"]),  # hermes: (mode or "replace")
    ({"mode": "v4a", "path": "a.py", "patch": "*** Update File: b.py\n-x\n+y\n"}, ["a.py"]),  # not hermes' mode
])
def test_what_is_not_a_v4a_patch_is_scoped_by_path(arguments: dict[str, Any], paths: list[str] | None) -> None:
    assert scope(arguments) == paths


def test_header_lines_inside_a_hunk_do_not_count() -> None:
    assert v4a_scope_paths("*** Update File: a.py\n-*** Update File: b.py\n+x\n") == ["a.py"]
    assert v4a_scope_paths(None) == [] and v4a_scope_paths("") == []


def starts(sc: Any, policy: str = "hermes_segments") -> dict[str, int]:
    return {r.call_id: r.start_ms for r in run_named(sc, policy).results}


FILES = {"/repo/a.py": "x = 1\n", "/repo/b.py": "y = 1\n", "/repo/c.py": "z = 1\n"}


def test_a_read_of_any_patched_file_waits_and_an_unrelated_read_does_not() -> None:
    body = "*** Update File: a.py\n-x = 1\n+x = 2\n*** Update  File:  b.py\n-y = 1\n+y = 2\n"
    sc = scenario([("p", "patch", {"mode": "patch", "path": "a.py", "patch": body}),
                   ("rb", "read_file", {"path": "b.py"}), ("rc", "read_file", {"path": "c.py"})], files=FILES)
    assert starts(sc) == {"p": 0, "rb": 300, "rc": 300}  # [p] then [rb rc]: rb overlaps, so the run closes


def test_a_move_destination_is_reserved_too() -> None:
    body = "*** Move File: a.py -> c.py\n"
    sc = scenario([("rc", "read_file", {"path": "c.py"}), ("m", "patch", {"mode": "patch", "patch": body}),
                   ("rb", "read_file", {"path": "b.py"})], files={"/repo/a.py": "x = 1\n", "/repo/b.py": ""})
    assert starts(sc) == {"rc": 0, "m": 50, "rb": 50}  # [rc] then [m rb]


def test_a_symlink_loop_does_not_break_the_planner() -> None:
    """realpath fails with ELOOP in the world; hermes calls os.path.realpath, which hands the path
    back, so the plan goes on and the read itself is the error outcome."""
    sc = scenario([("r", "read_file", {"path": "loop"}), ("s", "read_file", {"path": "a.py"})],
                  files=FILES, world_extra={"symlinks": {"/repo/loop": "/repo/loop"}})
    result = run_named(sc, "hermes_segments")
    assert [(r.call_id, r.outcome.value, r.start_ms) for r in result.results] == [("r", "error", 0), ("s", "ok", 0)]


class PathOnlySegments(PlanScheduler):
    """hermes_segments as it would be if it scoped a patch by `path` only."""

    name = "path_only_segments"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        reserved: list[tuple[str, bool]] = []
        for call in batch:
            args = call.parsed_arguments() or {}
            path = args.get("path")
            writer = call.name in ("patch", "write_file")
            if isinstance(path, str) and any(path == p and (writer or w) for p, w in reserved):
                segments.append(current)
                current, reserved = [], []
            current.append(call)
            if isinstance(path, str):
                reserved.append((path, writer))
        segments.append(current)
        return Plan.segments(batch, [s for s in segments if s])


def labels(policy: Any, seeds: range = range(1, 6)) -> set[str]:
    sc = find_scenario("v4a-multi-file")
    return {v.label for seed in seeds for v in check(run(sc, policy, seed)) if not v.ok}


def test_the_builtin_scenario_catches_path_scoped_planners_and_passes_hermes_segments() -> None:
    assert labels(PathOnlySegments()) == {"stale-read"}
    assert labels(get_scheduler("hermes_gate")) == {"stale-read"}  # the old gate scoped `path` too
    assert labels(get_scheduler("hermes_segments")) == set()
    result = run(find_scenario("v4a-multi-file"), get_scheduler("hermes_segments"), 1)
    assert [(r.call_id, r.start_ms, r.outcome.value) for r in result.results] == [
        ("patch-both", 0, "ok"), ("read-settings", 300, "ok"), ("read-readme", 300, "ok")]  # never reorders
    assert result.results[1].value == {"path": "/repo/src/settings.py", "content": "POOL_SIZE = 10\nTIMEOUT = 30\n"}
