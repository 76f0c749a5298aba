"""Checkpoints: snapshots of the file tree a runtime takes before writes, and the rollback to one.

Owns the `Checkpoint` value, what a checkpoint covers and its digest, and the restore. A checkpoint
is what hermes-agent's git snapshot holds (seed 000/001): the file tree — files, directories,
symlinks, hard links. External effects (ledgers) and the shell session (cwd, env) are not in it, and
a rollback leaves them as they are. A rollback restores the whole tree, or only the given absolute
paths (a file's content back, or the file removed if the snapshot did not have it), as hermes'
`/rollback N file` does. The context traces both (`checkpoint`, `rollback` with the snapshot's digest
and the digest right after the restore); the `checkpoints` oracle judges what happens next.

A checkpoint is instantaneous (`SchedulerContext.checkpoint`) or, as a real `git add -A` is, takes
virtual time (`copying`, behind `SchedulerContext.snapshot`): it lists the tree when it begins, then
copies one file every `file_ms`, in path order, each as it is at that moment (a `snapshot_read` in the
trace), so a file a sibling is rewriting meanwhile can be copied half written (the `checkpoints`
oracle's `torn-snapshot`). Which calls hermes checkpoints before is `needs_checkpoint` (write_file,
patch, and a terminal command matching its destructive-command patterns). It never decides when to
take one or roll back: a runtime does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import simpy

from harness.model import ToolCall
from harness.sim.kernel import Kernel
from harness.sim.trace import canonical_bytes
from harness.world.state import WorldState, content_digest
from harness.world.world import World, WorldError

#: The tools hermes-agent checkpoints before (`write_file`, `patch`; the harness' atomic variant too).
WRITING_TOOLS = ("write_file", "write_file_atomic", "patch")
#: hermes' destructive terminal commands (REFERENCE.md): rm, rmdir, mv, sed -i, truncate, dd, shred, git
#: reset/clean/checkout as a word after the start, a space or a shell separator (so `grep rm x` counts
#: too: a snapshot too many costs time, never safety), and a `>` redirect that overwrites a file (`>>`
#: appends, `2>&1` duplicates: neither is one).
_DESTRUCTIVE = re.compile(r"(?:^|[\s;&|`(])(?:(?:rm|rmdir|mv|truncate|dd|shred)\s|sed\s+(?:-\w+\s+)*-i"
                          r"|git\s+(?:reset|clean|checkout)\b)|(?:^|[^>&0-9])>(?![>&])")


def destructive(command: str) -> bool:
    """Whether hermes would checkpoint before this terminal command."""
    return _DESTRUCTIVE.search(command) is not None


def needs_checkpoint(call: ToolCall) -> bool:
    """Whether hermes-agent snapshots the tree before `call`: a write or patch, or a destructive
    terminal command (arguments it cannot parse: no command, no checkpoint, as hermes' dispatcher)."""
    if call.name in WRITING_TOOLS:
        return True
    if call.name != "terminal":
        return False
    try:
        args = json.loads(call.arguments)
    except (TypeError, ValueError):
        return False
    command = args.get("command") if isinstance(args, dict) else None
    return isinstance(command, str) and destructive(command)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A snapshot of the world's file tree, numbered in the order the run took them (1, 2, ...)."""

    id: int
    label: str
    taken_ms: int
    state: WorldState = field(repr=False, compare=False)
    #: Where the snapshot sits in the trace (-1: not traced, a crashed runtime's): a rollback names it,
    #: so oracles know which touches it undoes even when two runtimes number checkpoints alike.
    seq: int = -1


def tree_digest(state: WorldState, paths: Sequence[str] | None = None) -> str:
    """The digest of what a checkpoint covers: the whole file tree, or with `paths`, the content (or
    absence) of each of those files."""
    if paths is None:
        covered: object = {"files": {p: content_digest(c) for p, c in state.files}, "dirs": list(state.dirs),
                           "symlinks": dict(state.symlinks), "hardlinks": [list(g) for g in state.hardlinks]}
    else:
        files = state.file_map
        covered = {p: (content_digest(files[p]) if p in files else None) for p in sorted(set(paths))}
    return hashlib.sha256(canonical_bytes(covered)).hexdigest()


def restore(world: World, checkpoint: Checkpoint, paths: Sequence[str] | None = None) -> None:
    """Put the world's file tree (or only `paths`) back as the checkpoint holds it, in place."""
    if paths is None:
        world.restore_files(checkpoint.state)
        return
    files = checkpoint.state.file_map
    for path in paths:
        if path in files:
            world.write_text(path, files[path])
        elif world.exists(path) and not world.is_dir(path):
            world.remove(path)


def copying(kernel: Kernel, world: World, number: int, label: str, before: str | None,
            file_ms: int) -> Generator[simpy.Event, Any, Checkpoint]:
    """A snapshot that takes time: list the tree now, copy its files one by one (`file_ms` each, in
    path order), each as it is when copied. Traced as `checkpoint_begin`, one `snapshot_read` per file
    and, at the end, `checkpoint` with the digest of what it holds. A file removed before its turn is
    not in the snapshot; one created meanwhile is not either (the listing came first)."""
    listed = world.state()
    kernel.record("checkpoint_begin", checkpoint=number, label=label or None, before=before,
                  files=len(listed.files))
    copied: list[tuple[str, str]] = []
    for index, (path, _) in enumerate(listed.files):
        if index:
            yield kernel.delay(file_ms, "checkpoint")
        try:
            text = world.read_text(path)
        except WorldError:
            kernel.record("snapshot_read", checkpoint=number, target=path, digest=None)
            continue
        kernel.record("snapshot_read", checkpoint=number, target=path, digest=content_digest(text))
        copied.append((path, text))
    if listed.files:
        yield kernel.delay(file_ms, "checkpoint")
    state = replace(listed, files=tuple(copied), _digest=[])
    seq = len(kernel.trace)
    kernel.record("checkpoint", checkpoint=number, label=label or None, before=before, digest=tree_digest(state))
    return Checkpoint(number, label, kernel.now, state, seq=seq)
