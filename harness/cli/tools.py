"""The `harness tools import mcp` command (registered in `harness.cli`).

Owns its options and where its output goes: the catalogue TOML (`harness.tools.mcp_catalogue`) to
`--out PATH` or stdout, one warning line on stderr per tool it left out, and every way the input fails
(a server that does not start, answer or list within `--timeout`; a `--from` file that is not a
`tools/list` result; the `mcp` SDK missing) as one line on stderr with exit 2. The listing comes from
`--from FILE` (no SDK needed), `--url URL` (streamable HTTP) or the stdio server the words after `--`
start (`harness.tools.mcp_server`, which stops it on the way out). Before anything is written, the
catalogue is read back as a scenario's tools, so what it writes loads (if not, a harness bug: exit 70).
It writes no file but `--out`, whole or not at all, and only over a file it wrote unless `--force`;
it never calls a tool.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import click

from harness.atomic import OutputError, write_text
from harness.exitcodes import ExitCode

#: The first line of every file `--out` writes: a later import may replace it (and nothing else).
MARK = "# Written by `harness tools import mcp`"
HEADER = MARK + "; a later import may overwrite this file.\n"


@click.group("tools")
def tools_command() -> None:
    """Bring tools in from where your runtime gets them: `harness tools import mcp`."""


@tools_command.group("import")
def import_group() -> None:
    """Write a catalogue of declared tools from a tool source."""


@import_group.command("mcp", context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--from", "from_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Read a saved tools/list result (JSON) instead of asking a server.")
@click.option("--url", default=None, help="The URL of a streamable HTTP MCP server.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the catalogue TOML here (default: stdout).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=20.0, show_default=True,
              help="Seconds the server has to start and list its tools.")
@click.option("--force", is_flag=True, help="Overwrite --out even if this command did not write it.")
@click.option("--server", "server_name", default=None,
              help="The server name written into each tool (default: the name a live server gives itself; "
                   "none for --from).")
def mcp_command(command: tuple[str, ...], from_file: Path | None, url: str | None, out: Path | None,
                timeout_s: float, force: bool, server_name: str | None) -> None:
    """Write declared tools from an MCP server's tools/list: `harness tools import mcp -- COMMAND ARGS...`
    starts a stdio server (the `mcp` extra), `--url URL` asks a streamable HTTP one, `--from FILE`
    reads a saved result. Each tool keeps its input schema and hints (annotations); its behaviour
    (`does`) is a skeleton guessed from argument names, marked `guess`, for you to complete. The
    server is only listed: no tool is ever called."""
    from harness.tools.mcp_catalogue import ListingError, read_listing, to_catalogue

    sources = [given for given in (command, from_file, url) if given]
    if len(sources) != 1:
        _usage("give one source: -- COMMAND ARGS... (a stdio server), --url URL or --from FILE")
    if out is not None and not force:
        _ours(out)
    try:
        if from_file is not None:
            try:
                text = from_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                _usage(f"{from_file}: cannot read it ({getattr(exc, 'strerror', None) or exc})")
            tools = read_listing(text, str(from_file))
            source, name = from_file.name, None
        else:
            from harness.tools.mcp_server import list_tools

            name, tools = list_tools(command, url, timeout_s=timeout_s)
            source = f"{name!r} ({url if url is not None else ' '.join(command)})"
        imported = to_catalogue(tools, source, server_name or name)
    except ListingError as exc:
        _usage(str(exc))
    _check_loads(imported.text, str(out) if out is not None else "<imported catalogue>")
    for warning in imported.warnings:
        click.echo(f"harness: warning: {warning}", err=True)
    if out is None:
        click.echo(imported.text, nl=False)
        return
    try:
        write_text(out, HEADER + imported.text)
    except OutputError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.IO_ERROR)
    click.echo(f"harness: wrote {out}: {imported.tools} tool{'' if imported.tools == 1 else 's'}", err=True)


def _usage(message: str) -> None:
    click.echo(f"harness: {message}", err=True)
    sys.exit(ExitCode.USAGE_ERROR)


def _ours(out: Path) -> None:
    """`--out` may replace nothing but a file this command wrote (its first line is MARK's), unless --force."""
    try:
        with out.open("rb") as f:
            first = f.read(len(MARK))
    except FileNotFoundError:
        return
    except OSError as exc:
        _usage(f"--out {out}: cannot read it to check it: {exc.strerror or exc}")
    if first != MARK.encode():
        _usage(f"--out {out}: the file exists and `harness tools import mcp` did not write it; refusing to "
               "overwrite it (give --force to overwrite it, or another --out)")


def _check_loads(text: str, file: str) -> None:
    """The catalogue must load as a scenario's tools; if it does not, the importer is wrong (exit 70)."""
    from harness.scenario import ScenarioError
    from harness.scenario.reader import Reader
    from harness.scenario.tools_load import parse_tools
    from harness.tools.catalogue import base_catalogue

    try:
        parse_tools(Reader(file), tomllib.loads(text).get("tools", {}), base_catalogue(()))
    except (ScenarioError, tomllib.TOMLDecodeError) as exc:
        click.echo(f"harness: internal error (a harness bug, please report it): the imported catalogue does not "
                   f"load: {exc}", err=True)
        sys.exit(ExitCode.HARNESS_BUG)
