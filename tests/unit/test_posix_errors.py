"""World errors carry their errno and read as the tool's process would see them (issue 10, item 7).

One walk resolves paths for tool I/O (`World.absolute`, the operations) and for `World.realpath`:
ENOENT, ENOTDIR, EISDIR, ELOOP after 40 symlink hops, ENAMETOOLONG, and Python's NUL-byte ValueError
text, each an error outcome of the call, never a crash or a hang.
"""

from __future__ import annotations

import errno
import json
import pickle

import pytest

from harness.model import Outcome, ToolCall
from harness.tools import apply
from harness.world import World, WorldError
from tests.helpers import run_named, scenario


def world() -> World:
    w = World(cwd="/repo")
    w.populate(dirs=["/repo/dir"], files=[("/repo/file.txt", "text\n")],
               symlinks=[("/repo/loop-a", "/repo/loop-b"), ("/repo/loop-b", "/repo/loop-a"),
                         ("/repo/self", "self"), ("/repo/dangling", "/repo/made/by-link.txt"),
                         ("/repo/to-dir", "dir")])
    return w


def raised(action: object) -> WorldError:
    assert callable(action)
    with pytest.raises(WorldError) as info:
        action()
    return info.value


def test_an_error_reads_like_oserror_and_keeps_its_errno() -> None:
    exc = WorldError(errno.ENOENT, "/repo/x")
    assert str(exc) == "[Errno 2] No such file or directory: '/repo/x'"
    assert (exc.errno, exc.name, exc.strerror, exc.filename) == (errno.ENOENT, "ENOENT",
                                                                 "No such file or directory", "/repo/x")
    assert str(WorldError(errno.ENOENT, "a", "b")) == "[Errno 2] No such file or directory: 'a' -> 'b'"
    # Linux's number whatever the host: the text goes into fingerprints.
    assert str(WorldError(errno.ELOOP, "/l")) == "[Errno 40] Too many levels of symbolic links: '/l'"
    again = pickle.loads(pickle.dumps(exc))
    assert (str(again), again.errno, again.name) == (str(exc), errno.ENOENT, "ENOENT")
    legacy = WorldError("free-form message")
    assert (str(legacy), legacy.errno, legacy.name) == ("free-form message", None, None)


@pytest.mark.parametrize(("operation", "path", "name", "text"), [
    ("read_text", "/repo/missing", "ENOENT", "[Errno 2] No such file or directory: '/repo/missing'"),
    ("read_text", "/repo/nowhere/x", "ENOENT", "[Errno 2] No such file or directory: '/repo/nowhere/x'"),
    ("read_text", "/repo/dir", "EISDIR", "[Errno 21] Is a directory: '/repo/dir'"),
    ("read_text", "/repo/to-dir", "EISDIR", "[Errno 21] Is a directory: '/repo/to-dir'"),
    ("read_text", "/repo/file.txt/x", "ENOTDIR", "[Errno 20] Not a directory: '/repo/file.txt/x'"),
    ("read_text", "/repo/loop-a", "ELOOP", "[Errno 40] Too many levels of symbolic links: '/repo/loop-a'"),
    ("read_text", "/repo/self", "ELOOP", "[Errno 40] Too many levels of symbolic links: '/repo/self'"),
    ("read_text", "/repo/loop-a/x", "ELOOP", "[Errno 40] Too many levels of symbolic links: '/repo/loop-a/x'"),
    ("write_text", "/repo/dir", "EISDIR", "[Errno 21] Is a directory: '/repo/dir'"),
    ("write_text", "/repo/file.txt/x", "ENOTDIR", "[Errno 20] Not a directory: '/repo/file.txt/x'"),
    ("write_text", "/repo/loop-a", "ELOOP", "[Errno 40] Too many levels of symbolic links: '/repo/loop-a'"),
    ("replace_text", "/nowhere/x.txt", "ENOENT", "[Errno 2] No such file or directory: '/nowhere/x.txt'"),
    ("replace_text", "/repo/dir", "EISDIR", "[Errno 21] Is a directory: '/repo/dir'"),
    ("replace_text", "/repo/file.txt/x", "ENOTDIR", "[Errno 20] Not a directory: '/repo/file.txt/x'"),
    ("remove", "/repo/missing", "ENOENT", "[Errno 2] No such file or directory: '/repo/missing'"),
    ("remove", "/repo/dir", "EISDIR", "[Errno 21] Is a directory: '/repo/dir'"),
    ("make_dir", "/repo/file.txt", "EEXIST", "[Errno 17] File exists: '/repo/file.txt'"),
    ("list_files", "/repo/missing", "ENOENT", "[Errno 2] No such file or directory: '/repo/missing'"),
    ("list_files", "/repo/loop-b", "ELOOP", "[Errno 40] Too many levels of symbolic links: '/repo/loop-b'"),
])
def test_world_operations_fail_with_the_kernels_errno(operation: str, path: str, name: str, text: str) -> None:
    w = world()
    method = getattr(w, operation)
    exc = raised(lambda: method(path, "x") if operation in ("write_text", "replace_text") else method(path))
    assert (exc.name, str(exc)) == (name, text)
    assert exc.errno == getattr(errno, name)


def test_realpath_fails_on_a_symlink_loop_instead_of_stopping_silently() -> None:
    w = world()
    assert raised(lambda: w.realpath("/repo/loop-a")).name == "ELOOP"
    assert raised(lambda: w.realpath("/repo/file.txt/x")).name == "ENOTDIR"
    # Missing components are kept as spelled, as os.path.realpath keeps them (a planner scopes new files).
    assert w.realpath("/repo/new/file.txt") == "/repo/new/file.txt"
    assert w.realpath("/repo/to-dir/../file.txt") == "/repo/file.txt"


def test_exactly_forty_hops_resolve_and_the_forty_first_is_eloop() -> None:
    def chain(links: int) -> World:
        w = World(cwd="/repo")
        w.populate(files=[("/repo/target", "t")],
                   symlinks=[(f"/repo/l{i}", f"/repo/l{i + 1}" if i + 1 < links else "/repo/target")
                             for i in range(links)])
        return w

    assert chain(40).realpath("/repo/l0") == "/repo/target"
    assert chain(40).read_text("/repo/l0") == "t"
    assert raised(lambda: chain(41).realpath("/repo/l0")).name == "ELOOP"
    assert raised(lambda: chain(41).read_text("/repo/l0")).name == "ELOOP"


def test_absolute_shares_the_walk_for_dotdot() -> None:
    w = world()
    assert w.absolute("to-dir/../file.txt") == "/repo/file.txt"
    assert w.absolute("dir/../file.txt") == "/repo/file.txt"  # no symlink on the way: same as text
    assert str(raised(lambda: w.absolute("file.txt/../x"))) == "[Errno 20] Not a directory: 'file.txt/../x'"
    assert str(raised(lambda: w.absolute("missing/../x"))) == "[Errno 2] No such file or directory: 'missing/../x'"
    assert raised(lambda: w.absolute("loop-a/../x")).name == "ELOOP"


def test_nul_bytes_and_overlong_names_fail_before_any_touch() -> None:
    w = world()
    nul = raised(lambda: w.absolute("a\x00b"))
    assert (str(nul), nul.name) == ("embedded null byte", "EINVAL")
    assert str(raised(lambda: w.realpath("/repo/a\x00b"))) == "embedded null byte"
    long_name = raised(lambda: w.absolute("x" * 256))
    assert (long_name.name, str(long_name)) == ("ENAMETOOLONG", f"[Errno 36] File name too long: '{'x' * 256}'")
    assert raised(lambda: w.absolute("/".join(["d" * 200] * 21))).name == "ENAMETOOLONG"  # > PATH_MAX
    assert w.absolute("x" * 255) == "/repo/" + "x" * 255
    assert w.absolute("é" * 127) == "/repo/" + "é" * 127  # 254 bytes: fine
    assert raised(lambda: w.absolute("é" * 128)).name == "ENAMETOOLONG"  # 128 chars, 256 bytes


def test_a_write_through_a_dangling_symlink_creates_its_target_and_unlink_removes_the_link() -> None:
    w = world()
    w.write_text("/repo/dangling", "via link")
    assert w.read_text("/repo/made/by-link.txt") == "via link"
    w.remove("/repo/loop-a")  # unlink(2) does not follow the last component: a looping link goes
    assert not w.fs.islink("/repo/loop-a") and w.fs.islink("/repo/loop-b")


def test_a_listing_skips_a_looping_symlink() -> None:
    assert world().list_files("/repo") == ["/repo/file.txt"]


@pytest.mark.parametrize(("arguments", "error"), [
    ({"path": "missing.txt"}, "[Errno 2] No such file or directory: '/repo/missing.txt'"),
    ({"path": "dir"}, "[Errno 21] Is a directory: '/repo/dir'"),
    ({"path": "file.txt/x"}, "[Errno 20] Not a directory: '/repo/file.txt/x'"),
    ({"path": "loop-a"}, "[Errno 40] Too many levels of symbolic links: '/repo/loop-a'"),
    ({"path": "bad\x00name"}, "embedded null byte"),
])
def test_a_failed_read_is_an_error_outcome_with_the_os_text(arguments: dict[str, str], error: str) -> None:
    _, observation = apply(world(), ToolCall("r", "read_file", json.dumps(arguments)))
    assert (observation.outcome, observation.error) == (Outcome.ERROR, error)


def test_a_symlink_loop_in_a_run_is_an_error_outcome_not_a_hang() -> None:
    sc = scenario([("r", "read_file", {"path": "loop"}), ("w", "write_file", {"path": "loop/x", "content": "1"}),
                   ("ok", "read_file", {"path": "a.txt"})],
                  files={"/repo/a.txt": "a"}, world_extra={"symlinks": {"/repo/loop": "/repo/loop"}})
    for policy in ("serial", "parallel", "hermes_segments"):
        result = run_named(sc, policy)
        assert [(r.call_id, r.outcome) for r in result.results] == [
            ("r", Outcome.ERROR), ("w", Outcome.ERROR), ("ok", Outcome.OK)], policy
        assert result.results[0].error == "[Errno 40] Too many levels of symbolic links: '/repo/loop'"
        assert result.results[1].error == "[Errno 40] Too many levels of symbolic links: '/repo/loop/x'"


@pytest.mark.parametrize(("command", "output"), [
    ("cat missing.txt", "cat: missing.txt: No such file or directory\n"),
    ("cat dir", "cat: dir: Is a directory\n"),
    ("cat loop-a", "cat: loop-a: Too many levels of symbolic links\n"),
    ("rm dir", "rm: cannot remove 'dir': Is a directory\n"),
    ("rm missing.txt", "rm: cannot remove 'missing.txt': No such file or directory\n"),
    ("mkdir file.txt", "mkdir: cannot create directory 'file.txt': File exists\n"),
    ("ls missing", "ls: cannot access 'missing': No such file or directory\n"),
    ("echo hi > dir", "bash: dir: Is a directory\n"),
])
def test_terminal_prints_what_coreutils_prints(command: str, output: str) -> None:
    _, observation = apply(world(), ToolCall("t", "terminal", json.dumps({"command": command})))
    assert observation.outcome is Outcome.OK
    assert observation.value == {"exit_code": 1, "output": output, "cwd": "/repo"}
