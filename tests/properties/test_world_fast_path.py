"""The world's fast lookups and fast construction must agree with pyfakefs exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.world import World, WorldError

NAMES = st.sampled_from(["a", "b", "c.txt", "D"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))


Tree = tuple[list[tuple[str, str]], list[tuple[str, str]]]


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    files: dict[str, str] = {}
    for path in draw(st.lists(PATHS, min_size=1, max_size=6)):
        # A file cannot sit where another file is used as a directory.
        if any(p.startswith(path + "/") or path.startswith(p + "/") for p in files):
            continue
        files[path] = draw(st.sampled_from(["x", "y", ""]))
    links: list[tuple[str, str]] = []
    if draw(st.integers(0, 3)) and not any(p == "/l" or p.startswith("/l/") for p in files):
        # Point the link at something that exists most of the time, absolute or relative.
        existing = sorted(files) + sorted({p.rsplit("/", 1)[0] for p in files if p.count("/") > 1})
        target = draw(st.sampled_from([*existing, *(e.lstrip("/") for e in existing), "/missing"]))
        links.append(("/l", target))
    return sorted(files.items()), links


@st.composite
def queries_for(draw: st.DrawFn, tree: Tree) -> list[str]:
    """Paths worth asking about: every file, its parents, through the link, and odd spellings."""
    files, _ = tree
    interesting = {"/", "/l", "/missing", "/a/..", "/./a"}
    for path, _content in files:
        parts = path.split("/")[1:]
        interesting.update("/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1))
        interesting.add("/l/" + "/".join(parts[1:]) if len(parts) > 1 else "/l/" + parts[0])
        interesting.add(path + "/x")
    return draw(st.lists(st.sampled_from(sorted(interesting)), min_size=1, max_size=8))


def slow_world(files: list[tuple[str, str]], links: list[tuple[str, str]]) -> World:
    """The same world built through pyfakefs's path API only."""
    world = World()
    for path, content in files:
        world.fs.create_file(path, contents=content)
    for path, target in links:
        world.fs.create_symlink(path, target)
    return world


@given(trees().flatmap(lambda tree: st.tuples(st.just(tree), queries_for(tree))))
def test_fast_lookup_agrees_with_pyfakefs(case: tuple[Tree, list[str]]) -> None:
    (files, links), queries = case
    world = World()
    world.populate(files=files, symlinks=links)
    assert world.state() == slow_world(files, links).state()
    fs = world.fs
    for query in queries:
        assert world.exists(query) == fs.exists(query), query
        assert world.is_dir(query) == fs.isdir(query), query
        try:
            expected: str | None = fs.resolve(query).contents if fs.isfile(query) else None
        except OSError:
            expected = None
        try:
            got: str | None = world.read_text(query)
        except WorldError:
            got = None
        assert got == expected, query


@given(trees(), st.sampled_from(["/l", "/l/b", "/a", "/a/b", "/new", "/D/new"]) | PATHS, st.sampled_from(["new", ""]))
def test_fast_write_agrees_with_pyfakefs(tree: Tree, path: str,
                                         content: str) -> None:
    files, links = tree
    fast = World()
    fast.populate(files=files, symlinks=links)
    slow = slow_world(files, links)
    outcomes = []
    for world, write in ((fast, fast.write_text), (slow, None)):
        try:
            if write is not None:
                write(path, content)
            elif world.fs.exists(path):
                world.fs.resolve(path).set_contents(content)
            else:
                world.fs.create_file(path, contents=content)
            outcomes.append("ok")
        except (WorldError, OSError):
            outcomes.append("error")
    assert outcomes[0] == outcomes[1]
    if outcomes[0] == "ok":
        assert fast.state() == slow.state()


@st.composite
def tree_and_ops(draw: st.DrawFn) -> tuple[Tree, list[tuple[str, str, str]], list[str]]:
    """A tree, structural operations on paths that mostly exist in it, and paths to ask about."""
    tree = draw(trees())
    files, links = tree
    known = sorted({p for p, _ in files} | {p.rsplit("/", 1)[0] for p, _ in files if p.count("/") > 1}
                   | {p for p, _ in links} | {"/l/b", "/new", "/A"})
    target = st.sampled_from(known)
    ops = draw(st.lists(st.tuples(st.sampled_from(["write", "remove", "mkdir", "link", "symlink"]), target, target),
                        min_size=1, max_size=6))
    return tree, ops, draw(st.lists(target, min_size=1, max_size=8))


@given(tree_and_ops())
def test_cached_lookups_and_identities_follow_structural_changes(
        case: tuple[Tree, list[tuple[str, str, str]], list[str]]) -> None:
    (files, links), ops, queries = case
    world = World()
    world.populate(files=files, symlinks=links)
    for query in queries:
        world.canonical(query)  # fill the caches before the structure changes
        world.exists(query)
    for op, path, other in ops:
        try:
            if op == "write":
                world.write_text(path, "w")
            elif op == "remove":
                world.remove(path)
            elif op == "mkdir":
                world.make_dir(path)
            elif op == "link":
                world.hardlink(path, other)
            else:
                world.symlink(path, other)
        except (WorldError, OSError):
            pass
        cached = [(world.canonical(q), world.exists(q), world.is_dir(q), _content(world, q)) for q in queries]
        world._restructured()  # drop every cache: what follows is computed afresh
        fresh = [(world.canonical(q), world.exists(q), world.is_dir(q), _content(world, q)) for q in queries]
        assert cached == fresh, (op, path, other)


def _content(world: World, path: str) -> str | None:
    try:
        return world.read_text(path)
    except WorldError:
        return None
