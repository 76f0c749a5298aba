"""The command line as a user meets it."""

import json
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_run_json_has_the_documented_fields() -> None:
    code, out, _ = invoke("run", "incident-triage", "--scheduler", "serial", "--seed", "1", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert {"scenario", "scheduler", "seed", "makespan_ms", "fingerprint", "results", "final_files"} <= set(doc)
    assert doc["makespan_ms"] == 9000
    assert set(doc["results"][0]) >= {"id", "outcome", "start_ms", "end_ms"}


def test_parallel_incident_triage_is_4000_with_equal_results() -> None:
    _, serial, _ = invoke("run", "incident-triage", "--scheduler", "serial", "--format", "json")
    _, parallel, _ = invoke("run", "incident-triage", "--scheduler", "parallel", "--format", "json")
    s, p = json.loads(serial), json.loads(parallel)
    assert p["makespan_ms"] == 4000
    assert [(r["id"], r["outcome"], r["value"]) for r in s["results"]] == \
           [(r["id"], r["outcome"], r["value"]) for r in p["results"]]


def test_text_output_has_header_timeline_results_and_fingerprint() -> None:
    code, out, _ = invoke("run", "config-clobber", "--scheduler", "parallel", "--seed", "3")
    assert code == 1  # the lost update
    for piece in ("reproduce  harness run config-clobber --scheduler parallel --seed 3", "timeline",
                  "read /repo/config.yaml", "write /repo/config.yaml", "results (as reported)",
                  "makespan", "fingerprint", "verdicts", "lost-update", "FAILED (lost-update); exit code 1",
                  "reproduce: harness run config-clobber --scheduler parallel --seed 3"):
        assert piece in out, piece


def test_unknown_names_exit_2_with_one_line_listing_valid_names() -> None:
    code, _, err = invoke("run", "nope", "--scheduler", "serial")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "valid: cascade-cancel, case-alias, cd-then-cat" in err
    code, _, err = invoke("run", "incident-triage", "--scheduler", "nope")
    assert code == 2 and err.count("\n") == 1 and "valid: dag, grouped, hermes_gate" in err and " serial " in err


def test_malformed_scenario_file_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[[batches]]\n[[batches.calls]]\nid = "a"\nname = "read_file"\narguments = 3\n')
    code, _, err = invoke("run", str(bad))
    assert code == 2
    assert err.startswith(f"harness: {bad}: batches[0].calls[0].arguments: expected")


def test_out_writes_only_into_the_chosen_directory(tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, stdout, _ = invoke("run", "edit-then-test", "--scheduler", "serial", "--out", str(out), "--format", "json")
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["gantt.json", "gantt.png", "index.html", "run.json",
                                                     "trace.jsonl", "trace.perfetto.json", "world_diff.txt"]
    assert json.loads((out / "run.json").read_text())["fingerprint"] == json.loads(stdout)["fingerprint"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_list_commands() -> None:
    code, out, _ = invoke("list", "schedulers")
    assert code == 0 and "serial" in out and "parallel_completion_order" in out
    code, out, _ = invoke("list", "scenarios")
    assert code == 0 and "incident-triage" in out
    code, _, _ = invoke("list", "planets")
    assert code == 2


def test_verdicts_in_json_and_exit_codes_for_broken_schedulers() -> None:
    code, out, _ = invoke("run", "config-clobber", "--scheduler", "parallel", "--seed", "3", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and doc["passed"] is False
    lost = next(v for v in doc["verdicts"] if v["oracle"] == "serializability")
    assert {"oracle", "ok", "label", "witness"} <= set(lost) and lost["label"] == "lost-update"
    for name, expected in (("DoublesFirst", 4), ("Raises", 4), ("NeverReturns", 3)):
        code, out, err = invoke("run", "incident-triage", "--scheduler", f"tests.oracles.schedulers:{name}",
                                "--format", "json")
        assert code == expected, (name, err)
        assert json.loads(out)["reproduce"].endswith(f"--scheduler tests.oracles.schedulers:{name} --seed 1")


def test_unloadable_user_scheduler_is_a_usage_error() -> None:
    code, _, err = invoke("run", "incident-triage", "--scheduler", "no.such.module:Thing")
    assert code == 2 and "cannot load 'no.such.module:Thing'" in err and err.count("\n") == 1


def test_a_scheduler_spinning_in_python_is_stopped_by_the_watchdog() -> None:
    code, out, _ = invoke("run", "incident-triage", "--scheduler", "tests.oracles.schedulers:SpinsInPython",
                          "--wall-timeout", "0.5", "--format", "json")
    doc = json.loads(out)
    assert code == 3 and doc["status"] == "hang" and "real time" in doc["error"]


def test_run_with_reorder_invariance() -> None:
    code, out, _ = invoke("run", "incident-triage", "--scheduler", "parallel", "--reorder", "10", "--format", "json")
    doc = json.loads(out)
    verdict = next(v for v in doc["verdicts"] if v["oracle"] == "reorder-invariance")
    assert code == 0 and verdict["ok"] and "10 runs" in verdict["message"]
    code, out, _ = invoke("run", "config-clobber", "--scheduler", "parallel", "--reorder", "10", "--format", "json")
    doc = json.loads(out)
    verdict = next(v for v in doc["verdicts"] if v["oracle"] == "reorder-invariance")
    assert code == 1 and verdict["label"] == "order-dependent"
    assert doc["reproduce"].endswith("--seed 1 --reorder 10")


def test_the_reproduce_line_names_a_user_scenario_file_by_its_path(tmp_path: Path) -> None:
    """A user's file named like its stem is not a built-in: the printed command must find it."""
    mine = tmp_path / "my-race.toml"
    mine.write_text((Path(__file__).parents[2] / "scenarios" / "config-clobber.toml").read_text()
                    .replace('name = "config-clobber"', 'name = "my-race"'))
    result = CliRunner().invoke(main, ["run", str(mine), "--scheduler", "parallel", "--seed", "3", "--format", "json"])
    assert json.loads(result.stdout)["reproduce"].startswith(f"harness run {mine} ")
