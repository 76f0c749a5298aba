"""File tools: `read_file`, `write_file`, `write_file_atomic`, `patch`, `search_files`.

Owns their behaviour as touch points in virtual time, faithful to how the real tools race:
`write_file` truncates when it starts and writes when it ends (a reader in between sees a torn,
empty file); `write_file_atomic` writes once at the end by renaming a new file into place (a new
inode: hard links keep the old content, a symlink at the path is replaced); `patch` takes hermes'
arguments (see the comment above it): in replace mode it reads when it starts and writes when it
ends (read-modify-write, the shape of a lost update); in V4A mode (`{"mode": "patch", "patch":
"*** Begin Patch ..."}`) it reads every file it names when it starts, then re-reads and atomically
writes, deletes or moves each in turn over the second half of the call; readers read half way
through. It never decides what may run in parallel.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Generator
from pathlib import PurePosixPath

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.fuzzy import fuzzy_replace
from harness.tools.hermes_files import read_lines, wrote
from harness.tools.params import Parameters
from harness.tools.spec import Args, Declared, ResourceKeys, SideEffect, ToolError, ToolIO, ToolSpec, require_str
from harness.tools.v4a import Operation, already_applied, apply_hunks, header_paths, parse_v4a
from harness.world.errors import WorldError

_PATH_KEY = ResourceKeys(path_args=("path",))


def read_file(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path = require_str(args, "path")
    yield 0.5
    text = io.read(path)  # before io.path: the order of the touches is the trace's
    return {"path": io.path(path), "content": read_lines(args, text)}


def write_file(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path, content = require_str(args, "path"), require_str(args, "content")
    io.truncate(path)  # open(path, "w") truncates before the first byte is written
    if io.torn_write:  # an injected fault: the content goes out in two writes
        yield 0.5
        io.write(path, content[: len(content) // 2])
    yield 1.0
    io.write(path, content)
    wrote(path, io)  # hermes' read tracker, when the scenario keeps one (harness.tools.hermes_files)
    return {"path": io.path(path), "bytes_written": len(content.encode())}


def write_file_atomic(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path, content = require_str(args, "path"), require_str(args, "content")
    yield 1.0
    io.write_atomic(path, content)  # write to a temporary name, then rename over the target
    return {"path": io.path(path), "bytes_written": len(content.encode())}


# -- patch: hermes-agent's `patch` tool -----------------------------------------------------------
#
# Modelled on NousResearch/hermes-agent (read 2026): `tools/file_tools.py` (`PATCH_SCHEMA`,
# `_handle_patch`, `patch_tool`), `tools/file_operations.py` (`ShellFileOperations.patch_replace`,
# `patch_v4a`, `write_file` — an atomic write: temporary file, then rename —, `delete_file`,
# `move_file` = `mv`), `tools/patch_parser.py` (`parse_v4a_patch`, `apply_v4a_operations`) and
# `tools/fuzzy_match.py` (`fuzzy_find_and_replace`, `is_already_applied`). What it takes:
#   {"mode": "replace" (the default), "path", "old_string", "new_string", "replace_all": false}
#   {"mode": "patch", "patch": "*** Begin Patch\n*** Update File: p\n@@ hint @@\n ctx\n-old\n+new\n..."}
# A V4A patch (its format: `harness.tools.v4a`) is validated whole against the files as read when it
# starts (nothing is written if any part fails), then applied operation by operation, each re-reading
# its file just before writing it.
# Where the mock is simpler, on purpose: matching is exact by default (`match = "fuzzy"` falls back
# through hermes' strategies, `harness.tools.fuzzy`), CRLF/BOM preservation, lint and the
# sensitive-path guards are left out, and a read failure keeps its errno text where hermes words it
# "Failed to read file: ...".
# Replace mode writes in place by default (read at start, write at end), as the mock always has: the
# recorded fingerprints of the built-in scenarios depend on it. hermes itself writes atomically there
# (the resolved path, a temporary file renamed over it): `write_mode = "atomic"` does that, and V4A
# mode always does here.
#
# Two older spellings of this harness stay accepted so scenarios written before keep their meaning:
# `old`/`new` instead of `old_string`/`new_string` (the first occurrence is replaced, as before), and
# mode "v4a", the OpenAI apply_patch dialect (`*** Move to: q` inside an Update, `+` lines of an Add
# each ending in a newline). hermes itself ignores `old`/`new` ("old_string and new_string
# required") and answers "Unknown mode: v4a", and its planner scopes such a call by `path`.

def patch(args: Args, io: ToolIO, *, write_mode: str = "in-place",
          match: str = "exact") -> Generator[float, None, JSONValue]:
    """hermes' patch; the options (`harness.tools.options`) change replace mode: `write_mode = "atomic"`
    writes as hermes does (the path resolved, a temporary file renamed over it), `match = "fuzzy"`
    falls back through hermes' fuzzy strategies (`harness.tools.fuzzy`) when the text is not found."""
    mode = args.get("mode", "replace")  # hermes' handler: args.get("mode", "replace")
    if mode == "replace":
        if "old_string" in args or "new_string" in args:
            return (yield from _patch_replace(args, io, atomic=write_mode == "atomic", fuzzy=match == "fuzzy"))
        # One generator level less for the common legacy spelling: every touch passes through each.
        return (yield from _patch_replace_legacy(args, io, atomic=write_mode == "atomic"))
    if mode in ("patch", "v4a"):
        body = args.get("patch")
        if not isinstance(body, str) or not body:
            raise ToolError("patch content required")
        return (yield from _patch_v4a(body, io, hermes=mode == "patch", fuzzy=match == "fuzzy" and mode == "patch"))
    raise ToolError(f"Unknown mode: {mode}")


def _patch_replace(args: Args, io: ToolIO, *, atomic: bool = False,
                   fuzzy: bool = False) -> Generator[float, None, JSONValue]:
    """Replace mode: `old_string` must occur exactly once unless `replace_all`; read at start,
    write at end (read-modify-write)."""
    path = args.get("path")
    if not isinstance(path, str) or not path:
        raise ToolError("path required")
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError("old_string and new_string required")
    replace_all = args.get("replace_all") is True
    text = io.read(path)
    if not old:
        raise ToolError("old_string cannot be empty")
    if not old.strip():
        raise ToolError("old_string is only whitespace — provide non-blank text to match")
    if old == new:
        raise ToolError("old_string and new_string are identical")
    if fuzzy:
        patched, count, strategy, error = fuzzy_replace(text, old, new, replace_all)
        if error is not None:
            if "Could not find" in error and already_applied(text, old, new):
                return {"path": io.path(path), "replacements": 0, "no_change": True}
            raise ToolError(error)
        yield 1.0
        _write(path, patched, io, atomic)
        return {"path": io.path(path), "replacements": count, "strategy": strategy}
    count = text.count(old)
    if count == 0:
        if already_applied(text, old, new):  # hermes answers a re-sent edit with a no-op success
            return {"path": io.path(path), "replacements": 0, "no_change": True}
        raise ToolError("Could not find a match for old_string in the file")
    if count > 1 and not replace_all:
        raise ToolError(f"Found {count} matches for old_string. Provide more context to make it unique, "
                        f"or use replace_all=True. Matches:\n{_locations(text, old)}")
    yield 1.0
    _write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1), io, atomic)
    return {"path": io.path(path), "replacements": count}


def _write(path: str, text: str, io: ToolIO, atomic: bool) -> None:
    """Replace mode's write: in place (the catalogue's default), or hermes' atomic write of the
    resolved path; then hermes' read tracker hears of it."""
    if atomic:
        io.write_resolved(path, text)
    else:
        io.write(path, text)
    wrote(path, io)


def _patch_replace_legacy(args: Args, io: ToolIO, *, atomic: bool = False) -> Generator[float, None, JSONValue]:
    """The harness's earlier spelling, `old`/`new`, keeps its earlier meaning: the first occurrence
    is replaced (all with `replace_all`), and text that is absent is an error."""
    path, old, new = require_str(args, "path"), require_str(args, "old"), require_str(args, "new")
    text = io.read(path)
    if old not in text:
        raise ToolError(f"patch: text to replace not found in {io.path(path)}")
    replace_all = args.get("replace_all") is True
    count = text.count(old) if replace_all else 1
    yield 1.0
    _write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1), io, atomic)
    return {"path": io.path(path), "replacements": count}


def _locations(content: str, text: str, cap: int = 5) -> str:
    """Where `text` occurs, as hermes lists ambiguous matches (`  L<line>: <line>`)."""
    rows: list[str] = []
    start = content.find(text)
    while start != -1:
        line_start = content.rfind("\n", 0, start) + 1
        line_end = content.find("\n", start)
        rows.append(f"  L{content.count(chr(10), 0, start) + 1}: "
                    f"{content[line_start:len(content) if line_end == -1 else line_end].strip()[:80]}")
        start = content.find(text, start + 1)
    return "\n".join(rows[:cap] + ([f"  ... and {len(rows) - cap} more"] if len(rows) > cap else []))


def _patch_v4a(body: str, io: ToolIO, *, hermes: bool, fuzzy: bool = False) -> Generator[float, None, JSONValue]:
    """V4A mode, as `apply_v4a_operations`: every operation validated against the files as read when
    the call starts (an overlay carries earlier operations' results to later ones), nothing written
    if anything fails; then each applied in order, re-reading its file just before its atomic
    write, the apply phase spread over the second half of the call."""
    if hermes:
        for header in header_paths(body):
            if ".." in PurePosixPath(header).parts:  # `has_traversal_component` on V4A headers
                raise ToolError(f"V4A patch header contains '..' traversal: {header!r}. Use the agent's "
                                "cwd-relative path (no '..') or an absolute path in '*** Update File:' / "
                                "'*** Add File:' / '*** Delete File:' / '*** Move File:' headers.")
    operations = parse_v4a(body, hermes=hermes)
    named = [path for op in operations for path in (op.path, op.move_to) if path is not None]
    resolved = [io.path(path) for path in dict.fromkeys(named)]
    # -- validation: reads at the start of the call --
    errors: list[str] = []
    pending: dict[str, str] = {}  # header path -> content after earlier operations (hermes' overlay)
    removed: set[str] = set()
    changes = 0

    def current(path: str) -> tuple[str | None, str | None]:
        if path in pending:
            return pending[path], None
        if path in removed:
            return None, "file not found"
        try:
            return io.read(path), None
        except (WorldError, ToolError) as exc:
            return None, str(exc)

    def occupied(path: str) -> bool:
        return path in pending or (path not in removed and io.exists(path))

    for operation in operations:
        path = operation.path
        if operation.kind == "update":
            content, error = current(path)
            if content is None:
                errors.append(f"{path}: {error}")
                continue
            changes += sum(1 for hunk in operation.hunks if any(p in "+-" for p, _ in hunk.lines))
            content, error = apply_hunks(content, operation, fuzzy=fuzzy)
            if error is not None:
                errors.append(f"{path}: {error}" if hermes else f"patch: hunk does not apply to {io.path(path)}")
                continue
            pending[path] = content
            if operation.move_to is not None:  # apply_patch's Move to
                pending[operation.move_to] = pending.pop(path)
                removed.add(path)
            continue
        changes += 1
        if operation.kind == "delete":
            if current(path)[1] is not None:
                errors.append(f"{path}: file not found for deletion")
            else:
                removed.add(path)
                pending.pop(path, None)
        elif operation.kind == "move":
            assert operation.move_to is not None
            source, error = current(path)
            if error is not None:
                errors.append(f"{path}: source file not found for move")
            if occupied(operation.move_to):
                errors.append(f"{operation.move_to}: destination already exists — move would overwrite")
            elif source is not None:
                pending[operation.move_to] = source
                removed.add(path)
                pending.pop(path, None)
        elif occupied(path):  # add
            errors.append(f"{path}: file already exists — use Update File, not Add File")
        else:
            removed.discard(path)
            pending[path] = operation.added(hermes)
    if not errors and changes == 0:
        errors.append("Patch contains no changes (only context lines were provided)")
    if errors:
        if not hermes:
            raise ToolError(errors[0])
        raise ToolError("Patch validation failed (no files were modified):\n"
                        + "\n".join(f"  • {error}" for error in errors))
    # -- apply: each operation re-reads, then writes (hermes' write_file renames a temporary file) --
    failures: list[str] = []
    created: list[str] = []
    deleted: list[str] = []
    step = 0.5 / len(operations)
    yield 0.5
    for index, operation in enumerate(operations):
        try:
            failure = yield from _apply_one(operation, io, hermes=hermes, write_at=0.5 + step * (index + 1),
                                            fuzzy=fuzzy)
        except (WorldError, ToolError) as exc:
            failure = str(exc)
        if failure is not None:
            failures.append(f"Failed to {operation.kind} {operation.path}: {failure}")
        elif operation.kind == "add":
            created.append(operation.path)
        elif operation.kind == "delete":
            deleted.append(operation.path)
    for path in named:
        wrote(path, io)
    if failures:
        raise ToolError("Apply phase failed (state may be inconsistent — run `git diff` to assess):\n"
                        + "\n".join(f"  • {failure}" for failure in failures))
    # `patch_tool` reports every header's absolute path as modified; the buckets keep the spelling.
    return {"files_modified": resolved, "files_created": created, "files_deleted": deleted}


def _apply_one(operation: Operation, io: ToolIO, *, hermes: bool, write_at: float,
               fuzzy: bool = False) -> Generator[float, None, str | None]:
    """Apply one validated operation: re-check its file, wait until `write_at`, write. Returns the
    failure, or None."""
    path = operation.path
    if operation.kind == "add":
        if io.exists(path):
            return f"{path}: file already exists — use Update File, not Add File"
        yield write_at
        _make_parent(path, io)
        io.write_atomic(path, operation.added(hermes))
    elif operation.kind == "delete":
        try:
            io.read(path)  # hermes re-reads to guard against a race since validation
        except WorldError:
            return f"Cannot delete {path}: file not found"
        yield write_at
        io.remove(path)
    elif operation.kind == "move":
        assert operation.move_to is not None
        if io.exists(operation.move_to):
            return f"{operation.move_to}: destination already exists — move would overwrite"
        yield write_at
        io.rename(path, operation.move_to)
    else:
        content, error = apply_hunks(io.read(path), operation, fuzzy=fuzzy)
        if error is not None:
            return f"Could not apply hunk: {error}"
        yield write_at
        if operation.move_to is not None:  # apply_patch's Move to: the edit lands at the new name
            _make_parent(operation.move_to, io)
            io.write_atomic(operation.move_to, content)
            io.remove(path)
        else:
            io.write_atomic(path, content)
    return None


def _make_parent(path: str, io: ToolIO) -> None:
    """hermes' atomic write runs `mkdir -p` on the parent first."""
    parent = posixpath.dirname(path)
    if parent and not io.exists(parent):
        io.make_dir(parent)


def search_files(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    pattern = require_str(args, "pattern")
    root = args.get("path")
    if not isinstance(root, str) or not root.strip():
        root = "."  # as hermes' tool: a blank or non-string path searches the working directory
    glob = args.get("glob")
    try:
        regex = re.compile(pattern)
    except re.error:
        regex = re.compile(re.escape(pattern))  # like `rg -F` when the pattern is not a regex
    yield 0.5
    matches: list[JSONValue] = []
    for path in io.list_files(root):
        if isinstance(glob, str) and not fnmatch.fnmatch(posixpath.basename(path), glob):
            continue
        for number, line in enumerate(io.read_resolved(path).splitlines(), start=1):
            if regex.search(line):
                matches.append({"path": path, "line": number, "text": line})
    return {"matches": matches, "count": len(matches)}


SPECS = (
    ToolSpec(
        "read_file", "Read a text file (optionally a line range).",
        Declared(read_only=True, category="read", resource_keys=_PATH_KEY), read_file, Fixed(100),
        parameters=Parameters.of(path="string", offset="integer?", limit="integer?"),
    ),
    ToolSpec(
        "write_file", "Overwrite a file: truncates at start, writes the content at the end.",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=True, category="write",
                 resource_keys=_PATH_KEY),
        write_file, Fixed(200), parameters=Parameters.of(path="string", content="string", force="boolean?"),
    ),
    ToolSpec(
        "write_file_atomic", "Overwrite a file atomically (write a temporary file, rename at the end).",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=True, category="write",
                 resource_keys=_PATH_KEY),
        write_file_atomic, Fixed(200), parameters=Parameters.of(path="string", content="string"),
    ),
    ToolSpec(
        "patch", "hermes' patch: replace mode (path, old_string, new_string, replace_all) reads at start and "
                 "writes at end; patch mode applies a V4A body to every file its headers name.",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False, category="write",
                 resource_keys=_PATH_KEY),
        # Which arguments a call needs depends on its mode: the tool itself says what is missing.
        patch, Fixed(300), parameters=Parameters.of(mode="string?", path="string?", old_string="string?",
                                                    new_string="string?", replace_all="boolean?", patch="string?",
                                                    old="string?", new="string?"),
    ),
    ToolSpec(
        "search_files", "Regex search over the files under a directory (default '.').",
        Declared(read_only=True, category="read", resource_keys=ResourceKeys(("path",), default_path=".")),
        search_files, Fixed(400), parameters=Parameters.of(pattern="string", path="string?", glob="string?"),
    ),
)
