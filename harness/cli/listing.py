"""`harness list scenarios|schedulers|tools`: what is built in (and what a `--tools` module adds).

Owns the listing's one line per entry. It never runs anything.
"""

from __future__ import annotations

import click

from harness.cli.guard import guarded
from harness.cli.options import tools_option
from harness.policies import BUILTIN_SCHEDULERS
from harness.scenario import find_scenario, scenario_names


@click.command("list")
@click.argument("what", type=click.Choice(["scenarios", "schedulers", "tools"]))
@tools_option
@guarded
def list_command(what: str, tools_modules: tuple[str, ...]) -> None:
    """List the built-in scenarios, schedulers or mock tools (with --tools, a module's tools too; the
    catalogues installed packages ship are listed by name)."""
    if what == "scenarios":
        for name in scenario_names():
            scenario = find_scenario(name)
            summary = " ".join(scenario.description.split()).split(". ")[0].rstrip(".")
            click.echo(f"{name:28} {summary}")
    elif what == "schedulers":
        for name in sorted(BUILTIN_SCHEDULERS):
            entry = BUILTIN_SCHEDULERS[name]
            click.echo(f"{name:28} {entry.description}  [{entry.source}]")
    else:
        from harness.tools.catalogue import base_catalogue
        from harness.tools.modules import ToolsModuleError, entry_point_names

        try:
            catalogue = base_catalogue(tools_modules)
        except ToolsModuleError as exc:
            raise click.UsageError(str(exc)) from None
        for name, spec in catalogue.items():
            click.echo(f"{name:28} {spec.description}")
        for catalogue_name in entry_point_names():
            click.echo(f"(installed catalogue: {catalogue_name}; list it with --tools {catalogue_name})")
