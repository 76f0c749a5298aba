"""hermes' file internals as options of the catalogue's tools: read_file's dedup cache, write_file's
staleness check and force, atomic writes of write_file and patch (issue 28 item 1)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.model import Outcome, ToolCall
from harness.oracles import check
from harness.scenario.dump import scenario_to_data
from harness.scenario.load import scenario_from_data
from harness.scenario.reader import ScenarioError
from harness.tools.catalogue import BUILTIN, Catalogue
from harness.tools.hermes_files import UNCHANGED
from harness.tools.options import configure
from harness.tools.semantics import Observation, apply
from harness.world.world import World


def _catalogue(**options: dict[str, Any]) -> Catalogue:
    catalogue = BUILTIN
    for tool, chosen in options.items():
        catalogue = catalogue.replace_tool(configure(catalogue[tool], chosen))
    return catalogue


def _world() -> World:
    world = World(cwd="/repo")
    world.populate(dirs=["/repo"], files=[("/repo/a.txt", "one\n")], symlinks=[("/repo/link.txt", "a.txt")])
    return world


def _do(world: World, catalogue: Catalogue, name: str, **arguments: Any) -> Observation:
    return apply(world, ToolCall("c", name, json.dumps(arguments)), catalogue, in_place=True)[1]


def _labels(result: Any, oracle: str = "serializability") -> list[str]:
    return [v.label for verdict in check(result) if verdict.oracle == oracle for v in verdict.violations]


# -- read_file's dedup cache ---------------------------------------------------------------------


def test_a_second_read_of_an_unchanged_file_answers_unchanged_and_any_write_makes_it_read_again() -> None:
    world, catalogue = _world(), _catalogue(read_file={"dedup": True})
    assert _do(world, catalogue, "read_file", path="a.txt").value == {"path": "/repo/a.txt", "content": "one\n"}
    again = _do(world, catalogue, "read_file", path="link.txt")  # keyed by the resolved path, as Path.resolve()
    assert again.value is not None and again.value["status"] == "unchanged"  # type: ignore[index,call-overload]
    assert again.value["message"] == UNCHANGED  # type: ignore[index,call-overload]
    # another range is another key
    assert _do(world, catalogue, "read_file", path="a.txt", offset=1, limit=1).value["content"] == "one\n"  # type: ignore[index,call-overload]
    # the session's own write forgets the entries of its file
    _do(world, catalogue, "write_file", path="a.txt", content="two\n")
    assert _do(world, catalogue, "read_file", path="a.txt").value["content"] == "two\n"  # type: ignore[index,call-overload]
    # a write it did not make moves the mtime: read again
    world.write_text("/repo/a.txt", "three\n")
    assert _do(world, catalogue, "read_file", path="a.txt").value["content"] == "three\n"  # type: ignore[index,call-overload]


def test_a_write_within_the_cached_mtime_goes_unseen() -> None:
    """The race itself: content changed, mtime not; the cache vouches for the old copy."""
    world, catalogue = _world(), _catalogue(read_file={"dedup": True})
    _do(world, catalogue, "read_file", path="a.txt")
    stamp = world.mtime("/repo/a.txt")
    world.write_text("/repo/a.txt", "changed\n")
    world.fs.resolve("/repo/a.txt").st_mtime = stamp  # a write in the same mtime tick
    assert _do(world, catalogue, "read_file", path="a.txt").value["status"] == "unchanged"  # type: ignore[index,call-overload]


def test_without_the_option_read_file_is_the_catalogues() -> None:
    world = _world()
    for _ in range(2):
        assert _do(world, BUILTIN, "read_file", path="a.txt").value == {"path": "/repo/a.txt", "content": "one\n"}
    assert world.memory == {}


def test_writes_outside_a_run_each_move_the_mtime_deterministically() -> None:
    stamps = []
    for _ in range(2):
        world = _world()
        world.write_text("/repo/a.txt", "x")
        first = world.mtime("/repo/a.txt")
        world.write_text("/repo/a.txt", "y")
        stamps.append((first, world.mtime("/repo/a.txt")))
    assert stamps[0] == stamps[1] and stamps[0][0] < stamps[0][1]


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_the_cache_answers_unchanged_after_a_siblings_write_under_hermes_gate_and_serial_passes(seed: int) -> None:
    scenario = find_scenario("hermes-read-cache")
    gate = run(scenario, get_scheduler("hermes_gate"), seed)
    verdict = next(v for v in check(gate) if v.oracle == "serializability")
    (violation,) = verdict.violations
    assert violation.label == "stale-read"
    assert violation.witness["call"] == "confirm" and violation.witness["writer"] == "tune"
    assert violation.witness["cached"] is True
    confirm = next(r for r in gate.results if r.call_id == "confirm")
    assert confirm.value["status"] == "unchanged"  # type: ignore[index,call-overload]
    assert gate.final.file_map["/srv/app/releases/r42/config.ini"].startswith("pool = 50")
    assert any(e["ev"] == "touch" and e["op"] == "cached" for e in gate.trace)
    assert _labels(run(scenario, get_scheduler("serial"), seed)) == []
    # The story names the read whose copy the cache kept, running beside the write: a reordering, which
    # running the calls one at a time cures (it said "no reordering needed ... no cure" without it).
    assert violation.witness["cached_by"] == "look"
    from harness.report.story import story

    told = story(violation, gate)
    assert told is not None and told.reordered
    assert {step["call"] for step in told.to_json()["steps"]} >= {"look", "tune", "confirm"}


def test_without_the_cache_the_same_race_is_harmless() -> None:
    data = scenario_to_data(find_scenario("hermes-read-cache"))
    del data["tools"]["read_file"]["dedup"]
    plain = scenario_from_data(data)
    assert _labels(run(plain, get_scheduler("hermes_gate"), 1)) == []


def test_explore_finds_the_stale_cached_read_with_default_settings() -> None:
    result = CliRunner().invoke(main, ["explore", "hermes-read-cache", "--scheduler", "hermes_gate", "--no-save",
                                       "--format", "json"])
    found = json.loads(result.stdout)
    assert found["label"] == "stale-read" and found["witness"]["cached"] is True, found
    serial = CliRunner().invoke(main, ["explore", "hermes-read-cache", "--scheduler", "serial", "--no-save",
                                       "--format", "json", "--runs", "30"])
    assert serial.exit_code == 0, serial.stdout


# -- write_file: staleness check and force ---------------------------------------------------------


def test_write_file_refuses_a_file_changed_since_it_was_read_unless_forced() -> None:
    catalogue = _catalogue(write_file={"stale_check": True}, read_file={"track_reads": True})
    world = _world()
    assert _do(world, catalogue, "write_file", path="a.txt", content="never read\n").outcome is Outcome.OK
    _do(world, catalogue, "read_file", path="a.txt")
    world.write_text("/repo/a.txt", "someone else\n")
    refused = _do(world, catalogue, "write_file", path="link.txt", content="mine\n")
    assert refused.outcome is Outcome.ERROR and "modified since you last read it" in (refused.error or "")
    assert world.read_text("/repo/a.txt") == "someone else\n"
    assert _do(world, catalogue, "write_file", path="a.txt", content="mine\n", force=True).outcome is Outcome.OK
    # its own write refreshed the stamp: writing again is no overwrite of someone else's change
    assert _do(world, catalogue, "write_file", path="a.txt", content="again\n").outcome is Outcome.OK


def test_without_stale_check_write_file_overwrites() -> None:
    catalogue = _catalogue(read_file={"track_reads": True})
    world = _world()
    _do(world, catalogue, "read_file", path="a.txt")
    world.write_text("/repo/a.txt", "someone else\n")
    assert _do(world, catalogue, "write_file", path="a.txt", content="mine\n").outcome is Outcome.OK


def test_a_scenarios_stale_check_tracks_its_reads_and_round_trips() -> None:
    data = {"name": "stale", "world": {"cwd": "/r", "files": {"/r/a": "x"}},
            "tools": {"write_file": {"stale_check": True}},
            "batches": [{"calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "a"}'}]},
                        {"calls": [{"id": "w", "name": "write_file", "arguments": '{"path": "a", "content": "y"}'}]}]}
    scenario = scenario_from_data(data)
    assert dict(scenario.catalogue["read_file"].options) == {"track_reads": True}
    again = scenario_from_data(scenario_to_data(scenario))
    assert again.catalogue["write_file"] == scenario.catalogue["write_file"]
    assert run(again, get_scheduler("serial"), 3).fingerprint == run(scenario, get_scheduler("serial"), 3).fingerprint


# -- write modes ----------------------------------------------------------------------------------


def test_atomic_writes_resolve_symlinks_and_break_hard_links() -> None:
    for tool, arguments in (("write_file", {"content": "new\n"}),
                            ("patch", {"old_string": "one", "new_string": "new"})):
        world = _world()
        world.hardlink("/repo/a.txt", "/repo/hard.txt")
        catalogue = _catalogue(**{tool: {"write_mode": "atomic"}})
        assert _do(world, catalogue, tool, path="link.txt", **arguments).outcome is Outcome.OK
        state = world.state()
        assert dict(state.symlinks) == {"/repo/link.txt": "a.txt"}  # the link stays, its target is new
        assert world.read_text("/repo/a.txt") == "new\n" and world.read_text("/repo/hard.txt") == "one\n"
        assert state.hardlinks == ()
        in_place = _world()
        in_place.hardlink("/repo/a.txt", "/repo/hard.txt")
        _do(in_place, BUILTIN, tool, path="link.txt", **arguments)
        assert in_place.read_text("/repo/hard.txt") == "new\n"  # in place: every name of the file changes


@pytest.mark.parametrize("policy", ["hermes_gate", "hermes_segments"])
def test_hermes_atomic_patches_of_two_hard_linked_names_are_no_lost_update(policy: str) -> None:
    for seed in (1, 7, 2026):
        assert _labels(run(find_scenario("hardlink-alias-hermes"), get_scheduler(policy), seed)) == []
        assert "lost-update" in _labels(run(find_scenario("hardlink-alias"), get_scheduler(policy), seed))


def test_options_are_validated_with_the_file_and_field_named() -> None:
    base = {"name": "x", "world": {"files": {"/a": "x"}},
            "batches": [{"calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "/a"}'}]}]}
    with pytest.raises(ScenarioError) as wrong_value:
        scenario_from_data({**base, "tools": {"write_file": {"write_mode": "atomik"}}}, "s.toml")
    assert 's.toml: tools.write_file.write_mode: expected one of "in-place", "atomic"' in str(wrong_value.value)
    with pytest.raises(ScenarioError) as not_bool:
        scenario_from_data({**base, "tools": {"read_file": {"dedup": 1}}}, "s.toml")
    assert "tools.read_file.dedup: expected one of false, true" in str(not_bool.value)
    with pytest.raises(ScenarioError) as no_option:
        scenario_from_data({**base, "tools": {"terminal": {"dedup": True}}}, "s.toml")
    assert "tools.terminal.dedup" in str(no_option.value)
