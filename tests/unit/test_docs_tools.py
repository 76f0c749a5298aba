"""docs/tools.md says what the harness does: its scenario runs with the verdicts the text claims,
and its Python module is a working tools module."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from harness import get_scheduler, run
from harness.oracles import check
from harness.scenario import scenario_from_data

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def _labels(scenario: object, scheduler: str) -> set[str]:
    return {v.label or "" for v in check(run(scenario, get_scheduler(scheduler), 1)) if not v.ok}  # type: ignore[arg-type]


def test_the_declared_tools_example_is_caught_under_parallel_and_passes_under_resource_keys() -> None:
    (block,) = [b for b in _blocks("toml") if b.startswith('name = "db-report"')]
    scenario = scenario_from_data(tomllib.loads(block), "db-report.toml")
    assert _labels(scenario, "parallel") == {"stale-read"}
    assert _labels(scenario, "resource_keys") == set()


def test_the_python_tools_example_is_a_tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (source,) = [b for b in _blocks("python") if b.startswith("# acme/tools.py")]
    (tmp_path / "acme_doc_tools.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = {"name": "doc", "tools_module": "acme_doc_tools", "world": {"files": {"/srv/manifest.txt": ""}},
            "batches": [{"calls": [{"id": "a", "name": "deploy", "arguments": '{"service": "api", "version": 2}'},
                                   {"id": "b", "name": "deploy", "arguments": "{}"}]}]}
    try:
        result = run(scenario_from_data(data, trust=["acme_doc_tools"]), get_scheduler("serial"), 1)
    finally:
        sys.modules.pop("acme_doc_tools", None)
    assert [r.outcome for r in result.results] == ["ok", "error"]
    assert result.results[1].error == "missing argument 'service'"
    assert dict(result.final.files)["/srv/manifest.txt"] == "api=2\n"


def test_the_documented_error_is_the_one_given() -> None:
    (documented,) = re.findall(r"`(db-report\.toml: tools\.query_db\.does\[0\]\.path: [^`]+)`", DOC.read_text())
    data = {"name": "t", "tools": {"query_db": {"does": [{"op": "read"}]}},
            "batches": [{"calls": [{"id": "a", "name": "query_db"}]}]}
    with pytest.raises(ValueError) as error:
        scenario_from_data(data, "db-report.toml")
    assert str(error.value) == documented
