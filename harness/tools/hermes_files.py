"""hermes' file state: the read tracker its file tools keep for a session, and the `read_file` and
`write_file` it changes, selected by a scenario's options (`harness.tools.options`).

Modelled on NousResearch/hermes-agent's `tools/file_tools.py` (read 2026: `read_file_tool`,
`write_file_tool`, `_check_file_staleness`, `_update_read_timestamp`, `_invalidate_dedup_for_path`):

- `read_file` with `dedup`: a read remembers `(resolved path, offset, limit) -> mtime`, the path
  resolved as `Path.resolve()` does (symlinks followed). A later read of the same key whose file still
  has that mtime answers "File unchanged since last read" instead of the content. As in hermes, the
  cache is checked and the file read together, and its mtime is taken *after* the read returns (here:
  as the call ends): a write that lands in between is recorded with the content read before it, and the
  next read of the key answers "unchanged" although the content changed.
- `read_file` also remembers each read's mtime by resolved path (`track_reads`, implied by `dedup`),
  which `write_file`'s `stale_check` compares: a file changed since this session last read it is not
  overwritten unless the call says `force = true` (design note 001: "force=False requires confirming
  an overwrite"; hermes today only warns and writes).
- every `write_file` and `patch` of a session that remembers reads forgets the cache entries of the
  file it wrote and remembers its new mtime, as hermes' `_update_read_timestamp` does: a session's own
  writes never leave its cache stale, only a write between a read and its stat does (or another
  session's, or a process's).
- `write_mode = "atomic"`: hermes' write, the path resolved and a temporary file renamed over it.

The tracker lives in `World.memory` (never in a world's state or digest): one per world, which every
agent of a crew shares (hermes keeps one per task id). The entries also keep the digest of the content
read, which hermes does not: an "unchanged" answer is traced as a `cached` touch of that content, so the
oracles can say which version the call vouched for. It never decides a schedule.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harness.model import JSONValue
from harness.tools.spec import Args, ToolError, ToolIO, require_str
from harness.world.errors import WorldError
from harness.world.state import content_digest

#: `World.memory` tables: (resolved path, offset, limit) -> (mtime, digest of the content read)...
DEDUP = "hermes.read_dedup"
#: ...and resolved path -> its mtime when this session last read (or wrote) it.
STAMPS = "hermes.read_stamps"

UNCHANGED = ("File unchanged since last read. The content from the earlier read_file result in this "
             "conversation is still current — refer to that instead of re-reading.")


def read_lines(args: Args, text: str) -> str:
    """The lines `offset` (1-based) and `limit` select, as the catalogue's `read_file` returns them."""
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) or isinstance(limit, int):
        lines = text.splitlines(keepends=True)
        start = max(0, (offset or 1) - 1)
        return "".join(lines[start : start + limit] if isinstance(limit, int) else lines[start:])
    return text


def read_file(args: Args, io: ToolIO, *, dedup: bool = False,
              track_reads: bool = False) -> Generator[float, None, JSONValue]:
    """`read_file` with hermes' read tracker (`dedup`, `track_reads`)."""
    raw = require_str(args, "path")
    yield 0.5
    path = io.path(raw)  # once: a relative path reads the shell's cwd, and then the call holds its answer
    resolved = io.realpath(path)
    key = (resolved, _int(args.get("offset")), _int(args.get("limit")))
    if dedup:
        cached = io.world.memory.get(DEDUP, {}).get(key)
        if cached is not None:
            try:
                unchanged = io.mtime(path, touch=False) == cached[0]
            except WorldError:
                unchanged = False  # stat failed: hermes falls through to a full read
            if unchanged:
                io.cached(path, cached[1])
                return {"status": "unchanged", "message": UNCHANGED, "path": raw, "dedup": True,
                        "content_returned": False}
    text = io.read(path)
    value: JSONValue = {"path": path, "content": read_lines(args, text)}
    yield 1.0  # the read returns; then hermes stats the file for its tracker
    try:
        stamp = io.mtime(path)
    except WorldError:
        return value  # hermes: "Can't stat — skip tracking for this entry"
    memory = io.world.memory
    if dedup:
        memory.setdefault(DEDUP, {})[key] = (stamp, content_digest(text)[:16])
    memory.setdefault(STAMPS, {})[resolved] = stamp
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def wrote(raw: str, io: ToolIO) -> None:
    """After a write of `raw` by this session: its cache entries go and its new mtime is remembered
    (`_update_read_timestamp`). Nothing when the session remembers no reads."""
    memory = io.world.memory
    if not memory:
        return
    try:
        resolved = io.world.realpath(io.world.absolute(raw))
        stamp = io.world.mtime(resolved)
    except WorldError:
        return
    dedup = memory.get(DEDUP)
    if dedup:
        for key in [k for k in dedup if k[0] == resolved]:
            del dedup[key]
    stamps = memory.get(STAMPS)
    if stamps is not None:
        stamps[resolved] = stamp


def refuse_if_stale(raw: str, io: ToolIO) -> None:
    """`write_file`'s staleness check: refuse to overwrite a file whose mtime moved since this session
    last read (or wrote) it; nothing if it never did, or the file is gone."""
    stamps = io.world.memory.get(STAMPS)
    if not stamps:
        return
    try:
        path = io.path(raw)
        read_at = stamps.get(io.realpath(path))
        if read_at is None:
            return
        current = io.mtime(path)
    except WorldError:
        return
    if current != read_at:
        raise ToolError(f"{raw} was modified since you last read it (external edit or concurrent agent); "
                        "read it again, or pass force=true to overwrite it")


def write_file(args: Args, io: ToolIO, *, write_mode: str = "in-place",
               stale_check: bool = False) -> Generator[float, None, JSONValue]:
    """`write_file` with hermes' options: the staleness check (`stale_check`, unless `force`) as it
    starts, and an atomic write of the resolved path (`write_mode = "atomic"`) as it ends."""
    raw, content = require_str(args, "path"), require_str(args, "content")
    if stale_check and args.get("force") is not True:
        refuse_if_stale(raw, io)
    if write_mode != "atomic":  # the catalogue's in-place write (`harness.tools.files.write_file`)
        io.truncate(raw)
        if io.torn_write:
            yield 0.5
            io.write(raw, content[: len(content) // 2])
        yield 1.0
        io.write(raw, content)
        wrote(raw, io)
        return {"path": io.path(raw), "bytes_written": len(content.encode())}
    yield 1.0
    path = io.path(raw)
    io.write_resolved(path, content)
    wrote(path, io)
    return {"path": path, "bytes_written": len(content.encode())}

