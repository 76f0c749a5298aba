"""What user trials of the command line found: printed commands that broke when copied, a replay under
another scheduler called nondeterminism, missing hints on bad input, and `None` in the text output."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.policies import get_scheduler
from harness.reproducers.replay import reproducer_of, save
from harness.run import run
from harness.scenario import find_scenario

ROOT = Path(__file__).resolve().parents[2]
TAPED = ROOT / "fixtures" / "regressions" / "config-clobber--parallel--lost-update--cb67898f.json"


def saved(directory: Path, scheduler: str = "parallel") -> Path:
    """config-clobber's lost update under parallel (seed 3), saved as a reproducer naming `scheduler`."""
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    return save(reproducer_of(result, scheduler, "lost-update", "serializability", "test"), directory, version="t")


# -- 1. a printed command is one line, and no line is padded --------------------------------------


def test_the_reproduce_lines_are_never_wrapped_and_no_line_ends_in_a_space() -> None:
    args = ["run", "config-clobber", "--scheduler", "parallel", "--seed", "3", "--timeout-ms", "5000",
            "--retries", "2", "--reorder", "3"]
    done = CliRunner().invoke(main, args, env={"COLUMNS": "60"})
    assert done.exit_code == 1, done.output
    command = ("harness run config-clobber --scheduler parallel --seed 3 --timeout-ms 5000 --retries 2 "
               "--reorder 3")
    lines = done.stdout.splitlines()
    assert f"reproduce  {command}" in lines  # the header's, aligned with the other header values
    assert f"reproduce: {command}" in lines  # the one under the verdict
    assert not [line for line in lines if line.endswith(" ")]
    # The width asked for is the report's: the header's other rows do wrap.
    assert len(next(line for line in lines if line.startswith("execution"))) <= 60 < len(command)


def test_a_scenario_file_is_named_by_its_absolute_quoted_path(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "my scenarios"
    folder.mkdir()
    (folder / "race.toml").write_text((ROOT / "scenarios" / "config-clobber.toml").read_text())
    monkeypatch.chdir(folder)
    done = CliRunner().invoke(main, ["run", "./race.toml", "--scheduler", "parallel", "--seed", "3",
                                     "--format", "json"])
    assert json.loads(done.stdout)["reproduce"] == f"harness run '{folder}/race.toml' --scheduler parallel --seed 3"


# -- 2. another scheduler is judged, not compared --------------------------------------------------


def test_replaying_under_another_scheduler_is_judged_under_it(tmp_path: Path) -> None:
    path = saved(tmp_path)
    fixed = CliRunner().invoke(main, ["replay", str(path), "--scheduler", "serial"])
    assert fixed.exit_code == 0, fixed.output
    assert "replayed under serial instead of parallel: every oracle holds" in fixed.stdout
    assert "diverged" not in fixed.stdout and "reproduced" not in fixed.stdout
    document = json.loads(CliRunner().invoke(main, ["replay", str(path), "--scheduler", "serial",
                                                    "--format", "json"]).stdout)
    assert document["exit_code"] == 0 and document["passed"] is True and document["replayed"] is None
    assert document["scheduler"] == "serial" and document["recorded_scheduler"] == "parallel"
    # Another policy that still loses the update: the violation's exit code, in the text and the JSON.
    still = CliRunner().invoke(main, ["replay", str(path), "--scheduler", "parallel_completion_order"])
    assert still.exit_code == 1
    assert ("replayed under parallel_completion_order instead of parallel: FAILED (lost-update, out-of-order); "
            "exit code 1" in still.stdout)
    document = json.loads(CliRunner().invoke(main, ["replay", str(path), "--scheduler", "parallel_completion_order",
                                                    "--format", "json"]).stdout)
    assert document["exit_code"] == 1 and document["passed"] is False


def test_replaying_under_the_recorded_scheduler_still_compares(tmp_path: Path) -> None:
    path = saved(tmp_path)
    for extra in ([], ["--scheduler", "parallel"]):
        same = CliRunner().invoke(main, ["replay", str(path), *extra])
        assert same.exit_code == 1 and "reproduced: same fingerprint" in same.stdout
    tampered = json.loads(path.read_text())
    tampered["trace"][2]["t"] += 1
    path.write_text(json.dumps(tampered))
    diverged = CliRunner().invoke(main, ["replay", str(path), "--scheduler", "parallel"])
    assert diverged.exit_code == 5 and "diverged at trace event 2" in diverged.stdout
    # The JSON says what the process says: exit 5, not passed.
    document = json.loads(CliRunner().invoke(main, ["replay", str(path), "--format", "json"]).stdout)
    assert document["exit_code"] == 5 and document["passed"] is False and document["replayed"] is False


def test_a_tape_naming_no_call_of_the_scenario_is_an_invalid_tape(tmp_path: Path) -> None:
    data = json.loads(TAPED.read_text())
    assert data["tape"] == ["raise-timeout", "raise-retries"]
    data["tape"] = ["raise-timeout", "raise-retires"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    done = CliRunner().invoke(main, ["replay", str(bad)])
    assert done.exit_code == 2 and done.stdout == ""
    assert "bad.json: tape[1]: invalid tape: 'raise-retires' names no call of the scenario" in done.stderr
    # Fault decisions, time and later attempts of real calls are fine.
    data["tape"] = ["@time", "raise-timeout#2", "@fault:failure:raise-retries/1", "@ok:torn:raise-timeout/2"]
    bad.write_text(json.dumps(data))
    assert CliRunner().invoke(main, ["replay", str(bad)]).exit_code != 2


# -- 3. a replay command works from any directory --------------------------------------------------


def test_replay_json_names_the_pythonpath_and_the_absolute_file(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "trial_policy.py").write_text("from harness.policies.parallel import Parallel\n\n"
                                             "class Mine(Parallel):\n    pass\n")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.delitem(sys.modules, "trial_policy", raising=False)
    importlib.import_module("trial_policy")
    path = saved(tmp_path / "repro", "trial_policy:Mine")
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(path, tmp_path)
    done = CliRunner().invoke(main, ["replay", relative, "--trust-module", "trial_policy", "--format", "json"])
    assert done.exit_code == 1, done.output
    assert json.loads(done.stdout)["reproduce"] == (
        f"PYTHONPATH={project} harness replay {path} --trust-module trial_policy")


def test_explore_prints_a_replay_line_with_the_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy", "random",
                                     "--runs", "3"])
    assert done.exit_code == 1, done.output
    (saved_file,) = (tmp_path / ".harness" / "reproducers").glob("*.json")
    assert f"replay: harness replay {saved_file}\n" in done.stdout
    assert "order tape None" not in done.stdout and "shrunk to 2 calls\n" in done.stdout  # a random run: no tape


# -- 4. what a mistyped argument is told ----------------------------------------------------------


@pytest.mark.parametrize("given", ["./nosuch.toml", "nosuch.toml", "sub/nosuch"])
def test_a_missing_scenario_file_is_said_to_be_missing(given: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["run", given])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.strip() == (f"harness: {given}: (file): expected a scenario file (.toml), got no such file "
                                   "(built-in scenarios are named without a path: `harness list scenarios`)")


def test_a_directory_is_not_a_scenario_file(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["run", str(tmp_path)])
    assert done.exit_code == 2 and f"{tmp_path}: (file): expected a scenario file (.toml), got a directory" in \
        done.stderr
    assert "config-clobber" not in done.stderr  # no list of 39 built-in names


def test_an_unknown_name_still_lists_the_valid_ones() -> None:
    done = CliRunner().invoke(main, ["run", "nosuch"])
    assert done.exit_code == 2 and "unknown scenario 'nosuch'; valid: " in done.stderr
    assert "config-clobber" in done.stderr


def test_replaying_a_scenario_file_points_to_harness_run(tmp_path: Path) -> None:
    toml = (ROOT / "scenarios" / "config-clobber.toml").read_text()
    for name in ("race.toml", "race.txt"):
        (tmp_path / name).write_text(toml)
        done = CliRunner().invoke(main, ["replay", str(tmp_path / name)])
        assert done.exit_code == 2 and "(syntax): expected JSON" in done.stderr
        assert (f"looks like a scenario file (TOML): run it with `harness run {tmp_path / name}`"
                in done.stderr)
    (tmp_path / "junk.txt").write_text("not json, not toml [")
    done = CliRunner().invoke(main, ["replay", str(tmp_path / "junk.txt")])
    assert done.exit_code == 2 and "scenario file" not in done.stderr


def test_a_scheduler_module_that_is_not_found_says_where_to_look() -> None:
    done = CliRunner().invoke(main, ["run", "config-clobber", "--scheduler", "nosuch_trial.mod:X"])
    assert done.exit_code == 2
    assert "No module named 'nosuch_trial' (is it installed or on PYTHONPATH?)" in done.stderr
    assert "valid: dag, " in done.stderr


def test_explore_explains_the_run_it_tells_the_story_of() -> None:
    """The why line, the witness and the story are all of the shrunk run (the first finding's times
    differ from the shrunk run's, and mixing them told two different interleavings)."""
    from harness.explore.engine import explore
    from harness.report.explain import explain_witness

    done = CliRunner().invoke(main, ["explore", "edit-then-test", "--scheduler", "parallel", "--runs", "200",
                                     "--seed", "13", "--no-save", "--format", "json"])
    doc = json.loads(done.stdout)
    exploration = explore(find_scenario("edit-then-test"), "parallel", "auto", runs=200, seed=13)
    shrunk, found = exploration.shrunk, exploration.found
    assert shrunk is not None and found is not None and shrunk.witness != found.witness  # the case in point
    assert doc["witness"] == json.loads(json.dumps(shrunk.witness))
    assert doc["explanation"] == explain_witness(shrunk.label, shrunk.witness, shrunk.result, shrunk.message)


def test_the_failed_line_names_every_label() -> None:
    """shared-shell-cwd under parallel: serializability finds a stale read and the divergent world it
    leaves; the FAILED line names both, not only each oracle's first."""
    done = CliRunner().invoke(main, ["run", "shared-shell-cwd", "--scheduler", "parallel", "--seed", "1"])
    line = next(x for x in done.stdout.splitlines() if x.startswith("FAILED ("))
    assert "stale-read" in line and "divergent-world" in line


@pytest.mark.parametrize("args", [
    ["sweep", "--scenarios", "config-clobber", "--schedulers", "serial,parallel", "--runs", "3"],
    ["compare", "config-clobber", "--schedulers", "serial,parallel", "--runs", "3"],
    ["matrix", "--scenarios", "config-clobber,incident-triage", "--schedulers", "serial,parallel"],
], ids=["sweep", "compare", "matrix"])
def test_table_commands_pad_no_line_with_spaces(args: list[str]) -> None:
    done = CliRunner().invoke(main, args)
    assert done.exit_code in (0, 1), done.output
    assert done.stdout.strip() and not [line for line in done.stdout.splitlines() if line.endswith(" ")]
