"""`harness traces import|summary` as a user runs them: on the built-in sample, on malformed exports,
and the scenario they write run by `harness run`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.traces import SAMPLE
from harness.traces.sample import SEED, generate

pytest.importorskip("scipy")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_committed_sample_is_what_its_script_makes() -> None:
    assert SAMPLE.read_bytes() == generate(), "rerun `python -m harness.traces.sample` and commit the file"
    assert generate(seed=SEED + 1) != generate()  # the seed matters: every draw comes from its streams


def test_summary_of_the_sample_prints_fits_with_sample_counts_and_plots_them(tmp_path: Path) -> None:
    png = tmp_path / "fits.png"
    code, out, err = _invoke("traces", "summary", "--sample", "--plot", str(png))
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[2:8]}
    assert set(rows) == {"edit_file", "query_db", "read_file", "run_tests", "send_email", "web_search"}
    assert "median 40 ms, sigma 0.66" in rows["read_file"] and "0.078" in rows["read_file"]
    assert rows["read_file"].split()[1:4] == ["62", "62", "62"]  # calls, attempts, samples
    assert "too few samples for a fit (10 < 20)" in rows["send_email"]
    assert "turns whose calls overlapped in time: 79 of 90" in out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert err == f"harness: wrote {png}\n"


def test_summary_json_states_each_fit_with_its_sample_count_and_ks() -> None:
    code, out, _ = _invoke("traces", "summary", "--sample", "--format", "json")
    assert code == 0
    tools = {t["tool"]: t for t in json.loads(out)["tools"]}
    fit = tools["web_search"]["fit"]
    assert fit["samples"] == tools["web_search"]["samples"] == 94
    assert 0 < fit["ks_statistic"] < 0.15 and 700 < fit["median_ms"] < 950
    assert tools["send_email"]["fit"] is None and "too few" in tools["send_email"]["no_fit"]
    assert tools["run_tests"]["timeout_rate"] > 0.05  # the sample's 2 s timeout cuts its 1.4 s median's tail


def test_import_is_byte_identical_twice_and_its_scenario_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = _invoke("traces", "import", "--sample")
    second = _invoke("traces", "import", "--sample")
    assert first[0] == 0 and first[1] == second[1] and first[1]
    assert first[2].startswith("harness: read 287 tool spans and 90 model spans from 1 file: 90 turns, 279 calls")
    text = first[1]
    assert '[tools."query_db.kind-2"]' in text and "median = 841" in text
    assert "execution = { timeout_ms = 2000 }" in text
    # No call ids, no argument values by default: a file the calls name is a pseudonym.
    assert "call_" not in text and "web_search-" not in text and "src/module_" not in text
    assert '"/traced/file/file-' in text and not re.search(r"thread-\d{1,2}\b", text)
    code, _, err = _invoke("traces", "import", "--sample", "--out", "learned.toml")
    assert code == 0 and Path("learned.toml").read_text() == text
    code, out, err = _invoke("run", "learned.toml", "--scheduler", "resource_keys", "--seed", "4")
    assert code == 0, out + err
    assert "PASSED" in out
    kept = _invoke("traces", "import", "--sample", "--keep-arguments")[1]
    assert "web_search-" in kept and "(call id 'call_" in kept and "check_arguments = false" in kept
    assert '"/traced/file/src/module_0.py" = ""' in kept and "file-" not in kept


def test_import_will_not_overwrite_a_file_it_did_not_write(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text("name = 'mine'\n")
    code, _, err = _invoke("traces", "import", "--sample", "--out", str(mine))
    assert code == 2 and "refusing to overwrite" in err and mine.read_text() == "name = 'mine'\n"
    assert _invoke("traces", "import", "--sample", "--out", str(mine), "--force")[0] == 0


SPAN = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "parentSpanId": "eee19b7ec3c1b173",
        "name": "execute_tool search", "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                       {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}}]}


def _document(**changes: object) -> dict[str, object]:
    span = {k: v for k, v in {**SPAN, **changes}.items() if v is not None}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"endTimeUnixNano": "soon"}, "endTimeUnixNano", "nanoseconds since the Unix epoch"),
    ({"endTimeUnixNano": "10"}, "endTimeUnixNano", "a time at or after startTimeUnixNano (1000)"),
    ({"attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]},
     "attributes.gen_ai.tool.name", "the tool's name"),
    ({"traceId": "xyz"}, "traceId", "a 16-byte id as 32 hex digits"),
])
def test_a_malformed_span_names_the_file_the_line_the_span_and_the_field(
        tmp_path: Path, changes: dict[str, object], field: str, expected: str) -> None:
    good = json.dumps(_document(spanId="0000000000000001"))
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + json.dumps(_document(**changes)) + "\n")
    code, out, err = _invoke("traces", "summary", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"harness: {path}: line 2, span eee19b7ec3c1b174: {field}: expected {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_files_are_one_line_each(tmp_path: Path) -> None:
    (tmp_path / "notjson.jsonl").write_text('{"resourceSpans": []}\n{oops\n')
    (tmp_path / "other.json").write_text('{"spans": []}')
    (tmp_path / "trace.txt").write_text("")
    for name, says in (("notjson.jsonl", "line 2: expected one JSON document per line"),
                       ("other.json", "other.json: expected a trace export: OTLP JSON (an object with resourceSpans), "
                                     "openai-agents'"),
                       ("trace.txt", "expected a trace export named .json or .jsonl"),
                       ("missing.json", "got 'no such file'")):
        code, _, err = _invoke("traces", "import", str(tmp_path / name))
        assert code == 2 and says in err and err.count("\n") == 1, (name, err)
    code, _, err = _invoke("traces", "import")
    assert code == 2 and "--sample" in err
    (tmp_path / "nothing.json").write_text(json.dumps({"resourceSpans": []}))
    code, _, err = _invoke("traces", "import", str(tmp_path / "nothing.json"))
    assert code == 2 and "found none" in err


def test_a_json_file_of_json_lines_reads_as_the_collector_writes_it(tmp_path: Path) -> None:
    """The collector's file exporter writes one document per line even into a `.json` file."""
    copy = tmp_path / "collector.json"
    copy.write_bytes(SAMPLE.read_bytes())
    code, out, _ = _invoke("traces", "summary", str(copy), "--format", "json")
    assert code == 0
    sample = _invoke("traces", "summary", "--sample", "--format", "json")[1]
    assert json.loads(out)["tools"] == json.loads(sample)["tools"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "zz"}]}]}]}))
    code, _, err = _invoke("traces", "import", str(bad))
    assert code == 2 and err == (f"harness: {bad}: resourceSpans[0].scopeSpans[0].spans[0]: spanId: expected an 8-byte "
                                 "id as 16 hex digits, got 'zz'\n")
