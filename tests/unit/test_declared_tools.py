"""Tools a scenario file declares: metadata kept apart from a behaviour scripted from a small
vocabulary of touch points; what each step does, when, and what the call returns; a declaration that
lies; and the round trip through a reproducer's data."""

from __future__ import annotations

from typing import Any

import pytest

from harness import get_scheduler, run
from harness.oracles import check
from harness.scenario import scenario_from_data
from harness.scenario.dump import scenario_to_data
from tests.helpers import run_named, scenario


def tool(does: list[dict[str, Any]], *, declared: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"does": does, "latency": {"fixed": 100}, "declared": declared or {}, **extra}


def touches(result: Any, call: str) -> list[tuple[int, str, str]]:
    return [(e["t"], e["op"], e["target"].split("\x00")[0]) for e in result.trace
            if e.get("ev") == "touch" and e.get("call") == call]


def labels(result: Any) -> set[str]:
    return {v.label for v in check(result) if not v.ok and v.label}


def test_each_step_acts_at_its_fraction_of_the_latency() -> None:
    sc = scenario([("c", "rmw", {"path": "notes.txt", "line": "two"})], files={"/repo/notes.txt": "one\n"},
                  tools={"rmw": tool([{"op": "read", "path": "{path}", "at": 0.0, "as": "old"},
                                      {"op": "write", "path": "{path}", "content": "{old}{line}\n",
                                       "truncate_at": 0.25, "at": 0.75}])})
    result = run_named(sc, "serial")
    assert touches(result, "c") == [(0, "read", "session:cwd"), (0, "read", "/repo/notes.txt"),
                                    (25, "read", "session:cwd"), (25, "truncate", "/repo/notes.txt"),
                                    (75, "read", "session:cwd"), (75, "write", "/repo/notes.txt")]
    assert dict(result.final.files)["/repo/notes.txt"] == "one\ntwo\n"
    # Without a result template the call returns what its steps bound.
    assert result.results[0].value == {"old": "one\n"}


def test_the_vocabulary_changes_the_world_as_posix_would() -> None:
    does = [
        {"op": "append", "path": "/log", "content": "+{n}"},
        {"op": "write_atomic", "path": "/a", "content": "new"},
        {"op": "rename", "path": "/a", "to": "/b"},
        {"op": "delete", "path": "/gone"},
        {"op": "cd", "path": "/srv", "as": "where"},
        {"op": "ledger", "ledger": "deploys", "key": "{service}", "payload": {"service": "{service}", "n": "{n}"},
         "as": "entry"},
        {"op": "wait", "at": 1.0},
    ]
    sc = scenario([("c", "ops", {"n": 7, "service": "api"})],
                  files={"/log": "start", "/a": "old", "/gone": "x", "/linked": "shared"},
                  world_extra={"dirs": ["/srv"], "hardlinks": [["/linked", "/b"]]},
                  tools={"ops": tool(does, result={"entry": "{entry}", "n": "{n}", "text": "n={n}"})})
    result = run_named(sc, "serial")
    files = dict(result.final.files)
    assert files["/log"] == "start+7"
    assert files["/b"] == "new" and "/a" not in files and "/gone" not in files
    assert files["/linked"] == "shared", "rename replaced the name /b; the other hard link keeps the old file"
    assert result.final.cwd == "/srv"
    (ledger,) = [entries for name, entries in result.final.ledgers if name == "deploys"]
    assert [e.payload for e in ledger] == [{"service": "api", "n": 7}]
    # A template that is one reference keeps the value's type; text around it makes it a string.
    assert result.results[0].value == {"entry": ledger[0].entry_id, "n": 7, "text": "n=7"}


def test_a_missing_argument_or_file_fails_the_call_as_a_real_tool_would() -> None:
    sc = scenario([("no-arg", "q", {}), ("no-file", "q", {"table": "nope"})],
                  tools={"q": tool([{"op": "read", "path": "/db/{table}.csv"}])},
                  check_arguments=False)  # the missing argument is sent on purpose
    first, second = run_named(sc, "serial").results
    assert first.outcome == "error" and first.error == "missing argument 'table'"
    assert second.outcome == "error" and "/db/nope.csv" in (second.error or "")


def test_resource_key_templates_are_computed_from_the_arguments() -> None:
    sc = scenario([("c", "q", {"table": "users", "path": "out.csv"})],
                  tools={"q": tool([], declared={"resource_keys": ["db:{table}", "file:{path}", "lit:{{x}}",
                                                                 "none:{absent}"]})})
    seen: list[tuple[str, ...]] = []

    def capture(batch: Any, ctx: Any) -> Any:
        seen.extend(ctx.resource_keys(call) for call in batch)
        return (yield from get_scheduler("serial")(batch, ctx))

    capture.name = "capture"  # type: ignore[attr-defined]
    run(sc, capture, 1)
    assert seen == [("db:users", "file:/repo/out.csv", "lit:{x}")]


LYING = {
    "status": {"does": [{"op": "read", "path": "/srv/state", "as": "state"}], "latency": {"fixed": 200},
               "declared": {"read_only": True, "side_effect": "none"}},
    # Declared read-only, but it writes: the lie a metadata scheduler trusts.
    "flush": {"does": [{"op": "write", "path": "/srv/state", "content": "flushed", "at": 0.9}],
              "latency": {"fixed": 300}, "declared": {"read_only": True, "side_effect": "none"}},
}


def test_a_tool_whose_declaration_lies_fools_a_metadata_scheduler_and_the_oracles_see_it() -> None:
    calls = [("flush", "flush", {}), ("status", "status", {})]
    lying = scenario(calls, files={"/srv/state": "dirty"}, tools=LYING)
    assert "stale-read" in labels(run_named(lying, "resource_keys"))
    honest_tools = {**LYING, "flush": {**LYING["flush"], "declared": {"read_only": False, "side_effect": "local",
                                                                     "resource_keys": ["file:/srv/state"]}}}
    honest = scenario(calls, files={"/srv/state": "dirty"}, tools=honest_tools)
    assert labels(run_named(honest, "resource_keys")) == set()


def test_a_recorded_result_replaces_the_return_value_and_the_serial_reference_agrees() -> None:
    data = {"name": "t", "world": {"files": {"/x": "content"}},
            "batches": [{"calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "/x"}',
                                    "result": {"recorded": [1, 2]}}]}]}
    sc = scenario_from_data(data)
    for name in ("serial", "parallel"):
        result = run_named(sc, name)
        assert result.results[0].value == {"recorded": [1, 2]}
        assert all(v.ok for v in check(result))
    assert scenario_to_data(sc)["batches"][0]["calls"][0]["result"] == {"recorded": [1, 2]}


@pytest.mark.parametrize("seed", [1, 2, 7])
def test_declared_tools_survive_the_round_trip_through_data(seed: int) -> None:
    sc = scenario([("flush", "flush", {}), ("status", "status", {}), ("x", "read_file", {"path": "/srv/state"})],
                  files={"/srv/state": "dirty"},
                  tools={**LYING, "read_file": {"latency": {"uniform": [10, 90]},
                                                "declared": {"resource_keys": ["file:{path}", "fixed"]}},
                         "flush": {**LYING["flush"], "failure": {"rate": 0.5}, "max_concurrency": 1,
                                   "stops_on_cancel": False, "result": {"done": True}}})
    again = scenario_from_data(scenario_to_data(sc), "<again>")
    assert scenario_to_data(again) == scenario_to_data(sc)
    for name in ("parallel", "resource_keys"):
        assert run_named(sc, name, seed).fingerprint == run_named(again, name, seed).fingerprint
