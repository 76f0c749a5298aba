"""`harness run SCENARIO`: one scenario, one scheduler, one seed.

Owns the command's options, the choice of text or JSON output and the exit code of the verdicts.
The run is harness.run; the text report harness.report.run_text. It writes only under `--out`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from harness import __version__
from harness.cli.guard import guarded
from harness.cli.isolated import isolate_option
from harness.cli.loop import loop_option, with_loop
from harness.cli.options import (
    directory_option,
    execution_options,
    find_with_tools,
    tools_option,
    trust_options,
    wall_timeout_option,
    with_execution,
)
from harness.cli.run_dir import write_run
from harness.diagnosis.origins import recording
from harness.policies.registry import build_scheduler
from harness.run import run
from harness.sim.realtime import wall_clock_watchdog


@click.command("run")
@click.argument("scenario")
@click.option("--scheduler", "scheduler_name", default="serial", show_default=True,
              help="Built-in scheduler name (see `harness list schedulers`) or package.module:attribute.")
@click.option("--seed", type=int, default=1, show_default=True, help="Root seed of every random stream.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=directory_option,
              help="Write run.json, trace.jsonl, gantt.png, trace.perfetto.json, world_diff.txt and "
                   "index.html into this directory (created if missing).")
@wall_timeout_option
@click.option("--reorder", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also check reorder invariance over this many runs with jittered latencies.")
@loop_option
@execution_options
@tools_option
@trust_options
@isolate_option(default=False)
@guarded
def run_command(scenario: str, scheduler_name: str, seed: int, fmt: str, out: Path | None,
                wall_timeout: float, import_timeout: float, reorder: int, tools_modules: tuple[str, ...],
                trust_modules: tuple[str, ...], allow_dirs: tuple[Path, ...], isolate: bool,
                **execution: Any) -> None:
    """Run SCENARIO (a built-in name or a .toml path) once under one scheduler and seed."""
    from harness.oracles import check, exit_code
    from harness.report.run_json import dumps, run_to_json

    loop_name = execution.pop("loop_name", None)
    found_scenario, tools_args = find_with_tools(scenario, tools_modules, trust_modules, allow_dirs)
    loaded, extra = with_execution(found_scenario, execution)
    loaded, extra = with_loop(loaded, loop_name, [*tools_args, *extra])
    if isolate:  # the scheduler is imported, built and run in a supervised child; judged here
        from harness.cli.isolated import run_isolated

        result, verdicts, origins = run_isolated(loaded, scheduler_name, seed, wall_timeout, import_timeout, reorder)
    else:
        # Importing and building it first, under its own limit: a runtime's import is not the run's hang.
        scheduler = build_scheduler(scheduler_name, import_timeout)
        with wall_clock_watchdog(wall_timeout):
            with recording() as origins:  # the user's source lines for the story; the run is unchanged
                result = run(loaded, scheduler, seed)
            verdicts = check(result)
            if reorder:
                from harness.oracles import reorder as reorder_oracle

                verdicts.append(reorder_oracle.check(loaded, scheduler, range(seed, seed + reorder)))
    if reorder:
        extra = [*extra, "--reorder", str(reorder)]
    if isolate:  # what the run needs to come out the same (a scheduler that defeats the timer)
        extra = [*extra, "--isolate"]
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name,
                           extra_args=extra, origins=origins)
    if fmt == "json":
        click.echo(dumps(document))
    else:
        from harness.cli.console import report_console
        from harness.report.run_text import render_run

        console = report_console()
        render_run(result, console, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name,
                   extra_args=extra, origins=origins)
    if out is not None:
        write_run(out, result, document, verdicts)
    sys.exit(exit_code(verdicts))
