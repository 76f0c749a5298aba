"""hermes' approval guard (issue 28, item 4): terminal commands asked about by dangerous-command
patterns, "approve for session" remembered per pattern, scripted in `[approvals]`."""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, CallResult, Outcome
from harness.oracles import ORACLES, check
from harness.run import RunResult
from harness.scenario.approvals_load import ApprovalsError, approvals_to_data, parse_approvals
from harness.scheduling import SchedulerContext
from harness.tools.catalogue import BUILTIN
from tests.helpers import scenario

NAME = "ops-session-approvals"


def asked(result: RunResult) -> list[tuple[str, str, Any]]:
    return [(e["ev"], e["call"], e.get("answer")) for e in result.trace
            if e["ev"] in ("approval_requested", "approval")]


def labels(result: RunResult) -> set[str]:
    return {v.label for verdict in check(result) for v in verdict.violations}


@pytest.mark.parametrize("policy", ["serial", "parallel", "partition", "hermes_gate", "resource_keys"])
def test_a_pattern_approved_for_the_session_is_not_asked_again(policy: str) -> None:
    result = run(find_scenario(NAME), get_scheduler(policy), 1)
    assert labels(result) == set()
    assert asked(result) == [
        ("approval_requested", "rm-build", None), ("approval", "rm-build", "session"),  # asked once...
        ("approval", "rm-dist", "session"),  # ...and taken from the session cache: no request
        ("approval_requested", "reset", None), ("approval", "reset", "deny"),  # another pattern: asked
    ]  # `cat` matches no pattern: never asked
    cached = next(e for e in result.trace if e["ev"] == "approval" and e["call"] == "rm-dist")
    assert cached["cached"] is True and cached["patterns"] == ["recursive delete"]
    files = result.final.file_map
    assert "/srv/app/dist/app.tar" not in files and "/srv/app/src/main.py" in files
    assert result.batches[1].results[2].error == "denied by the user: terminal was not run"


class SessionByTool:
    """Serial, asks before each call that needs it, but remembers "approve for session" by tool name
    instead of by pattern: after `rm -r` was approved for the session, every terminal command runs."""

    name = "session_by_tool"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        trusted = ctx.session.setdefault("trusted-tools", set())
        results = []
        for call in batch:
            if ctx.needs_approval(call) and call.name not in trusted:
                answered = ctx.approval(call)
                yield answered
                if not answered.value.approved:
                    results.append(CallResult(call.id, Outcome.ERROR, None, "denied"))
                    continue
                if answered.value.answer == "session":
                    trusted.add(call.name)
            results.append((yield ctx.start(call)))
        return results


def test_a_session_cache_keyed_by_tool_runs_another_pattern_unapproved() -> None:
    result = run(find_scenario(NAME), SessionByTool(), 1)
    (found,) = ORACLES["approvals"](result).violations
    assert found.label == "unapproved-effect"
    assert (found.witness["call"], found.witness["requested_at_ms"]) == ("reset", None)
    # rm-dist ran unasked too, but its pattern had been approved for the session: no finding for it.


def test_the_same_scheduler_passes_when_the_user_approves_each_command_once() -> None:
    """Without `session` answers the by-tool cache never fills: it asks every time, as it must."""
    data = approvals_to_data(find_scenario(NAME).approvals)  # type: ignore[arg-type]
    data["patterns"]["recursive delete"]["answer"] = "approve"
    sc = find_scenario(NAME)
    sc = replace(sc, approvals=parse_approvals(data, sc.catalogue, None))
    assert ORACLES["approvals"](run(sc, SessionByTool(), 1)).ok


def test_the_guard_decides_for_the_terminal_and_without_it_nothing_is_asked() -> None:
    calls = [("wipe", "terminal", {"command": "rm -rf cache/x"}), ("look", "terminal", {"command": "cat a.txt"})]
    files = {"/repo/a.txt": "a", "/repo/cache/x": "x"}
    guarded = run(scenario(calls, files=files, approvals={"guard": "hermes"}), get_scheduler("serial"), 1)
    assert [(ev, call) for ev, call, _ in asked(guarded)] == [("approval_requested", "wipe"), ("approval", "wipe")]
    plain = run(scenario(calls, files=files, approvals={}), get_scheduler("serial"), 1)
    assert asked(plain) == []  # terminal is not declared needs_confirmation: never asked


@pytest.mark.parametrize(("table", "message"), [
    ({"guard": "always"}, "approvals.guard: expected \"hermes\""),
    ({"patterns": {"recursive delete": {"answer": "session"}}}, 'approvals.patterns.recursive delete: expected guard'),
    ({"guard": "hermes", "patterns": {"recursive delet": {}}}, "did you mean 'recursive delete'?"),
    ({"guard": "hermes", "default": {"answer": "session"}}, 'approvals.default.answer: expected one of "approve", '
                                                            '"deny" or "none"'),
    ({"guard": "hermes", "patterns": {"git reset --hard": {"answer": "maybe"}}}, '"session" (approve, and do not ask'),
])
def test_a_malformed_guard_table_names_the_field(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ApprovalsError, match=None) as caught:
        parse_approvals(table, BUILTIN, None)
    assert message in str(caught.value)


def test_the_guard_survives_a_reproducer() -> None:
    script = find_scenario(NAME).approvals
    assert script is not None
    data = approvals_to_data(script)
    assert parse_approvals(json.loads(json.dumps(data)), find_scenario(NAME).catalogue, None) == script
