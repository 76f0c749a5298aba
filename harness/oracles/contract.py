"""Contract: the scheduler itself behaved like a scheduler — it did not raise, did not yield or
return garbage. (Hangs are the liveness oracle's.)

Owns the labels `scheduler-error` and `contract-error`. It only reads the run's status.
"""

from __future__ import annotations

from harness.oracles.verdict import Kind, Verdict, Violation, passing
from harness.run import RunResult, RunStatus

NAME = "contract"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    if result.status in (RunStatus.SCHEDULER_ERROR, RunStatus.CONTRACT_ERROR):
        failed = next((b for b in result.batches if b.status is result.status), None)
        return Verdict.of(NAME, [Violation(
            result.status.value, result.error or result.status.value,
            {"batch": failed.index if failed else None, "error": result.error}, Kind.CONTRACT)])
    return _PASSED
