"""from_gate / from_plan run real planner code against the simulated world (issue 10, item 8).

The gates here are written the way hermes-agent writes its own (`_extract_parallel_scope_path`,
`_canonical_path`): `Path(raw).expanduser()`, `Path.cwd()`, `os.path.abspath`, `os.path.realpath`,
with no harness helper in sight. Each test that claims the world view matters also runs the same
gate without it and sees it go wrong.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import re
from os import getcwd as imported_getcwd  # bound by name: the world view patches this module's globals
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.bridges.planners.adapters import OpenAIToolCall, from_gate, from_plan
from harness.oracles import check
from harness.policies.hermes_paths import NEVER_PARALLEL_TOOLS, PARALLEL_SAFE_TOOLS, PATH_SCOPED_TOOLS
from harness.run import RunResult, RunStatus
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.helpers import scenario

# -- gates written the way hermes writes them ------------------------------------------------------


def hermes_scope_path(raw: str) -> Path:
    """hermes' `_extract_parallel_scope_path` (until mid-2026): expanduser, then abspath against
    the process cwd; no resolve(), the file may not exist yet."""
    expanded = Path(raw).expanduser()
    if expanded.is_absolute():
        return Path(os.path.abspath(str(expanded)))
    return Path(os.path.abspath(str(Path.cwd() / expanded)))


def hermes_canonical_path(raw: str) -> Path:
    """hermes' `_canonical_path` (mid-2026 onward): realpath and normcase on top."""
    expanded = Path(raw).expanduser()
    candidate = expanded if expanded.is_absolute() else Path.cwd() / expanded
    return Path(os.path.normcase(os.path.realpath(os.path.abspath(str(candidate)))))


def overlap(left: Path, right: Path) -> bool:
    common = min(len(left.parts), len(right.parts))
    return bool(common) and left.parts[:common] == right.parts[:common]


def make_gate(scope: Any) -> Any:
    """hermes' `_should_parallelize_tool_batch` with a given path canonicaliser."""
    def should_parallelize(tool_calls: list[OpenAIToolCall]) -> bool:
        if len(tool_calls) <= 1 or any(tc.function.name in NEVER_PARALLEL_TOOLS for tc in tool_calls):
            return False
        reserved: list[Path] = []
        for tool_call in tool_calls:
            try:
                args = json.loads(tool_call.function.arguments)
            except Exception:
                return False
            if not isinstance(args, dict):
                return False
            if tool_call.function.name in PATH_SCOPED_TOOLS:
                raw = args.get("path")
                if not isinstance(raw, str) or not raw.strip():
                    return False
                path = scope(raw)
                if any(overlap(path, other) for other in reserved):
                    return False
                reserved.append(path)
                continue
            if tool_call.function.name not in PARALLEL_SAFE_TOOLS:
                return False
        return True

    return should_parallelize


hermes_gate = make_gate(hermes_scope_path)
hermes_realpath_gate = make_gate(hermes_canonical_path)


def same_inode_gate(tool_calls: list[OpenAIToolCall]) -> bool:
    """Parallel only if no two path arguments name one file, asked of the filesystem itself
    (`os.path.samefile`: symlinks, hard links and case aliases all compare equal)."""
    paths = [json.loads(tc.function.arguments)["path"] for tc in tool_calls]
    existing = [p for p in paths if os.path.exists(p)]
    return not any(os.path.samefile(a, b) for i, a in enumerate(existing) for b in existing[i + 1:])


def violations(result: RunResult) -> list[str]:
    return sorted({v.label for v in check(result) if not v.ok and v.label})


def starts(result: RunResult) -> dict[str, int]:
    return {r.call_id: r.start_ms for r in result.results}


PATCH_LATENCY = {"patch": {"latency": {"uniform": [100, 900]}}}


def relative_and_absolute() -> Any:
    """One file, spelled `app.py` and `/repo/app.py`, with the world's cwd at /repo."""
    return scenario([("rel", "patch", {"path": "app.py", "old": "A = 1", "new": "A = 2"}),
                     ("abs", "patch", {"path": "/repo/app.py", "old": "B = 1", "new": "B = 2"})],
                    files={"/repo/app.py": "A = 1\nB = 1\n"}, tools=PATCH_LATENCY, name="relative-and-absolute")


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test process runs in an empty real directory that is not the world's /repo."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- the real-code route -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_hermes_gate_canonicalising_relative_paths_sees_the_world_cwd(elsewhere: Path, seed: int) -> None:
    sc = relative_and_absolute()
    seen = run(sc, from_gate(hermes_gate), seed)
    assert seen.status is RunStatus.COMPLETED and violations(seen) == []
    rel, absolute = seen.results
    assert absolute.start_ms == rel.end_ms  # serialised: app.py *is* /repo/app.py
    # The same gate in the harness process's own cwd sees two files, runs them together, loses one.
    blind = run(sc, from_gate(hermes_gate, world_view=False), seed)
    assert starts(blind) == {"rel": 0, "abs": 0}
    assert "lost-update" in violations(blind)


def test_check_scheduler_passes_the_gate_with_the_world_view_and_fails_it_without(elsewhere: Path) -> None:
    sc = relative_and_absolute()
    check_scheduler(from_gate(hermes_gate), scenarios=[sc], profile="quick", generated=False)
    with pytest.raises(SchedulerCheckFailed, match="lost-update"):
        check_scheduler(from_gate(hermes_gate, world_view=False), scenarios=[sc], profile="quick", generated=False)


@pytest.mark.parametrize("name", scenario_names())
def test_the_real_code_gate_decides_as_the_builtin_hermes_gate(name: str, elsewhere: Path) -> None:
    """hermes_gate computes its paths with pure-text helpers against ctx.process_cwd; the real-code
    gate calls os.path and pathlib. Through the world view they must schedule every scenario alike."""
    sc = find_scenario(name)
    builtin = run(sc, get_scheduler("hermes_gate"), 1)
    real = run(sc, from_gate(hermes_gate, max_workers=8), 1)
    assert [(r.call_id, r.outcome, r.start_ms, r.end_ms) for r in real.results] == \
           [(r.call_id, r.outcome, r.start_ms, r.end_ms) for r in builtin.results]
    assert real.final_files() == builtin.final_files()


def test_a_realpath_gate_sees_the_world_symlinks(elsewhere: Path) -> None:
    sc = find_scenario("symlink-alias")  # current.yaml -> config.yaml, cwd /repo
    resolved: list[str] = []

    def spy(tool_calls: list[OpenAIToolCall]) -> bool:
        resolved.append(os.path.realpath("current.yaml"))
        return bool(hermes_realpath_gate(tool_calls))

    result = run(sc, from_gate(spy), 1)
    assert resolved == ["/repo/config.yaml"]
    assert violations(result) == [] and starts(result)["via-link"] > 0
    # abspath alone (the old gate) does not resolve the link: the documented lost update.
    assert "lost-update" in violations(run(sc, from_gate(hermes_gate), 1))
    # And realpath on the real disk knows nothing of the world's link.
    assert "lost-update" in violations(run(sc, from_gate(hermes_realpath_gate, world_view=False), 1))


@pytest.mark.parametrize("name", ["case-alias", "hardlink-alias", "symlink-alias"])
def test_samefile_sees_case_folding_hard_links_and_symlinks(name: str, elsewhere: Path) -> None:
    sc = find_scenario(name)
    assert violations(run(sc, from_gate(same_inode_gate), 1)) == []
    # normcase is the identity on POSIX, so the realpath gate still misses the case and hard-link aliases.
    if name != "symlink-alias":
        assert "lost-update" in violations(run(sc, from_gate(hermes_realpath_gate), 1))


def test_the_world_is_case_insensitive_when_the_scenario_says_so(elsewhere: Path) -> None:
    observed: dict[str, Any] = {}

    def spy(tool_calls: list[OpenAIToolCall]) -> bool:
        observed["exists"] = os.path.exists("CONFIG.YAML")
        observed["ino"] = os.stat("Config.yaml").st_ino == os.stat("/repo/config.yaml").st_ino
        observed["normcase"] = os.path.normcase("Config.yaml")
        return False

    run(find_scenario("case-alias"), from_gate(spy), 1)
    assert observed == {"exists": True, "ino": True, "normcase": "Config.yaml"}


# -- what the planner sees, and that it is put back --------------------------------------------------


def test_the_planner_sees_the_world_and_the_process_gets_its_own_back(elsewhere: Path) -> None:
    (elsewhere / "real.txt").write_text("on the real disk\n")
    real_cwd, real_stat, real_open, real_environ = os.getcwd(), os.stat, builtins.open, os.environ
    seen: dict[str, Any] = {}

    def spy(tool_calls: list[OpenAIToolCall]) -> bool:
        seen["cwd"] = (os.getcwd(), str(Path.cwd()), imported_getcwd())
        seen["home"] = (os.path.expanduser("~/notes"), str(Path.home()), os.environ.get("HOME"))
        seen["world"] = (os.path.exists("app.py"), Path("/repo/app.py").read_text(), sorted(os.listdir(".")))
        with open("app.py") as handle:
            seen["open"] = handle.readline()
        seen["real"] = (os.path.exists(str(elsewhere / "real.txt")), os.path.exists("real.txt"))
        return False

    run(relative_and_absolute(), from_gate(spy), 1)
    assert seen == {"cwd": ("/repo", "/repo", "/repo"),
                    "home": ("/home/user/notes", "/home/user", "/home/user"),
                    "world": (True, "A = 1\nB = 1\n", ["app.py"]),
                    "open": "A = 1\n",
                    "real": (False, False)}
    assert (os.getcwd(), os.stat, builtins.open, io.open, os.environ) == \
           (real_cwd, real_stat, real_open, real_open, real_environ)
    assert imported_getcwd is os.getcwd and imported_getcwd() == str(elsewhere)
    assert Path("real.txt").read_text() == "on the real disk\n"


def test_an_exception_in_the_planner_restores_and_is_a_scheduler_error(elsewhere: Path) -> None:
    def broken(tool_calls: list[OpenAIToolCall]) -> bool:
        assert os.getcwd() == "/repo"
        raise RuntimeError(f"no plan in {os.getcwd()}")

    result = run(relative_and_absolute(), from_gate(broken), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR
    assert result.error == "RuntimeError: no plan in /repo"
    assert os.getcwd() == str(elsewhere) and builtins.open is io.open and os.path.exists(str(elsewhere))
    assert imported_getcwd is os.getcwd


def test_the_planner_sees_the_world_as_it_is_when_its_batch_starts(elsewhere: Path) -> None:
    """Turn one writes new.py and moves the shell into src/; turn two's planner sees the file, and
    the runtime process's cwd, which a shell `cd` does not move (hermes' known gap, cd-then-edit)."""
    sc = scenario([("write", "write_file", {"path": "new.py", "content": "x = 1\n"}),
                   ("cd", "terminal", {"command": "cd src"})],
                  files={"/repo/src/settings.py": "DEBUG = True\n"},
                  extra_batches=[[("read", "read_file", {"path": "settings.py"}),
                                  ("again", "read_file", {"path": "new.py"})]])
    seen: list[tuple[str, bool]] = []

    def spy(tool_calls: list[OpenAIToolCall]) -> bool:
        seen.append((os.getcwd(), os.path.exists("/repo/new.py")))
        return False

    run(sc, from_gate(spy), 1)
    assert seen == [("/repo", False), ("/repo", True)]


def open_for_writing() -> None:
    with open("notes.txt", "w") as handle:
        handle.write("planner notes\n")


@pytest.mark.parametrize("write", [
    open_for_writing,
    lambda: Path("/repo/app.py").write_text("gone\n"),
    lambda: os.remove("/repo/app.py"),
    lambda: Path("cache").mkdir(),
    lambda: os.rename("app.py", "moved.py"),
    lambda: Path("touched").touch(),
    lambda: os.truncate("app.py", 0),
], ids=["open-w", "write_text", "remove", "mkdir", "rename", "touch", "truncate"])
def test_a_planner_that_writes_is_a_scheduler_error_and_changes_nothing(write: Any, elsewhere: Path) -> None:
    sc = relative_and_absolute()
    caught: list[OSError] = []

    def writer(tool_calls: list[OpenAIToolCall]) -> bool:
        try:
            write()
        except OSError as error:  # a planner that swallows the refusal still fails the batch
            caught.append(error)
        return True

    result = run(sc, from_gate(writer), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR
    assert result.error is not None and "PlannerWroteError" in result.error and "read-only" in result.error
    assert [e.errno for e in caught] == [30]  # EROFS, as on a read-only mount
    assert result.final == result.initial  # no call ran, and the planner changed nothing
    assert list(elsewhere.iterdir()) == []  # nor the real disk


def test_a_write_the_planner_does_not_catch_is_reported_as_it_was_raised(elsewhere: Path) -> None:
    result = run(relative_and_absolute(), from_gate(lambda calls: bool(os.mkdir("/repo/x"))), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR
    assert result.error is not None and result.error.startswith("OSError: [Errno 30] Read-only file system")


# -- hermes-style segments ---------------------------------------------------------------------------


def four_reads() -> Any:
    calls = [(f"c{i}", "read_file", {"path": f"/repo/f{i}.txt"}) for i in range(1, 5)]
    return scenario(calls, files={f"/repo/f{i}.txt": f"{i}\n" for i in range(1, 5)},
                    tools={"read_file": {"latency": {"fixed": 100}}})


@pytest.mark.parametrize("tags", [(True, False), ("parallel", "sequential")])
def test_from_plan_takes_hermes_segments(tags: tuple[Any, Any]) -> None:
    parallel, sequential = tags

    def plan(calls: list[OpenAIToolCall]) -> list[tuple[Any, list[OpenAIToolCall]]]:
        return [(parallel, calls[:2]), (sequential, calls[2:])]

    result = run(four_reads(), from_plan(plan), 1)
    assert violations(result) == []
    assert starts(result) == {"c1": 0, "c2": 0, "c3": 100, "c4": 200}
    assert result.makespan_ms == 300


def test_from_plan_mixes_plain_and_tagged_segments_and_positions() -> None:
    result = run(four_reads(), from_plan(lambda calls: [[0, 1], (False, ["c3"]), [calls[3]]]), 1)
    assert starts(result) == {"c1": 0, "c2": 0, "c3": 100, "c4": 200}


@pytest.mark.parametrize("bad, words", [
    (lambda calls: [(True, [calls[0], 7]), (False, calls[1:])], "named a call as 7"),
    (lambda calls: [calls[0].id, [c.id for c in calls[1:]]], "returned a segment 'c1'"),
    (lambda calls: [("maybe", calls)], "segment tag 'maybe'"),
])
def test_a_malformed_segment_is_a_scheduler_error(bad: Any, words: str) -> None:
    result = run(four_reads(), from_plan(bad, name="bad"), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR and words in (result.error or "")


def test_a_hermes_style_planner_sees_the_world_too(elsewhere: Path) -> None:
    """`_plan_tool_batch_segments` in miniature: writers to one canonical path split the run."""
    def plan(tool_calls: list[OpenAIToolCall]) -> list[tuple[str, list[OpenAIToolCall]]]:
        segments: list[tuple[str, list[OpenAIToolCall]]] = []
        current: list[OpenAIToolCall] = []
        reserved: list[Path] = []
        for tc in tool_calls:
            path = hermes_canonical_path(json.loads(tc.function.arguments)["path"])
            if any(overlap(path, other) for other in reserved):
                segments.append(("parallel" if len(current) > 1 else "sequential", current))
                current, reserved = [], []
            current.append(tc)
            reserved.append(path)
        segments.append(("parallel" if len(current) > 1 else "sequential", current))
        return segments

    sc = find_scenario("symlink-alias")
    assert violations(run(sc, from_plan(plan), 1)) == []
    assert "lost-update" in violations(run(sc, from_plan(plan, world_view=False), 1))


# -- determinism, context --------------------------------------------------------------------------


def test_same_seed_same_fingerprint_wherever_the_harness_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = find_scenario("symlink-alias")
    fingerprints = []
    for where in ("one", "two"):
        (tmp_path / where).mkdir()
        monkeypatch.chdir(tmp_path / where)
        fingerprints += [run(sc, from_gate(hermes_realpath_gate), seed).fingerprint for seed in (4, 4)]
    assert len(set(fingerprints)) == 1


def test_context_home_and_realpath() -> None:
    seen: list[tuple[str, str, str, str]] = []

    class Look(PlanScheduler):
        name = "look"

        def plan(self, batch: Any, ctx: SchedulerContext) -> Plan:
            seen.append((ctx.cwd, ctx.home, ctx.realpath("/repo/current.yaml"), ctx.realpath("/repo/missing/../x")))
            return Plan.serial(batch)

    sc = scenario([("r", "read_file", {"path": "current.yaml"})], files={"/repo/config.yaml": "a: 1\n"},
                  world_extra={"home": "/home/ada", "symlinks": {"/repo/current.yaml": "config.yaml"}})
    run(sc, Look(), 1)
    assert seen == [("/repo", "/home/ada", "/repo/config.yaml", "/repo/x")]


def test_the_recipe_in_docs_runs_and_prints_what_it_says(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "real-planners.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {})
        promised = re.findall(r"^print\(.*\)\s+# (.+)$", block, flags=re.M)
        assert promised and capsys.readouterr().out.splitlines() == promised
