"""The lean world's semantics, operation by operation, against the pyfakefs world.

Each test builds the same state twice, as a lean world and (inside `pyfakefs_worlds()`) as a pyfakefs
one, applies the same operations to both at the same virtual times, and requires the same answers,
the same errors (errno and message), the same `WorldState` after every step and, once the lean world
is promoted, the same pyfakefs objects (mode, inode, link count, size, times, entry order). Then
promotion in the middle of a run: a tool that creates a symlink halfway through a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyfakefs.fake_file import FakeDirectory, FakeFile

from harness import run
from harness.faults.latency import Fixed
from harness.model import Batch
from harness.scenario.spec import Scenario
from harness.tools.catalogue import BUILTIN, Catalogue
from harness.tools.spec import Declared, SideEffect, ToolIO, ToolSpec
from harness.world import World, WorldError, WorldState
from harness.world.choice import pyfakefs_worlds
from harness.world.clock import virtual_file_times
from harness.world.lean import LeanWorld
from tests.unit.test_lean_world_differential import _both

STATE = WorldState(files=(("/repo/a.txt", "alpha\n"), ("/repo/src/b.py", "b = 1\n"), ("/repo/src/deep/c.txt", "c\n"),
                          ("/top.txt", "top\n")),
                   dirs=("/repo", "/repo/empty", "/repo/src", "/repo/src/deep"), cwd="/repo")
Op = Callable[[World], Any]


def _pair(state: WorldState = STATE) -> tuple[World, World]:
    lean = World.from_state(state)
    assert isinstance(lean, LeanWorld)
    with pyfakefs_worlds():
        fake = World.from_state(state)
    assert not isinstance(fake, LeanWorld)
    return lean, fake


def _outcome(op: Op, world: World) -> tuple[str, Any]:
    try:
        return "ok", op(world)
    except WorldError as exc:
        return "error", (exc.errno, str(exc))
    except (ValueError, OSError) as exc:  # what a pyfakefs world raises without a WorldError around it
        return type(exc).__name__, str(exc)


def _objects(fs: Any) -> Iterator[tuple[Any, ...]]:
    """Every object of a pyfakefs tree with what `os.stat` and `os.listdir` show of it."""
    pending: list[tuple[str, FakeFile]] = [("/", fs.root)]
    while pending:
        path, obj = pending.pop()
        result = obj.stat_result
        entries = list(obj.entries) if isinstance(obj, FakeDirectory) else None
        yield (path, result.st_mode, result.st_ino, result.st_nlink, result.st_size, result._st_mtime_ns,
               result._st_ctime_ns, result._st_atime_ns, entries, None if entries is not None else obj.contents)
        if isinstance(obj, FakeDirectory):
            pending.extend((path.rstrip("/") + "/" + name, child) for name, child in obj.entries.items())


def _same(ops: list[Op], state: WorldState = STATE, *, promote: bool = True,
          stays_lean: bool = False) -> tuple[World, World]:
    """Apply `ops` to both worlds, one virtual millisecond apart; every answer and state must agree
    (`stays_lean`: and the lean world did it all without pyfakefs)."""
    lean, fake = _pair(state)
    for ms, op in enumerate(ops, start=1):
        with virtual_file_times(lambda ms=ms: float(ms)):  # type: ignore[misc]
            assert _outcome(op, lean) == _outcome(op, fake), f"operation {ms}"
        assert lean.state() == fake.state(), f"after operation {ms}"
        assert lean.state().digest() == fake.state().digest()
    assert isinstance(lean, LeanWorld) or not stays_lean
    if promote:
        assert sorted(_objects(lean.fs)) == sorted(_objects(fake.fs))
        assert lean.fs.last_ino == fake.fs.last_ino and lean.fs.umask == fake.fs.umask
        assert type(lean) is World
    return lean, fake


def test_an_unchanged_lean_world_promotes_to_the_pyfakefs_world_of_its_state() -> None:
    _same([lambda w: w.read_text("/repo/a.txt"), lambda w: w.list_files("/repo")])


def test_reads_listings_and_identities() -> None:
    paths = ["/repo/a.txt", "/repo//a.txt", "/repo/a.txt/", "/repo/./a.txt", "/repo/src/../a.txt", "/repo/src",
             "/repo/missing", "/repo/missing/x", "/repo/a.txt/x", "repo/a.txt", "", "/", "//repo/a.txt",
             "/../../repo/a.txt", "/repo/empty/../../top.txt", "/repo/src/deep/"]
    ops: list[Op] = []
    for path in paths:
        ops += [lambda w, p=path: w.exists(p), lambda w, p=path: w.is_dir(p), lambda w, p=path: w.read_text(p),
                lambda w, p=path: w.mtime(p), lambda w, p=path: w.canonical(p), lambda w, p=path: w.list_files(p),
                lambda w, p=path: w.realpath(p), lambda w, p=path: w.is_link(p)]
    _same(ops)


def test_absolute_paths_as_the_kernel_opens_them() -> None:
    raws = ["a.txt", "src/../a.txt", "../../../..", "/../../repo/a.txt", "a.txt/../b", "missing/../a.txt",
            "src/deep/../../a.txt", "~/x", "~root/y", "a\x00b", "x" * 256, "/".join(["d"] * 2100), "empty/..", "."]
    _same([lambda w, r=raw: w.absolute(r) for raw in raws])


def test_writes_stamp_the_virtual_time_and_keep_the_entry_order() -> None:
    lean, _ = _same([lambda w: w.write_text("/repo/a.txt", "one"), lambda w: w.write_text("/repo/new.txt", "two"),
                     lambda w: w.replace_text("/repo/src/b.py", "three"), lambda w: w.replace_text("/repo/n2.txt", "4"),
                     lambda w: w.append_text("/repo/a.txt", "+"), lambda w: w.mtime("/repo/a.txt"),
                     lambda w: w.mtime("/repo/n2.txt"), lambda w: w.write_text("/repo/src/../top.txt", "up"),
                     lambda w: w.write_text("/repo//a.txt", "slashes"), lambda w: w.list_files("/repo")])
    assert lean.mtime("/repo/a.txt") == pytest.approx(1_767_225_600.009, abs=1e-6)  # the ninth virtual ms


@pytest.mark.parametrize("op", [
    lambda w: w.write_text("/repo/src", "x"),  # writing to a directory
    lambda w: w.write_text("/repo/src/", "x"),
    lambda w: w.replace_text("/repo/src", "x"),
    lambda w: w.write_text("/repo/a.txt/x", "x"),  # a file used as a directory
    lambda w: w.replace_text("/repo/a.txt/x", "x"),
    lambda w: w.write_text("/repo/new/deeper/x.txt", "x"),  # missing parents: created (pyfakefs, promoted)
    lambda w: w.replace_text("/repo/missing/x.txt", "x"),
    lambda w: w.write_text("/repo/new/", "x"),
    lambda w: w.write_text("relative.txt", "x"),
    lambda w: w.write_text("/repo/a.txt", "\udcff"),  # text pyfakefs cannot encode
    lambda w: w.remove("/repo/src"),  # removing a non-empty directory, an empty one, a missing name
    lambda w: w.remove("/repo/empty"),
    lambda w: w.remove("/repo/missing"),
    lambda w: w.remove("/repo/a.txt/x"),
    lambda w: w.remove("/repo/src/../a.txt"),
    lambda w: w.rename("/repo/a.txt", "/repo/src/b.py"),  # over an existing file
    lambda w: w.rename("/repo/a.txt", "/repo/src/fresh.txt"),
    lambda w: w.rename("/repo/a.txt", "/repo/a.txt"),
    lambda w: w.rename("/repo/a.txt", "/repo/src"),  # over a directory
    lambda w: w.rename("/repo/missing", "/repo/x"),
    lambda w: w.rename("/repo/a.txt", "/repo/missing/x"),
    lambda w: w.rename("/repo/src", "/repo/moved"),  # a directory
    lambda w: w.make_dir("/repo/src"),
    lambda w: w.make_dir("/repo/a.txt"),
    lambda w: w.make_dir("/repo/made/deep"),
    lambda w: w.symlink("/repo/l.txt", "/repo/a.txt"),
    lambda w: w.hardlink("/repo/a.txt", "/repo/h.txt"),
])
def test_failures_and_promotions_match_pyfakefs(op: Op) -> None:
    _same([op, lambda w: w.read_text("/repo/a.txt"), lambda w: w.write_text("/repo/after.txt", "after"),
           lambda w: w.list_files("/")])


def test_new_files_and_directories_are_made_without_pyfakefs() -> None:
    _same([lambda w: w.write_text("/repo/new/deeper/x.txt", "x"), lambda w: w.make_dir("/repo/made/deep"),
           lambda w: w.make_dir("/repo/made"), lambda w: w.write_text("/repo/made/deep/y.txt", "y"),
           lambda w: w.write_text("/repo/src/../z/w.txt", "w"), lambda w: w.list_files("/"),
           lambda w: w.mtime("/repo/new/deeper/x.txt"), lambda w: w.read_text("/repo/made")], stays_lean=True)


def test_failed_writes_fail_without_pyfakefs() -> None:
    _same([lambda w: w.replace_text("/repo/missing/x.txt", "x"), lambda w: w.replace_text("/repo/src", "x"),
           lambda w: w.replace_text("/repo/a.txt/x", "x"), lambda w: w.replace_text("/repo/missing/", "x"),
           lambda w: w.write_text("/repo/src", "x"), lambda w: w.write_text("/repo/a.txt/x", "x"),
           lambda w: w.remove("/repo/src"), lambda w: w.read_text("/repo/nothing"), lambda w: w.mtime("/repo/src")],
          stays_lean=True)


def test_restore_and_clone() -> None:
    changed = WorldState(files=(("/r/x.txt", "x"),), dirs=("/r", "/r/d"))
    _same([lambda w: w.write_text("/repo/a.txt", "1"), lambda w: w.restore_files(changed),
           lambda w: w.write_text("/r/y.txt", "y"), lambda w: w.clone().state(),
           lambda w: w.clone().mtime("/r/y.txt")])


_PATHS = ["/repo/a.txt", "/repo/src/b.py", "/repo/new.txt", "/repo/src", "/repo/empty/e.txt", "/repo/x/y.txt",
          "/repo/src/../a.txt", "/repo/a.txt/z"]


@given(st.lists(st.tuples(st.sampled_from(["write", "replace", "append", "remove", "rename", "read", "mkdir"]),
                          st.sampled_from(_PATHS), st.sampled_from(_PATHS), st.sampled_from(["", "v1", "v2\n"])),
                max_size=12))
def test_any_sequence_of_operations(steps: list[tuple[str, str, str, str]]) -> None:
    def op(kind: str, path: str, other: str, text: str) -> Op:
        return {"write": lambda w: w.write_text(path, text), "replace": lambda w: w.replace_text(path, text),
                "append": lambda w: w.append_text(path, text), "remove": lambda w: w.remove(path),
                "rename": lambda w: w.rename(path, other), "read": lambda w: (w.read_text(path), w.mtime(path)),
                "mkdir": lambda w: w.make_dir(path)}[kind]

    _same([op(*step) for step in steps] + [lambda w: w.list_files("/repo")])


# -- promotion in the middle of a run ---------------------------------------------------------------


def _link_halfway(args: dict[str, Any], io: ToolIO) -> Any:
    yield 0.5
    io.world.symlink("/repo/alias.txt", "/repo/a.txt")  # what no built-in tool does: the world must promote
    yield 0.5
    return {"linked": True}


def test_a_tool_that_creates_a_symlink_halfway_promotes_the_world_mid_run() -> None:
    tools = Catalogue({**dict(BUILTIN.items()), "link": ToolSpec(
        "link", "symlink alias.txt to a.txt", Declared(read_only=False, side_effect=SideEffect.LOCAL), _link_halfway,
        Fixed(100))})
    scenario = Scenario(
        name="link-halfway", world=STATE, catalogue=tools,
        batches=(Batch.of([("w", "write_file", {"path": "a.txt", "content": "before\n"}), ("l", "link", {})]),
                 Batch.of([("r", "read_file", {"path": "alias.txt"}),
                           ("w2", "write_file", {"path": "alias.txt", "content": "through the link\n"})])))
    assert isinstance(World.from_state(scenario.world), LeanWorld)
    result = run(scenario, "serial", 3)
    assert type(result.world) is World  # promoted, in place: the run's own world object
    assert result.final.symlinks == (("/repo/alias.txt", "/repo/a.txt"),)
    assert result.final.file_map["/repo/a.txt"] == "through the link\n"
    for scheduler in ("serial", "parallel"):
        _both(scenario, scheduler, 3)


def test_asking_for_fs_promotes_and_every_holder_sees_it() -> None:
    lean, fake = _pair()
    holders = [lean]
    lean.write_text("/repo/a.txt", "changed")
    assert lean.fs.resolve("/repo/a.txt").contents == "changed"
    assert type(holders[0]) is World and holders[0].read_text("/repo/a.txt") == "changed"
    assert lean.state() != fake.state()


# -- symlinks and hard links, without pyfakefs ------------------------------------------------------

#: A tree with every kind of alias: a three-name hard-link group across directories, symlinks absolute,
#: relative, to a directory, through `..`, dangling, and a loop.
LINKED = WorldState(
    files=(("/repo/a.txt", "alpha\n"), ("/repo/b.txt", "beta\n"), ("/repo/hard.txt", "beta\n"),
           ("/repo/src/c.txt", "gamma\n"), ("/repo/src/h2.txt", "beta\n"), ("/top.txt", "top\n")),
    dirs=("/repo", "/repo/empty", "/repo/src"),
    symlinks=(("/repo/link.txt", "/repo/a.txt"), ("/repo/rel.txt", "src/c.txt"), ("/repo/srclink", "src"),
              ("/repo/up.txt", "../top.txt"), ("/repo/dangling.txt", "/repo/nowhere/x.txt"),
              ("/repo/loop1", "loop2"), ("/repo/loop2", "loop1"), ("/repo/src/back", "/repo")),
    hardlinks=(("/repo/b.txt", "/repo/hard.txt", "/repo/src/h2.txt"),), cwd="/repo")
_LINKED_PATHS = ["/repo/a.txt", "/repo/b.txt", "/repo/hard.txt", "/repo/src/h2.txt", "/repo/link.txt",
                 "/repo/rel.txt", "/repo/srclink", "/repo/srclink/c.txt", "/repo/srclink/h2.txt", "/repo/up.txt",
                 "/repo/dangling.txt", "/repo/loop1", "/repo/loop1/x", "/repo/src/back/src/back/a.txt",
                 "/repo/srclink/../a.txt", "/repo/link.txt/x", "/repo/srclink/new.txt", "/repo/new.txt", "/repo",
                 "/repo/srclink/", "link.txt", "srclink/c.txt", "/repo/empty/../link.txt"]


def _canonicals(world: World) -> list[str]:
    return [world.canonical(path) for path in _LINKED_PATHS]


def _same_linked(ops: list[Op]) -> None:
    """`_same` on the linked tree, lean throughout; then, promoted, the same identities as pyfakefs's
    (materialised hard links are named as pyfakefs names them)."""
    lean, fake = _same(ops, LINKED, stays_lean=True, promote=False)
    assert isinstance(lean, LeanWorld)
    _ = lean.fs
    assert sorted(_objects(lean.fs)) == sorted(_objects(fake.fs))
    assert lean.fs.last_ino == fake.fs.last_ino
    assert _canonicals(lean) == _canonicals(fake)


def test_a_linked_state_makes_a_lean_world() -> None:
    assert isinstance(World.from_state(LINKED), LeanWorld)
    _same_linked([lambda w: w.state()])


def test_reads_through_symlinks_and_hard_links() -> None:
    ops: list[Op] = []
    for path in _LINKED_PATHS:
        ops += [lambda w, p=path: w.exists(p), lambda w, p=path: w.is_dir(p), lambda w, p=path: w.read_text(p),
                lambda w, p=path: w.mtime(p), lambda w, p=path: w.canonical(p), lambda w, p=path: w.list_files(p),
                lambda w, p=path: w.realpath(p), lambda w, p=path: w.absolute(p)]
    lstat = ("/repo/a.txt", "/repo/hard.txt", "/repo/link.txt", "/repo/srclink", "/repo/loop1", "/repo/dangling.txt",
             "/repo/new.txt", "/repo", "/repo/nowhere/x.txt", "/repo/a.txt/x")
    ops += [lambda w, p=path: w.is_link(p) for path in lstat]
    ops += [lambda w, p=path: w.read_link(p) for path in ("/repo/link.txt", "/repo/rel.txt", "/repo/loop1")]
    _same_linked(ops)


def test_writes_through_symlinks_and_hard_links() -> None:
    _same_linked([lambda w: w.write_text("/repo/hard.txt", "one"), lambda w: w.read_text("/repo/src/h2.txt"),
                  lambda w: w.write_text("/repo/link.txt", "two"), lambda w: w.write_text("/repo/srclink/h2.txt", "3"),
                  lambda w: w.write_text("/repo/dangling.txt", "made"), lambda w: w.write_text("/repo/loop1", "x"),
                  lambda w: w.replace_text("/repo/b.txt", "new b"), lambda w: w.write_text("/repo/hard.txt", "four"),
                  lambda w: w.replace_text("/repo/rel.txt", "no longer a link"),
                  lambda w: w.remove("/repo/up.txt"), lambda w: w.remove("/repo/src/h2.txt"),
                  lambda w: w.remove("/repo/srclink"), lambda w: w.append_text("/repo/hard.txt", "+"),
                  lambda w: w.make_dir("/repo/d/e"), lambda w: w.rename("/repo/a.txt", "/repo/d/a.txt"),
                  lambda w: w.list_files("/repo"), lambda w: w.mtime("/repo/hard.txt"),
                  lambda w: [w.canonical(p) for p in _LINKED_PATHS]])


@pytest.mark.parametrize("op", [
    lambda w: w.rename("/repo/b.txt", "/repo/x.txt"),  # a hard-linked name
    lambda w: w.rename("/repo/a.txt", "/repo/hard.txt"),  # onto one
    lambda w: w.rename("/repo/a.txt", "/repo/link.txt"),  # onto a symlink
    lambda w: w.rename("/repo/link.txt", "/repo/l2.txt"),  # a symlink itself
    lambda w: w.make_dir("/repo/srclink/made"),  # through a symlink
    lambda w: w.make_dir("/repo/link.txt"),
    lambda w: w.symlink("/repo/l3.txt", "a.txt"),
    lambda w: w.hardlink("/repo/a.txt", "/repo/h3.txt"),
    lambda w: w.replace_text("/repo/srclink/c.txt", "x"),  # an atomic write through a directory link
    lambda w: w.is_link("/repo/srclink/c.txt"),  # lstat through a symlink, and of odd spellings
    lambda w: w.is_link("/repo/loop1/x"),
    lambda w: w.is_link("/repo/srclink/"),
    lambda w: w.is_link("srclink"),
    lambda w: w.read_link("/repo/a.txt"),
])
def test_what_the_lean_world_leaves_to_pyfakefs_with_links(op: Op) -> None:
    _same([op, lambda w: w.write_text("/repo/hard.txt", "after"), lambda w: w.list_files("/repo"),
           lambda w: [w.canonical(p) for p in _LINKED_PATHS]], LINKED)


def test_a_hard_link_group_split_by_replacing_its_last_name_keeps_pyfakefs_identities() -> None:
    # pyfakefs's object keeps the name it was last given (hard.txt): b.txt's identity stays
    # /repo/src/h2.txt after that name is replaced by a new file.
    _same_linked([lambda w: w.replace_text("/repo/src/h2.txt", "new"), lambda w: w.canonical("/repo/b.txt"),
                  lambda w: w.write_text("/repo/b.txt", "b"), lambda w: w.read_text("/repo/hard.txt")])


_LINK_OPS = ["write", "replace", "append", "remove", "rename", "read", "mkdir", "canonical", "exists", "list"]


@given(st.lists(st.tuples(st.sampled_from(_LINK_OPS), st.sampled_from(_LINKED_PATHS), st.sampled_from(_LINKED_PATHS),
                          st.sampled_from(["", "v1", "v2\n"])), max_size=10))
def test_any_sequence_of_operations_on_a_linked_tree(steps: list[tuple[str, str, str, str]]) -> None:
    def op(kind: str, path: str, other: str, text: str) -> Op:
        return {"write": lambda w: w.write_text(path, text), "replace": lambda w: w.replace_text(path, text),
                "append": lambda w: w.append_text(path, text), "remove": lambda w: w.remove(path),
                "rename": lambda w: w.rename(path, other), "read": lambda w: (w.read_text(path), w.mtime(path)),
                "mkdir": lambda w: w.make_dir(path), "canonical": lambda w: w.canonical(path),
                "exists": lambda w: (w.exists(path), w.is_dir(path), w.realpath(path)),
                "list": lambda w: w.list_files(path)}[kind]

    lean, fake = _same([op(*step) for step in steps] + [lambda w: w.list_files("/repo"), _canonicals], LINKED)
    assert _canonicals(lean) == _canonicals(fake)


def test_restore_and_clone_a_linked_tree() -> None:
    _same_linked([lambda w: w.write_text("/repo/hard.txt", "1"), lambda w: w.remove("/repo/link.txt"),
                  lambda w: w.restore_files(LINKED), lambda w: w.write_text("/repo/b.txt", "2"),
                  lambda w: w.read_text("/repo/src/h2.txt"), lambda w: w.mtime("/repo/link.txt"),
                  lambda w: w.clone().state(), lambda w: _canonicals(w.clone()), lambda w: w.list_files("/repo")])
