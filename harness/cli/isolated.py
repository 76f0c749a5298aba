"""`--isolate` / `--no-isolate`: a command's runs in a supervised child process (harness.isolation).

Owns the option and its default (`isolating`: isolated when the scheduler is the user's code), the
one isolated run of `harness run` (with its `--reorder` runs in the same child), the stand-in
`explore` searches through (`isolated_scheduler`), and how a command tells the user what the child
was refused (one line each on stderr). The child and
its supervision are harness.isolation; the oracles run here, in the parent, on what came back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn, TypeVar

import click

from harness.diagnosis.origins import Origins
from harness.exitcodes import ExitCode
from harness.isolation import IsolatedRun, IsolationError, Supervisor
from harness.isolation.remote import IsolatedScheduler
from harness.oracles import Verdict
from harness.run import RunResult
from harness.scenario.spec import Scenario

F = TypeVar("F", bound=Callable[..., object])


def isolate_option(default: bool | None) -> Callable[[F], F]:
    """`--isolate/--no-isolate`, defaulting to `default` for this command (None: `isolating` decides,
    from the scheduler's name)."""
    when = ("Default: isolated when the scheduler is your code (module:attribute), in this process for a "
            "built-in policy." if default is None else "")
    return click.option("--isolate/--no-isolate", "isolate", default=default, show_default=default is not None,
                        help="Run the scheduler and the scenario's code in a supervised child process: a hard "
                             "real-time kill, resource limits, real-disk writes refused, the oracles judged in "
                             "this process. --no-isolate runs them in this process (faster, for code you trust). "
                             + when)


def isolating(isolate: bool | None, schedulers: Iterable[str]) -> bool:
    """Whether a command's runs are isolated: as the user said, else when some scheduler is the user's
    own code (a `package.module:attribute` name) and this system can isolate (POSIX); the harness's
    built-in policies run in this process."""
    if isolate is not None:
        return isolate
    from harness.isolation import available
    from harness.policies.registry import BUILTIN_SCHEDULERS

    # A name with no ':' that is not built in is unknown: it is reported here, listing the valid names.
    return available() and any(":" in name and name not in BUILTIN_SCHEDULERS for name in schedulers)


def isolated_scheduler(scheduler: str, import_timeout: float) -> IsolatedScheduler:
    """A stand-in for `scheduler` whose runs happen in a supervised child, built there now (a child
    that cannot import or build it is a usage error, exit 2; a slow import is an import timeout)."""
    from harness.isolation.remote import IsolatedScheduler

    try:
        stand_in = IsolatedScheduler(scheduler, import_timeout_s=import_timeout)
    except IsolationError as exc:
        usage_error(exc)
    report_refused(tuple(stand_in.refused))
    stand_in.refused.clear()
    return stand_in


def run_isolated(scenario: Scenario, scheduler: str, seed: int, wall_timeout: float, import_timeout: float,
                 reorder: int) -> tuple[RunResult, list[Verdict], Origins | None]:
    """`harness run`'s run (and its `--reorder` runs) in a child; the verdicts judged here."""
    from harness.oracles import check
    from harness.oracles import reorder as reorder_oracle

    try:
        with Supervisor(scheduler, wall_timeout_s=wall_timeout, import_timeout_s=import_timeout,
                        origins=True) as child:
            got = child.run(scenario, seed)
            report_refused(child.refused_at_build)
            report_refused(got.refused)
            verdicts = check(got.result)
            if reorder:
                seeds = range(seed, seed + reorder)
                runs = child.runs((scenario, s, reorder_oracle.DEFAULT_JITTER) for s in seeds)
                verdicts.append(reorder_oracle.judge(_refusals_reported(runs)))
    except IsolationError as exc:
        usage_error(exc)
    return got.result, verdicts, got.origins


def _refusals_reported(runs: Iterable[IsolatedRun]) -> Iterator[RunResult]:
    for got in runs:
        report_refused(got.refused)
        yield got.result


def usage_error(exc: Exception) -> NoReturn:
    click.echo(f"harness: {exc}", err=True)
    sys.exit(ExitCode.USAGE_ERROR)


def report_refused(refused: tuple[str, ...]) -> None:
    """One line on stderr for each thing the child's code tried and was refused."""
    for what in refused:
        click.echo(f"harness: isolated run refused {what}", err=True)
