"""`~` and `~user` through the world's users: tools, planners' path keys, a real planner's
`os.path.expanduser` and reproducers all expand them the same way, and an unknown user is left as
written, as Python leaves it, so opening it fails like any missing path."""

from __future__ import annotations

import os
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.bridges import from_gate, from_plan
from harness.oracles import check
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.world.world import absolute_path, expand_user

WORLD = {"cwd": "/repo", "home": "/home/me", "users": {"alice": "/home/alice"},
         "files": {"/home/alice/notes.md": "- one\n", "/home/me/todo": "x"}}


def scenario(calls: list[tuple[str, str, dict[str, Any]]]) -> Any:
    return scenario_from_data({"name": "users", "world": WORLD, "batches": [
        {"calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls]}]}, "<test>")


@pytest.mark.parametrize(("raw", "expanded"), [
    ("~", "/home/me"), ("~/", "/home/me/"), ("~/a", "/home/me/a"), ("~alice", "/home/alice"),
    ("~alice/a", "/home/alice/a"), ("~me/a", "/home/me/a"), ("~root/a", "/root/a"), ("~nobody/a", "~nobody/a"),
    ("a/~alice", "a/~alice"),
])
def test_expansion_matches_pythons_rules(raw: str, expanded: str) -> None:
    from harness.world.world import default_users

    assert expand_user(raw, "/home/me", default_users("/home/me", {"alice": "/home/alice"})) == expanded


def test_tools_expand_users_and_an_unknown_user_fails_as_a_missing_path() -> None:
    result = run(scenario([("a", "read_file", {"path": "~alice/notes.md"}),
                           ("b", "read_file", {"path": "~nobody/notes.md"}),
                           ("c", "read_file", {"path": "~me/todo"})]), get_scheduler("serial"), 1)
    a, b, c = result.results
    assert a.value == {"path": "/home/alice/notes.md", "content": "- one\n"}
    assert b.outcome == "error" and b.error == "[Errno 2] No such file or directory: '/repo/~nobody/notes.md'"
    assert c.value == {"path": "/home/me/todo", "content": "x"}


EDITS = [("by-tilde", "patch", {"path": "~alice/notes.md", "old": "- one\n", "new": "- one\n- two\n"}),
         ("by-path", "patch", {"path": "/home/alice/notes.md", "old": "- one\n", "new": "- one\n- three\n"})]


def labels(scheduler: Any, seed: int = 1) -> set[str]:
    return {v.label or "" for v in check(run(scenario(EDITS), scheduler, seed)) if not v.ok}


@pytest.mark.parametrize("name", ["resource_keys", "hermes_segments", "hermes_gate"])
def test_path_scoped_policies_see_one_file_behind_two_spellings(name: str) -> None:
    assert all(labels(get_scheduler(name), seed) == set() for seed in (1, 2, 3))


def test_a_planner_that_keys_paths_by_their_text_is_caught() -> None:
    def by_text(calls: list[Any]) -> list[list[Any]]:
        import json

        groups: dict[str, list[Any]] = {}
        for call in calls:
            groups.setdefault(json.loads(call.function.arguments)["path"], []).append(call)
        return [list(calls)] if len(groups) == len(calls) else [[c] for c in calls]

    assert "lost-update" in labels(from_plan(by_text))


def test_a_real_gate_expands_users_through_the_world() -> None:
    seen: list[str] = []

    def gate(calls: list[Any]) -> bool:
        import json

        paths = [os.path.realpath(os.path.expanduser(json.loads(c.function.arguments)["path"])) for c in calls]
        seen.extend(paths)
        return len(set(paths)) == len(paths)

    machine = os.path.expanduser("~alice")  # this machine's answer (no such user: unchanged)
    assert labels(from_gate(gate)) == set()
    assert seen == ["/home/alice/notes.md", "/home/alice/notes.md"]
    assert os.path.expanduser("~alice") == machine, "the machine's password database is back after the call"


def test_planner_paths_and_resource_keys_expand_users() -> None:
    assert absolute_path("~alice/../x", "/repo", "/home/me", {"alice": "/home/alice"}) == "/home/x"
    assert absolute_path("~nobody", "/repo", "/home/me") == "/repo/~nobody"


def test_users_round_trip_and_bad_users_are_load_errors() -> None:
    sc = scenario(EDITS)
    data = scenario_to_data(sc)
    assert data["world"]["users"] == {"alice": "/home/alice"}
    again = scenario_from_data(data)
    assert run(again, get_scheduler("parallel"), 2).fingerprint == run(sc, get_scheduler("parallel"), 2).fingerprint
    for users, field in (("alice", "world.users"), ({"alice": "home/alice"}, 'world.users."alice"'),
                         ({"a/b": "/x"}, 'world.users."a/b"')):
        with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
            scenario_from_data({"name": "t", "world": {"users": users},
                                "batches": [{"calls": [{"id": "a", "name": "read_file"}]}]}, "f.toml")
