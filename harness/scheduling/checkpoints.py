"""Checkpoints: snapshots of the file tree a runtime takes before writes, and the rollback to one.

Owns the `Checkpoint` value, what a checkpoint covers and its digest, and the restore. A checkpoint
is what hermes-agent's git snapshot holds (seed 000/001): the file tree — files, directories,
symlinks, hard links. External effects (ledgers) and the shell session (cwd, env) are not in it, and
a rollback leaves them as they are. A rollback restores the whole tree, or only the given absolute
paths (a file's content back, or the file removed if the snapshot did not have it), as hermes'
`/rollback N file` does. The context traces both (`checkpoint`, `rollback` with the snapshot's digest
and the digest right after the restore); the `checkpoints` oracle judges what happens next. It never
decides when to take one or roll back: a runtime does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.sim.trace import canonical_bytes
from harness.world.state import WorldState, content_digest
from harness.world.world import World


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
