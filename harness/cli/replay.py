"""`harness replay FILE`: run a reproducer again and say whether it gives the same fingerprint.

Owns the command's options, its text and JSON output and the exit code: under the recorded scheduler,
5 when the replay diverges, else the verdicts'; under another (`--scheduler`), the verdicts' alone
(another policy runs another schedule: the trace is not compared).
A reproducer is data: code it names is imported only with `--trust-module` or `--scheduler`. It
writes only under `--out`.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from harness import __version__
from harness.cli.guard import guarded
from harness.cli.options import directory_option, wall_timeout_option
from harness.cli.run_dir import write_run
from harness.exitcodes import ExitCode
from harness.realtime import wall_clock_watchdog, wall_limit_per_run, watched_build
from harness.schedulers import get_scheduler
from harness.schedulers.origins import recording


@click.command("replay")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=directory_option,
              help="Write the run's report (Gantt, Perfetto trace, world diff) here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--trust-module", "trust", multiple=True, metavar="MODULE",
              help="Let the reproducer import this module (or package): its module:attr scheduler or its tool "
                   "modules. Without it, a reproducer runs built-in schedulers and installed catalogues only.")
@click.option("--scheduler", "scheduler_name", default=None,
              help="Replay under this scheduler instead of the one the file names (built-in or module:attr).")
@wall_timeout_option
@guarded
def replay_command(file: Path, out: Path | None, fmt: str, trust: tuple[str, ...],
                   scheduler_name: str | None, wall_timeout: float) -> None:
    """Replay a reproducer: the same fingerprint, or the first trace event that differs (exit 5).

    Under --scheduler OTHER (a policy other than the recorded one) the trace is not compared: the run
    is judged by the oracles and exits with their code. A reproducer is data: code it names is
    imported only with --trust-module (or --scheduler)."""
    from harness.oracles import check, exit_code
    from harness.replay import load, replay, replay_command
    from harness.report.run_json import dumps, run_to_json

    if file.exists() and not file.is_file():
        raise click.UsageError(f"{file} is not a regular file")
    # One watchdog over building the scheduler and the run: a hang is exit 3, not a divergence (5).
    with wall_limit_per_run(wall_timeout), wall_clock_watchdog(wall_timeout, f"replaying {file}"):
        scheduler = watched_build(lambda: get_scheduler(scheduler_name), wall_timeout,
                                  f"building the scheduler {scheduler_name}") if scheduler_name is not None else None
        reproducer = load(file, trust=trust, own_scheduler=scheduler_name is None)
        with recording() as origins:  # the user's source lines for the story
            outcome = replay(reproducer, scheduler)
    result = outcome.result
    verdicts = check(result)
    # Under another policy the trace differs by design (it names the scheduler in its first event):
    # the run is judged by the oracles, and nothing is said about reproducing or determinism. The
    # recorded policy named otherwise (`module:attr` of a built-in, a name its trace carries) is not another.
    first = reproducer.trace[0] if reproducer.trace else {}
    recorded = first.get("scheduler") if first.get("ev") == "run" else None
    other = (scheduler_name is not None and scheduler_name != reproducer.scheduler
             and result.scheduler != (recorded or reproducer.scheduler))
    spec = scheduler_name or reproducer.scheduler
    code = exit_code(verdicts) if other or outcome.identical else ExitCode.NONDETERMINISM
    failed = sorted({x.label for v in verdicts for x in v.violations})
    verdict = f"FAILED ({', '.join(failed)}); exit code {int(code)}" if failed else "every oracle holds"
    described = (f"replayed under {spec} instead of {reproducer.scheduler}: {verdict}" if other
                 else outcome.describe())
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=spec, origins=origins)
    modules = dataclasses.replace(reproducer, scheduler=spec).modules  # what this replay imported
    document["reproduce"] = replay_command(file, modules, trust=trust, scheduler=scheduler_name)
    document.update(
        # Whether the recorded run came back byte for byte; null under another scheduler (not compared).
        replayed=None if other else outcome.identical,
        recorded_scheduler=reproducer.scheduler, expected_label=reproducer.label, replay=described,
        # The process's exit code; `passed` when it is 0 (a replay that diverged did not pass).
        exit_code=int(code), passed=code == ExitCode.PASS)
    if fmt == "json":
        click.echo(dumps(document))
    else:
        click.echo(f"replay {file}: {reproducer.scenario.name} under {spec}, seed {reproducer.seed}"
                   + (f", tape {list(reproducer.tape)}" if reproducer.tape is not None else ""))
        click.echo(described)
        if other:
            click.echo(f"recorded under {reproducer.scheduler}: {reproducer.label}; the trace is not compared "
                       "(another policy runs another schedule)")
        else:
            click.echo(f"expected {reproducer.label}; verdicts now: {', '.join(failed) or 'all oracles hold'}")
        from harness.report.hang import hang_lines
        from harness.report.story import story_lines

        for line in story_lines([v for verdict in verdicts for v in verdict.violations], result, origins):
            click.echo(line)
        for line in hang_lines(result):
            click.echo(line)
    if out is not None:
        write_run(out, result, document, verdicts)
    sys.exit(code)
