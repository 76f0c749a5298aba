"""`harness --help` lists the commands without importing them: the table in `harness.cli` says what
each does, and must say what the command itself says."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from harness.cli import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_table_says_what_the_command_says(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None and command.name == name
    for limit in (30, 45, 60, 80, 120, 400):
        listed = click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)
        assert listed == command.get_short_help_str(limit), limit


def test_help_imports_no_command_and_no_simulation() -> None:
    code = ("import sys\nfrom harness.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('harness.run', 'simpy', 'pyfakefs', 'harness.cli.run', 'pandas')\n"
            "         if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout, out.stdout
    assert "run      Run SCENARIO" in out.stdout


def test_every_command_still_runs_and_an_unknown_one_is_a_usage_error() -> None:
    assert CliRunner().invoke(main, ["list", "schedulers"]).exit_code == 0
    out = CliRunner().invoke(main, ["rnu"])
    assert out.exit_code == 2 and "No such command 'rnu'" in out.output
