"""The `harness import openai|anthropic FILE` command (registered in `harness.cli`).

Owns the command's options and where its output goes: the scenario TOML to `--out PATH` or stdout,
each warning (the import's, then each fidelity disagreement of the serial reference run with the
transcript's recorded results) as one line on stderr, a malformed transcript or map file or a
`--tools` module that cannot be used as one line on stderr with exit 2. Before anything is written,
the TOML is loaded back with the scenario loader, so what it writes is a scenario `harness run`
accepts (if it is not, that is a harness bug: exit 70). It writes no file but `--out` and never runs
a schedule.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import NoReturn

import click

from harness.cli.options import tools_option
from harness.exitcodes import ExitCode
from harness.scenario import ScenarioError
from harness.transcripts import KINDS, ToolsModuleError, TranscriptError, import_file, to_toml


@click.command("import")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--map", "map_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="TOML or JSON file mapping transcript tool names to tools of the catalogue, of a --tools module "
                   "or declared in the map (`Read = { tool = \"read_file\", arguments = { file_path = \"path\" } "
                   "}`).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the scenario TOML here (default: stdout).")
@click.option("--name", "name", default=None, help="The scenario's name (default: the transcript file's stem).")
@tools_option
def import_command(kind: str, file: Path, map_path: Path | None, out: Path | None, name: str | None,
                   tools_modules: tuple[str, ...]) -> None:
    """Turn a model transcript into a scenario: one batch per assistant turn with tool calls.

    KIND is `openai` (Chat Completions messages with tool_calls, or Responses API items) or
    `anthropic` (Messages API tool_use / tool_result blocks). Call ids, model order and the raw
    arguments are kept. Tools of known behaviour (the catalogue, --tools modules, tools the map
    declares) compute their results from the simulated world, and the transcript's results are
    checked against the serial reference run (fidelity warnings); tools of unknown behaviour return
    the transcript's results."""
    try:
        imported = import_file(kind, file, name=name, map_path=map_path, tools_modules=tools_modules)
    except TranscriptError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)
    except ToolsModuleError as exc:
        click.echo(f"harness: --tools: {exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)
    except ScenarioError as exc:
        _internal(exc)
    text = to_toml(imported.data)
    _check_loads(text, str(out) if out is not None else f"<import of {file}>", tools_modules)
    for warning in imported.messages:
        click.echo(f"harness: warning: {warning}", err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"harness: {out}: expected a writable path, got {exc.strerror or exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)
    batches = imported.data["batches"]
    calls = sum(len(batch["calls"]) for batch in batches)
    click.echo(f"harness: wrote {out}: {len(batches)} batch{'' if len(batches) == 1 else 'es'}, {calls} "
               f"call{'' if calls == 1 else 's'}", err=True)


def _check_loads(text: str, file: str, trust: tuple[str, ...]) -> None:
    """The written scenario must load; if it does not, the importer (not the user) is wrong. It names
    only the `--tools` modules, which the user trusts by naming them."""
    from harness.scenario import scenario_from_data

    try:
        scenario_from_data(tomllib.loads(text), file, trust=trust)
    except (ScenarioError, tomllib.TOMLDecodeError) as exc:
        _internal(exc)


def _internal(exc: Exception) -> NoReturn:
    click.echo(f"harness: internal error (a harness bug, please report it): the imported scenario does not "
               f"load: {exc}", err=True)
    sys.exit(ExitCode.HARNESS_BUG)
