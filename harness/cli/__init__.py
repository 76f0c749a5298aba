"""The `harness` command line: the command group and where each command lives.

One module per command (`list` in listing, `run`, `compare`, `sweep`, `explore`, `replay`, `matrix`,
`tools`; `import` in harness.cli.transcripts; `traces import|summary|whatif` in harness.cli.traces), the
option groups and validators they share in options, and the exception-to-exit-code wrapper every command
wears in guard. Usage errors (unknown scenario or scheduler, malformed scenario file) are one line
on stderr and exit 2, never a traceback. Commands write files only under the `--out` directory the
user chose. `harness --help` imports no command (the group lists them from a table); pandas and
matplotlib load only inside the commands that draw.
"""

from __future__ import annotations

import contextlib
import importlib
import sys

import click

from harness import __version__
from harness.sim.realtime import watching_user_interrupts

__all__ = ["COMMANDS", "main"]

#: name -> (module, attribute, the first sentence of its help). `harness --help` lists the commands from
#: this table without importing them (each pulls in the simulation); a command's module is imported
#: when it runs or shows its own help. tests/unit/test_cli_startup.py keeps the sentences true.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": ("harness.cli.compare", "compare_command", "Compare schedulers on the same seeds: makespan "
                "percentiles, speedup over serial, ratio to optimal, violations by label."),
    "explore": ("harness.cli.explore", "explore_command", "Search for a violation: auto (the default), random "
                "latencies, PCT, bounded exhaustive search or Hypothesis."),
    "import": ("harness.cli.transcripts", "import_command", "Turn a model transcript into a scenario: one batch "
               "per assistant turn with tool calls."),
    "list": ("harness.cli.listing", "list_command", "List the built-in scenarios, schedulers or mock tools (with "
             "--tools, a module's tools too; the catalogues installed packages ship are listed by name)."),
    "matrix": ("harness.cli.matrix", "matrix_command", "Run every scenario under every scheduler once: verdict and "
               "makespan per cell."),
    "replay": ("harness.cli.replay", "replay_command", "Replay a reproducer and judge it: reproduced, "
               "nondeterministic (exit 5), fixed (exit 0) or still fails."),
    "run": ("harness.cli.run", "run_command", "Run SCENARIO (a built-in name or a .toml path) once under one "
            "scheduler and seed."),
    "traces": ("harness.cli.traces", "traces_group", "Learn from production traces: per-tool latency fits, "
               "a scenario, what-if replays of turns."),
    "tools": ("harness.cli.tools", "tools_command", "Bring tools in from where your runtime gets them: `harness "
              "tools import mcp`."),
    "sweep": ("harness.cli.sweep", "sweep_command", "Run many (scenario, scheduler, seed) cells on every core or a "
              "Dask cluster; resumable."),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported when used, and listed from `COMMANDS` without importing."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command: click.Command = getattr(importlib.import_module(entry[0]), entry[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click's own, with each line from the table instead of the imported command.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl([(name, _listed(name).get_short_help_str(limit)) for name in names])


def _listed(name: str) -> click.Command:
    """A stand-in with the table's help: click shortens it as it would the command's own."""
    return click.Command(name, help=COMMANDS[name][2])


@click.group("harness", cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Deterministic simulation and chaos testing for schedulers of LLM tool-call batches."""
    # A KeyboardInterrupt a scheduler raises is its scheduler-error; a real Ctrl-C still stops us.
    ctx.with_resource(watching_user_interrupts())
    _printable_streams()


def _printable_streams() -> None:
    """Text a stream's encoding cannot carry (a file name that is not UTF-8, kept by Python as lone
    surrogates; any character on a narrower terminal) is printed as a backslash escape instead of
    failing the command: `\\udcff`, which in a `--format json` string is the JSON escape of the same
    character, so the document stays valid and reads back as the name Python gave."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            with contextlib.suppress(ValueError, OSError):  # a closed stream stays as it is
                reconfigure(errors="backslashreplace")
