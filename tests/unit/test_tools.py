"""Mock tools: touch points in virtual time, and pure semantics that match a solo run."""

import json

import pytest

from harness.model import Outcome, ToolCall
from harness.tools import BUILTIN, apply
from harness.world import World
from tests.helpers import run_named, scenario


def touches(result, call_id):  # type: ignore[no-untyped-def]
    """File touches of one call (resolving a relative path also reads session:cwd; left out here)."""
    return [(e["t"], e["op"], e["target"]) for e in result.trace
            if e["ev"] == "touch" and e["call"] == call_id and e["target"].startswith("/")]


def test_write_file_truncates_at_start_and_writes_at_end() -> None:
    sc = scenario([("w", "write_file", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"},
                  tools={"write_file": {"latency": {"fixed": 200}}})
    r = run_named(sc, "serial")
    assert touches(r, "w") == [(0, "truncate", "/repo/a.txt"), (200, "write", "/repo/a.txt")]


def test_atomic_write_has_a_single_touch_at_the_end() -> None:
    sc = scenario([("w", "write_file_atomic", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"})
    assert touches(run_named(sc, "serial"), "w") == [(200, "write", "/repo/a.txt")]


def test_reader_between_truncate_and_write_sees_an_empty_file() -> None:
    sc = scenario([("w", "write_file", {"path": "a.txt", "content": "new"}), ("r", "read_file", {"path": "a.txt"})],
                  files={"/repo/a.txt": "old"})
    r = run_named(sc, "parallel")  # read at 50 ms, write lands at 200 ms
    assert r.results[1].value["content"] == ""
    assert run_named(sc, "serial").results[1].value["content"] == "new"


def test_patch_is_read_modify_write_and_errors_without_effect() -> None:
    sc = scenario([("p", "patch", {"path": "a.txt", "old": "x", "new": "y"}),
                   ("q", "patch", {"path": "a.txt", "old": "absent", "new": "z"})], files={"/repo/a.txt": "x x"})
    r = run_named(sc, "serial")
    assert touches(r, "p") == [(0, "read", "/repo/a.txt"), (300, "write", "/repo/a.txt")]
    assert r.results[1].outcome is Outcome.ERROR and "not found" in (r.results[1].error or "")
    assert r.final.file_map["/repo/a.txt"] == "y x"


def test_terminal_cd_moves_later_commands_of_the_shared_session() -> None:
    sc = scenario([("cd", "terminal", {"command": "cd src"}), ("echo", "terminal", {"command": "echo hi > out.txt"})],
                  files={"/repo/src/keep": ""})
    r = run_named(sc, "serial")
    assert "/repo/src/out.txt" in r.final.file_map and r.final.cwd == "/repo/src"


def test_terminal_mini_shell() -> None:
    world = World(cwd="/w")
    world.populate(files=[("/w/a", "A\n")])
    cmd = "mkdir d && echo one > d/f && echo two >> d/f && cat d/f && export X=1 && ls && pwd && rm a"
    world, obs = apply(world, ToolCall("t", "terminal", json.dumps({"command": cmd})))
    assert obs.value == {"exit_code": 0, "output": "one\ntwo\na\nd\n/w\n", "cwd": "/w"}
    assert world.env == {"X": "1"} and not world.exists("/w/a")
    _, missing = apply(world, ToolCall("t", "terminal", '{"command": "nosuch && echo never"}'))
    assert missing.value["exit_code"] == 127 and "never" not in missing.value["output"]


def test_run_tests_passes_only_when_requirements_hold() -> None:
    files = {"/repo/src/app.py": "return 'broken'", "/repo/tests/test_app.py": "requires src/app.py 'fixed'\n"}
    world = World(cwd="/repo")
    world.populate(files=sorted(files.items()))
    _, failing = apply(world, ToolCall("t", "run_tests", "{}"))
    assert failing.value["passed"] is False and failing.value["tests"] == 1
    world.write_text("/repo/src/app.py", "return 'fixed'")
    _, passing = apply(world, ToolCall("t", "run_tests", "{}"))
    assert passing.value == {"passed": True, "tests": 1, "failures": []}


def test_external_tools_honour_idempotency_keys() -> None:
    world = World()
    call = ToolCall("t", "create_ticket", '{"title": "outage", "idempotency_key": "k1"}')
    world, first = apply(world, call)
    world, second = apply(world, call)
    assert first.value == second.value == {"ticket": "tickets-1"}  # the original response, replayed
    assert len(world.ledger("tickets")) == 1
    world, _ = apply(world, ToolCall("u", "create_ticket", '{"title": "outage"}'), idempotency_key="k2")
    world, _ = apply(world, ToolCall("v", "create_ticket", '{"title": "outage"}'))
    assert len(world.ledger("tickets")) == 3


def test_apply_does_not_mutate_its_input_unless_asked() -> None:
    world = World(cwd="/r")
    before = world.state()
    after, _ = apply(world, ToolCall("w", "write_file", '{"path": "x", "content": "1"}'))
    assert world.state() == before and after.read_text("/r/x") == "1"


@pytest.mark.parametrize("raw, message", [("{", "not a valid JSON object"), ("[]", "not a valid JSON object"),
                                          ('{"content": "x"}', "missing or non-string argument 'path'")])
def test_bad_arguments_are_tool_errors(raw: str, message: str) -> None:
    _, obs = apply(World(), ToolCall("w", "write_file", raw))
    assert obs.outcome is Outcome.ERROR and message in (obs.error or "")


def test_catalogue_has_the_issue_tools_with_seed_latencies() -> None:
    required = {"read_file", "write_file", "write_file_atomic", "patch", "search_files", "run_tests", "terminal",
                "web_search", "web_extract", "clarify", "create_ticket", "send_message", "query_service_logs",
                "query_service_metrics", "query_deployment_history", "query_sales_data", "calc_growth_rate",
                "save_daily_report"}
    assert required <= set(BUILTIN)
    import random

    rng = random.Random(0)
    assert [BUILTIN[n].latency.sample(rng) for n in
            ("query_service_logs", "query_service_metrics", "query_deployment_history")] == [3000, 4000, 2000]
    assert BUILTIN["clarify"].declared.interactive
    assert BUILTIN["create_ticket"].declared.side_effect == "external"


def test_declared_resource_keys_resolve_against_the_planner_cwd() -> None:
    keys = BUILTIN["read_file"].declared.resource_keys
    assert keys.compute({"path": "../x/./y"}, "/repo/src") == ("file:/repo/x/y",)
    assert keys.compute({"path": "~/notes"}, "/repo") == ("file:/home/user/notes",)
    assert BUILTIN["search_files"].declared.resource_keys.compute({}, "/repo") == ("file:/repo",)
    assert BUILTIN["terminal"].declared.resource_keys.compute({"command": "ls"}, "/") == ("terminal:session",)


def test_resolving_a_relative_path_reads_the_shared_cwd() -> None:
    sc = scenario([("r", "read_file", {"path": "a.txt"}), ("s", "read_file", {"path": "/repo/a.txt"})],
                  files={"/repo/a.txt": "x"})
    trace = run_named(sc, "serial").trace
    cwd_reads = {e["call"] for e in trace if e["ev"] == "touch" and e["target"] == "session:cwd"}
    assert cwd_reads == {"r"}


def test_v4a_patch_adds_updates_moves_and_deletes() -> None:
    world = World(cwd="/r")
    world.populate(files=[("/r/a.py", "x = 1\ny = 2\n"), ("/r/old.txt", "bye\n"), ("/r/m.py", "k = 0\n")])
    text = ("*** Begin Patch\n*** Update File: a.py\n@@\n x = 1\n-y = 2\n+y = 3\n"
            "*** Add File: new.py\n+print(1)\n*** Delete File: old.txt\n"
            "*** Update File: m.py\n*** Move to: moved.py\n@@\n-k = 0\n+k = 1\n*** End Patch\n")
    world, obs = apply(world, ToolCall("p", "patch", json.dumps({"mode": "v4a", "patch": text})))
    assert obs.outcome is Outcome.OK, obs.error
    assert world.state().file_map == {"/r/a.py": "x = 1\ny = 3\n", "/r/new.py": "print(1)\n", "/r/moved.py": "k = 1\n"}
    broken = json.dumps({"mode": "v4a", "patch": "*** Update File: a.py\n-nope\n"})
    _, bad = apply(world, ToolCall("p", "patch", broken))
    assert bad.outcome is Outcome.ERROR and "does not apply" in (bad.error or "")
