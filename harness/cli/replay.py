"""`harness replay FILE`: run a reproducer again and judge it: reproduced, nondeterministic, fixed or still fails.

Owns the command's options, its text and JSON output and the exit code. Under the recorded scheduler,
with the code identity it recorded unchanged: the verdicts' code when it reproduces, 5 when it
diverges; with the code changed (the files are named): 0 when every oracle holds (fixed), else the
verdicts' (still fails); a file with no identity (an older harness's) compares traces only (5 when it
diverges). Under another (`--scheduler OTHER`): the verdicts' alone (another policy runs another
schedule: the trace is not compared). With `--expect fixed|fails|reproduces`: 0 when the expectation
held, 1 when not, 5 for nondeterminism (see `harness.reproducers.judgement.judge`).
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
from harness.diagnosis.origins import recording
from harness.exitcodes import ExitCode
from harness.policies.registry import build_scheduler, preload
from harness.sim.realtime import wall_clock_watchdog, wall_limit_per_run, watched_build


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
@click.option("--expect", type=click.Choice(["fixed", "fails", "reproduces"]), default=None,
              help="Exit 0 when this holds, 1 when not (5 for nondeterminism): fixed (no violation), fails (the "
                   "recorded label still fires) or reproduces (the same fingerprint).")
@wall_timeout_option
@guarded
def replay_command(file: Path, out: Path | None, fmt: str, trust: tuple[str, ...],
                   scheduler_name: str | None, expect: str | None, wall_timeout: float, import_timeout: float
                   ) -> None:
    """Replay a reproducer and judge it: reproduced, nondeterministic (exit 5), fixed (exit 0) or still fails.

    Reproduced: the code it ran is unchanged and so is the run. Nondeterministic: the code is unchanged
    but the trace differs. Fixed: the code changed (the files are named) and every oracle holds. Still
    fails: the code changed and a violation remains.

    Under --scheduler OTHER (a policy other than the recorded one) the trace is not compared: the run
    is judged by the oracles and exits with their code. --expect fixed|fails|reproduces makes the exit
    code say whether that held (0) or not (1; 5 for nondeterminism). A reproducer is data: code it
    names is imported only with --trust-module (or --scheduler)."""
    from harness.report.run_json import dumps, run_to_json
    from harness.reproducers.command import replay_command
    from harness.reproducers.file import embedded_line, load
    from harness.reproducers.judgement import judge

    if file.exists() and not file.is_file():
        raise click.UsageError(f"{file} is not a regular file")
    # The scheduler (and the modules the file names) imported first, under --import-timeout; then one
    # watchdog over the runs: a hang is exit 3, not a divergence (5).
    scheduler = build_scheduler(scheduler_name, import_timeout) if scheduler_name is not None else None
    reproducer = watched_build(lambda: load(file, trust=trust, own_scheduler=scheduler_name is None),
                               import_timeout, f"loading {file} and importing the modules it names")
    if scheduler_name is None:  # the recorded one is built inside the replay (as the recording run did)
        preload(reproducer.scheduler, import_timeout)
    with wall_limit_per_run(wall_timeout), wall_clock_watchdog(wall_timeout, f"replaying {file}"), \
            recording() as origins:  # the user's source lines for the story
        judgement = judge(reproducer, scheduler, under=scheduler_name, expect=expect)
    result = judgement.result
    verdicts = list(judgement.verdicts)
    spec = scheduler_name or reproducer.scheduler
    code = judgement.exit_code
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=spec, origins=origins)
    modules = dataclasses.replace(reproducer, scheduler=spec).modules  # what this replay imported
    document["reproduce"] = replay_command(file, modules, trust=trust, scheduler=scheduler_name,
                                                expect=expect)
    document.update(
        # Whether the recorded run came back byte for byte; null under another scheduler (not compared).
        replayed=None if judgement.under is not None else judgement.replay.identical,
        recorded_scheduler=reproducer.scheduler, expected_label=reproducer.label, replay=judgement.headline(),
        **judgement.to_json(),
        # The process's exit code; `passed` when it is 0 (a replay that diverged did not pass).
        exit_code=code, passed=code == ExitCode.PASS)
    if reproducer.embedded is not None:  # the real files it carries, as whoever shares it should know
        embedded = reproducer.embedded
        document["embedded"] = {"from_dir": embedded.root, "into": embedded.into, "files": list(embedded.files)}
    if fmt == "json":
        click.echo(dumps(document))
    else:
        click.echo(f"replay {file}: {reproducer.scenario.name} under {spec}, seed {reproducer.seed}"
                   + (f", tape {list(reproducer.tape)}" if reproducer.tape is not None else ""))
        if reproducer.embedded is not None:
            click.echo(embedded_line(reproducer.embedded))
        for line in judgement.lines():
            click.echo(line)
        from harness.report.hang import hang_lines
        from harness.report.story import story_lines

        for line in story_lines([v for verdict in verdicts for v in verdict.violations], result, origins):
            click.echo(line)
        for line in hang_lines(result):
            click.echo(line)
    if out is not None:
        write_run(out, result, document, verdicts)
    sys.exit(code)
