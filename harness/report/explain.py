"""Violations in words: one template per label, filled from the witness (and, when the run is at
hand, from its trace and model order), registered label by label.

Owns the sentences every report prints for a violation (`explain`: the text run report, run JSON's
`explanation`, the HTML page, `explore`'s `why:` line, `check_scheduler`'s message, the Perfetto
instant events) and `TEMPLATES`, the one template per label. The templates live by family:
effects and reads (`harness.report.explain_effects`), the results a model receives
(`harness.report.explain_results`), how the runtime ran the calls (`harness.report.explain_runtime`);
the words they share in `harness.report.explain_words`; the touches a witness names in
`harness.report.races`. It never judges: which label a run gets and what its witness holds are the
oracles' business; a witness it cannot read falls back to the oracle's own message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import moved
from harness.oracles.verdict import Violation
from harness.report.explain_effects import (
    across_agents,
    divergent_result,
    divergent_world,
    duplicate_effect,
    future_read,
    ghost_effect,
    hint_violated,
    lost_update,
    reordered_effect,
    stale_read,
    torn_read,
)
from harness.report.explain_results import (
    duplicate_result,
    fabricated_result,
    mispaired_result,
    misreported_outcome,
    missing_input,
    missing_result,
    orphan_result,
    out_of_order,
)
from harness.report.explain_runtime import (
    cap_exceeded,
    contract_error,
    dropped_call,
    exclusivity,
    grace_exceeded,
    hang,
    loop_blocked,
    loop_error,
    order_dependent,
    orphaned_call,
    retry_limit_exceeded,
    rollback_mismatch,
    round_limit_exceeded,
    scheduler_error,
    start_after_interrupt,
    tool_disabled_silently,
    tool_error,
    torn_snapshot,
    unapproved_effect,
)
from harness.report.explain_words import RunView, Template
from harness.run import RunResult

#: One template per label in `harness.oracles.LABELS` (a test checks that none is missing).
TEMPLATES: dict[str, Template] = {
    "lost-update": lost_update, "stale-read": stale_read, "torn-read": torn_read, "future-read": future_read,
    "ghost-effect": ghost_effect, "duplicate-effect": duplicate_effect, "reordered-effect": reordered_effect,
    "divergent-result": divergent_result, "divergent-world": divergent_world, "missing-result": missing_result,
    "duplicate-result": duplicate_result, "orphan-result": orphan_result, "out-of-order": out_of_order,
    "mispaired-result": mispaired_result, "fabricated-result": fabricated_result,
    "scheduler-error": scheduler_error, "contract-error": contract_error, "exclusivity": exclusivity,
    "cap-exceeded": cap_exceeded, "hang": hang, "orphaned-call": orphaned_call,
    "start-after-interrupt": start_after_interrupt, "grace-exceeded": grace_exceeded, "dropped-call": dropped_call,
    "loop-blocked": loop_blocked,
    "order-dependent": order_dependent, "missing-input": missing_input,
    "unapproved-effect": unapproved_effect, "rollback-mismatch": rollback_mismatch,
    "torn-snapshot": torn_snapshot,
    "cross-agent-lost-update": across_agents(lost_update, "which task's update survives"),
    "cross-agent-stale-read": across_agents(stale_read, "what one task read of the other's work"),
    "misreported-outcome": misreported_outcome,
    "round-limit-exceeded": round_limit_exceeded, "retry-limit-exceeded": retry_limit_exceeded,
    "tool-disabled-silently": tool_disabled_silently, "loop-error": loop_error, "tool-error": tool_error,
    "hint-violated": hint_violated,
}


def explain_witness(label: str, witness: Mapping[str, Any], result: RunResult | None = None,
                    fallback: str = "") -> str:
    """The explanation of a violation labelled `label` with this witness; `result` (the run it was
    found in) adds times and model order the witness leaves out. A witness the template cannot read
    gives `fallback` (the oracle's message)."""
    template = TEMPLATES.get(label)
    if template is None:
        return fallback
    try:
        text = template(witness, RunView(result))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return fallback
    return text


def explain(violation: Violation, result: RunResult | None = None) -> str:
    """`explain_witness` for a `Violation`."""
    return explain_witness(violation.label, violation.witness, result, violation.message)


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
