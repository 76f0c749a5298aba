"""The story of a violation never says "no reordering needed" while the run has a race it may follow
from: a divergent world an imported write/patch/read turn leaves takes in the torn reads on the same
file, and a story none of whose steps ran out of order names a race elsewhere in the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import get_scheduler, run
from harness.oracles import check
from harness.oracles.verdict import Violation
from harness.report.explain import explain
from harness.report.story import render, story, story_lines
from harness.scenario import Scenario, scenario_from_data
from harness.transcripts import import_transcript
from tests.transcripts.shapes import SHAPES, Done, kind, transcript
from tests.transcripts.test_fidelity import WRITE_PATCH_READ, WRITE_READ


def _imported(shape: str, calls: list[Done]) -> Scenario:
    imported = import_transcript(kind(shape), transcript(shape, calls), name="t")
    return scenario_from_data(imported.data, "t.toml")


@pytest.mark.parametrize("shape", SHAPES)
def test_the_divergent_world_of_a_torn_patch_tells_the_torn_read_behind_it(shape: str) -> None:
    result = run(_imported(shape, WRITE_PATCH_READ), get_scheduler("parallel"), 1)
    violations = [v for verdict in check(result) for v in verdict.violations]
    world = next(v for v in violations if v.label == "divergent-world")
    assert {v.label for v in violations} == {"torn-read", "divergent-world"}
    # The patch read the truncated file, failed and never wrote: the witness names only the writer.
    assert world.witness["writers"] == ["call_w"]
    told = story(world, result)
    assert told is not None and told.reordered and told.note is None
    assert told.model_order == ("call_w", "call_p", "call_r")
    torn = [s for s in told.steps if s.of == "torn-read"]
    assert [(s.call, s.race, s.deviated) for s in torn if s.race == "read"] == [("call_p", "read", True),
                                                                                ("call_r", "read", True)]
    lines = render(told)
    assert not any("no reordering needed" in line for line in lines)
    assert any(line.endswith("read /config.yaml      <- torn-read: read") and "call_p" in line for line in lines)
    # The why line says the difference is what the torn read left, not that nothing explains it.
    assert world.witness["follows"] == "torn-read"
    why = explain(world, result)
    assert "no lost update or misread explains" not in why
    assert why.endswith("the difference is what the torn-read on it (call_w and call_p) left, not a bug of its own.")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("turn", [WRITE_READ, WRITE_PATCH_READ], ids=["write-read", "write-patch-read"])
def test_no_story_of_a_run_with_a_read_race_says_no_reordering_is_needed(shape: str, turn: list[Done]) -> None:
    scenario = _imported(shape, turn)
    for seed in range(1, 6):
        result = run(scenario, get_scheduler("parallel"), seed)
        violations = [v for verdict in check(result) for v in verdict.violations]
        assert {v.label for v in violations} & {"stale-read", "torn-read"}
        for violation in violations:
            told = story(violation, result, None, violations)
            assert told is None or told.note is None or "no reordering needed" not in told.note
        assert not any("no reordering needed" in line for line in story_lines(violations, result, limit=10))


def test_a_story_in_model_order_names_a_race_elsewhere_in_the_run_and_only_then() -> None:
    result = run(_imported("chat", WRITE_READ), get_scheduler("parallel"), 1)
    violations = [v for verdict in check(result) for v in verdict.violations]
    assert [v.label for v in violations] == ["torn-read"]
    # A finding about another target, naming only the writer: its own steps ran in model order.
    elsewhere = Violation("divergent-world", "m", {"target": "/elsewhere", "expected": None, "final": "x",
                                                   "writers": ["call_w"]})
    told = story(elsewhere, result, None, [*violations, elsewhere])
    assert told is not None and not told.reordered
    assert told.follows == ("torn-read", ("call_w", "call_r"))
    assert told.note == ("no step above ran out of model order, but the torn-read of this run (call_w, call_r) did: "
                         "the divergent-world may follow from that race (see its story), so look there first")
    assert told.to_json()["follows"] == {"label": "torn-read", "calls": ["call_w", "call_r"]}
    # Asked without the run's violations, the story asks the oracles itself.
    assert story(elsewhere, result) == told
    # In a run with no race at all, the note stays: the bug needs no reordering.
    serial = run(_imported("chat", WRITE_READ), get_scheduler("serial"), 1)
    alone = story(elsewhere, serial, None, [elsewhere])
    assert alone is not None and alone.follows is None
    assert alone.note is not None and alone.note.startswith("no reordering needed: only call_w takes part")


def test_the_run_report_prints_the_told_story(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    source = tmp_path / "t.json"
    source.write_text(json.dumps(transcript("chat", WRITE_PATCH_READ)))
    out = tmp_path / "t.toml"
    assert CliRunner().invoke(main, ["import", "openai", str(source), "--out", str(out)]).exit_code == 0
    done = CliRunner().invoke(main, ["run", str(out), "--scheduler", "parallel", "--seed", "2"])
    assert done.exit_code == 1
    assert "story (divergent-world): model order call_w, call_p, call_r" in done.stdout
    assert "no reordering needed" not in done.stdout
