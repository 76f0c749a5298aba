import json
import os

import pytest

from harness.world import World, WorldError, WorldState, diff


def make(case_sensitive: bool = True) -> World:
    w = World(case_sensitive=case_sensitive, cwd="/repo")
    w.populate(files=[("/repo/a.txt", "alpha\n"), ("/repo/src/b.txt", "beta\n")],
               hardlinks=[("/repo/a.txt", "/repo/hard.txt")], symlinks=[("/repo/link", "src/b.txt")])
    return w


def test_write_through_symlink_changes_the_target() -> None:
    w = make()
    w.write_text("/repo/link", "via link")
    assert w.read_text("/repo/src/b.txt") == "via link"
    assert dict(w.state().symlinks) == {"/repo/link": "src/b.txt"}


def test_write_through_hard_link_changes_every_name() -> None:
    w = make()
    w.write_text("/repo/hard.txt", "shared")
    assert w.read_text("/repo/a.txt") == "shared"
    assert w.state().hardlinks == (("/repo/a.txt", "/repo/hard.txt"),)


def test_case_insensitive_world_aliases_names() -> None:
    w = make(case_sensitive=False)
    w.write_text("/repo/A.TXT", "upper")
    assert w.read_text("/repo/a.txt") == "upper"
    strict = make(case_sensitive=True)
    strict.write_text("/repo/A.TXT", "upper")
    assert strict.read_text("/repo/a.txt") == "alpha\n"


def test_errors_are_world_errors() -> None:
    w = make()
    with pytest.raises(WorldError, match=r"^\[Errno 2\] No such file or directory: '/repo/missing'$"):
        w.read_text("/repo/missing")
    with pytest.raises(WorldError, match=r"^\[Errno 21\] Is a directory: '/repo/src'$"):
        w.read_text("/repo/src")


def test_state_round_trips_and_digest_ignores_creation_order() -> None:
    w = make()
    clone = World.from_state(w.state())
    assert clone.state() == w.state()
    other = World(cwd="/repo")
    other.populate(files=[("/repo/src/b.txt", "beta\n"), ("/repo/a.txt", "alpha\n")],
                   hardlinks=[("/repo/a.txt", "/repo/hard.txt")], symlinks=[("/repo/link", "src/b.txt")])
    assert other.state().digest() == w.state().digest()
    w.write_text("/repo/a.txt", "changed")
    assert w.state().digest() != clone.state().digest()


def test_diff_names_each_change_and_is_empty_for_equal_worlds() -> None:
    w = make()
    before = w.state()
    assert diff(before, w.state()) == []
    w.write_text("/repo/a.txt", "ALPHA\n")
    w.write_text("/repo/new.txt", "n")
    w.ledger("tickets").append("c1", {"title": "t"})
    w.cwd = "/repo/src"
    lines = diff(before, w.state())
    assert "~ file /repo/a.txt changed" in lines
    assert "    -alpha" in lines and "    +ALPHA" in lines
    assert "+ file /repo/new.txt created (1 chars)" in lines
    assert "~ ledger tickets: 0 -> 1 entries" in lines
    assert "~ cwd /repo -> /repo/src" in lines


def test_ledger_deduplicates_by_idempotency_key_only() -> None:
    ledger = World().ledger("tickets")
    first, dup1 = ledger.append("c1", {"t": 1}, "key-1")
    again, dup2 = ledger.append("c1", {"t": 1}, "key-1")
    _, dup3 = ledger.append("c2", {"t": 1})
    _, dup4 = ledger.append("c2", {"t": 1})
    assert (dup1, dup2, dup3, dup4) == (False, True, False, False)
    assert again is first and len(ledger) == 3


def test_world_never_touches_the_real_disk(tmp_path: object) -> None:
    target = "/tmp/harness-world-should-not-exist.txt"
    w = World()
    w.write_text(target, "fake")
    assert w.read_text(target) == "fake"
    assert not os.path.exists(target)


def test_empty_state_is_the_default() -> None:
    assert World().state() == WorldState()


def test_dotdot_after_a_symlink_resolves_like_the_kernel_not_like_text() -> None:
    """`link/../x` is the parent of the link's *target*; without a symlink, text and POSIX agree."""
    world = World(cwd="/repo")
    world.populate(files=[("/repo/sub/dir/x.txt", "x"), ("/repo/sub/a.txt", "sub"), ("/repo/a.txt", "top")],
                   symlinks=[("/repo/link", "/repo/sub/dir")])
    assert world.absolute("link/../a.txt") == "/repo/sub/a.txt"
    assert world.read_text(world.absolute("link/../a.txt")) == "sub"
    assert world.absolute("link/x.txt") == "/repo/link/x.txt"  # spelling kept where no `..` follows
    assert world.absolute("sub/dir/../a.txt") == "/repo/sub/a.txt"
    assert world.realpath("/repo/link/../a.txt") == "/repo/sub/a.txt"


def test_a_planner_normalising_as_text_is_caught_and_one_resolving_like_posix_passes() -> None:
    import posixpath

    from harness import find_scenario, get_scheduler, run
    from harness.oracles import check
    from harness.scheduling import Plan, PlanScheduler

    class ByPath(PlanScheduler):
        """One call at a time when two calls name the same file, as `resolve` sees it."""

        name = "by-path"

        def __init__(self, resolve) -> None:  # type: ignore[no-untyped-def]
            super().__init__()
            self.resolve = resolve

        def plan(self, batch, ctx) -> Plan:  # type: ignore[no-untyped-def]
            seen: dict[str, str] = {}
            after = {}
            for call in batch:
                path = self.resolve(ctx, json.loads(call.arguments)["path"])
                after[call.id] = (seen[path],) if path in seen else ()
                seen[path] = call.id
            return Plan(after)

    by_path = ByPath
    text_first = by_path(lambda ctx, p: ctx.realpath(posixpath.normpath(posixpath.join(ctx.cwd, p))))
    posix = by_path(lambda ctx, p: ctx.realpath(posixpath.join(ctx.cwd, p)))
    sc = find_scenario("symlink-dotdot")

    def labels(policy) -> set[str]:  # type: ignore[no-untyped-def]
        return {v.label for seed in range(1, 6) for v in check(run(sc, policy, seed)) if not v.ok}

    assert labels(text_first) == {"stale-read"}
    assert labels(posix) == set()
    assert "stale-read" in labels(get_scheduler("hermes_segments"))  # abspath, then realpath: REFERENCE's gap


def test_an_atomic_write_replaces_the_file_and_breaks_hard_links_and_symlinks() -> None:
    world = World(cwd="/repo")
    world.populate(files=[("/repo/a.txt", "old")], hardlinks=[("/repo/a.txt", "/repo/b.txt")],
                   symlinks=[("/repo/l.txt", "/repo/a.txt")])
    world.replace_text("/repo/a.txt", "new")
    assert (world.read_text("/repo/a.txt"), world.read_text("/repo/b.txt")) == ("new", "old")
    assert world.canonical("/repo/a.txt") != world.canonical("/repo/b.txt")
    world.replace_text("/repo/l.txt", "link replaced")  # rename replaces the link, not its target
    assert not world.fs.islink("/repo/l.txt") and world.read_text("/repo/a.txt") == "new"
    with pytest.raises(WorldError, match="No such file or directory") as error:
        world.replace_text("/nowhere/x.txt", "x")
    assert error.value.errno == 2


def _inode_view(world: World) -> list[tuple[str, int, int, int]]:
    """Every name with its inode, link count and mode, and the directories' link counts: what the
    fast atomic write must leave exactly as pyfakefs' create_file + rename do."""
    out = []
    for kind, path, obj in _walked(world):
        if kind != "link":
            out.append((path, obj.st_ino, obj.st_nlink, obj.st_mode))
    return out


def _walked(world: World) -> list[tuple[str, str, object]]:
    items: list[tuple[str, str, object]] = []
    world._walk(world.fs.root, "/", items, files_only=False)
    return items


@pytest.mark.parametrize("target", ["/repo/a.txt", "/repo/b.txt", "/repo/new.txt", "/repo/src/deep.txt",
                                    "/repo/src", "/repo/l.txt", "/repo/missing/x.txt", "/repo/a.txt/x",
                                    "/repo/.a.txt.harness-tmp", "/repo/ld", "/repo/dangling"])
@pytest.mark.parametrize("with_links", [False, True])
def test_atomic_write_fast_path_matches_pyfakefs_rename(target: str, with_links: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-place atomic write leaves the same tree, inodes, link counts, modes and errors as the
    path API it replaces (forced here by turning the fast path off)."""
    def build() -> World:
        world = World(cwd="/repo")
        world.populate(dirs=["/repo/src"], files=[("/repo/a.txt", "old"), ("/repo/.x", "")],
                       hardlinks=[("/repo/a.txt", "/repo/b.txt")] if with_links else [],
                       symlinks=[("/repo/l.txt", "/repo/a.txt"), ("/repo/ld", "/repo/src"),
                                 ("/repo/dangling", "/repo/nothing.txt")] if with_links else [])
        world.fs.umask = 0o022
        return world

    def outcome(world: World) -> tuple[object, ...]:
        try:
            world.replace_text(target, "new")
            error = None
        except WorldError as exc:
            error = (exc.errno, str(exc))
        return error, world.state(), _inode_view(world), world.fs.last_ino

    fast = outcome(build())
    monkeypatch.setattr(World, "_replaced_in_place", lambda *args: False)
    assert fast == outcome(build())
    error, state = fast[0], fast[1]
    assert error is not None or dict(state.files)[target] == "new"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("tool", "caught"), [("write_file", True), ("write_file_atomic", False)])
def test_hard_links_race_with_in_place_writes_not_with_atomic_ones(tool: str, caught: bool) -> None:
    """Two writes of one file through two hard-linked names under a path-scoped policy: in place they
    hit one file (the later write wins whatever the model said); atomically each name gets a new file."""
    from harness import get_scheduler, run
    from harness.oracles import check
    from tests.helpers import scenario

    sc = scenario([("via-a", tool, {"path": "a.txt", "content": "from a\n"}),
                   ("via-b", tool, {"path": "b.txt", "content": "from b\n"})],
                  files={"/repo/a.txt": "old\n"}, world_extra={"hardlinks": [["/repo/a.txt", "/repo/b.txt"]]},
                  tools={tool: {"latency": {"uniform": [100, 900]}}})
    labels = {v.label for seed in range(1, 9) for v in check(run(sc, get_scheduler("hermes_segments"), seed))
              if not v.ok}
    assert bool(labels) is caught, labels


def test_worlds_built_from_one_state_are_equal_and_independent() -> None:
    """The second and later worlds of a state are thawed from a template: each must be the world the
    state describes (symlinks, hard links, case folding, ledgers, fds) and share nothing with another."""
    from harness.world import world as world_module
    from harness.world.state import WorldState
    from harness.world.templates import Templates

    source = World(cwd="/repo", case_sensitive=False)
    source.populate(dirs=["/repo/empty"], files=[("/repo/a.txt", "a\n"), ("/repo/b.txt", "b\n")],
                    symlinks=[("/repo/link", "a.txt")], hardlinks=[("/repo/a.txt", "/repo/hard.txt")])
    source.ledger("tickets").append("c1", {"title": "x"}, None)
    state = source.state()
    first, second, third = (World.from_state(state) for _ in range(3))
    for world in (first, second, third):
        assert world.state() == state
        assert world.read_text("/REPO/LINK") == "a\n"  # case folding and the symlink survive
        assert len(world.fs.open_files) == 3  # the standard streams, as a new filesystem has them
    second.write_text("/repo/hard.txt", "changed\n")
    second.ledger("tickets").append("c2", {"title": "y"}, None)
    assert second.read_text("/repo/a.txt") == "changed\n"  # the hard link is one file in the copy
    assert first.state() == state and third.state() == state
    assert World.from_state(state).state() == state
    # Bounded: a long sweep over many worlds keeps only the most recent templates (plain trees get
    # lean worlds, whose images are bounded the same way).
    from harness.world.choice import pyfakefs_worlds
    from harness.world.lean_image import LeanImages

    with pyfakefs_worlds():
        for i in range(Templates.MAX + 5):
            World.from_state(WorldState(cwd=f"/w{i}"))
    assert len(world_module._TEMPLATES._entries) == Templates.MAX
    for i in range(LeanImages.MAX + 5):
        World.from_state(WorldState(cwd=f"/w{i}"))
    assert len(world_module._IMAGES._entries) == LeanImages.MAX


def test_world_templates_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.world import world as world_module
    from harness.world.state import WorldState
    from harness.world.templates import Templates

    templates = Templates()
    monkeypatch.setattr(world_module, "_TEMPLATES", templates)
    monkeypatch.setattr(Templates, "MAX_BYTES", 40_000)
    from harness.world.choice import pyfakefs_worlds

    states = [WorldState(files=((f"/f{i}", "x" * 4_000),)) for i in range(30)]
    with pyfakefs_worlds():  # plain trees: lean worlds otherwise, which keep no pyfakefs template
        for state in states:
            assert World.from_state(state).state() == state
        assert 0 < templates._bytes <= 40_000
        assert templates._bytes == sum(len(t.blob) for _, t in templates._entries.values())
        big = WorldState(files=(("/big", "x" * 20_000),))  # over a quarter of the budget: never kept
        assert World.from_state(big).state() == World.from_state(big).state() == big
        assert templates.get(big) is None


def test_paths_through_symlinks_follow_every_change_of_the_tree() -> None:
    """What a path through a symlink reaches is remembered between changes of the tree's names, never
    across one: each answer below is what a fresh world built from the same state gives."""
    world = World(cwd="/repo")
    world.populate(dirs=["/repo/src"], files=[("/repo/a.txt", "a"), ("/repo/b.txt", "b")],
                   symlinks=[("/repo/l.txt", "/repo/a.txt"), ("/repo/d", "/repo/src")])

    def seen() -> tuple[object, ...]:
        fresh = World.from_state(world.state())
        answers = []
        for w in (world, fresh):
            answers.append((w.read_text("/repo/l.txt") if w.exists("/repo/l.txt") else None,
                            w.list_files("/repo"), w.exists("/repo/d/x.txt"), w.canonical("/repo/l.txt")))
        assert answers[0] == answers[1]
        return tuple(answers[0])

    assert seen()[0] == "a"
    world.remove("/repo/a.txt")  # the link dangles
    assert seen()[0] is None and "/repo/l.txt" not in seen()[1]
    world.write_text("/repo/a.txt", "again")  # a new file behind the same name
    assert seen()[0] == "again"
    world.rename("/repo/b.txt", "/repo/a.txt")  # another file takes the name
    assert seen()[0] == "b"
    world.write_text("/repo/d/x.txt", "x")  # created through the directory link
    assert seen()[2] is True
    world.replace_text("/repo/l.txt", "own")  # the link itself replaced by a file
    assert seen()[0] == "own" and world.read_text("/repo/a.txt") == "b"
