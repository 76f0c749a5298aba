"""Every example in the docs runs, so none goes stale: the README and every page under docs/.

- Each ```python (or ```py) block runs; the blocks of one page run in order in one namespace, as a
  reader pastes them one after another. A line `print(...)  # TEXT` promises that it prints TEXT: the
  promised lines must be the block's first printed lines. A block that must not run is preceded by
  `<!-- not-run: why -->`; a block whose import needs a real runtime of the `runtimes` extra that is
  not installed is skipped (as tests/runtimes skips it).
- Each `$ harness ...` line of a console or shell block that ends in `# exit N` runs through the CLI
  and must exit with N, and the output lines the block shows under it must be in what it prints (`…`
  or `...` elides). A text block preceded by `<!-- output of: harness ... -->` is output of that
  command, checked the same way. These are the label catalogue's commands, the getting-started page's
  and the README's; other command lines are prose (long explorations, `--out` directories, clusters).
- Every label an oracle can give has a story in the label catalogue, and the README stays a newcomer
  page (under 250 lines).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*$")
NOT_RUN = re.compile(r"<!--\s*not-run:\s*\S.*-->")
OUTPUT_OF = re.compile(r"<!--\s*output of:\s*(?P<command>harness\s.*?)\s*-->")
EXIT = re.compile(r"^\s*(?:\S*\$\s+)(?P<command>harness\s.*?)\s+#\s*exit\s+(?P<code>\d+)\s*$")
PROMISE = re.compile(r"^print\(.*\)\s+# (.+)$", flags=re.M)
# The real runtimes the recipes glue (the `runtimes` extra): a page's block that imports one of them is
# skipped where it is absent, as tests/runtimes skips it.
RUNTIMES = {"agents", "langgraph", "langchain_core", "pydantic_ai", "pydantic", "smolagents", "autogen_agentchat",
            "autogen_core", "autogen_ext", "mcp"}  # mcp: docs/recipes/mcp.md (the `mcp` extra)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    run: bool

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, dedented, each with whether it is meant to run."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None or not opening["lang"]:
            i += 1
            continue
        indent = opening["indent"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{page.relative_to(ROOT)}:{i + 1}: a fenced block that never closes"
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end])
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        found.append(Block(page, i + 1, opening["lang"], body + "\n", NOT_RUN.search(previous) is None))
        i = end + 1
    return found


def runtime_missing(error: BaseException | None) -> str | None:
    """The real runtime whose absence raised `error` (a recipe raises its own ImportError from it), if any."""
    while error is not None:
        if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] in RUNTIMES:
            return error.name
        error = error.__cause__ or error.__context__
    return None


def python_pages() -> list[Path]:
    return [page for page in PAGES if any(b.lang in ("python", "py") and b.run for b in blocks(page))]


@dataclass(frozen=True)
class Command:
    where: str
    command: str
    code: int | None  # None: a `<!-- output of: ... -->` block, which checks what it prints only
    shown: tuple[str, ...]  # output lines the page shows under the command


def commands() -> list[Command]:
    """Every `$ harness ... # exit N` line, with the output lines shown under it in its block, and every
    text block marked `<!-- output of: harness ... -->`."""
    found = []
    for page in PAGES:
        text = page.read_text().splitlines()
        for block in blocks(page):
            if block.lang == "text" and block.run:
                marker = OUTPUT_OF.search(next((line for line in reversed(text[: block.line - 1]) if line.strip()), ""))
                if marker:
                    found.append(Command(block.where, marker["command"], None, tuple(block.code.splitlines())))
            if block.lang not in ("console", "bash", "shell", "sh") or not block.run:
                continue
            lines = block.code.splitlines()
            for offset, line in enumerate(lines):
                match = EXIT.match(line)
                if match:
                    shown = []
                    for after in lines[offset + 1:]:
                        if re.match(r"^\s*\S*\$\s", after):
                            break
                        shown.append(after)
                    found.append(Command(f"{block.where}+{offset + 1}", match["command"], int(match["code"]),
                                         tuple(shown)))
    return found


def fragments(shown: tuple[str, ...]) -> list[str]:
    """What a shown output promises: each line, whitespace collapsed, split where it elides (`…`, `...`)."""
    parts = (part for line in shown for part in re.split(r"…|\.\.\.", line))
    return [" ".join(part.split()) for part in parts if part.strip()]


@pytest.mark.parametrize("page", python_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_examples_of_a_page_run_and_print_what_they_promise(page: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A page's examples run in a scratch directory (they may write reports or reproducers) as a file of
    # the reader's project there (`__file__`: the regression-test example lists its folder beside it).
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "regressions").mkdir(parents=True)
    namespace: dict[str, object] = {"__name__": "__docs__", "__file__": str(tmp_path / "tests" / "test_docs.py")}
    ran = 0
    for block in blocks(page):
        if block.lang not in ("python", "py") or not block.run:
            continue
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, block.where, "exec"), namespace)
        except ImportError as error:
            missing = runtime_missing(error)
            if missing:
                extra = "mcp" if missing.split(".")[0] == "mcp" else "runtimes"
                pytest.skip(f"{block.where} needs {missing} (pip install -e '.[{extra}]')")
            raise
        promised = PROMISE.findall(block.code)
        printed = out.getvalue().splitlines()
        assert printed[: len(promised)] == promised, f"{block.where} printed {printed}, its comments promise {promised}"
        ran += 1
    assert ran, f"{page.relative_to(ROOT)}: every python block is marked not-run"


@pytest.mark.parametrize("documented", commands(), ids=lambda c: c.where)
def test_a_documented_command_exits_and_prints_as_documented(documented: Command, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli import main

    # From a scratch directory that sees the repository's tests/ (the label catalogue's deliberately broken
    # schedulers and scenarios are named from the root of a clone) and nothing else of it.
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    argv = shlex.split(documented.command)
    assert argv[0] == "harness"
    result = CliRunner().invoke(main, argv[1:])
    where, command = documented.where, documented.command
    if documented.code is not None:
        assert result.exit_code == documented.code, (
            f"{where}: `{command}` exited {result.exit_code}, the docs say {documented.code}\n{result.output[-3000:]}")
    assert "Traceback" not in result.output, result.output
    # What the page shows of the output is in it (wrapped at any width: whitespace is collapsed on both sides).
    printed = " ".join(result.output.split())
    missing = [fragment for fragment in fragments(documented.shown) if fragment not in printed]
    assert not missing, f"{where}: `{command}` no longer prints {missing}\n{result.output[-3000:]}"


def test_commands_and_blocks_were_found() -> None:
    """The checks above must have something to check: a broken parser would pass them vacuously."""
    assert len([c for c in commands() if c.code is not None]) >= 30
    assert len([c for c in commands() if c.shown]) >= 5
    assert {p.name for p in python_pages()} >= {"README.md", "write-a-scheduler.md", "bridges.md", "oracles.md"}
    not_run = [b.where for page in PAGES for b in blocks(page) if b.lang in ("python", "py") and not b.run]
    assert len(not_run) <= 8, not_run  # few, each with its reason beside it


def test_every_label_has_a_story_in_the_catalogue() -> None:
    from harness.oracles import LABELS

    text = (ROOT / "docs" / "oracles.md").read_text()
    catalogue = text[text.index("## The label catalogue"):]
    told = re.findall(r"^#### `([a-z-]+)`$", catalogue, flags=re.M)
    assert sorted(told) == sorted(LABELS), set(told) ^ set(LABELS)
    assert len(told) == len(set(told))


def test_the_readme_is_a_newcomer_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    for page in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / page).is_file(), page


def test_the_ci_page_counts_check_schedulers_default_scenarios() -> None:
    from harness.testing import DEFAULT_SCENARIOS

    text = " ".join((ROOT / "docs" / "ci.md").read_text().split())
    counts = re.findall(r"`check_scheduler`(?:\]\[[\w.]+\])? explores (\d+) default scenarios", text)
    assert counts == [str(len(DEFAULT_SCENARIOS))]


def test_the_concepts_page_lists_the_layers_of_the_import_contract() -> None:
    import tomllib

    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [sorted(name.strip() for name in layer.split("|")) for layer in contract["layers"] if layer != "__main__"]
    text = (ROOT / "docs" / "concepts.md").read_text()
    table = text[text.index("| layer | packages of `harness` |"):].split("\n\n")[0].splitlines()[2:]
    # A row's packages are its second cell's backticked names (the first word of each, before any note).
    documented = [sorted(re.findall(r"`(\w+)`", row.split("|")[2].split("(")[0])) for row in table]
    assert documented == layers


# Dotted names the pages mention that are not importable objects: the pytest fixture's method, page names.
NOT_OBJECTS = {"harness.check", "harness.md"}


def test_every_dotted_harness_name_in_the_docs_resolves_at_its_current_path() -> None:
    """A page naming `harness.x.y` names a module or object that exists there (not through an old path
    that warns): a module that moves or splits without its pages is caught here."""
    import importlib
    import warnings

    names: set[str] = set()
    for page in PAGES:
        if page.name == "moved.md":
            continue  # the old paths by design (tests/unit/test_moved_paths.py checks that page)
        names |= set(re.findall(r"\bharness(?:\.[A-Za-z_]\w*)+", page.read_text()))
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in sorted(names - NOT_OBJECTS):
            if name.startswith("harness.recipes."):
                continue  # each needs its real runtime; tests/runtimes/test_recipe_pages.py keeps those pages
            parts = name.split(".")
            for split in range(len(parts), 0, -1):
                try:
                    found: object = importlib.import_module(".".join(parts[:split]))
                    break
                except ModuleNotFoundError:
                    continue
            try:
                for attribute in parts[split:]:
                    found = getattr(found, attribute)
            except (AttributeError, DeprecationWarning) as error:
                missing.append(f"{name}: {error}")
    assert not missing, "\n".join(missing)


def test_every_file_of_the_package_a_page_names_exists() -> None:
    """`harness/policies/registry.py`, `harness/bridges/`: a page that names a file or folder of the package
    names one that exists (`.harness/`, the folder the harness writes in a user's project, is no such file)."""
    missing = []
    for page in PAGES:
        for path in set(re.findall(r"(?<![.\w])harness/[\w/.]*\w", page.read_text())):
            if not ((ROOT / path).exists() or (ROOT / f"{path}.py").exists()):
                missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert not missing, missing
