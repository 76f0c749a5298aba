"""The `[world]` table of a scenario file: the tree, session and users a run starts from.

Owns its validation (absolute paths, hard-link groups of listed files, a consistent tree), `from_dir`
(a real tree inside the scenario file's directory, or one the user allowed, copied in;
`harness.scenario.tree` reads it) and turning the table into a `WorldState` by building the world
once. It never reads the scenario's other tables.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.scenario.reader import Reader
from harness.scenario.spec import Embedded
from harness.scenario.tree import Tree, TreeError, read_tree
from harness.scenario.trust import Trust
from harness.world.state import WorldState
from harness.world.world import World

_WORLD_KEYS = {"cwd", "home", "case_sensitive", "env", "dirs", "files", "symlinks", "hardlinks", "from_dir",
               "users"}


def parse_world(r: Reader, value: Any, trust: Trust | None = None) -> tuple[WorldState, Embedded | None]:
    """`[world]` as the `WorldState` a run starts from (`from_dir`'s tree first; the table's entries
    win), and what `from_dir` copied from the real disk (read only where `trust` allows)."""
    w = r.table(value, "world", _WORLD_KEYS)
    cwd = r.abs_path(w.get("cwd", "/"), "world.cwd")
    home = r.abs_path(w.get("home", "/home/user"), "world.home")
    case_sensitive = r.boolean(w.get("case_sensitive", True), "world.case_sensitive")
    env_table = w.get("env", {})
    if not isinstance(env_table, Mapping) or not all(isinstance(v, str) for v in env_table.values()):
        raise r.fail("world.env", "a table of string values", env_table)
    dirs_value = w.get("dirs", [])
    if not isinstance(dirs_value, list):
        raise r.fail("world.dirs", "a list of absolute paths", dirs_value)
    dirs = [r.abs_path(d, f"world.dirs[{i}]") for i, d in enumerate(dirs_value)]
    files_table = w.get("files", {})
    if not isinstance(files_table, Mapping):
        raise r.fail("world.files", "a table of path = content", files_table)
    files = []
    for path, content in files_table.items():
        field = f"world.files.{json.dumps(path)}"
        files.append((r.abs_path(path, field), r.string(content, field, nonempty=False)))
    links_table = w.get("symlinks", {})
    if not isinstance(links_table, Mapping):
        raise r.fail("world.symlinks", "a table of link path = target", links_table)
    symlinks = [(r.abs_path(p, f"world.symlinks.{json.dumps(p)}"), r.string(t, f"world.symlinks.{json.dumps(p)}"))
                for p, t in links_table.items()]
    embedded = None
    if "from_dir" in w:
        tree, embedded = _from_dir(r, w["from_dir"], cwd, trust or Trust())
        dirs = [*tree.dirs, *dirs]
        listed = {p for p, _ in files}
        files = [*((p, c) for p, c in tree.files if p not in listed), *files]  # world.files wins
        symlinks = [*tree.symlinks, *symlinks]
    else:
        tree = None
    groups_value = w.get("hardlinks", [])
    if not isinstance(groups_value, list):
        raise r.fail("world.hardlinks", "a list of path lists, e.g. [['/a', '/b']]", groups_value)
    file_paths = {p for p, _ in files}
    hardlinks = []
    for i, group in enumerate(groups_value):
        field = f"world.hardlinks[{i}]"
        if not isinstance(group, list) or len(group) < 2:
            raise r.fail(field, "a list of at least two absolute paths", group)
        paths = tuple(r.abs_path(p, f"{field}[{j}]") for j, p in enumerate(group))
        if paths[0] not in file_paths:
            raise r.fail(f"{field}[0]", "a path listed in world.files (the file the others link to)", paths[0])
        hardlinks.append(paths)
    if tree is not None:
        hardlinks = [*tree.hardlinks, *hardlinks]
    # Building the world once validates the structure (e.g. a file inside a file) and normalises
    # it into canonical form.
    users_table = w.get("users", {})
    if not isinstance(users_table, Mapping):
        raise r.fail("world.users", 'a table of user name = home directory, e.g. { alice = "/home/alice" }',
                     users_table)
    users = {}
    for user, user_home in users_table.items():
        if not user or "/" in user:
            raise r.fail(f"world.users.{json.dumps(user)}", "a user name without '/'", user)
        users[user] = r.abs_path(user_home, f"world.users.{json.dumps(user)}")
    world = World(case_sensitive=case_sensitive, cwd=cwd, home=home, env=dict(env_table), users=users)
    try:
        world.populate(dirs=dirs, files=files, symlinks=symlinks, hardlinks=hardlinks)
    except OSError as exc:
        raise r.fail("world", "a consistent file tree", f"{exc.strerror or exc}: {exc.filename}") from None
    return world.state(), embedded


def _from_dir(r: Reader, value: Any, cwd: str, trust: Trust) -> tuple[Tree, Embedded]:
    """`from_dir = "tree/"` or `{ path = "tree/", into = "/repo", exclude = [".git"] }`: a real tree,
    relative to the scenario file, copied under `into` (default: the world's cwd). It stays inside
    the file's directory, after symlinks, unless `trust` allows another root: a file from elsewhere
    cannot copy `../../secrets` into a reproducer."""
    table = {"path": value} if isinstance(value, str) else r.table(value, "world.from_dir", {"path", "into",
                                                                                             "exclude"})
    where = "world.from_dir" if isinstance(value, str) else "world.from_dir.path"
    relative = r.string(table.get("path"), where)
    into = r.abs_path(table.get("into", cwd), "world.from_dir.into")
    exclude: Any = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) and p for p in exclude):
        raise r.fail("world.from_dir.exclude", 'a list of glob patterns, e.g. [".git", "*.png"]', exclude)
    base = Path(r.file).parent if Path(r.file).is_file() else Path.cwd()
    root = base / relative  # an absolute path replaces the base: the check below still applies
    if not trust.allows_tree(root, base):
        raise r.fail(where, f"a tree inside the scenario file's directory ({_real(base)}, after symlinks), got "
                     f"{relative!r}, which leads to {_real(root)}; if you mean it to be read, add --allow-dir "
                     f"{_real(root)} (in Python: trust=Trust(dirs=[...]))", has_got=False)
    try:
        tree = read_tree(root, into, exclude=tuple(exclude))
    except TreeError as exc:
        raise r.fail(where, f"a directory tree that fits a world ({exc})", has_got=False) from None
    files = tuple(posixpath.relpath(path, into) for path, _ in tree.files)
    return tree, Embedded(_real(root), into, files)


def _real(path: Path) -> str:
    """`path` resolved after symlinks, for messages and the record of what was read."""
    try:
        return str(path.resolve())
    except (OSError, ValueError, RuntimeError):
        return str(path)
