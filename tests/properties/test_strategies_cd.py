"""The generated batches move the shell: a `terminal` `cd`, then files named relative to where it went.

A planner that resolves a turn's relative paths once, against the cwd the turn started in, is wrong
after a `cd` earlier in the same turn; `harness.strategies.batches` must produce such turns, and
check_scheduler's generated part must catch that planner (and pass it once it follows the `cd`).
"""

from __future__ import annotations

import json
import posixpath
from random import Random

from hypothesis import HealthCheck, find, given, settings

from harness.model import Batch
from harness.strategies import FILE_TOOLS, PATH_TOOLS, batches, moved, tool_calls
from harness.testing import GENERATED_PATHS, SchedulerCheckFailed, check_scheduler
from tests.catalogue.buggy import StaleCwdSegments


def _path(call_arguments: str) -> str | None:
    value = json.loads(call_arguments).get("path")
    return value if isinstance(value, str) else None


@given(batches(max_size=5, paths=GENERATED_PATHS))
def test_paths_after_a_cd_name_files_where_the_shell_went(batch: Batch) -> None:
    """Once a `cd` has moved the shell, every path a file call names, resolved against the cwd the
    `cd` left (as the tools resolve it), is a file of `paths` under that cwd: relative to it, or the
    same file spelled absolutely."""
    cwd, followed = "/repo", False
    for call in batch:
        path = _path(call.arguments) if call.name in PATH_TOOLS else None
        if followed and path is not None:
            resolved = posixpath.normpath(posixpath.join(cwd, path))
            assert resolved.startswith(cwd.rstrip("/") + "/") and resolved in GENERATED_PATHS, (call, cwd)
        after = moved(cwd, call.name, call.arguments)
        if after is not None:
            cwd, followed = after, True


def test_one_turn_names_a_file_relative_to_a_cd_and_by_its_absolute_path() -> None:
    def both_spellings(batch: Batch) -> bool:
        calls = batch.calls
        return (len(calls) >= 3 and calls[0].arguments == '{"command": "cd src"}'
                and {_path(c.arguments) for c in calls[1:]} >= {"c.txt", "/repo/src/c.txt"})

    found = find(batches(max_size=5, paths=GENERATED_PATHS), both_spellings, random=Random(1),
                 settings=settings(max_examples=200, database=None, suppress_health_check=list(HealthCheck)))
    assert found.calls[0].name == "terminal"


@given(batches(max_size=5, tools=FILE_TOOLS))
def test_without_the_shell_no_cd_and_no_terminal(batch: Batch) -> None:
    assert all(call.name in FILE_TOOLS for call in batch)


@given(batches(max_size=4, dirs=()))
def test_no_dirs_no_cd(batch: Batch) -> None:
    assert not any(moved("/repo", call.name, call.arguments) for call in batch)


@given(tool_calls())
def test_a_single_call_is_one_of_the_default_tools(pair: tuple[str, str]) -> None:
    name, raw = pair
    assert name in (*FILE_TOOLS, "terminal")
    json.loads(raw)


def test_check_schedulers_generated_part_catches_a_planner_with_a_stale_cwd() -> None:
    """`stale_cwd_segments` passes every default scenario (see tests/catalogue); the generated part
    catches it on a turn that moves the shell, and passes the same planner once it follows the `cd`.
    Measured over seeds 1-20 (quick) and 1-10 (ci): caught at 13/20 and 8/10, every time on a batch
    that opens with `cd src`; before the strategies drew a `cd` it was caught at 1/20 and 3/10, on the
    world's hard link; the planner that follows the `cd` was caught at 0/20 and 0/10."""
    try:
        check_scheduler(StaleCwdSegments(), scenarios=[], profile="quick", seed=1, swarm=False)
    except SchedulerCheckFailed as failure:
        message = str(failure)
        assert "scenario 'generated'" in message
        calls = next(line for line in message.splitlines() if line.strip().startswith("calls:"))
        assert calls.strip().startswith("calls: call-1=terminal"), message
        batch = failure.finding.result.scenario.batches[0]
        assert batch.calls[0].arguments == '{"command": "cd src"}'
    else:
        raise AssertionError("the stale-cwd planner passed the generated batches")
    check_scheduler(StaleCwdSegments(follow_cd=True), scenarios=[], profile="quick", seed=1, swarm=False)
