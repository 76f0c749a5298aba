"""Imported transcripts never mask a race: a call of a tool whose behaviour is known computes its
result from the simulated world, and the transcript's result is only an expectation, checked in the
serial reference run (a fidelity warning when it is not reproduced, never a verdict on a scheduler).
Every test runs on the three transcript shapes (Chat Completions, Responses, Anthropic)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness import get_scheduler, run
from harness.cli.transcripts import import_command
from harness.model import Outcome
from harness.oracles import check
from harness.scenario import ScenarioError, load_scenario, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.transcripts import fidelity, import_transcript
from tests.transcripts.shapes import SHAPES, Done, kind, transcript

#: What the mock tools return for these calls when they run alone in model order on an empty world.
WROTE = json.dumps({"path": "/config.yaml", "bytes_written": 12})
PATCHED = json.dumps({"path": "/config.yaml", "replacements": 1})

#: One turn that writes a file and reads it back, and one that also patches it in between; the
#: recorded results are what production returned, which the serial semantics reproduce.
WRITE_READ = [Done("call_w", "write_file", {"path": "config.yaml", "content": "timeout: 60\n"}, WROTE),
              Done("call_r", "read_file", {"path": "config.yaml"}, "timeout: 60\n")]
WRITE_PATCH_READ = [Done("call_w", "write_file", {"path": "config.yaml", "content": "timeout: 30\n"}, WROTE),
                    Done("call_p", "patch", {"path": "config.yaml", "old_string": "timeout: 30",
                                             "new_string": "timeout: 60"}, PATCHED),
                    Done("call_r", "read_file", {"path": "config.yaml"}, "timeout: 60\n")]
TURNS = {"write-read": WRITE_READ, "write-patch-read": WRITE_PATCH_READ}

READ_RACES = {"stale-read", "torn-read"}


def _import(tmp_path: Path, shape: str, calls: list[Done], *extra: str) -> tuple[Path, list[str]]:
    """Import through the command, as a user does: the scenario file and the stderr lines."""
    source = tmp_path / f"{shape}.json"
    source.write_text(json.dumps(transcript(shape, calls)))
    out = tmp_path / f"{shape}.toml"
    done = CliRunner().invoke(import_command, [kind(shape), str(source), "--out", str(out), *extra])
    assert done.exit_code == 0, done.stderr
    return out, done.stderr.splitlines()


def _flat(text: str) -> str:
    """Report text with its line wrapping undone (the width depends on the paths in it)."""
    return " ".join(text.split())


def _labels(result: Any) -> set[str]:
    return {v.label for verdict in check(result) for v in verdict.violations}


@pytest.mark.parametrize("turn", sorted(TURNS))
@pytest.mark.parametrize("shape", SHAPES)
def test_a_write_and_a_read_of_one_file_race_under_parallel_and_pass_under_serial(tmp_path: Path, shape: str,
                                                                                  turn: str) -> None:
    path, stderr = _import(tmp_path, shape, TURNS[turn])
    assert not [line for line in stderr if "fidelity" in line], stderr  # production agrees with model order
    data = tomllib.loads(path.read_text())
    assert all("recorded" in call and "result" not in call for call in data["batches"][0]["calls"])
    scenario = load_scenario(path)
    assert fidelity.check(scenario) == []
    seeds = range(1, 6)
    # Parallel: the read runs while the write is under way, and its value, computed from the world, shows it.
    races = [_labels(run(scenario, get_scheduler("parallel"), seed)) for seed in seeds]
    assert any(labels & READ_RACES for labels in races), races
    reads = [run(scenario, get_scheduler("parallel"), seed).results[-1] for seed in seeds]
    assert any(r.value != {"path": "/config.yaml", "content": "timeout: 60\n"} for r in reads)
    # Serial: model order, nothing to find; the read returns what production recorded.
    for seed in seeds:
        result = run(scenario, get_scheduler("serial"), seed)
        assert _labels(result) == set()
        assert result.results[-1].value == {"path": "/config.yaml", "content": "timeout: 60\n"}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_recorded_read_the_world_does_not_reproduce_is_a_fidelity_warning_naming_the_call(tmp_path: Path,
                                                                                         shape: str) -> None:
    stale = [WRITE_READ[0], Done("call_r", "read_file", {"path": "config.yaml"}, "timeout: 30\n")]
    path, stderr = _import(tmp_path, shape, stale)
    line = ('harness: warning: fidelity: call_r (read_file, turn-1) returned "timeout: 30\\n" in production; the '
            'serial reference run computes {"content": "timeout: 60\\n", "path": "/config.yaml"}')
    assert [x for x in stderr if "fidelity" in x] == [
        line, "harness: warning: fidelity: the serial reference run (every call alone, in model order, from the "
              "scenario's world) does not reproduce 1 production result: the scenario's world (add the files "
              "production had to [world]), the mapping or the tool does not model what happened; a warning about "
              "the scenario, not a verdict on a scheduler"]
    # At run time: in the header of the text report and in the JSON; a serial run still passes (exit 0).
    from harness.cli import main

    done = CliRunner().invoke(main, ["run", str(path), "--scheduler", "serial", "--seed", "3"])
    assert done.exit_code == 0, done.output
    header = _flat(done.stdout.split("timeline")[0])
    assert "recorded 2 calls carry a production result as an expectation" in header
    assert "1 disagrees" in header
    assert "fidelity call_r (read_file, turn-1) returned" in header and '"timeout: 30\\n"' in header
    done = CliRunner().invoke(main, ["run", str(path), "--scheduler", "serial", "--format", "json"])
    document = json.loads(done.stdout)
    assert document["passed"] is True
    (disagreement,) = document["fidelity"]["disagreements"]
    assert disagreement["call"] == "call_r"
    assert disagreement["recorded"] == {"value": "timeout: 30\n", "error": None}
    assert disagreement["computed"]["value"] == {"path": "/config.yaml", "content": "timeout: 60\n"}
    assert document["fidelity"]["recorded"] == ["call_w", "call_r"] and document["fidelity"]["fixed"] == []


def test_a_scenario_without_production_results_has_no_fidelity_section() -> None:
    from harness import find_scenario
    from harness.report.run_json import run_to_json

    result = run(find_scenario("edit-then-test"), get_scheduler("serial"), 1)
    assert run_to_json(result, version="x")["fidelity"] is None
    assert fidelity.of(result.scenario) is None


def test_anthropic_error_results_are_expected_errors() -> None:
    """Only Anthropic marks a failed result: an expected error agrees with any error the tool computes
    (the wording is the runtime's, not the mock's), and disagrees with a success."""
    missing = Done("call_r", "read_file", {"path": "nowhere.txt"}, "Error: file not found", error=True)
    imported = import_transcript("anthropic", transcript("anthropic", [missing]), name="x")
    (row,) = imported.data["batches"][0]["calls"]
    assert row["recorded_error"] == "Error: file not found" and "failure" not in row
    assert imported.fidelity == ()
    present = [WRITE_READ[0], Done("call_r", "read_file", {"path": "config.yaml"}, "Error: busy", error=True)]
    imported = import_transcript("anthropic", transcript("anthropic", present), name="x")
    (disagreement,) = imported.fidelity
    assert disagreement.call == "call_r" and disagreement.computed.outcome is Outcome.OK
    assert 'returned the error "Error: busy" in production' in disagreement.line()
    # OpenAI has no error flag: the same text is an expected value, which an error does not reproduce.
    imported = import_transcript("openai", transcript("chat", [missing]), name="x")
    assert imported.data["batches"][0]["calls"][0]["recorded"] == "Error: file not found"
    (disagreement,) = imported.fidelity
    assert disagreement.computed.outcome is Outcome.ERROR


@pytest.mark.parametrize("shape", SHAPES)
def test_tools_of_unknown_behaviour_keep_the_transcript_result_and_the_header_says_so(tmp_path: Path,
                                                                                      shape: str) -> None:
    calls = [Done("q1", "query_db", {"sql": "select 1"}, '[{"one": 1}]'), WRITE_READ[1]]
    path, stderr = _import(tmp_path, shape, calls)
    assert any("1 tool of unknown behaviour given a generic spec: query_db; a generic tool returns the transcript's "
               "result and touches nothing in the simulated world, so a stale or torn read or a lost update through "
               "it cannot be seen" in line for line in stderr)
    data = tomllib.loads(path.read_text())
    assert [sorted(set(c) - {"id", "name", "arguments"}) for c in data["batches"][0]["calls"]] == [
        ["result"], ["recorded"]]
    scenario = load_scenario(path)
    result = run(scenario, get_scheduler("parallel"), 1)
    assert result.results[0].value == '[{"one": 1}]'  # the transcript's, as the tool does nothing of its own
    from harness.cli import main

    header = _flat(CliRunner().invoke(main, ["run", str(path)]).stdout.split("timeline")[0])
    assert "fixed 1 call returns a fixed result (result = ...), not a computed one: a stale or torn read by it " \
           "cannot be seen (q1)" in header


def test_recorded_results_load_dump_and_conflict_with_a_fixed_result() -> None:
    base: dict[str, Any] = {"name": "s", "batches": [{"calls": [
        {"id": "a", "name": "read_file", "arguments": '{"path": "/x"}', "recorded": "x"},
        {"id": "b", "name": "read_file", "arguments": '{"path": "/y"}', "recorded_error": "no such file"}]}]}
    scenario = scenario_from_data(base, "s.toml")
    assert scenario.recorded["a"].value == "x" and not scenario.recorded["a"].failed
    assert scenario.recorded["b"].error == "no such file"
    assert "a" not in scenario.catalogue.results  # an expectation is never the call's value
    dumped = scenario_to_data(scenario)["batches"][0]["calls"]
    assert (dumped[0]["recorded"], dumped[1]["recorded_error"]) == ("x", "no such file")
    assert scenario_from_data(scenario_to_data(scenario), "again").recorded == scenario.recorded
    both = json.loads(json.dumps(base))
    both["batches"][0]["calls"][0]["result"] = "y"
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(both, "s.toml")
    assert str(info.value).startswith("s.toml: batches[0].calls[0].recorded: expected no recorded next to result: ")
    both = json.loads(json.dumps(base))
    both["batches"][0]["calls"][1]["recorded"] = "y"
    with pytest.raises(ScenarioError, match=r"calls\[1\]\.recorded_error: expected no recorded_error next to "
                                            r"recorded"):
        scenario_from_data(both, "s.toml")
    bad = json.loads(json.dumps(base))
    bad["batches"][0]["calls"][1]["recorded_error"] = 3
    with pytest.raises(ScenarioError, match=r"calls\[1\]\.recorded_error: expected a string, got 3"):
        scenario_from_data(bad, "s.toml")


@pytest.mark.parametrize(("recorded", "computed", "agrees"), [
    ("timeout: 60\n", {"path": "/c", "content": "timeout: 60\n"}, True),  # a text field of the value
    ('{"path": "/c", "bytes_written": 3}', {"path": "/c", "bytes_written": 3}, True),  # its JSON text
    ("3", 3, True),
    ("true", 1, False),  # JSON true is not 1
    ("/c", {"path": "/c", "n": 1}, True),
    ("timeout: 6", {"path": "/c", "content": "timeout: 60\n"}, False),
    ('{"path": "/c"}', {"path": "/c", "bytes_written": 3}, False),
    ("", None, False),
])
def test_what_agrees_with_a_recorded_value(recorded: str, computed: Any, agrees: bool) -> None:
    from harness.scenario.spec import Recorded
    from harness.tools.semantics import Observation

    assert fidelity.agrees(Recorded(recorded), Observation(Outcome.OK, computed)) is agrees
    assert fidelity.agrees(Recorded(recorded), Observation(Outcome.ERROR, error="x")) is False
    assert fidelity.agrees(Recorded(error="e"), Observation(Outcome.ERROR, error="x")) is True
    assert fidelity.agrees(Recorded(error="e"), Observation(Outcome.OK, computed)) is False
