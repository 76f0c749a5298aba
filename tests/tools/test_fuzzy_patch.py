"""hermes' fuzzy matching for patch (`match = "fuzzy"`): the strategy chain, and the failure it lets
through: a patch applied to the wrong place after a concurrent edit (issue 28 item 1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Outcome, ToolCall
from harness.oracles import check
from harness.scenario.dump import scenario_to_data
from harness.scenario.load import scenario_from_data
from harness.tools.catalogue import BUILTIN
from harness.tools.fuzzy import fuzzy_replace
from harness.tools.options import configure
from harness.tools.semantics import apply
from harness.world.world import World


@pytest.mark.parametrize(("content", "old", "strategy"), [
    ("a\nb = 1\n", "b = 1", "exact"),
    ("def f():\n    x = 1\n    return x\n", "x = 1\n  return x", "line_trimmed"),
    ("x  =  1\ny = 2\n", "x = 1", "whitespace_normalized"),
    ("if a:\n\tx = 1\n\ty = 2\n", "x = 1\ny = 2", "line_trimmed"),
    ("x = 1\ny = 2\n", "x = 1\\ny = 2", "escape_normalized"),
    ("say \u201chi\u201d\n", 'say "hi"', "unicode_normalized"),
    ("begin\nalpha beta\nend\n", "begin\nalpha betta\nend", "block_anchor"),
    ("pool = 10\ntimeout = 30\n", "pool = 11\ntimeout = 31", "context_aware"),
])
def test_each_strategy_of_the_chain_finds_what_the_stricter_ones_do_not(content: str, old: str, strategy: str) -> None:
    patched, count, used, error = fuzzy_replace(content, old, "NEW", False)
    assert (count, used, error) == (1, strategy, None)
    assert "NEW" in patched


def test_ambiguity_and_absence_are_errors_and_similarity_never_replaces_many() -> None:
    assert fuzzy_replace("x = 1\nx = 1\n", "x = 1", "y", False)[3].startswith("Found 2 matches")  # type: ignore[union-attr]
    assert fuzzy_replace("x = 1\nx = 1\n", "x = 1", "y", True)[:2] == ("y\ny\n", 2)
    many = "a\nvalue one\nc\na\nvalue two\nc\n"
    assert "approximate matches" in (fuzzy_replace(many, "a\nvalue onx\nc", "z", True)[3] or "")
    assert fuzzy_replace("abc\n", "zzz", "y", False)[3] == "Could not find a match for old_string in the file"


def test_replace_mode_matches_fuzzily_only_with_the_option() -> None:
    world = World(cwd="/r")
    world.populate(dirs=["/r"], files=[("/r/a.py", "def f():\n    return  1\n")])
    call = ToolCall("p", "patch", json.dumps({"path": "a.py", "old_string": "return 1", "new_string": "return 2"}))
    assert apply(world, call, BUILTIN)[1].outcome is Outcome.ERROR
    fuzzy = BUILTIN.replace_tool(configure(BUILTIN["patch"], {"match": "fuzzy"}))
    after, seen = apply(world, call, fuzzy)
    assert seen.outcome is Outcome.OK and seen.value["strategy"] == "whitespace_normalized"  # type: ignore[index,call-overload]
    assert after.read_text("/r/a.py") == "def f():\n    return 2\n"


def _violations(result: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(v.label, v.witness) for verdict in check(result) for v in verdict.violations]


def test_after_a_concurrent_edit_the_fuzzy_patch_lands_on_the_wrong_section_and_is_caught() -> None:
    scenario = find_scenario("hermes-patch-fuzzy")
    result = run(scenario, get_scheduler("parallel"), 2)
    timeout = next(r for r in result.results if r.call_id == "timeout")
    assert timeout.outcome is Outcome.OK  # the patch says it worked...
    text = result.final.file_map["/repo/service.ini"]
    assert text == "[api]\nconnections = 10\ntimeout = 30\n[web]\npool = 10\ntimeout = 45\n"  # ...on [web]
    ((label, witness),) = _violations(result)
    assert label == "future-read" and witness["writer"] == "rename" and witness["call"] == "timeout"
    for policy in ("serial", "hermes_segments"):
        assert _violations(run(scenario, get_scheduler(policy), 2)) == []


def test_with_exact_matching_the_same_race_fails_the_patch_loudly() -> None:
    data = scenario_to_data(find_scenario("hermes-patch-fuzzy"))
    del data["tools"]["patch"]["match"]
    result = run(scenario_from_data(data), get_scheduler("parallel"), 2)
    timeout = next(r for r in result.results if r.call_id == "timeout")
    assert timeout.outcome is Outcome.ERROR and "Could not apply hunk" in (timeout.error or "")
    assert "timeout = 45" not in result.final.file_map["/repo/service.ini"]
