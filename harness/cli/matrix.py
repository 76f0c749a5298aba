"""`harness matrix`: every scenario under every scheduler once, verdict and makespan per cell.

Owns the command's options and where the tables go (rich tables that fit the terminal, markdown or
JSON). The cells are computed by harness.report.matrix. It writes no file.
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.console import report_console
from harness.cli.guard import guarded
from harness.cli.options import check_schedulers, trust_of, trust_options, wall_timeout_option
from harness.scenario import scenario_names
from harness.sim.realtime import wall_limit_per_run


@click.command("matrix")
@click.option("--scenarios", "scenario_list", default="all", show_default=True,
              help="Comma-separated scenario names, or all.")
@click.option("--schedulers", "scheduler_list", default="all", show_default=True,
              help="Comma-separated scheduler names, or all.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True,
              help="table: fits the terminal (split by scheduler if need be); markdown: the README's table.")
@click.option("--markdown", "markdown", is_flag=True, help="Same as --format markdown.")
@wall_timeout_option
@trust_options
@guarded
def matrix_command(scenario_list: str, scheduler_list: str, seed: int, fmt: str, markdown: bool,
                   wall_timeout: float, import_timeout: float, trust_modules: tuple[str, ...],
                   allow_dirs: tuple[Path, ...]) -> None:
    """Run every scenario under every scheduler once: verdict and makespan per cell."""
    from harness.policies import scheduler_names
    from harness.report import matrix
    from harness.report.run_json import dumps

    scenarios = scenario_names() if scenario_list == "all" else scenario_list.split(",")
    schedulers = scheduler_names() if scheduler_list == "all" else scheduler_list.split(",")
    check_schedulers(schedulers, import_timeout)  # fail fast, with the list of valid names
    with wall_limit_per_run(wall_timeout):
        cells = matrix.compute(scenarios, schedulers, seed, trust=trust_of(trust_modules, allow_dirs)[0])
    if fmt == "json":
        click.echo(dumps(matrix.to_json(cells, seed)))
    elif markdown or fmt == "markdown":
        click.echo(matrix.to_markdown(cells, scenarios, schedulers, seed), nl=False)
    else:
        # A pipe has no width; 120 columns keeps the tables readable in CI logs.
        console = report_console()
        for table in matrix.to_tables(cells, scenarios, schedulers, seed, console.width):
            console.print(table)
