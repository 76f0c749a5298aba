"""hermes-agent's tool lists and path rules, shared by both generations of its planner.

Owns the lists exactly as seeds 000/001 and REFERENCE.md give them, the `Path.parts` prefix
overlap (`/x/ab` does not overlap `/x/a`; a directory overlaps everything under it) and how hermes
reads the files a V4A patch names from its headers. It never decides a schedule.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from harness.world.world import absolute_path

#: Tier 1: read-only, no shared state — may always run in parallel (seed 000's 11 tools, and
#: `image_generate`, which hermes' list has too).
PARALLEL_SAFE_TOOLS = frozenset({
    "read_file", "search_files", "web_search", "web_extract", "vision_analyze", "session_search",
    "skill_view", "skills_list", "ha_get_state", "ha_list_entities", "ha_list_services", "image_generate",
})
#: Tier 2: file tools, parallel when their paths do not overlap (the gate's list, seed 001).
PATH_SCOPED_TOOLS = frozenset({"read_file", "write_file", "patch"})
#: The segment planner's path-scoped tools (`_PATH_SCOPED_READERS` / `_PATH_SCOPED_WRITERS` in
#: hermes' agent/tool_dispatch_helpers.py): readers may share a subtree, a writer conflicts with any
#: overlapping reservation. `search_files` is a reader of its `path`, by default the working directory.
PATH_SCOPED_READERS = frozenset({"read_file", "search_files"})
PATH_SCOPED_WRITERS = frozenset({"write_file", "patch"})
#: Tier 3: never parallel.
NEVER_PARALLEL_TOOLS = frozenset({"clarify"})
#: hermes' ThreadPoolExecutor size.
MAX_WORKERS = 8


def paths_overlap(left: PurePosixPath, right: PurePosixPath) -> bool:
    """`_paths_overlap` from hermes-agent (seed 001), verbatim in behaviour."""
    left_parts, right_parts = left.parts, right.parts
    if not left_parts or not right_parts:
        return bool(left_parts) == bool(right_parts) and bool(left_parts)
    common = min(len(left_parts), len(right_parts))
    return left_parts[:common] == right_parts[:common]


# hermes' planner finds a V4A patch's files with these (agent/tool_dispatch_helpers.py,
# `_extract_file_mutation_targets`, NousResearch/hermes-agent): `\s*` after `***` and any spacing
# inside, so `***Update File:p` and `*** Update  File:  p` count, as hermes' own parser accepts them.
_V4A_FILE_HEADER = re.compile(r"^\*\*\*\s*(?:Update|Add|Delete)\s+File:\s*(.+)$", re.MULTILINE)
_V4A_MOVE_HEADER = re.compile(r"^\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+)$", re.MULTILINE)


def v4a_scope_paths(body: object) -> list[str]:
    """The raw paths a V4A patch body's headers name: every `*** Update/Add/Delete File: p`, then
    both sides of every `*** Move File: a -> b`, in that order (hermes' order); [] for no body."""
    if not isinstance(body, str) or not body:
        return []
    paths = [match.group(1).strip() for match in _V4A_FILE_HEADER.finditer(body)]
    paths += [match.group(side).strip() for match in _V4A_MOVE_HEADER.finditer(body) for side in (1, 2)]
    return [path for path in paths if path]


def abspath_against(raw: str, cwd: str, home: str, users: Mapping[str, str] | None = None) -> str:
    """`os.path.abspath(os.path.expanduser(raw))` for a process whose cwd is `cwd`, HOME `home` and
    password database `users` (`~alice`; pure text: no symlink resolution, so `link/../x` collapses
    to `x`)."""
    return absolute_path(raw, cwd, home, users)


def normcase(path: str) -> str:
    """`os.path.normcase` on POSIX is the identity: a case-insensitive disk still aliases."""
    return os.path.normcase(path) if os.sep == "/" else path
