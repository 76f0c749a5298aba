"""The `harness import openai|anthropic FILE` command (registered in `harness.cli`).

Owns the command's options and where its output goes: the scenario TOML to `--out PATH` or stdout,
each warning (the import's, then each fidelity disagreement of the serial reference run with the
transcript's recorded results) as one line on stderr, a malformed transcript or map file or a
`--tools` module that cannot be used as one line on stderr with exit 2 (so is a transcript that is no
regular file, e.g. a FIFO that would block, or text a scenario cannot hold: lone surrogates). Before
anything is written, the TOML is loaded back with the scenario loader, so what it writes is a scenario
`harness run` accepts (if it is not, that is a harness bug: exit 70). It writes no file but `--out`,
whole or not at all (harness.atomic; a full disk is exit 74), and only over a file an import wrote
(its first line says so) unless `--force`; it never runs a schedule.
"""

from __future__ import annotations

import stat
import sys
import tomllib
from pathlib import Path
from typing import NoReturn

import click

from harness.atomic import OutputError, write_text
from harness.cli.options import tools_option
from harness.exitcodes import ExitCode
from harness.scenario import ScenarioError
from harness.transcripts import KINDS, ToolsModuleError, TranscriptError, import_file, to_toml

#: What the scenario loader expects of text with a lone surrogate (harness.scenario.reader.check_text).
SURROGATES = "text without lone surrogates"
#: The first line of every file `--out` writes: what wrote it, so a later import may replace it (and nothing else).
MARK = b"# Written by `harness import"
HEADER = "# Written by `harness import {kind}`; a later import may overwrite this file.\n"


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
@click.option("--force", is_flag=True, help="Overwrite --out even if it is a file `harness import` did not write.")
@tools_option
def import_command(kind: str, file: Path, map_path: Path | None, out: Path | None, name: str | None,
                   tools_modules: tuple[str, ...], force: bool) -> None:
    """Turn a model transcript into a scenario: one batch per assistant turn with tool calls.

    KIND is `openai` (Chat Completions messages with tool_calls, or Responses API items) or
    `anthropic` (Messages API tool_use / tool_result blocks). Call ids, model order and the raw
    arguments are kept. Tools of known behaviour (the catalogue, --tools modules, tools the map
    declares) compute their results from the simulated world, and the transcript's results are
    checked against the serial reference run (fidelity warnings); tools of unknown behaviour return
    the transcript's results."""
    for given in (file, map_path):
        _regular(given)
    if out is not None and not force:
        _ours(out)
    _check_name(name if name is not None else file.stem, "--name" if name is not None else f"{file}: the file's stem")
    try:
        imported = import_file(kind, file, name=name, map_path=map_path, tools_modules=tools_modules)
    except TranscriptError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)
    except ToolsModuleError as exc:
        click.echo(f"harness: --tools: {exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)
    except ScenarioError as exc:
        _unholdable(exc, file)
        _internal(exc)
    text = to_toml(imported.data)
    _check_loads(text, str(out) if out is not None else f"<import of {file}>", file, tools_modules)
    for warning in imported.messages:
        click.echo(f"harness: warning: {warning}", err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        write_text(out, HEADER.format(kind=kind) + text)
    except OutputError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.IO_ERROR)
    batches = imported.data["batches"]
    calls = sum(len(batch["calls"]) for batch in batches)
    click.echo(f"harness: wrote {out}: {len(batches)} batch{'' if len(batches) == 1 else 'es'}, {calls} "
               f"call{'' if calls == 1 else 's'}", err=True)


def _regular(path: Path | None) -> None:
    """An input must be a regular file: reading a FIFO or a device would block or never end."""
    if path is None:
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # the reader says why it cannot read it (missing, no permission)
    if not stat.S_ISREG(mode):
        click.echo(f"harness: {path}: expected a regular file, got a {_kind(mode)}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return word
    return "special file"


def _ours(out: Path) -> None:
    """`--out` may replace nothing but a file an import wrote (its first line is HEADER's), unless --force."""
    try:
        with out.open("rb") as f:
            first = f.read(len(MARK) + 200)
    except FileNotFoundError:
        return
    except OSError as exc:
        if out.exists() and not out.is_file():
            click.echo(f"harness: --out {out}: expected a file path, got a {_kind(out.stat().st_mode)}", err=True)
            sys.exit(ExitCode.USAGE_ERROR)
        click.echo(f"harness: {out}: cannot read it to check it: {exc.strerror or exc}", err=True)
        sys.exit(ExitCode.IO_ERROR)
    if not first.startswith(MARK) and not _imported_before(out):
        click.echo(f"harness: --out {out}: the file exists and `harness import` did not write it; refusing to "
                   "overwrite it (give --force to overwrite it, or another --out)", err=True)
        sys.exit(ExitCode.USAGE_ERROR)


def _imported_before(out: Path) -> bool:
    """A scenario an import wrote before files carried HEADER: its description says it was imported."""
    try:
        if out.stat().st_size > 16 * 2**20:
            return False
        data = tomllib.loads(out.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return False
    return str(data.get("description", "")).startswith("Imported from the ")


def _check_name(name: str, given: str) -> None:
    """The scenario's name is shown on terminals and in file names: no control characters (exit 2)."""
    from harness.scenario.reader import Reader

    try:
        Reader(given).name(name, "the scenario's name (give another with --name)")
    except ScenarioError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.USAGE_ERROR)


def _check_loads(text: str, file: str, transcript: Path, trust: tuple[str, ...]) -> None:
    """The written scenario must load; if it does not, the importer (not the user) is wrong, except for
    text the transcript carried that no scenario can hold (a lone surrogate inside a call's raw JSON
    arguments, `"\\\\ud800"`): that is the transcript's, exit 2. It names only the `--tools` modules, which
    the user trusts by naming them."""
    from harness.scenario import scenario_from_data

    try:
        scenario_from_data(tomllib.loads(text), file, trust=trust)
    except ScenarioError as exc:
        _unholdable(exc, transcript)
        _internal(exc)
    except tomllib.TOMLDecodeError as exc:
        _internal(exc)


def _unholdable(exc: ScenarioError, transcript: Path) -> None:
    """Exit 2 if `exc` is about text the transcript carried that no scenario can hold."""
    if exc.expected.startswith(SURROGATES):
        click.echo(f"harness: {transcript}: carries text a scenario cannot hold ({exc.field}: expected "
                   f"{exc.expected})", err=True)
        sys.exit(ExitCode.USAGE_ERROR)


def _internal(exc: Exception) -> NoReturn:
    click.echo(f"harness: internal error (a harness bug, please report it): the imported scenario does not "
               f"load: {exc}", err=True)
    sys.exit(ExitCode.HARNESS_BUG)
