"""`terminal(background=True)`: the call returns at once, the process runs on and touches the world
later, and those touches are the call's (issue 28 item 1)."""

from __future__ import annotations

import json
from typing import Any

from harness import get_scheduler, run
from harness.model import Outcome, ToolCall
from harness.oracles import check
from harness.report.run_text import describe_event
from harness.scenario.load import scenario_from_data
from harness.tools.catalogue import BUILTIN
from harness.tools.semantics import apply
from harness.world.world import World


def _scenario(background: bool) -> Any:
    arguments = {"command": "echo done > out.log", **({"background": True} if background else {})}
    return scenario_from_data({
        "name": "background-job", "world": {"cwd": "/repo", "files": {"/repo/out.log": "old\n"}},
        "tools": {"terminal": {"latency": {"fixed": 1000}}, "read_file": {"latency": {"fixed": 100}}},
        "batches": [{"calls": [{"id": "job", "name": "terminal", "arguments": json.dumps(arguments)}]},
                    {"calls": [{"id": "look", "name": "read_file", "arguments": '{"path": "out.log"}'}]}]})


def _violations(result: Any) -> list[tuple[str, str, dict[str, Any]]]:
    return [(verdict.oracle, v.label, v.witness) for verdict in check(result) for v in verdict.violations]


def test_a_background_command_returns_at_once_and_its_later_write_is_its_own() -> None:
    result = run(_scenario(background=True), get_scheduler("serial"), 1)
    job = next(r for r in result.results if r.call_id == "job")
    assert job.outcome is Outcome.OK and job.end_ms == job.start_ms == 0
    assert job.value == {"output": "Background process started", "session_id": "proc_job", "exit_code": 0}
    write = next(e for e in result.trace if e["ev"] == "touch" and e["op"] == "write")
    assert write["call"] == "job" and write["t"] == 1000  # after its result, after the next turn's read
    assert result.final.file_map["/repo/out.log"] == "done\n"
    (finding,) = _violations(result)
    assert finding[:2] == ("serializability", "stale-read")
    assert finding[2]["call"] == "look" and finding[2]["writer"] == "job"  # no orphaned-call: it asked to run on
    kinds = [e["ev"] for e in result.trace if e.get("call") == "job"]
    assert kinds.index("background") < kinds.index("touch")
    assert describe_event(next(e for e in result.trace if e["ev"] == "background")).startswith("result reported")


def test_in_the_foreground_the_same_turns_pass() -> None:
    assert _violations(run(_scenario(background=False), get_scheduler("serial"), 1)) == []


def test_the_serial_replay_observes_the_background_result_and_the_whole_effect() -> None:
    world = World(cwd="/repo")
    world.populate(dirs=["/repo"], files=[("/repo/out.log", "old\n")])
    call = ToolCall("job", "terminal", json.dumps({"command": "echo done > out.log", "background": True}))
    after, observation = apply(world, call, BUILTIN)
    assert observation.value == {"output": "Background process started", "session_id": "proc_job", "exit_code": 0}
    assert after.read_text("/repo/out.log") == "done\n"
