"""docs/transcripts.md says what the importer does: its examples are checked against it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness.transcripts import generic_spec, import_file, load_map, parse_map

DOC = Path(__file__).parents[2] / "docs" / "transcripts.md"
DATA = Path(__file__).parent / "data"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_documented_map_is_the_one_the_tests_use() -> None:
    documented = next(block for block in _blocks("toml") if "[Read]" in block)
    assert parse_map(tomllib.loads(documented)).targets == load_map(DATA / "anthropic_coding_map.toml").targets


def test_the_documented_generic_spec_is_the_one_written() -> None:
    documented = next(block for block in _blocks("toml") if "[tools.query_db]" in block)
    assert tomllib.loads(documented)["tools"]["query_db"] == generic_spec()


def test_the_documented_warning_is_the_one_printed() -> None:
    imported = import_file("anthropic", DATA / "anthropic_coding.json", map_path=DATA / "anthropic_coding_map.toml")
    console = _blocks("console")[1]
    assert f"harness: warning: {imported.warnings[0]}\n" in console


def test_the_documented_declaring_map_imports_and_runs() -> None:
    from harness import get_scheduler, run
    from harness.scenario import scenario_from_data
    from harness.transcripts import import_transcript
    from tests.transcripts.shapes import Done, transcript

    documented = next(block for block in _blocks("toml") if "[query_db.declare]" in block)
    tool_map = parse_map(tomllib.loads(documented), "map.toml")
    calls = [Done("c1", "query_db", {"sql_table": "users"}, "alice\n"), Done("c2", "lookup_db", {"table": "users"})]
    imported = import_transcript("openai", transcript("chat", calls), name="db", tool_map=tool_map)
    assert [c["name"] for c in imported.data["batches"][0]["calls"]] == ["query_db", "query_db"]
    assert imported.data["batches"][0]["calls"][0]["arguments"] == '{"table": "users"}'
    scenario = scenario_from_data({**imported.data, "world": {"files": {"/db/users.csv": "alice\n"}}}, "db.toml")
    assert run(scenario, get_scheduler("serial"), 1).results[0].value == "alice\n"
    assert import_transcript("openai", transcript("chat", calls), name="db", tool_map=tool_map).fidelity[0].call == "c1"
