"""CLI polish (issue 14, item 7): a gate function given as a scheduler, `harness matrix` in a terminal,
`py.typed`, and where `explore` saves reproducers by default."""

from __future__ import annotations

import io
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness.cli import main
from harness.policies import UnknownSchedulerError, get_scheduler, scheduler_names
from harness.report import matrix

ROOT = Path(__file__).resolve().parents[2]

GATES = '''
def my_gate(tool_calls) -> bool:
    return all(tc.function.name.startswith("read") for tc in tool_calls)

def make_policy(cap=4):
    from harness.bridges import from_gate
    return from_gate(my_gate, max_workers=cap)
'''


def test_a_gate_function_as_scheduler_points_to_from_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "user_gates.py").write_text(GATES)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownSchedulerError, match=r"is a function of \(tool_calls\).*from_gate\(my_gate\)"):
        get_scheduler("user_gates:my_gate")
    done = CliRunner().invoke(main, ["run", "config-clobber", "--scheduler", "user_gates:my_gate"])
    assert done.exit_code == 2
    assert "my_policy = from_gate(my_gate)" in done.output and "--scheduler user_gates:my_policy" in done.output
    # A factory whose parameters all have defaults is still called with no arguments.
    assert get_scheduler("user_gates:make_policy").name


def test_an_asyncio_executor_as_scheduler_points_to_from_asyncio(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "user_executor.py").write_text("async def execute(tool_calls, tools):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownSchedulerError, match=r"coroutine function of \(tool_calls, tools\)") as info:
        get_scheduler("user_executor:execute")
    assert "my_policy = from_asyncio(execute)" in str(info.value) and "from_gate" not in str(info.value)


def test_matrix_prints_tables_that_fit_the_width() -> None:
    schedulers = scheduler_names()
    scenarios = ["incident-triage", "incident-ticket-notify"]
    cells = matrix.compute(scenarios, schedulers, 1)
    for width in (60, 80, 400):
        out = io.StringIO()
        console = Console(file=out, width=width, color_system=None)
        tables = matrix.to_tables(cells, scenarios, schedulers, 1, width)
        for table in tables:
            console.print(table)
        text = out.getvalue()
        assert max(len(line) for line in text.splitlines()) <= width
        assert all(name in text for name in schedulers)
        assert "future-read" in text and "ok 4000" in text
        assert (len(tables) == 1) == (width == 400)


def test_matrix_default_is_a_table_and_markdown_is_asked_for() -> None:
    args = ["matrix", "--scenarios", "config-clobber", "--schedulers", "serial,parallel"]
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0 and "|---|" not in table.output
    assert "config-clobber" in table.output and "lost-update 825" in table.output
    markdown = CliRunner().invoke(main, [*args, "--markdown"]).output
    assert markdown == CliRunner().invoke(main, [*args, "--format", "markdown"]).output
    assert markdown.splitlines()[1] == "|---|---|---|"


def test_the_package_is_typed() -> None:
    assert (ROOT / "harness" / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "Typing :: Typed" in project["project"]["classifiers"]
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["harness"]


def test_explore_saves_reproducers_under_dot_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy", "random",
                                     "--runs", "3"])
    assert done.exit_code == 1, done.output
    saved = list((tmp_path / ".harness" / "reproducers").glob("*.json"))
    assert len(saved) == 1 and not (tmp_path / "fixtures").exists()
    assert os.path.join(".harness", "reproducers", saved[0].name) in done.output


def test_explore_names_only_the_swarm_faults_some_run_switched_on() -> None:
    # Before: the configured kinds were listed even when no run had switched any on.
    from click.testing import CliRunner

    from harness.cli import main

    one = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "serial", "--runs", "1", "--no-save"])
    assert "swarm faults switched on in some run: none (of crash," in one.output
    many = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "serial", "--runs", "6", "--no-save"])
    assert "swarm faults switched on in some run: none" not in many.output
