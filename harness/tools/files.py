"""File tools: `read_file`, `write_file`, `write_file_atomic`, `patch`, `search_files`.

Owns their behaviour as touch points in virtual time, faithful to how the real tools race:
`write_file` truncates when it starts and writes when it ends (a reader in between sees a torn,
empty file); `write_file_atomic` writes once at the end by renaming a new file into place (a new
inode: hard links keep the old content, a symlink at the path is replaced); `patch` reads when it
starts and writes when it ends (read-modify-write, the shape of a lost update), also in V4A mode
(`{"mode": "v4a", "patch": "*** Begin Patch ..."}`, several files at once); readers read half
way through. It never decides what may run in parallel.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.spec import Args, Declared, ResourceKeys, SideEffect, ToolError, ToolIO, ToolSpec, require_str

_PATH_KEY = ResourceKeys(path_args=("path",))


def read_file(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path = require_str(args, "path")
    yield 0.5
    text = io.read(path)
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) or isinstance(limit, int):
        lines = text.splitlines(keepends=True)
        start = max(0, (offset or 1) - 1)
        text = "".join(lines[start : start + limit] if isinstance(limit, int) else lines[start:])
    return {"path": io.path(path), "content": text}


def write_file(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path, content = require_str(args, "path"), require_str(args, "content")
    io.truncate(path)  # open(path, "w") truncates before the first byte is written
    if io.torn_write:  # an injected fault: the content goes out in two writes
        yield 0.5
        io.write(path, content[: len(content) // 2])
    yield 1.0
    io.write(path, content)
    return {"path": io.path(path), "bytes_written": len(content.encode())}


def write_file_atomic(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    path, content = require_str(args, "path"), require_str(args, "content")
    yield 1.0
    io.write_atomic(path, content)  # write to a temporary name, then rename over the target
    return {"path": io.path(path), "bytes_written": len(content.encode())}


def patch(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    if args.get("mode") == "v4a":
        return (yield from _patch_v4a(require_str(args, "patch"), io))
    path, old, new = require_str(args, "path"), require_str(args, "old"), require_str(args, "new")
    text = io.read(path)
    if old not in text:
        raise ToolError(f"patch: text to replace not found in {io.path(path)}")
    replace_all = args.get("replace_all") is True
    count = text.count(old) if replace_all else 1
    yield 1.0
    io.write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
    return {"path": io.path(path), "replacements": count}


def _patch_v4a(text: str, io: ToolIO) -> Generator[float, None, JSONValue]:
    """The V4A patch format (OpenAI's apply_patch, hermes' `patch` mode): `*** Add File: P` with `+`
    lines, `*** Delete File: P`, `*** Update File: P` with `@@` hunks of ` `/`-`/`+` lines and an
    optional `*** Move to: Q`. Every file is read when the call starts, all writes land at the end."""
    operations: list[tuple[str, str, list[str], str | None]] = []  # (kind, path, lines, move_to)
    for line in text.splitlines():
        if line.startswith("*** ") and ": " in line:
            header, _, target = line[4:].partition(": ")
            kinds = {"Add File": "add", "Delete File": "delete", "Update File": "update"}
            if header in kinds:
                operations.append((kinds[header], target.strip(), [], None))
            elif header == "Move to" and operations and operations[-1][0] == "update":
                kind, path, lines, _ = operations[-1]
                operations[-1] = (kind, path, lines, target.strip())
        elif operations and not line.startswith("***"):
            operations[-1][2].append(line)
    if not operations:
        raise ToolError("patch: no *** Add/Update/Delete File: sections in the V4A patch")
    planned: list[tuple[str, str | None, str | None]] = []  # (path, new content or None to delete, move_to)
    for kind, path, lines, move_to in operations:
        if kind == "add":
            planned.append((path, "".join(ln[1:] + "\n" for ln in lines if ln.startswith("+")), None))
        elif kind == "delete":
            io.read(path)  # must exist
            planned.append((path, None, None))
        else:
            content = io.read(path)
            for hunk in "\n".join(lines).split("@@"):
                body = [ln for ln in hunk.splitlines() if ln[:1] in (" ", "-", "+")]
                before = "".join(ln[1:] + "\n" for ln in body if ln[0] in " -")
                after = "".join(ln[1:] + "\n" for ln in body if ln[0] in " +")
                if before and before not in content:
                    raise ToolError(f"patch: hunk does not apply to {io.path(path)}")
                content = content.replace(before, after, 1) if before else content + after
            planned.append((path, content, move_to))
    yield 1.0
    for path, new_content, move_to in planned:
        if new_content is None:
            io.remove(path)
        elif move_to is not None:
            io.write(move_to, new_content)
            io.remove(path)
        else:
            io.write(path, new_content)
    return {"files": [io.path(move_to or path) for path, _, move_to in planned]}


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
    ),
    ToolSpec(
        "write_file", "Overwrite a file: truncates at start, writes the content at the end.",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=True, category="write",
                 resource_keys=_PATH_KEY),
        write_file, Fixed(200),
    ),
    ToolSpec(
        "write_file_atomic", "Overwrite a file atomically (write a temporary file, rename at the end).",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=True, category="write",
                 resource_keys=_PATH_KEY),
        write_file_atomic, Fixed(200),
    ),
    ToolSpec(
        "patch", "Replace text in a file: reads at start, writes at end (read-modify-write).",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False, category="write",
                 resource_keys=_PATH_KEY),
        patch, Fixed(300),
    ),
    ToolSpec(
        "search_files", "Regex search over the files under a directory (default '.').",
        Declared(read_only=True, category="read", resource_keys=ResourceKeys(("path",), default_path=".")),
        search_files, Fixed(400),
    ),
)
