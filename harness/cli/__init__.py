"""The `harness` command line: the command group and where each command lives.

One module per command (`list` in listing, `run`, `compare`, `sweep`, `explore`, `replay`,
`matrix`; `import` in harness.transcripts.command), the option groups and validators they share in
options, and the exception-to-exit-code wrapper every command wears in guard. Usage errors
(unknown scenario or scheduler, malformed scenario file) are one line on stderr and exit 2, never a
traceback. Commands write files only under the `--out` directory the user chose. Nothing here
imports pandas or matplotlib at start-up: heavy modules are imported inside the commands.
"""

from __future__ import annotations

import click

from harness import __version__
from harness.cli.compare import compare_command
from harness.cli.explore import explore_command
from harness.cli.listing import list_command
from harness.cli.matrix import matrix_command
from harness.cli.replay import replay_command
from harness.cli.run import run_command
from harness.cli.sweep import sweep_command
from harness.realtime import watching_user_interrupts
from harness.transcripts.command import import_command

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Deterministic simulation and chaos testing for schedulers of LLM tool-call batches."""
    # A KeyboardInterrupt a scheduler raises is its scheduler-error; a real Ctrl-C still stops us.
    ctx.with_resource(watching_user_interrupts())


for _command in (import_command, list_command, compare_command, sweep_command, explore_command, replay_command,
                 matrix_command, run_command):
    main.add_command(_command)
