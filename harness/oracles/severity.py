"""How bad a violation is, for ordering a list of failures: the worst first.

Owns the ranking of violation labels. A report of many failures (`check_scheduler`) shows first what
costs a user most if it ships: damage to the world that survives the turn, then what the model is told
that is false, then results handed back wrong, then turns that never end or leave work behind, then
limits overrun, then a scheduler that broke its contract (its runs say little else). It never decides
whether a run violates anything (the oracles do) and never changes an exit code (`verdict.exit_code`).
"""

from __future__ import annotations

#: Groups of labels, worst first; a label's rank is its group's index.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the world is damaged", (
        "lost-update", "cross-agent-lost-update", "ghost-effect", "duplicate-effect", "unapproved-effect",
        "rollback-mismatch", "torn-snapshot", "reordered-effect", "divergent-world")),
    ("the model is told something false", (
        "torn-read", "stale-read", "cross-agent-stale-read", "future-read", "missing-input", "divergent-result",
        "fabricated-result", "misreported-outcome", "hint-violated")),
    ("results are handed back wrong", (
        "mispaired-result", "missing-result", "duplicate-result", "orphan-result", "out-of-order",
        "tool-disabled-silently")),
    ("the turn never ends or leaves work behind", (
        "hang", "orphaned-call", "start-after-interrupt", "grace-exceeded", "dropped-call", "order-dependent")),
    ("the event loop is frozen", ("loop-blocked",)),
    ("a limit is overrun", ("exclusivity", "cap-exceeded", "round-limit-exceeded", "retry-limit-exceeded")),
    ("the scheduler broke its contract", ("scheduler-error", "contract-error", "loop-error")),
    ("a tool's own code failed (the run's input, not the scheduler)", ("tool-error",)),
)

_RANK = {label: rank for rank, (_, labels) in enumerate(GROUPS) for label in labels}


def rank(label: str) -> int:
    """0 for the worst labels; a label no group names (a new one) comes after every group."""
    return _RANK.get(label, len(GROUPS))


def group(label: str) -> str:
    """What a label's group means, in words."""
    index = rank(label)
    return GROUPS[index][0] if index < len(GROUPS) else "other"
