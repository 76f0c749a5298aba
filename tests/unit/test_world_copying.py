"""A world thawed from its template by the object-by-object copier is the one unpickling gave."""

from __future__ import annotations

import pickle

import pytest

from harness.world import World, WorldState
from harness.world.choice import pyfakefs_worlds
from harness.world.copying import FilesystemCopier, _same
from harness.world.world import _TEMPLATES


def _world(case_sensitive: bool = True) -> World:
    world = World(case_sensitive=case_sensitive, cwd="/repo")
    world.populate(dirs=["/repo/empty"], files=[("/repo/a.txt", "alpha\n"), ("/repo/src/b.txt", "beta\n"),
                                               ("/repo/src/deep/c.txt", "")],
                   hardlinks=[("/repo/a.txt", "/repo/src/hard.txt", "/repo/z.txt"),
                              # met first under src/, its parent is /repo (the last name added)
                              ("/repo/src/b.txt", "/repo/bb.txt")],
                   symlinks=[("/repo/link", "src/b.txt"), ("/repo/dangling", "/nowhere")])
    return world


@pytest.mark.parametrize("case_sensitive", [True, False])
def test_a_copy_is_the_unpickled_filesystem_object_for_object(case_sensitive: bool) -> None:
    fs = _world(case_sensitive).fs
    open_files, fs.open_files = fs.open_files, []
    unpickled = pickle.loads(pickle.dumps(fs))
    fs.open_files = open_files
    unpickled._add_standard_streams()
    copier = FilesystemCopier.of(unpickled)
    assert copier is not None
    copy = copier.copy()
    assert _same(copy, unpickled)
    # Hard links stay one object under three names, with the parent pyfakefs gave it.
    repo = copy.root.entries["repo"]
    hard = repo.entries["a.txt"]
    assert hard is repo.entries["src"].entries["hard.txt"] is repo.entries["z.txt"]
    original = unpickled.root.entries["repo"].entries["a.txt"]
    assert hard.parent_dir().name == original.parent_dir().name
    assert repo.entries["src"].entries["b.txt"].parent_dir() is repo


def test_copies_are_independent_of_the_template_and_of_each_other() -> None:
    state = _world().state()
    with pyfakefs_worlds():  # a state with links would make lean worlds, without templates
        first, second = World.from_state(state), World.from_state(state)  # the first builds the template
        third = World.from_state(state)
    assert _TEMPLATES.get(state).copier is not None  # type: ignore[union-attr]
    second.write_text("/repo/a.txt", "changed through a hard link")
    second.replace_text("/repo/src/b.txt", "replaced")
    second.write_text("/repo/new/file.txt", "new")
    second.remove("/repo/link")
    assert third.state() == first.state() == state
    assert World.from_state(state).state() == state
    assert second.read_text("/repo/z.txt") == "changed through a hard link"
    assert second.fs.last_ino > third.fs.last_ino
    assert second.canonical("/repo/src/hard.txt") == second.canonical("/repo/a.txt")


def test_what_the_copier_does_not_know_is_unpickled() -> None:
    fs = _world().fs
    fs.root.entries["repo"].__dict__["unknown"] = ["a list the copier would share"]
    assert FilesystemCopier.of(fs) is None
    state = WorldState(files=(("/x", "y"),))
    world = World.from_state(state)
    world.fs.root.__dict__["unknown"] = []  # only the live world: the template is its own copy
    assert World.from_state(state).state() == state


def test_worlds_of_one_template_share_identities_until_their_tree_changes() -> None:
    state = _world().state()
    World.from_state(state)  # builds the template
    first, second = World.from_state(state), World.from_state(state)
    assert first.canonical("/repo/link") == "/repo/src/b.txt"  # learnt on the pristine tree
    first.remove("/repo/link")
    first.symlink("/repo/link", "/repo/src/deep/c.txt")
    assert first.canonical("/repo/link") == "/repo/src/deep/c.txt"  # its own tree now: not the shared answer
    assert second.canonical("/repo/link") == "/repo/src/b.txt"  # nothing leaks to the others
    built = World._built(state)  # assembled afresh, sharing nothing: the reference
    for path in ("/repo/a.txt", "/repo/z.txt", "/repo/src/hard.txt", "/repo/link", "/repo/dangling", "/repo/x"):
        assert second.canonical(path) == built.canonical(path)


def test_a_filesystem_shaped_otherwise_is_refused_not_crashed_on() -> None:
    fs = _world().fs
    del fs.root.entries["repo"].__dict__["xattr"]  # as a pyfakefs without extended attributes has it
    assert FilesystemCopier.of(fs) is None
