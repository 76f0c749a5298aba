"""Fuzzing what users hand the harness: mutated built-in scenarios, reproducers and transcripts.

Every outcome must be a clean answer: a scenario either loads or raises `ScenarioError` (exit 2) —
never another exception (exit 70), and a malformed value never reaches a run to be blamed on the
scheduler; a loaded one runs under `serial` with every oracle checking it, without raising. The CI
profile runs a bounded number of examples; `nox -s fuzz` (HARNESS_FUZZ_EXAMPLES=10000) many more.
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import get_scheduler, run
from harness.oracles import check
from harness.reproducers.replay import ReproducerError, loads
from harness.run import RunStatus
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.library import builtin_dir
from harness.transcripts import TranscriptError, import_transcript

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "40"))
SCENARIOS = {p.stem: tomllib.loads(p.read_text()) for p in sorted(builtin_dir().glob("*.toml"))}
REPRODUCERS = {p.name: p.read_text() for p in sorted((ROOT / "fixtures" / "regressions").glob("*.json"))}
TRANSCRIPTS = {p.name: json.loads(p.read_text())
               for p in sorted((ROOT / "tests" / "transcripts" / "data").glob("*.json"))}

#: Values users (and corrupted files) put where they should not.
NASTY = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", " ", "..", "../../x", "/", "~nobody/x", "[/]", "[bold]x", "\x00", "\ud800", "a" * 5000,
                     "{", "{{}", "{x}", "sys:exit", ":", "*** Update File:", "1979-05-27"]),
    st.text(max_size=20),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(min_value=-3, max_value=3), max_size=2),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON-like document, parents before children."""
    found = [prefix]
    if isinstance(value, dict):
        for key in value:
            found += _paths(value[key], (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


@st.composite
def mutated(draw: st.DrawFn, documents: dict[str, Any]) -> Any:
    """One document with one to three of: a value replaced, a key deleted, an unknown key added."""
    name = draw(st.sampled_from(sorted(documents)))
    document = copy.deepcopy(documents[name])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in _paths(document) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(NASTY)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "delete" and isinstance(parent, list):
            parent.pop(path[-1])
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "does", "result", "users", "from_dir", "tools_module", "parameters",
                                        "check_arguments"]))] = \
                draw(NASTY)
    return document


@settings(max_examples=EXAMPLES)
@given(mutated(SCENARIOS))
def test_a_mutated_scenario_loads_or_is_a_clear_error_and_then_runs(data: Any) -> None:
    try:
        scenario = scenario_from_data(data, "fuzz.toml")
    except ScenarioError as exc:
        assert str(exc).startswith("fuzz.toml: "), exc
        return
    result = run(scenario, get_scheduler("serial"), 1)
    assert result.status in (RunStatus.COMPLETED, RunStatus.HANG), (result.status, result.error)
    check(result)
    assert len(result.fingerprint) == 64


@pytest.mark.skipif(not REPRODUCERS, reason="no fixtures")
@settings(max_examples=EXAMPLES)
@given(mutated({name: json.loads(text) for name, text in REPRODUCERS.items()}))
def test_a_mutated_reproducer_loads_or_is_a_clear_error(data: Any) -> None:
    try:
        reproducer = loads(json.dumps(data), "fuzz.json")
    except ReproducerError as exc:
        assert str(exc).startswith("fuzz.json"), exc
        return
    except (ValueError, TypeError) as exc:  # json.dumps of nan/inf is fine; anything else is a bug
        pytest.fail(f"{type(exc).__name__}: {exc}")
    reproducer.run()


@settings(max_examples=EXAMPLES)
@given(mutated(TRANSCRIPTS), st.sampled_from(["openai", "anthropic"]))
def test_a_mutated_transcript_imports_or_is_a_clear_error(data: Any, kind: str) -> None:
    try:
        imported = import_transcript(kind, data, name="fuzz", file="fuzz.json")
    except TranscriptError as exc:
        assert str(exc).startswith("fuzz.json"), exc
        return
    try:
        scenario_from_data(imported.data, "fuzz.toml")
    except ScenarioError as exc:
        # Data a transcript carried may still be refused (a lone surrogate); never a crash.
        assert str(exc).startswith("fuzz.toml: "), exc
