"""Bad input is a clear error (exit 2 naming the file or option, the field and what was expected), never
a traceback or a verdict about the scheduler; each case is one a user met (issue 15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.policies import UnknownSchedulerError
from harness.reproducers.replay import ReproducerError, loads, reproducer_of, to_json

CALL = '[[batches]]\n[[batches.calls]]\nid = "a"\nname = "read_file"\narguments = \'{"path": "/x"}\'\n'


def harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def scenario_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("text", "where", "expected"), [
    ("a = " + "[" * 1000 + "]" * 1000 + "\n", "(syntax)", "nested"),
    ('name = "s"\n' + CALL.replace("/x", "/x\\ud800"), "batches[0].calls[0].arguments.path", "lone surrogates"),
    ('name = "s"\n[[batches]]\n[[batches.calls]]\nid = "a"\nname = "read_file"\narguments = { path = 1979-05-27 }\n',
     "batches[0].calls[0].arguments", "TOML dates"),
    ('name = "s"\n[tools.read_file]\nlatency = { lognormal = { median = 0, sigma = 1.0 } }\n' + CALL,
     "tools.read_file.latency", "median must be a whole number of milliseconds > 0"),
    ('name = "s"\n[execution]\nmax_concurrency = 0\n' + CALL, "execution", "max_concurrency must be a positive"),
    ('name = "s"\n[execution]\ntool_caps = { read_file = 0 }\n' + CALL, "execution", "tool_caps.read_file"),
    ('name = "s"\n[execution]\ntool_caps = { read_file = 1.5 }\n' + CALL, "execution", "tool_caps.read_file"),
    ('name = "s"\n[execution]\nsame_signature_limit = -1\n' + CALL, "execution", "same_signature_limit"),
])
def test_malformed_scenarios_exit_2_naming_file_and_field(tmp_path: Path, text: str, where: str,
                                                          expected: str) -> None:
    path = scenario_file(tmp_path, text)
    for scheduler in ("serial", "partition"):  # never blamed on the scheduler, whichever it is
        done = harness("run", path, "--scheduler", scheduler)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"harness: {path}: {where}: ") and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_user_text_is_printed_as_written_never_as_markup(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, 'name = "m"\n' + CALL.replace('"a"', '"[/]"').replace("/x", "[bold red]boom"))
    done = harness("run", path)
    assert done.returncode == 0, done.stderr
    assert "read /[bold red]boom" in done.stdout and "[/]" in done.stdout


@pytest.mark.parametrize("spec", [":x", ".foo:x", "harness:run", "json:JSONDecodeError", "builtins:input",
                                  "sys:exit", "json:dumps", "os.path:sep"])
def test_a_scheduler_that_cannot_be_built_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UnknownSchedulerError):
        get_scheduler(spec)
    done = harness("run", "config-clobber", "--scheduler", spec)
    assert done.returncode == 2 and done.stdout == "" and "valid: " in done.stderr, done.stderr


@pytest.mark.parametrize("args", [
    ["run", "config-clobber", "--wall-timeout", "nan"],
    ["run", "config-clobber", "--wall-timeout", "inf"],
    ["run", "config-clobber", "--wall-timeout", "1e308"],
    ["run", "config-clobber", "--wall-timeout", "1e-9"],
    ["run", "config-clobber", "--out", ""],
    ["run", "config-clobber", "--out", "afile/x"],
    ["explore", "config-clobber", "--save-dir", "afile/x"],
    ["explore", "config-clobber", "--depth", "1000000"],
    ["sweep", "--scenarios", "config-clobber", "--out", "afile/rows.jsonl"],
    ["sweep", "--scenarios", "config-clobber", "--csv", "afile/rows.csv"],
    ["sweep", "--scenarios", "config-clobber", "--out", "notes.txt"],
    ["sweep", "--scenarios", ""],
    ["compare", "--scenarios", ""],
    ["compare", "config-clobber", "--runs", str(10**12)],
])
def test_bad_options_exit_2_before_running_anything(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "afile").write_text("a file, not a directory")
    (tmp_path / "notes.txt").write_text("my notes\n")
    done = harness(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "notes.txt"], "nothing was written"
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"


def test_the_real_time_budget_running_out_after_a_run_is_a_hang() -> None:
    done = harness("run", "config-clobber", "--reorder", "100000000", "--wall-timeout", "1")
    assert done.returncode == 3 and "hang: the run took more than 1 s of real time" in done.stderr


def test_compare_on_a_scenario_path_names_its_images_safely(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / "scenarios" / "config-clobber.toml"
    done = harness("compare", str(source), "--runs", "2", "--out", "report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "report").glob("ecdf-*")] == [
        "ecdf-00-" + "_".join(str(source).strip("/").split("/")).replace("_config-clobber", "_config-clobber") + ".png"
    ] or all("/" not in p.name for p in (tmp_path / "report").iterdir())


@pytest.mark.parametrize("jitter", [float("nan"), float("inf"), 1e308, 10**30, 800])
def test_run_rejects_jitter_it_cannot_simulate(jitter: float) -> None:
    with pytest.raises(ValueError, match="jitter must be a number between 0 and 10"):
        run(find_scenario("config-clobber"), get_scheduler("serial"), 1, jitter=jitter)


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("jitter", None, "jitter: expected a number"), ("jitter", [], "jitter: expected a number"),
    ("jitter", "x", "jitter: expected a number"), ("jitter", 1e30, "jitter: expected a number"),
    ("seed", True, "seed: expected int"), ("scheduler", ":", "scheduler"),
])
def test_malformed_reproducer_fields_are_named(field: str, value: object, expected: str) -> None:
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    document = json.loads(to_json(reproducer_of(result, "parallel", "lost-update", "serializability", "t"),
                                  version="t"))
    document[field] = value
    with pytest.raises(ReproducerError, match=expected):
        loads(json.dumps(document), "r.json")


def test_resuming_a_sweep_skips_finished_cells_and_keeps_every_row(tmp_path: Path) -> None:
    from harness.sweep import grid, load_finished, sweep

    out = tmp_path / "rows.jsonl"
    cells = grid(["config-clobber"], ["serial", "parallel"], range(1, 4))
    sweep(cells[:3], out=out)
    with out.open("a") as handle:
        handle.write('{"scenario": "config-clob')  # a line torn by a kill
    rows = sweep(cells, out=out)
    assert [(r["scheduler"], r["seed"]) for r in rows] == sorted((c.scheduler, c.seed) for c in cells)
    assert len(load_finished(out)) == 6 and os.path.getsize(out) > 0


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["model"]["rules"][2].__setitem__("calls", True), "model.rules[2].calls"),
    (lambda d: d["tools"].__setitem__("q", {"does": [{"op": []}]}), "tools.q.does[0].op"),
])
def test_fuzz_found_shapes_are_load_errors(mutate: Any, field: str) -> None:
    # Found by tests/fuzz: a table's value of the wrong type reached a set lookup or a loop.
    import tomllib

    from harness.scenario import ScenarioError, scenario_from_data
    from harness.scenario.library import builtin_dir

    data = tomllib.loads((builtin_dir() / "unknown-tool-recovery.toml").read_text())
    data.setdefault("tools", {})
    mutate(data)
    with pytest.raises(ScenarioError) as error:
        scenario_from_data(data, "f.toml")
    assert str(error.value).startswith(f"f.toml: {field}: expected ")
