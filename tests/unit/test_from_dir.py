"""`[world] from_dir`: a real tree copied into the fake filesystem when the scenario loads (files,
directories, symlinks as links, hard links as groups), refused past its limits with the file named,
and carried inline by a reproducer so it replays without the tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import get_scheduler, run
from harness.scenario import ScenarioError, load_scenario, scenario_from_data
from harness.scenario import tree as tree_module
from harness.scenario.dump import scenario_to_data

SCENARIO = """
name = "from-tree"
[world]
cwd = "/repo"
from_dir = {from_dir}
files = {{ "/repo/override.txt" = "from the scenario" }}
[[batches]]
[[batches.calls]]
id = "edit"
name = "patch"
arguments = '{{"path": "src/app.py", "old": "1", "new": "2"}}'
[[batches.calls]]
id = "read"
name = "read_file"
arguments = '{{"path": "alias/app.py"}}'
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project" / "tree"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: main\n")
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "override.txt").write_text("from the tree")
    (root / "empty").mkdir()
    os.symlink("src", root / "alias")
    os.symlink("/etc/passwd", root / "outside")  # copied as a link: never read from the real disk
    os.link(root / "src" / "app.py", root / "hard.py")
    return root


def write(tmp_path: Path, from_dir: str) -> Path:
    path = tmp_path / "project" / "scenario.toml"
    path.write_text(SCENARIO.format(from_dir=from_dir))
    return path


def test_the_tree_becomes_the_world_under_the_cwd(tree: Path, tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, '{ path = "tree", exclude = [".git"] }'))
    world = scenario.world
    assert dict(world.files) == {"/repo/src/app.py": "x = 1\n", "/repo/hard.py": "x = 1\n",
                                 "/repo/override.txt": "from the scenario"}
    assert set(world.dirs) >= {"/repo", "/repo/src", "/repo/empty"} and "/repo/.git" not in world.dirs
    assert dict(world.symlinks) == {"/repo/alias": "src", "/repo/outside": "/etc/passwd"}
    assert world.hardlinks == (("/repo/hard.py", "/repo/src/app.py"),)
    # The copied symlink is a real alias in the world: parallel reads the stale file through it.
    result = run(scenario, get_scheduler("parallel"), 1)
    assert result.results[1].value["content"] == "x = 1\n"


def test_a_reproducer_carries_the_tree_and_replays_without_it(tree: Path, tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, '"tree"'))
    data = scenario_to_data(scenario)
    assert "from_dir" not in data["world"] and data["world"]["files"]["/repo/.git/HEAD"] == "ref: main\n"
    (tree / "src" / "app.py").write_text("changed on disk\n")
    again = scenario_from_data(data, "<reproducer>")
    for seed in (1, 2):
        assert run(again, get_scheduler("parallel"), seed).fingerprint == \
            run(scenario, get_scheduler("parallel"), seed).fingerprint


@pytest.mark.parametrize(("from_dir", "setup", "expected"), [
    ('"nope"', None, "nope: expected a readable directory"),
    ('"tree/src/app.py"', None, "expected a directory"),
    ('"tree"', "binary", "logo.png: expected UTF-8 text"),
    ('"tree"', "big", "big.txt: expected a file of at most"),
    ('"tree"', "many", "expected at most 2 files"),
    ('{ path = "tree", exclude = "x" }', None, "a list of glob patterns"),
    ('{ path = "tree", into = "rel" }', None, "an absolute path"),
    ('{ path = "tree", depth = 1 }', None, "unknown key"),
])
def test_a_tree_that_cannot_be_a_world_is_a_clear_error(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        from_dir: str, setup: str | None, expected: str) -> None:
    if setup == "binary":
        (tree / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    elif setup == "big":
        monkeypatch.setattr(tree_module, "MAX_FILE_BYTES", 10)
        (tree / "big.txt").write_text("x" * 11)
    elif setup == "many":
        monkeypatch.setattr(tree_module, "MAX_FILES", 2)
    path = write(tmp_path, from_dir)
    with pytest.raises(ScenarioError) as error:
        load_scenario(path)
    message = str(error.value)
    assert message.startswith(f"{path}: world.from_dir") and expected in message
