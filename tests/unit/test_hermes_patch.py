"""The mock `patch` takes hermes-agent's arguments and answers as hermes does (issue 10, item 9).

Replace mode: `path`, `old_string`, `new_string`, `replace_all`. Patch mode: a V4A body whose
`*** Update/Add/Delete File:` and `*** Move File: a -> b` headers match with any spacing; validated
whole before anything is written, then applied file by file with atomic writes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.model import Outcome, ToolCall
from harness.run import RunResult
from harness.tools import apply
from harness.world import World
from tests.helpers import run_named, scenario

FILES = {"/repo/a.py": "x = 1\ny = 2\n", "/repo/b.py": "k = 0\n", "/repo/old.txt": "bye\n"}


def world() -> World:
    w = World(cwd="/repo")
    w.populate(files=sorted(FILES.items()))
    return w


def patch(arguments: dict[str, Any], start: World | None = None) -> tuple[World, Outcome, Any, str | None]:
    after, observation = apply(start or world(), ToolCall("p", "patch", json.dumps(arguments)))
    return after, observation.outcome, observation.value, observation.error


def v4a(body: str) -> dict[str, Any]:
    return {"mode": "patch", "patch": body}


def file_touches(result: RunResult, call_id: str) -> list[tuple[int, str, str]]:
    return [(e["t"], e["op"], e["target"]) for e in result.trace
            if e["ev"] == "touch" and e["call"] == call_id and e["target"].startswith("/")]


# -- replace mode ---------------------------------------------------------------------------------

def test_replace_mode_is_the_default_and_takes_hermes_names() -> None:
    after, outcome, value, _ = patch({"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})
    assert (outcome, value) == (Outcome.OK, {"path": "/repo/a.py", "replacements": 1})
    assert after.read_text("/repo/a.py") == "x = 1\ny = 3\n"
    after, outcome, _, _ = patch({"mode": "replace", "path": "a.py", "old_string": " = ", "new_string": "=",
                                  "replace_all": True})
    assert (outcome, after.read_text("/repo/a.py")) == (Outcome.OK, "x=1\ny=2\n")


@pytest.mark.parametrize(("arguments", "error"), [
    ({"path": "a.py", "old_string": " = ", "new_string": "="},
     "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True. "
     "Matches:\n  L1: x = 1\n  L2: y = 2"),
    ({"path": "a.py", "old_string": "z = 9", "new_string": "z = 8"},
     "Could not find a match for old_string in the file"),
    ({"path": "a.py", "old_string": "", "new_string": "z"}, "old_string cannot be empty"),
    ({"path": "a.py", "old_string": "  ", "new_string": "z"},
     "old_string is only whitespace — provide non-blank text to match"),
    ({"path": "a.py", "old_string": "x = 1", "new_string": "x = 1"}, "old_string and new_string are identical"),
    ({"old_string": "x", "new_string": "y"}, "path required"),
    ({"path": "a.py", "old_string": "x"}, "old_string and new_string required"),
    ({"path": "gone.py", "old_string": "x", "new_string": "y"},
     "[Errno 2] No such file or directory: '/repo/gone.py'"),
    ({"mode": "v4", "path": "a.py"}, "Unknown mode: v4"),
    ({"mode": "patch"}, "patch content required"),
])
def test_replace_mode_errors_have_no_effect(arguments: dict[str, Any], error: str) -> None:
    after, outcome, _, got = patch(arguments)
    assert (outcome, got) == (Outcome.ERROR, error)
    assert after.state() == world().state()


def test_an_edit_already_applied_is_a_no_op_success() -> None:
    start = world()
    start.write_text("/repo/a.py", "x = 1\ny = 2 + extra\n")
    after, outcome, value, _ = patch({"path": "a.py", "old_string": "y = 1", "new_string": "y = 2 + extra"}, start)
    assert (outcome, value) == (Outcome.OK, {"path": "/repo/a.py", "replacements": 0, "no_change": True})
    assert after.state() == start.state()


def test_the_older_old_new_spelling_keeps_its_meaning() -> None:
    after, outcome, _, _ = patch({"path": "a.py", "old": " = ", "new": "="})  # first occurrence only
    assert (outcome, after.read_text("/repo/a.py")) == (Outcome.OK, "x=1\ny = 2\n")


def test_replace_mode_reads_at_start_and_writes_in_place_at_the_end() -> None:
    sc = scenario([("p", "patch", {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})],
                  files=FILES, world_extra={"hardlinks": [["/repo/a.py", "/repo/link.py"]]})
    result = run_named(sc, "serial")
    assert [(t, op) for t, op, _ in file_touches(result, "p")] == [(0, "read"), (300, "write")]
    assert result.final.file_map["/repo/link.py"] == "x = 1\ny = 3\n"  # in place: the other name sees it


# -- patch mode (V4A) -----------------------------------------------------------------------------

MULTI = ("*** Begin Patch\n"
         "***Update File:a.py\n@@ x = 1 @@\n x = 1\n-y = 2\n+y = 3\n"
         "*** Add  File:  sub/new.py\n+print(1)\n+print(2)\n"
         "*** Delete File: old.txt\n"
         "*** Move File: b.py -> moved.py\n"
         "*** End Patch\n")


def test_a_v4a_patch_updates_adds_deletes_and_moves_with_any_header_spacing() -> None:
    after, outcome, value, error = patch(v4a(MULTI))
    assert outcome is Outcome.OK, error
    assert after.state().file_map == {"/repo/a.py": "x = 1\ny = 3\n", "/repo/sub/new.py": "print(1)\nprint(2)",
                                      "/repo/moved.py": "k = 0\n"}
    assert value == {"files_modified": ["/repo/a.py", "/repo/sub/new.py", "/repo/old.txt", "/repo/b.py",
                                        "/repo/moved.py"],
                     "files_created": ["sub/new.py"], "files_deleted": ["old.txt"]}


def test_a_v4a_patch_reads_everything_first_then_rereads_and_writes_each_file_in_turn() -> None:
    sc = scenario([("p", "patch", v4a(MULTI))], files=FILES)
    touches = file_touches(run_named(sc, "serial"), "p")
    assert touches == [
        # validation, when the call starts: every file it names
        (0, "read", "/repo/a.py"), (0, "stat", "/repo/sub/new.py"), (0, "read", "/repo/old.txt"),
        (0, "read", "/repo/b.py"), (0, "stat", "/repo/moved.py"),
        # apply, over the second half of its 300 ms: re-read (or re-check), then write, one by one
        (150, "read", "/repo/a.py"), (188, "write", "/repo/a.py"),
        (188, "stat", "/repo/sub/new.py"), (225, "stat", "/repo/sub"), (225, "mkdir", "/repo/sub"),
        (225, "write", "/repo/sub/new.py"),
        (225, "read", "/repo/old.txt"), (262, "remove", "/repo/old.txt"),
        (262, "stat", "/repo/moved.py"), (300, "remove", "/repo/b.py"), (300, "write", "/repo/moved.py"),
    ]


def test_v4a_writes_are_atomic_as_hermes_write_file_is() -> None:
    start = World(cwd="/repo")
    start.populate(files=[("/repo/a.py", "x = 1\ny = 2\n")], hardlinks=[("/repo/a.py", "/repo/link.py")])
    after, outcome, _, _ = patch(v4a("*** Update File: a.py\n-y = 2\n+y = 3\n"), start)
    assert outcome is Outcome.OK
    assert (after.read_text("/repo/a.py"), after.read_text("/repo/link.py")) == ("x = 1\ny = 3\n", "x = 1\ny = 2\n")


@pytest.mark.parametrize(("body", "error"), [
    ("*** Update File: a.py\n-nope\n+yes\n*** Delete File: old.txt\n",
     "Patch validation failed (no files were modified):\n"
     "  • a.py: hunk 1 (no hint) not found — Could not find a match for old_string in the file"),
    ("*** Update File: gone.py\n@@ def f @@\n-a\n+b\n*** Add File: a.py\n+z\n*** Delete File: nothing.txt\n"
     "*** Move File: old.txt -> b.py\n",
     "Patch validation failed (no files were modified):\n"
     "  • gone.py: [Errno 2] No such file or directory: '/repo/gone.py'\n"
     "  • a.py: file already exists — use Update File, not Add File\n"
     "  • nothing.txt: file not found for deletion\n"
     "  • b.py: destination already exists — move would overwrite"),
    ("*** Update File: a.py\n x = 1\n", "Patch validation failed (no files were modified):\n"
                                        "  • Patch contains no changes (only context lines were provided)"),
    ("*** Update File: b.py\n*** Move to: c.py\n@@\n-k = 0\n+k = 1\n",
     "Failed to parse patch: Parse error: '*** Move to: c.py' is not supported; rename with "
     "'*** Move File: b.py -> c.py' and put any edits in their own '*** Update File:' block"),
    ("*** Begin Patch\n*** Update File: a.py\n*** End Patch\n",
     "Failed to parse patch: Parse error: UPDATE 'a.py': no hunks found"),
    ("*** Update File: ../etc/a.py\n-x\n+y\n",
     "V4A patch header contains '..' traversal: '../etc/a.py'. Use the agent's cwd-relative path (no '..') or an "
     "absolute path in '*** Update File:' / '*** Add File:' / '*** Delete File:' / '*** Move File:' headers."),
])
def test_a_v4a_patch_that_does_not_apply_changes_nothing(body: str, error: str) -> None:
    after, outcome, _, got = patch(v4a(body))
    assert (outcome, got) == (Outcome.ERROR, error)
    assert after.state() == world().state()


def test_validation_sees_earlier_operations_of_the_same_patch() -> None:
    body = ("*** Update File: a.py\n-y = 2\n+y = 3\n*** Update File: a.py\n-y = 3\n+y = 4\n"
            "*** Delete File: old.txt\n*** Add File: old.txt\n+hello again\n")
    after, outcome, _, error = patch(v4a(body))
    assert outcome is Outcome.OK, error
    assert (after.read_text("/repo/a.py"), after.read_text("/repo/old.txt")) == ("x = 1\ny = 4\n", "hello again")


def test_a_write_between_validation_and_apply_fails_the_apply_phase_and_leaves_it_half_done() -> None:
    """hermes re-reads each file before writing it: a sibling's write after validation makes a hunk
    miss, the other files are still written, and the error says so (the model sees it)."""
    body = "*** Update File: a.py\n-y = 2\n+y = 3\n*** Update File: b.py\n-k = 0\n+k = 1\n"
    sc = scenario([("p", "patch", v4a(body)), ("w", "write_file_atomic", {"path": "a.py", "content": "rewritten\n"})],
                  files=FILES, tools={"write_file_atomic": {"latency": {"fixed": 100}}})
    result = run_named(sc, "parallel")
    first = result.results[0]
    assert (first.outcome, first.error) == (Outcome.ERROR, (
        "Apply phase failed (state may be inconsistent — run `git diff` to assess):\n"
        "  • Failed to update a.py: Could not apply hunk: hunk 1 (no hint) not found — "
        "Could not find a match for old_string in the file"))
    assert result.final.file_map["/repo/b.py"] == "k = 1\n" and result.final.file_map["/repo/a.py"] == "rewritten\n"


def test_the_older_v4a_mode_keeps_the_apply_patch_dialect() -> None:
    body = "*** Update File: b.py\n*** Move to: c.py\n@@\n-k = 0\n+k = 1\n*** Add File: n.py\n+n = 1\n"
    after, outcome, _, error = patch({"mode": "v4a", "patch": body})
    assert outcome is Outcome.OK, error
    assert {p: after.state().file_map.get(p) for p in ("/repo/b.py", "/repo/c.py", "/repo/n.py")} == {
        "/repo/b.py": None, "/repo/c.py": "k = 1\n", "/repo/n.py": "n = 1\n"}
    _, outcome, _, error = patch({"mode": "v4a", "patch": "*** Update File: a.py\n-nope\n+x\n"})
    assert (outcome, error) == (Outcome.ERROR, "patch: hunk does not apply to /repo/a.py")
