"""Confirming a fix is a verdict: a user's package outside the repository, a race found and saved by
`harness explore`, the code edited between the save and the replay, and `harness replay` run in a
fresh process as a user would (PYTHONPATH, the printed line). Fixed exits 0, still failing exits 1
and names the files that changed, unchanged code that replays differently exits 5."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.replay.userpkg import fix, harness


@pytest.fixture
def project(recorded: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the package (elsewhere: the identity names files relative to their package) and of
    the reproducer, for a test to edit."""
    root, _ = recorded
    shutil.copytree(root / "src", tmp_path / "src")
    (saved,) = (root / "saved").glob("*.json")
    shutil.copy(saved, tmp_path / saved.name)
    return tmp_path / "src", tmp_path / saved.name


def replay(file: Path, src: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return harness("replay", str(file), "--trust-module", "acme", *flags, cwd=file.parent, pythonpath=src)


def replay_json(file: Path, src: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    done = replay(file, src, "--format", "json", *flags)
    assert done.stderr == "", done.stderr
    document = json.loads(done.stdout)
    assert document["exit_code"] == done.returncode  # JSON's exit code is the process's
    return done.returncode, document


def test_the_reproducer_records_the_code_of_the_package_including_helper_modules(project: tuple[Path, Path]) -> None:
    _, file = project
    code = json.loads(file.read_text())["code"]
    assert code["packages"] == ["acme"]
    assert sorted(code["files"]) == ["acme/__init__.py", "acme/locks.py", "acme/sched.py"]
    assert {"version", "source", "python", "simpy", "pyfakefs"} <= set(code["harness"])


def test_unchanged_code_reproduces(project: tuple[Path, Path]) -> None:
    src, file = project
    done = replay(file, src)
    assert done.returncode == 1, done.stdout + done.stderr  # the verdicts' code, as before
    assert "reproduced: same fingerprint" in done.stdout
    assert "the code is unchanged since it was recorded (harness " in done.stdout
    code, document = replay_json(file, src)
    assert (code, document["verdict"], document["code_changed"], document["changed_files"]) == \
        (1, "reproduced", False, [])


def test_a_fix_in_a_helper_module_is_fixed_exit_0(project: tuple[Path, Path]) -> None:
    src, file = project
    fix(src)
    done = replay(file, src)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("fixed: the code changed since it was recorded (acme/locks.py) and every oracle holds "
            "(lost-update no longer fires)") in done.stdout
    assert "diverged" not in done.stdout and "story" not in done.stdout
    code, document = replay_json(file, src)
    assert code == 0 and document["passed"] is True
    assert {k: document[k] for k in ("verdict", "code_recorded", "code_changed", "changed_files", "expected",
                                     "expectation_held", "labels_now", "replayed", "second_replay")} == {
        "verdict": "fixed", "code_recorded": True, "code_changed": True, "changed_files": ["acme/locks.py"],
        "expected": None, "expectation_held": None, "labels_now": [], "replayed": False, "second_replay": "agrees"}
    # --scheduler with the recorded name is the same replay.
    same = replay(file, src, "--scheduler", "acme.sched:scheduler")
    assert same.returncode == 0 and "fixed: the code changed" in same.stdout
    # Another scheduler is judged under it, as before: the trace is not compared.
    other = replay(file, src, "--scheduler", "parallel")
    assert other.returncode == 1
    assert "replayed under parallel instead of acme.sched:scheduler: FAILED (lost-update)" in other.stdout
    code, document = replay_json(file, src, "--scheduler", "parallel")
    assert (code, document["judged_under"], document["replayed"]) == (1, "parallel", None)


def test_an_unrelated_edit_still_fails_exit_1_naming_the_file(project: tuple[Path, Path]) -> None:
    src, file = project
    sched = src / "acme" / "sched.py"
    sched.write_text(sched.read_text() + "\n# reformatted, the bug left in\n")
    done = replay(file, src)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("still fails: the code changed since it was recorded (acme/sched.py) and lost-update still fires; "
            "the run is byte for byte the recorded one") in done.stdout
    assert "story (lost-update)" in done.stdout
    code, document = replay_json(file, src)
    assert (code, document["verdict"], document["changed_files"], document["labels_now"]) == \
        (1, "still fails", ["acme/sched.py"], ["lost-update"])


@pytest.mark.parametrize(("edit", "expect", "exit_code", "line"), [
    ("none", "reproduces", 0, "expected reproduces; it reproduced, byte for byte: held (exit 0)"),
    ("none", "fails", 0, "expected fails; it reproduced, byte for byte: held (exit 0)"),
    ("none", "fixed", 1, "expected fixed; it reproduced, byte for byte (the code is unchanged since it was "
                         "recorded): did not hold (exit 1)"),
    ("fix", "fixed", 0, "expected fixed; it is fixed: held (exit 0)"),
    ("fix", "fails", 1, "expected fails; it is fixed: did not hold (exit 1)"),
    ("fix", "reproduces", 1, "expected reproduces; it is fixed: did not hold (exit 1)"),
    ("comment", "fixed", 1, "expected fixed; it still fails (lost-update), the recorded run byte for byte: "
                            "did not hold (exit 1)"),
])
def test_expect_says_whether_the_expectation_held(project: tuple[Path, Path], edit: str, expect: str,
                                                  exit_code: int, line: str) -> None:
    src, file = project
    if edit == "fix":
        fix(src)
    elif edit == "comment":
        (src / "acme" / "__init__.py").write_text("# a comment\n")
    done = replay(file, src, "--expect", expect)
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert line in done.stdout.splitlines()
    code, document = replay_json(file, src, "--expect", expect)
    assert (code, document["expected"], document["expectation_held"]) == (exit_code, expect, exit_code == 0)
    assert document["reproduce"].endswith(f"--expect {expect}")


def test_an_older_reproducer_without_identity_compares_traces_and_suggests_expect_fixed(
        project: tuple[Path, Path]) -> None:
    src, file = project
    document = json.loads(file.read_text())
    del document["code"]
    file.write_text(json.dumps(document))
    done = replay(file, src)
    assert done.returncode == 1 and "reproduced: same fingerprint" in done.stdout
    assert "the code identity was not recorded (a reproducer from an older harness)" in done.stdout
    fix(src)
    diverged = replay(file, src)
    assert diverged.returncode == 5, diverged.stdout + diverged.stderr
    assert "diverged at trace event" in diverged.stdout
    assert "if you changed the code since, --expect fixed judges the run by the oracles" in diverged.stdout
    code, data = replay_json(file, src)
    assert (code, data["verdict"], data["code_recorded"], data["code_changed"]) == (5, "diverged", False, None)
    expected = replay(file, src, "--expect", "fixed")
    assert expected.returncode == 0, expected.stdout
    assert "fixed: judged by the oracles and every oracle holds (lost-update no longer fires)" in expected.stdout
    assert "expected fixed; it is fixed: held (exit 0)" in expected.stdout
    assert replay(file, src, "--expect", "reproduces").returncode == 5


def test_the_printed_replay_line_runs_as_printed_from_another_directory(recorded: tuple[Path, str],
                                                                          tmp_path: Path) -> None:
    _, line = recorded
    assert line.startswith("PYTHONPATH=")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reproduced: same fingerprint" in done.stdout and done.stderr == ""
    assert "the code is unchanged since it was recorded" in done.stdout


FLAKY_PY = '''
from harness.bridges import from_gate

RUNS = [0]


def gate(calls):
    RUNS[0] += 1  # a counter kept between runs: every second run of a process is parallel
    return RUNS[0] % 2 == 0


scheduler = from_gate(gate, name="flaky")
'''

RECORD_PY = '''
import sys
from pathlib import Path
from harness import find_scenario, run
from harness.reproducers.replay import reproducer_of, save
from flaky.sched import scheduler

scenario = find_scenario("config-clobber")
run(scenario, scheduler, 1)  # the first run of this process is serial
result = run(scenario, scheduler, 1)  # the second, parallel: a lost update
reproducer = reproducer_of(result, "flaky.sched:scheduler", "lost-update", "serializability", "test")
print(save(reproducer, Path(sys.argv[1]), version="test"))
'''


@pytest.fixture
def flaky(tmp_path: Path) -> tuple[Path, Path]:
    """A scheduler reading a global counter, and a reproducer of its second run (saved unverified)."""
    src = tmp_path / "src"
    (src / "flaky").mkdir(parents=True)
    (src / "flaky" / "__init__.py").write_text("")
    (src / "flaky" / "sched.py").write_text(FLAKY_PY)
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", RECORD_PY, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return src, Path(done.stdout.strip())


def test_unchanged_code_that_replays_differently_is_nondeterministic_exit_5(flaky: tuple[Path, Path]) -> None:
    src, file = flaky
    done = harness("replay", str(file), "--trust-module", "flaky", cwd=file.parent, pythonpath=src)
    assert done.returncode == 5, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("nondeterministic: diverged at trace event")
    assert lines[2].startswith("likely cause: ")
    assert lines[3] == ("the code is unchanged since it was recorded (harness 0.1.0, 2 files of flaky); a change "
                        "outside these files is not seen")
    # An expectation does not hide it.
    assert harness("replay", str(file), "--trust-module", "flaky", "--expect", "fixed", cwd=file.parent,
                   pythonpath=src).returncode == 5


def test_changed_code_is_replayed_twice_and_two_runs_that_differ_are_nondeterministic(
        flaky: tuple[Path, Path]) -> None:
    src, file = flaky
    sched = src / "flaky" / "sched.py"
    sched.write_text(sched.read_text() + "\n# edited\n")
    done = harness("replay", str(file), "--trust-module", "flaky", "--format", "json", cwd=file.parent,
                   pythonpath=src)
    assert done.returncode == 5, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert document["verdict"] == "nondeterministic" and document["changed_files"] == ["flaky/sched.py"]
    assert document["replay"].startswith("nondeterministic: the code changed since it was recorded "
                                         "(flaky/sched.py), and two replays of it differ: diverged at trace event")
    assert document["second_replay"].startswith("diverged at trace event")


def test_a_fix_in_a_tools_module_is_a_code_change(tmp_path: Path) -> None:
    """The scenario's tool module is code the run ran: editing it is a change, not nondeterminism."""
    src = tmp_path / "src"
    (src / "shop").mkdir(parents=True)
    (src / "shop" / "__init__.py").write_text("")
    (src / "shop" / "tools.py").write_text(textwrap.dedent('''
        from harness.faults.latency import Fixed
        from harness.tools import Declared, SideEffect, ToolSpec

        DELAY = 1.0

        def bump(args, io):
            count = io.read("/c.txt")
            yield DELAY
            io.write("/c.txt", count + "+")
            return {}

        TOOLS = [ToolSpec("bump", "Count", Declared(read_only=False, side_effect=SideEffect.LOCAL), bump, Fixed(100))]
        '''))
    scenario = tmp_path / "bump.toml"
    scenario.write_text(textwrap.dedent('''
        name = "bump"
        tools_module = "shop.tools"
        [world]
        files = { "/c.txt" = "" }
        [[batches]]
        [[batches.calls]]
        id = "a"
        name = "bump"
        arguments = '{}'
        [[batches.calls]]
        id = "b"
        name = "bump"
        arguments = '{}'
        '''))
    found = harness("explore", str(scenario), "--scheduler", "parallel", "--save-dir", "saved", "--trust-module",
                    "shop", cwd=tmp_path, pythonpath=src)
    assert found.returncode == 1 and "FOUND lost-update" in found.stdout, found.stdout + found.stderr
    (file,) = (tmp_path / "saved").glob("*.json")
    assert sorted(json.loads(file.read_text())["code"]["files"]) == ["shop/__init__.py", "shop/tools.py"]
    tools = src / "shop" / "tools.py"
    tools.write_text(tools.read_text().replace("DELAY = 1.0", "DELAY = 0.0"))  # read and write in one instant
    done = harness("replay", str(file), "--trust-module", "shop", cwd=tmp_path, pythonpath=src)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fixed: the code changed since it was recorded (shop/tools.py)" in done.stdout
