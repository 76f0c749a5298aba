"""`--loop NAME` for `harness run` and `harness explore`: run a loop scenario under another loop
policy than the one it names.

Owns the option and its check (with `[[agents]]`, every agent's loop; a scenario without `[model]`
has no loop to choose: a usage error naming the valid policies). It never runs anything; the
reproduce line repeats the option.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import click

from harness.agent.registry import UnknownLoopError, get_loop, loop_names
from harness.scenario.spec import Scenario

F = TypeVar("F", bound=Callable[..., Any])


def loop_option(function: F) -> F:
    return click.option(
        "--loop", "loop_name", default=None, metavar="NAME",
        help=f"Loop policy for a scenario with a [model] ({', '.join(loop_names())}, or package.module:attribute); "
             "default: the scenario's own (taskloop if it names none).")(function)


def with_loop(scenario: Scenario, loop: str | None, extra: list[str]) -> tuple[Scenario, list[str]]:
    """The scenario under loop policy `loop` (unchanged for None) and the reproduce line's extra args."""
    if loop is None:
        return scenario, extra
    if not scenario.looped:
        raise click.UsageError(f"--loop {loop}: scenario {scenario.name!r} has fixed batches and no [model], so no "
                               "loop drives it")
    try:
        get_loop(loop)
    except UnknownLoopError as exc:
        raise click.UsageError(str(exc)) from None
    extra = [*extra, "--loop", loop]
    if scenario.agents:  # every agent of the crew runs under it
        agents = tuple(replace(a, spec=replace(a.spec, loop=loop)) for a in scenario.agents)
        return replace(scenario, agents=agents), extra
    assert scenario.agent is not None
    return replace(scenario, agent=replace(scenario.agent, loop=loop)), extra
