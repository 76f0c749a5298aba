"""The README stays true: its first lines are the two set-up commands, and its Python runs."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    lines = README.read_text().splitlines()
    assert lines[3].startswith("pip install -e '.[dev]' && harness run ")
    assert lines[4] == "pip install -e '.[dev]' && python -m pytest -q -n auto"
    assert lines[4] in (README.parent / ".ci" / "run").read_text()


def test_python_examples_run_and_print_what_their_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    promised_total = 0
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        promised = re.findall(r"^print\(.*\)\s+# (.+)$", block, flags=re.M)
        assert printed[: len(promised)] == promised, block
        promised_total += len(promised)
    assert promised_total >= 3  # the check itself must have something to check


def test_readme_counts_check_schedulers_default_scenarios() -> None:
    from harness.testing import DEFAULT_SCENARIOS

    text = " ".join(README.read_text().split())
    assert f"`check_scheduler` explores {len(DEFAULT_SCENARIOS)} default scenarios" in text
