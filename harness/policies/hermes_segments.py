"""`hermes_segments`: hermes-agent's reader/writer path segmentation (mid-2026 onward; REFERENCE.md).

Rule: walk the batch in model order, cutting it into segments. A barrier — `clarify`, unparsable or
non-object arguments, a path-scoped call without a path, a tool not admitted (admitted: the safe
list and the path-scoped tools) — closes the current run and runs alone. An admitted call joins the
current run unless one of its paths overlaps a reserved path and either side is a writer
(`write_file`, `patch`; readers: `read_file`, `search_files`, whose default path is `.`); then the
run is closed first. Runs of two or more calls execute in parallel, runs of one alone; segments run
in order, never reordered. Paths: expanduser, joined to the terminal's cwd, abspath, realpath,
normcase (the identity on POSIX); a path whose realpath fails (a symlink loop) keeps its abspath, as
`os.path.realpath` returns it. `patch` with `mode` "patch" (V4A) is scoped by every file its
headers name — `*** Update/Add/Delete File: p`, both sides of `*** Move File: a -> b`, any spacing —
instead of `path`; with none it is a barrier. At most 8 calls run at once; results in model order.

Known weaknesses it keeps: hard links and case aliases are not resolved; `[write a, read a,
write b]` runs `write b` after `write a` although it could overlap it (never reorders).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from harness.model import Batch, ToolCall
from harness.policies.hermes_paths import (
    MAX_WORKERS,
    NEVER_PARALLEL_TOOLS,
    PARALLEL_SAFE_TOOLS,
    PATH_SCOPED_READERS,
    PATH_SCOPED_WRITERS,
    abspath_against,
    normcase,
    paths_overlap,
    v4a_scope_paths,
)
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler
from harness.world.world import WorldError

PATH_SCOPED = PATH_SCOPED_READERS | PATH_SCOPED_WRITERS
READER_DEFAULT_PATHS = {"search_files": "."}


def scoped_paths(call: ToolCall, args: dict[str, object]) -> list[str] | None:
    """The raw paths a call is scoped to ([] for an unscoped safe tool); None when a path-scoped call
    has none (a barrier). As hermes' `_extract_parallel_scope_paths`."""
    if call.name not in PATH_SCOPED:
        return []
    if call.name == "patch" and (args.get("mode") or "replace") == "patch":
        # hermes: the headers, not a possibly-decoy `path=`
        return v4a_scope_paths(args.get("patch")) or None
    raw = args.get("path")
    if isinstance(raw, str) and raw.strip():
        return [raw]  # a search with a path is scoped to it, as a read is
    if call.name in READER_DEFAULT_PATHS:
        return [READER_DEFAULT_PATHS[call.name]]  # hermes: a blank or non-string path searches `.`
    return None


def _realpath(ctx: SchedulerContext, path: str) -> str:
    """`os.path.realpath` (not strict): where the walk fails — a symlink loop, a file used as a
    directory, a NUL byte — Python hands the path back rather than raising, so the planner goes on."""
    try:
        return ctx.realpath(path)
    except WorldError:
        return path


class HermesSegments(PlanScheduler):
    name = "hermes_segments"
    description = "reader/writer path segments in model order; barriers run alone; never reorders"
    source = "hermes-agent mid-2026 onward (REFERENCE.md)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        reserved: list[tuple[PurePosixPath, bool]] = []

        def close() -> None:
            nonlocal current, reserved
            if current:
                segments.append(current)
            current, reserved = [], []

        for call in batch:
            args = call.parsed_arguments()
            admitted = call.name in PARALLEL_SAFE_TOOLS or call.name in PATH_SCOPED
            raw_paths = scoped_paths(call, args) if args is not None else None
            if call.name in NEVER_PARALLEL_TOOLS or args is None or not admitted or raw_paths is None:
                close()
                segments.append([call])
                continue
            paths = [PurePosixPath(normcase(_realpath(ctx, abspath_against(p, ctx.cwd, ctx.home, ctx.users))))
                     for p in raw_paths]
            writer = call.name in PATH_SCOPED_WRITERS
            if any(paths_overlap(p, q) and (writer or q_writer) for p in paths for q, q_writer in reserved):
                close()
            current.append(call)
            reserved.extend((p, writer) for p in paths)
        close()
        return Plan.segments(batch, segments, cap=MAX_WORKERS)
