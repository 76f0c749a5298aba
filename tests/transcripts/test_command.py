"""The `import` command and end to end: imported transcripts are scenarios that load and run, the
scheduler sees exactly what the model sent, and the transcript's results come back from the run."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness import get_scheduler, run
from harness.cli.transcripts import import_command
from harness.model import Batch, CallResult, Outcome
from harness.scenario import load_scenario
from harness.scheduling.context import SchedulerContext
from harness.transcripts import fidelity, import_file, to_toml

DATA = Path(__file__).parent / "data"

#: (kind, transcript, map file or None): every test transcript that needs no generic spec.
MAPPED_ONLY = [
    ("openai", "openai_chat.json", None),
    ("openai", "openai_responses.json", "openai_map.toml"),
    ("anthropic", "anthropic_ops.json", "anthropic_map.json"),
]
WITH_GENERIC = [("anthropic", "anthropic_coding.json", "anthropic_coding_map.toml")]


class Recording:
    """Delegates to a built-in policy and keeps every call exactly as the scheduler received it."""

    name = "recording"

    def __init__(self, inner: str) -> None:
        self.inner = get_scheduler(inner)
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        self.seen.extend((call.id, call.name, call.arguments) for call in batch)
        results: list[CallResult] = yield from self.inner(batch, ctx)
        return results


def _write(tmp_path: Path, kind: str, transcript: str, map_file: str | None) -> Path:
    imported = import_file(kind, DATA / transcript, map_path=DATA / map_file if map_file else None)
    path = tmp_path / f"{Path(transcript).stem}.toml"
    path.write_text(to_toml(imported.data))
    return path


def _args(kind: str, transcript: str, map_file: str | None, *extra: str) -> list[str]:
    return [kind, str(DATA / transcript), *(["--map", str(DATA / map_file)] if map_file else []), *extra]


@pytest.mark.parametrize(("kind", "transcript", "map_file"), MAPPED_ONLY + WITH_GENERIC)
@pytest.mark.parametrize("policy", ["serial", "parallel"])
def test_imported_scenarios_load_and_run(tmp_path: Path, kind: str, transcript: str, map_file: str | None,
                                         policy: str) -> None:
    path = _write(tmp_path, kind, transcript, map_file)
    scenario = load_scenario(path)
    recorder = Recording(policy)
    result = run(scenario, recorder, seed=1)
    assert result.status.value == "completed"
    # What the scheduler received is what the transcript's model sent, id for id and byte for byte.
    data = tomllib.loads(path.read_text())
    assert recorder.seen == [(c["id"], c["name"], c["arguments"]) for b in data["batches"] for c in b["calls"]]
    assert [r.call_id for r in result.results] == [c["id"] for b in data["batches"] for c in b["calls"]]


def test_malformed_arguments_reach_the_scheduler_raw_and_results_come_from_the_tools(tmp_path: Path) -> None:
    messages = json.loads((DATA / "openai_chat.json").read_text())["messages"]
    broken = messages[6]["tool_calls"][1]["function"]["arguments"]
    assert not broken.endswith("}")
    scenario = load_scenario(_write(tmp_path, "openai", "openai_chat.json", None))
    recorder = Recording("parallel")
    result = run(scenario, recorder, seed=1)
    assert ("call_Hc1mTz8aYd4GkU9j", "send_message", broken) in recorder.seen
    by_id = {r.call_id: r for r in result.results}
    # The runtime cannot parse it: an error result, as a real runtime would report.
    assert by_id["call_Hc1mTz8aYd4GkU9j"].outcome is Outcome.ERROR
    # Catalogue tools: the values are the mock tools' own, computed in the run, not the transcript's.
    assert by_id["call_Lq3YhM2nX0aTg7c1"].value == {
        "tool": "query_service_logs", "service": "checkout", "minutes": 30, "error_count": 236,
        "main_error": "Database connection pool exhausted"}
    assert by_id["call_Qe7rNb3vXs5LpW2o"].value == {"ticket": "tickets-1"}
    assert scenario.recorded["call_Qe7rNb3vXs5LpW2o"].value == "Created PAY-4411"
    # Parallel overlaps the three queries of turn 1; serial does not.
    serial = run(scenario, get_scheduler("serial"), seed=1)
    assert result.makespan_ms < serial.makespan_ms


def test_an_is_error_result_of_a_known_tool_is_an_expectation_the_world_is_checked_against(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, "anthropic", "anthropic_ops.json", "anthropic_map.json"))
    result = run(scenario, get_scheduler("parallel"), seed=1)
    by_id = {r.call_id: r for r in result.results}
    restart = by_id["toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1"]
    # The mock restarts the service (its behaviour, in the world); production was denied.
    assert restart.outcome is Outcome.OK
    assert scenario.recorded["toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1"].error == (
        "permission denied: restart requires the oncall-admin role")
    disagreements = {d.call: d for d in fidelity.check(scenario)}
    assert disagreements["toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1"].line() == (
        "fidelity: toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1 (restart_service, turn-2) returned the error \"permission denied: "
        "restart requires the oncall-admin role\" in production; the serial reference run computes "
        '{"operation": "operations-1", "service": "search-api", "status": "restarted"}')


def test_generic_tools_return_the_transcript_result(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, "anthropic", "anthropic_coding.json", "anthropic_coding_map.toml"))
    assert scenario.catalogue["query_db"].declared.read_only is False
    result = run(scenario, get_scheduler("parallel"), seed=1)
    by_id = {r.call_id: r for r in result.results}
    assert by_id["toolu_01Hx8Kc3"].value == '[{"count": 3}]'
    assert by_id["toolu_01Hx8Ke1"].value == "job unit-tests queued (#8812)"


def test_raw_arguments_survive_the_toml_round_trip_exactly(tmp_path: Path) -> None:
    awkward = ['{"text": "tab\\there", "quote": "\\"", "nl": "a\nb"', '{"emoji": "🚀", "nul": "\\u0000"}',
               "'single' \"double\" \\ back", "", "   ", '{"ctl": "\x01\x1f\x7f"}']
    messages = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "web_search", "arguments": text}}
        for i, text in enumerate(awkward)]}]
    transcript = tmp_path / "awkward.json"
    transcript.write_text(json.dumps({"messages": messages}))
    out = tmp_path / "awkward.toml"
    done = CliRunner().invoke(import_command, ["openai", str(transcript), "--out", str(out)])
    assert done.exit_code == 0, done.output
    scenario = load_scenario(out)
    assert [call.arguments for call in scenario.calls] == awkward


def test_command_writes_toml_to_stdout_and_warnings_to_stderr() -> None:
    done = CliRunner().invoke(import_command, _args("anthropic", "anthropic_coding.json", "anthropic_coding_map.toml",
                                                     "--name", "leap-year-fix"))
    assert done.exit_code == 0, done.stderr
    data = tomllib.loads(done.stdout)
    assert data["name"] == "leap-year-fix"
    assert data["source"] == "transcript anthropic_coding.json (Anthropic Messages API)"
    lines = done.stderr.splitlines()
    assert lines[0].startswith("harness: warning: 2 tools of unknown behaviour given a generic spec: query_db, "
                               "mcp__ci__rerun_job; ")
    # The world starts empty: the file tools' production results are not reproduced, and the import says so.
    assert [line.split(" (")[0] for line in lines[1:4]] == [
        "harness: warning: fidelity: toolu_01Hx8Ka2", "harness: warning: fidelity: toolu_01Hx8Kb7",
        "harness: warning: fidelity: toolu_01Hx8Kd9"]
    assert lines[4].startswith("harness: warning: fidelity: the serial reference run (every call alone, in model "
                               "order, from the scenario's world) does not reproduce 3 production results")
    assert len(lines) == 5


def test_command_out_writes_the_file_and_the_name_defaults_to_the_stem(tmp_path: Path) -> None:
    out = tmp_path / "ops.toml"
    done = CliRunner().invoke(import_command, _args("anthropic", "anthropic_ops.json", "anthropic_map.json",
                                                     "--out", str(out)))
    assert done.exit_code == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.endswith(f"harness: wrote {out}: 2 batches, 4 calls\n")
    assert load_scenario(out).name == "anthropic_ops"


def test_command_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "web_search", "arguments": "{}"}}]}]))
    done = CliRunner().invoke(import_command, ["openai", str(bad)])
    assert done.exit_code == 2
    assert done.stderr == (f"harness: {bad}: [0].tool_calls[0].id: expected the call id (a non-empty string), got "
                           "nothing (the key is missing)\n")
    assert done.stdout == ""
    bad_map = tmp_path / "map.toml"
    bad_map.write_text('get_logs = "logs"\n')
    done = CliRunner().invoke(import_command, _args("anthropic", "anthropic_ops.json", None, "--map", str(bad_map)))
    assert done.exit_code == 2
    assert done.stderr.startswith(f"harness: {bad_map}: get_logs: expected a tool of the catalogue, of a --tools "
                                  "module or declared in this map (")
    assert len(done.stderr.splitlines()) == 1
    done = CliRunner().invoke(import_command, ["gemini", str(bad)])
    assert done.exit_code == 2  # click's own usage error


@pytest.mark.parametrize(("kind", "transcript", "map_file"), MAPPED_ONLY + WITH_GENERIC)
@pytest.mark.parametrize("policy", ["serial", "parallel"])
def test_harness_run_accepts_the_written_file(tmp_path: Path, kind: str, transcript: str, map_file: str | None,
                                              policy: str) -> None:
    from harness.cli import main

    out = tmp_path / "imported.toml"
    assert CliRunner().invoke(import_command, _args(kind, transcript, map_file, "--out", str(out))).exit_code == 0
    done = CliRunner().invoke(main, ["run", str(out), "--scheduler", policy, "--seed", "1"])
    assert done.exit_code in (0, 1), done.output
