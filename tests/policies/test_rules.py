"""The faithful rules behind the seeds' policies, checked on their own examples."""

from __future__ import annotations

import json

import pytest

from harness import get_scheduler, run
from harness.bridges.planners.adapters import openai_tool_calls
from harness.model import Batch
from harness.policies.hermes_gate import should_parallelize
from tests.helpers import scenario


def gate(*calls: tuple[str, object]) -> bool:
    batch = Batch.of([(f"c{i}", name, args if isinstance(args, str) else json.dumps(args))
                      for i, (name, args) in enumerate(calls)])
    return should_parallelize(openai_tool_calls(batch), cwd="/home/project")


def test_hermes_gate_seed_examples() -> None:
    # seed 001: sibling files do not overlap; the same file does; a directory overlaps what is under it
    assert gate(("write_file", {"path": "/a/b/c.txt"}), ("write_file", {"path": "/a/b/d.txt"}))
    assert not gate(("write_file", {"path": "/a/b/c.txt"}), ("write_file", {"path": "/a/b/c.txt"}))
    assert not gate(("write_file", {"path": "/a/b/"}), ("write_file", {"path": "/a/b/c.txt"}))
    assert gate(("read_file", {"path": "/x/ab"}), ("read_file", {"path": "/x/a"}))  # parts, not text prefix
    assert not gate(("read_file", {"path": "a.txt"}), ("read_file", {"path": "/home/project/a.txt"}))  # abspath
    assert not gate(("read_file", {"path": "~/a"}), ("read_file", {"path": "/home/user/a"}))  # expanduser
    # seed 000: one call, clarify, bad JSON, a non-object, a missing path, an unknown tool -> serial
    assert not gate(("read_file", {"path": "/a"}))
    assert not gate(("read_file", {"path": "/a"}), ("clarify", {"question": "?"}))
    assert not gate(("read_file", {"path": "/a"}), ("read_file", '{"path": "/b"'))
    assert not gate(("read_file", {"path": "/a"}), ("read_file", "[1]"))
    assert not gate(("read_file", {"path": "/a"}), ("write_file", {"content": "x"}))
    assert not gate(("read_file", {"path": "/a"}), ("terminal", {"command": "ls"}))
    # seed 001's code-review batch passes: four safe, non-overlapping calls
    assert gate(("read_file", {"path": "/project/auth.py"}), ("read_file", {"path": "/project/db.py"}),
                ("search_files", {"pattern": "eval(", "glob": "*.py"}), ("web_search", {"query": "CVE"}))


def starts(result):  # type: ignore[no-untyped-def]
    return {r.call_id: r.start_ms for r in result.results}


def test_hermes_segments_cuts_on_writer_overlap_and_never_reorders() -> None:
    sc = scenario([("wa", "write_file", {"path": "a", "content": "1"}), ("ra", "read_file", {"path": "a"}),
                   ("wb", "write_file", {"path": "b", "content": "2"})], files={"/repo/a": "0"})
    result = run(sc, get_scheduler("hermes_segments"), 1)
    # [wa] then [ra wb]: wb waits for wa although the two could never conflict
    assert starts(result) == {"wa": 0, "ra": 200, "wb": 200}


def test_hermes_segments_scopes_v4a_patch_headers() -> None:
    v4a = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-x\n+y\n*** End Patch\n"
    sc = scenario([("p", "patch", {"mode": "v4a", "patch": v4a}), ("r", "read_file", {"path": "src/app.py"}),
                   ("s", "read_file", {"path": "other.py"})], files={"/repo/src/app.py": "x\n", "/repo/other.py": ""})
    result = run(sc, get_scheduler("hermes_segments"), 1)
    assert starts(result)["r"] > 0 and starts(result)["s"] == starts(result)["r"]


def test_resource_keys_chains_writes_and_marks_a_failed_predecessor() -> None:
    sc = scenario([("p1", "patch", {"path": "c", "old": "absent", "new": "x"}),
                   ("p2", "patch", {"path": "c", "old": "a", "new": "b"}),
                   ("w", "write_file", {"path": "d", "content": "z"}), ("r", "read_file", {"path": "c"})],
                  files={"/repo/c": "a"})
    result = run(sc, get_scheduler("resource_keys"), 1)
    s = starts(result)
    # p1 fails at once (its text is absent), p2 still runs after it; r waits for every earlier write.
    assert s == {"p1": 0, "p2": 0, "w": 0, "r": 300}
    assert "previous write failed: p1" in result.results[1].notes


def test_grouped_runs_safe_calls_first_and_reports_in_that_order() -> None:
    sc = scenario([("w", "write_file", {"path": "a", "content": "1"}), ("r", "read_file", {"path": "a"})],
                  files={"/repo/a": "0"})
    result = run(sc, get_scheduler("grouped"), 1)
    assert [r.call_id for r in result.results] == ["r", "w"] and starts(result) == {"r": 0, "w": 100}


def test_dag_waits_for_declared_dependencies_only() -> None:
    sc = scenario([("logs", "query_service_logs", {"service_name": "s"}),
                   ("metrics", "query_service_metrics", {"service_name": "s"})],
                  extra_batches=None)
    from dataclasses import replace

    dependent = replace(sc, depends_on={"metrics": ("logs",)})
    assert starts(run(dependent, get_scheduler("dag"), 1)) == {"logs": 0, "metrics": 3000}
    assert starts(run(sc, get_scheduler("dag"), 1)) == {"logs": 0, "metrics": 0}


def test_lanes_serialise_within_a_category_only() -> None:
    sc = scenario([("t1", "terminal", {"command": "true"}), ("r", "read_file", {"path": "a"}),
                   ("t2", "terminal", {"command": "true"})], files={"/repo/a": ""})
    assert starts(run(sc, get_scheduler("lanes"), 1)) == {"t1": 0, "r": 0, "t2": 500}


def test_rwlock_and_partition_share_readers_and_isolate_writers() -> None:
    sc = scenario([("r1", "read_file", {"path": "a"}), ("r2", "read_file", {"path": "a"}),
                   ("w", "write_file", {"path": "a", "content": "x"}), ("r3", "read_file", {"path": "a"})],
                  files={"/repo/a": ""})
    expected = {"r1": 0, "r2": 0, "w": 100, "r3": 300}
    assert starts(run(sc, get_scheduler("rwlock"), 1)) == expected
    assert starts(run(sc, get_scheduler("partition"), 1)) == expected


@pytest.mark.parametrize("policy", ["partition", "hermes_segments", "resource_keys"])
def test_plan_policies_honour_scenario_caps(policy: str) -> None:
    sc = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(6)], max_concurrency=2)
    result = run(sc, get_scheduler(policy), 1)
    assert sorted(starts(result).values()) == [0, 0, 1200, 1200, 2400, 2400]


def test_image_generate_is_on_hermes_safe_list() -> None:
    assert gate(("image_generate", {"prompt": "a cat"}), ("web_search", {"query": "cats"}))
    sc = scenario([("img", "image_generate", {"prompt": "a cat"}), ("q", "web_search", {"query": "cats"})])
    for policy in ("hermes_gate", "hermes_segments"):
        assert run(sc, get_scheduler(policy), 1).makespan_ms == 8000  # side by side: the image's 8 s


@pytest.mark.parametrize("path", ["", "   ", 3, None])
def test_search_files_with_a_blank_or_odd_path_searches_the_working_directory(path: object) -> None:
    """As hermes' tool does; hermes_segments scopes such a search to `.` (a reader), not a barrier."""
    args: dict[str, object] = {"pattern": "alpha"}
    if path is not None:
        args["path"] = path
    sc = scenario([("s", "search_files", args), ("r", "read_file", {"path": "/repo/b.txt"})],
                  files={"/repo/a.txt": "alpha\n", "/repo/b.txt": "beta\n"},
                  check_arguments=False)  # a path of 3 is what a model may send, not what the tool declares
    result = run(sc, get_scheduler("hermes_segments"), 1)
    search = result.results[0]
    assert search.outcome.value == "ok" and "/repo/a.txt" in json.dumps(search.value)
    starts = {e["call"]: e["t"] for e in result.trace if e["ev"] == "start"}
    assert starts["s"] == starts["r"] == 0  # two readers: one parallel segment


def test_hermes_segments_scopes_a_search_with_a_path_as_a_reader_of_it() -> None:
    """hermes' segment planner reserves a search's `path` (a reader): a search of /repo waits for a write
    under it, as a read would; since the fix for blank paths it was unscoped and ran beside the write
    (a torn read under PCT). A search of another subtree still runs beside it."""
    from harness.explore.engine import explore

    files = {"/repo/a.txt": "alpha beta\n", "/repo/src/c.txt": "gamma\n"}
    write = ("w", "write_file", {"path": "/repo/a.txt", "content": "new beta"})
    under = scenario([write, ("s", "search_files", {"pattern": "beta", "path": "/repo"})], files=files)
    result = run(under, get_scheduler("hermes_segments"), 1)
    assert starts(result) == {"w": 0, "s": 200}  # after the write: its own segment
    proof = explore(under, "hermes_segments", "exhaustive", runs=200, shrink=False)
    assert proof.found is None and proof.exhausted
    beside = scenario([write, ("s", "search_files", {"pattern": "gamma", "path": "/repo/src"})], files=files)
    assert starts(run(beside, get_scheduler("hermes_segments"), 1)) == {"w": 0, "s": 0}
