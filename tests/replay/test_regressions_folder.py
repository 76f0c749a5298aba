"""A folder of reproducers as regression tests (`harness.testing.regressions`): the README's example runs as
written in a user's project under pytest, red before the fix, green after, red again when the bug
comes back; every file that does not meet the expectation is listed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing import assert_expected, assert_fixed, replay_all, reproducer_files, reproducers
from tests.replay.userpkg import fix

README = Path(__file__).resolve().parents[2] / "README.md"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "regressions"


def readme_example() -> str:
    """The README's regression-test file: the `py` block that starts with its path."""
    (block,) = re.findall(r"```py\n(# tests/test_regressions\.py.*?)```", README.read_text(), flags=re.S)
    return block


def pytest_in(project: Path, src: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(src)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_the_readme_example_keeps_a_fixed_bug_fixed(recorded: tuple[Path, str], tmp_path: Path) -> None:
    root, _ = recorded
    src = tmp_path / "src"
    shutil.copytree(root / "src", src)
    (tmp_path / "tests" / "regressions").mkdir(parents=True)
    (saved,) = (root / "saved").glob("*.json")
    shutil.copy(saved, tmp_path / "tests" / "regressions" / saved.name)
    (tmp_path / "tests" / "test_regressions.py").write_text(readme_example())
    # Copied before the fix: the test fails, saying the code is unchanged.
    red = pytest_in(tmp_path, src)
    assert red.returncode == 1, red.stdout + red.stderr
    assert f"test_stays_fixed[{saved.stem}]" in red.stdout
    assert "expected fixed; it reproduced, byte for byte (the code is unchanged since it was recorded)" in red.stdout
    # Fixed: green.
    fix(src)
    green = pytest_in(tmp_path, src)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout
    # The bug comes back with another edit: red, with the label, the files, the story and the command.
    locks = src / "acme" / "locks.py"
    locks.write_text(locks.read_text().replace("SERIALISE_WRITES = True", "SERIALISE_WRITES = False  # oops"))
    again = pytest_in(tmp_path, src)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "still fails: the code changed since it was recorded (acme/locks.py) and lost-update still fires" \
        in again.stdout
    assert "story (lost-update)" in again.stdout
    assert f"replay: PYTHONPATH={src} harness replay {tmp_path}/tests/regressions/{saved.name} --trust-module acme " \
           "--expect fixed" in again.stdout


def test_every_file_that_does_not_meet_the_expectation_is_listed(tmp_path: Path) -> None:
    for path in sorted(FIXTURES.glob("*.json"))[:3]:
        shutil.copy(path, tmp_path / path.name)
    untrusted = json.loads((tmp_path / sorted(p.name for p in tmp_path.glob("*.json"))[0]).read_text())
    untrusted["scheduler"] = "acme.sched:scheduler"
    (tmp_path / "z-untrusted.json").write_text(json.dumps(untrusted))
    (tmp_path / "notes.txt").write_text("not a reproducer")
    outcomes = replay_all(tmp_path, expect="fails")
    assert [o.path.name for o in outcomes] == [*sorted(p.name for p in FIXTURES.glob("*.json"))[:3],
                                               "z-untrusted.json"]
    assert [o.held for o in outcomes] == [True, True, True, False]
    assert outcomes[-1].error is not None and "--trust-module acme.sched" in outcomes[-1].error
    # Expected fixed, none is (the code of built-in fixtures has no recorded identity: they reproduce).
    with pytest.raises(AssertionError) as failed:
        assert_fixed(tmp_path)
    message = str(failed.value)
    assert message.startswith(f"expected fixed: not met by 4 of 4 reproducer(s) of {tmp_path}")
    for outcome in outcomes[:3]:
        assert f"{outcome.path}: expected fixed; it reproduced, byte for byte: did not hold (exit 1)" in message
    assert f"{tmp_path / 'z-untrusted.json'}: cannot be replayed: " in message
    assert "story (" in message and "--expect fixed" in message
    assert len(assert_expected(FIXTURES, expect="reproduces")) == len(list(FIXTURES.glob("*.json")))


def test_reproducers_are_pytest_parameters_named_by_file(tmp_path: Path) -> None:
    params = reproducers(FIXTURES)
    assert [p.id for p in params] == [p.stem for p in sorted(FIXTURES.glob("*.json"))]
    assert all(isinstance(p.values[0], Path) for p in params)
    one = sorted(FIXTURES.glob("*.json"))[0]
    assert reproducer_files(one) == [one]
    with pytest.raises(FileNotFoundError, match="no such folder of reproducers"):
        reproducers(tmp_path / "typo")
    with pytest.raises(ValueError, match="expect: expected one of"):
        replay_all(FIXTURES, expect="passes")
