"""Oracles: checkers over a finished run (its trace, results and final world). They read; they
never steer a run.

`check(result)` runs every single-run oracle; `reorder.check(...)` compares many runs.
"""

from collections.abc import Callable

from harness.oracles import (
    approvals,
    checkpoints,
    contract,
    data_flow,
    exactly_once,
    exclusivity,
    hints,
    liveness,
    loop_policy,
    protocol,
    reorder,
    serializability,
    tool_code,
)
from harness.oracles.verdict import Kind, Verdict, Violation, exit_code
from harness.run import RunResult
from harness.sim.collector import held_full_collections

#: Every single-run oracle, by name, in the order verdicts are reported.
ORACLES: dict[str, Callable[[RunResult], Verdict]] = {
    contract.NAME: contract.check,
    protocol.NAME: protocol.check,
    data_flow.NAME: data_flow.check,
    approvals.NAME: approvals.check,
    checkpoints.NAME: checkpoints.check,
    serializability.NAME: serializability.check,
    exclusivity.EXCLUSIVITY: exclusivity.check_exclusivity,
    exclusivity.CAPS: exclusivity.check_caps,
    exactly_once.NAME: exactly_once.check,
    liveness.NAME: liveness.check,
    loop_policy.NAME: loop_policy.check,
    tool_code.NAME: tool_code.check,
    hints.NAME: hints.check,
}


#: Every label a violation can carry (what `explore --label` accepts).
LABELS = (
    "lost-update", "stale-read", "torn-read", "future-read", "ghost-effect", "duplicate-effect", "reordered-effect",
    "divergent-result", "divergent-world", "missing-result", "duplicate-result", "orphan-result", "out-of-order",
    "mispaired-result", "fabricated-result", "scheduler-error", "contract-error", "exclusivity", "cap-exceeded",
    "hang", "orphaned-call", "start-after-interrupt", "grace-exceeded", "dropped-call", "order-dependent",
    "missing-input", "unapproved-effect", "rollback-mismatch",
    "cross-agent-lost-update", "cross-agent-stale-read", "misreported-outcome",
    "round-limit-exceeded", "retry-limit-exceeded", "tool-disabled-silently", "loop-error", "loop-blocked",
    "tool-error", "hint-violated", "torn-snapshot",
)


def check(result: RunResult) -> list[Verdict]:
    """The verdict of every single-run oracle on `result`."""
    with held_full_collections(sum(len(batch.calls) for batch in result.scenario.batches)):
        return [oracle(result) for oracle in ORACLES.values()]


__all__ = ["LABELS", "ORACLES", "Kind", "Verdict", "Violation", "check", "exit_code", "reorder"]
