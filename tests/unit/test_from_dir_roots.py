"""`[world] from_dir` stays inside the scenario file's directory (resolved after symlinks) unless the
user allows another root (`--allow-dir`, `Trust(dirs=...)`), a saved reproducer says which real files
it carries, and a tree a thousand levels deep is read without a RecursionError (issue 26)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenario import ScenarioError, load_scenario
from harness.scenario.reader import MAX_PATH_DEPTH
from harness.scenario.trust import Trust

SECRET = "SECRET-7f3a-do-not-copy"

#: config-clobber with its world from a tree: parallel loses an update, so explore saves a reproducer.
RACY = """
name = "tree-clobber"
[world]
cwd = "/repo"
from_dir = {from_dir}
[world.files]
"/repo/config.yaml" = "timeout: 30\\nretries: 3\\n"
[[batches]]
[[batches.calls]]
id = "raise-timeout"
name = "patch"
arguments = '{{"path": "config.yaml", "old": "timeout: 30", "new": "timeout: 60"}}'
[[batches.calls]]
id = "raise-retries"
name = "patch"
arguments = '{{"path": "config.yaml", "old": "retries: 3", "new": "retries: 5"}}'
"""


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outside/secret.txt beside tmp/a/b/ (the scenario's directory, with tree/notes.txt in it)."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    home = tmp_path / "a" / "b"
    (home / "tree").mkdir(parents=True)
    (home / "tree" / "notes.txt").write_text("inside\n")
    return home


def scenario(home: Path, from_dir: str) -> Path:
    path = home / "s.toml"
    path.write_text(RACY.format(from_dir=from_dir))
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.stdout, done.stderr


def secret_copies(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.name != "secret.txt" and SECRET in p.read_text()]


@pytest.mark.parametrize("from_dir", ['"../../outside"', '{{ path = "../../outside", into = "/loot" }}',
                                      '"{outside}"', '"link"', '"tree/../../../outside"', '"."'])
def test_a_tree_outside_the_file_s_directory_is_refused(layout: Path, from_dir: str) -> None:
    outside = layout.parent.parent / "outside"
    os.symlink(outside, layout / "link")
    path = scenario(layout, from_dir.format(outside=outside).replace("{{", "{").replace("}}", "}"))
    if from_dir == '"."':  # the directory itself is inside: its symlink out is copied as a link, never followed
        assert SECRET not in json.dumps(dict(load_scenario(path).world.files))
        return
    with pytest.raises(ScenarioError, match=r"world\.from_dir(\.path)?: expected a tree inside the scenario file's "
                                            r"directory .* --allow-dir") as info:
        load_scenario(path)
    assert f"add --allow-dir {outside.resolve()} " in str(info.value) and "\n" not in str(info.value)


def test_another_root_is_read_when_allowed(layout: Path) -> None:
    outside = layout.parent.parent / "outside"
    path = scenario(layout, '{ path = "../../outside", into = "/loot" }')
    assert dict(load_scenario(path, trust=Trust(dirs=(str(outside),))).world.files)["/loot/secret.txt"] == SECRET
    code, stdout, stderr = invoke("run", str(path), "--allow-dir", str(outside))
    assert code == 0 and stderr == "", stdout + stderr
    assert f"--allow-dir {outside}" in stdout  # the reproduce line carries it
    inside = scenario(layout, '"tree"')
    assert load_scenario(inside).embedded.files == ("notes.txt",)  # type: ignore[union-attr]


def test_explore_never_saves_an_outside_file_into_a_reproducer(layout: Path, tmp_path: Path) -> None:
    """The attack of issue 26: `from_dir = { path = "../../outside", into = "/loot" }` + `explore --save-dir`."""
    path = scenario(layout, '{ path = "../../outside", into = "/loot" }')
    saved = tmp_path / "saved"
    code, stdout, stderr = invoke("explore", str(path), "--scheduler", "parallel", "--save-dir", str(saved))
    assert code == 2 and stdout == "" and "--allow-dir" in stderr, stdout + stderr
    assert not saved.exists() and secret_copies(tmp_path) == []
    # Allowed, it is copied, and the reproducer and its replay say so.
    outside = tmp_path / "outside"
    code, stdout, stderr = invoke("explore", str(path), "--scheduler", "parallel", "--seed", "3", "--save-dir",
                                  str(saved), "--allow-dir", str(outside))
    assert code == 1 and f"reproducer embeds 1 file read from {outside} (world: /loot): secret.txt" in stdout, \
        stdout + stderr
    (reproducer,) = saved.glob("*.json")
    assert json.loads(reproducer.read_text())["embedded"] == {"from_dir": str(outside), "into": "/loot",
                                                              "files": ["secret.txt"]}
    code, stdout, stderr = invoke("replay", str(reproducer))
    assert code == 1 and f"embeds 1 file read from {outside} (world: /loot): secret.txt" in stdout, stdout + stderr


@pytest.fixture
def thousand_levels(layout: Path) -> Iterator[Path]:
    """tree/d/d/.../d/bottom.txt, 1,100 levels, made and removed one level at a time: os.makedirs and
    shutil.rmtree (pytest's clean-up of old temporary directories too) recurse."""
    deep = layout / "tree"
    for _ in range(1100):
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.txt").write_text("found\n")
    yield layout
    (deep / "bottom.txt").unlink()
    while deep != layout / "tree":
        deep.rmdir()
        deep = deep.parent


def test_a_tree_a_thousand_levels_deep_is_a_clear_error_not_a_recursion_error(thousand_levels: Path) -> None:
    layout = thousand_levels
    path = scenario(layout, '{ path = "tree", into = "/t" }')
    code, stdout, stderr = invoke("run", str(path))
    assert code == 2 and stdout == "", stdout + stderr
    assert f"{path}: world.from_dir.path: expected a directory tree that fits a world" in stderr
    assert f"at most {MAX_PATH_DEPTH} directories deep" in stderr and stderr.count("\n") == 1
    # Paths written in the file are held to the same depth.
    deep_file = layout / "deep.toml"
    deep_file.write_text(RACY.replace("from_dir = {from_dir}", f'dirs = ["{"/d" * 1100}"]'))
    code, stdout, stderr = invoke("run", str(deep_file))
    assert code == 2 and f"world.dirs[0]: expected a path at most {MAX_PATH_DEPTH} directories deep" in stderr, \
        stdout + stderr


def test_a_tree_just_within_the_depth_limit_runs_and_replays(layout: Path, tmp_path: Path) -> None:
    deep = layout / "tree"
    for _ in range(MAX_PATH_DEPTH - 2):  # under /t: the deepest directory is at the limit less one
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.txt").write_text("found\n")
    path = scenario(layout, '{ path = "tree", into = "/t" }')
    assert any(p.endswith("/bottom.txt") and p.count("/") == MAX_PATH_DEPTH for p, _ in load_scenario(path).world.files)
    saved = tmp_path / "saved"
    code, stdout, stderr = invoke("explore", str(path), "--scheduler", "parallel", "--seed", "3", "--save-dir",
                                  str(saved))
    assert code == 1 and stderr == "", stdout + stderr
    (reproducer,) = saved.glob("*.json")
    code, stdout, stderr = invoke("replay", str(reproducer))
    assert code == 1 and "reproduced" in stdout, stdout + stderr
