"""Exactly-once: an external effect lands at most once per call, retries included.

Owns the label `duplicate-effect` for ledgers (tickets, messages, payments). It reads only the final
world's ledgers, which record the call behind every entry; an entry deduplicated by an idempotency
key is never added twice, so a retry that reuses its key passes.
"""

from __future__ import annotations

from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult

NAME = "exactly-once"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    violations = []
    for ledger, entries in result.final.ledgers:
        initial = {e.entry_id for e in result.initial.ledger(ledger)}
        per_call: dict[str, list[str]] = {}
        for entry in entries:
            if entry.entry_id not in initial:
                per_call.setdefault(entry.call_id, []).append(entry.entry_id)
        for call, ids in per_call.items():
            if len(ids) > 1:
                violations.append(Violation(
                    "duplicate-effect", f"{call} created {len(ids)} entries in ledger {ledger}: {', '.join(ids)}",
                    {"ledger": ledger, "call": call, "entries": ids}))
    return Verdict.of(NAME, violations) if violations else _PASSED
