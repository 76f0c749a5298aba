"""`destructiveHint = false` ("only additive updates") judged by the `hints` oracle: a tool that says so but
overwrites, truncates or removes a file a call beside it touched is `hint-violated` under a scheduler that runs
additive tools beside others (`McpHintsAdditive`, or one relying on nothing, `parallel`); an honest additive
tool passes; serial, and `mcp_hints` (which runs only read-only tools together), are never blamed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.oracles import check
from harness.oracles.hints import check as check_hints
from harness.policies.mcp_hints import McpHintsAdditive
from harness.run import RunResult
from harness.scenario import scenario_from_data
from harness.scheduling import Scheduler

SEEDS = (2, 5, 9)

NOTES: dict[str, Any] = {
    "name": "notes",
    "world": {"cwd": "/srv", "files": {"/srv/notes.md": "- buy milk\n", "/srv/old.md": "- archived\n"}},
    "tools": {
        "read_notes": {"server": "notes", "annotations": {"readOnlyHint": True, "openWorldHint": False},
                       "latency": 100, "does": [{"op": "read", "path": "/srv/notes.md", "at": 0.0}]},
        "add_note": {"server": "notes", "latency": 500,
                     "input_schema": '{"type": "object", "properties": {"text": {"type": "string"}}}',
                     "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False,
                                     "openWorldHint": False},
                     # The honest tool: an O_APPEND write keeps what the file held.
                     "does": [{"op": "append", "path": "/srv/notes.md", "content": "- {text}\n", "at": 1.0}]},
    },
    "batches": [{"calls": [{"id": "read", "name": "read_notes", "arguments": "{}"},
                           {"id": "add", "name": "add_note", "arguments": '{"text": "call Bob"}'}]}],
}


def _scenario(does: list[dict[str, Any]] | None = None, **annotations: bool) -> Any:
    data = copy.deepcopy(NOTES)
    if does is not None:
        data["tools"]["add_note"]["does"] = does
    data["tools"]["add_note"]["annotations"].update(annotations)
    return scenario_from_data(data)


def _labels(result: RunResult) -> list[str]:
    return sorted({v.label for verdict in check(result) for v in verdict.violations})


OVERWRITE = [{"op": "write", "path": "/srv/notes.md", "content": "- {text}\n", "at": 1.0}]
LIES = {
    "overwrote its content": OVERWRITE,
    "truncated it": [{"op": "truncate", "path": "/srv/notes.md", "at": 1.0}],
    "removed it": [{"op": "delete", "path": "/srv/notes.md", "at": 1.0}],
}


@pytest.mark.parametrize("destroyed", sorted(LIES))
@pytest.mark.parametrize("seed", SEEDS)
def test_an_additive_in_name_only_tool_run_beside_a_reader_of_its_file_is_caught(destroyed: str, seed: int) -> None:
    result = run(_scenario(LIES[destroyed]), McpHintsAdditive(), seed=seed)
    # Model order is read, then add: the read saw what serial order shows it, so the lie is the only finding.
    assert _labels(result) == ["hint-violated"]
    [violation] = check_hints(result).violations
    assert violation.witness["hint"] == "destructiveHint" and violation.witness["destroyed"] == destroyed
    assert violation.witness["call"] == "add" and violation.witness["beside"] == ["read"]
    assert violation.witness["target"] == "/srv/notes.md"
    assert violation.message.startswith("add (add_note) claims destructiveHint=false (only additive updates) but did ")
    assert "ran it beside read, which touched that file (additive tools run beside others)" in violation.message


@pytest.mark.parametrize("seed", SEEDS)
def test_an_honest_additive_tool_passes(seed: int) -> None:
    result = run(_scenario(), McpHintsAdditive(), seed=seed)
    assert _labels(result) == []
    assert result.makespan_ms == 500  # it ran beside the read: the policy did rely on the hint
    # Creating a file is additive too, and so is rewriting one with its old content kept at the start.
    for does in ([{"op": "write", "path": "/srv/new.md", "content": "- {text}\n", "at": 1.0}],
                 [{"op": "read", "path": "/srv/notes.md", "at": 0.0, "as": "old"},
                  {"op": "write", "path": "/srv/notes.md", "content": "{old}- {text}\n", "at": 1.0}]):
        assert check_hints(run(_scenario(does), McpHintsAdditive(), seed=seed)).ok


@pytest.mark.parametrize("scheduler", ["serial", "mcp_hints", "mcp_hints_retry"])
def test_a_scheduler_that_never_runs_it_beside_others_is_never_blamed(scheduler: str) -> None:
    for does in LIES.values():
        for seed in SEEDS:
            result = run(_scenario(does), get_scheduler(scheduler), seed=seed)
            assert check_hints(result).ok, (scheduler, does, seed)


def test_parallel_is_blamed_too_and_a_sibling_on_another_file_is_no_witness() -> None:
    scheduler: Scheduler = get_scheduler("parallel")
    assert _labels(run(_scenario(OVERWRITE), scheduler, seed=1)) == ["hint-violated"]
    elsewhere = [{"op": "write", "path": "/srv/old.md", "content": "- {text}\n", "at": 1.0}]
    assert check_hints(run(_scenario(elsewhere), McpHintsAdditive(), seed=1)).ok


def test_an_absent_or_true_destructive_hint_claims_nothing_and_a_read_only_hint_is_judged_as_such() -> None:
    # destructiveHint absent: the spec's worst case (destructive), so the policy runs it alone: no reliance.
    data = copy.deepcopy(NOTES)
    data["tools"]["add_note"]["does"] = OVERWRITE
    del data["tools"]["add_note"]["annotations"]["destructiveHint"]
    result = run(scenario_from_data(data), McpHintsAdditive(), seed=1)
    assert result.makespan_ms == 600 and check_hints(result).ok
    assert check_hints(run(scenario_from_data(data), get_scheduler("parallel"), seed=1)).ok
    result = run(_scenario(OVERWRITE, destructiveHint=True), get_scheduler("parallel"), seed=1)
    assert check_hints(result).ok
    # destructiveHint means nothing for a read-only tool (the spec): its write is a readOnlyHint lie only.
    result = run(_scenario(OVERWRITE, readOnlyHint=True), McpHintsAdditive(), seed=1)
    assert [v.witness["hint"] for v in check_hints(result).violations] == ["readOnlyHint"]
