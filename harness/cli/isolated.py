"""`--isolate` / `--no-isolate`: a command's runs in a supervised child process (harness.isolation).

Owns the option, the one isolated run of `harness run` (with its `--reorder` runs in the same child),
and how a command tells the user what the child was refused (one line each on stderr). The child and
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
from harness.oracles import Verdict
from harness.run import RunResult
from harness.scenario.spec import Scenario

F = TypeVar("F", bound=Callable[..., object])


def isolate_option(default: bool) -> Callable[[F], F]:
    """`--isolate/--no-isolate`, defaulting to `default` for this command."""
    return click.option("--isolate/--no-isolate", "isolate", default=default, show_default=True,
                        help="Run the scheduler and the scenario's code in a supervised child process: a hard "
                             "real-time kill, resource limits, real-disk writes refused, the oracles judged in "
                             "this process. --no-isolate runs them in this process (faster, for code you trust).")


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
