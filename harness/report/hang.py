"""A hung run's diagnosis in words: what each unfinished call waited on when the run gave up.

Owns the text every report prints for a hang (`harness run`, `replay` and `explore` text, a failing
`check_scheduler`, the run page) and the JSON of it (run JSON's `batches[i].waits`, the liveness
oracle's `hang` witness). The diagnosis itself is read from the live simulation by
`harness.schedulers.waits` at the hang point and kept on the hung `BatchRun`; this module only lays
it out. It never re-runs anything.
"""

from __future__ import annotations

from typing import Any

from harness.run import BatchRun, RunResult

#: A bridged task's or thread's stack is shown to this many frames (the innermost ones).
STACK_FRAMES = 6


def hung_batches(result: RunResult) -> list[BatchRun]:
    return [b for b in result.batches if b.waits is not None]


def hang_lines(result: RunResult) -> list[str]:
    """For each hung batch: a title, one line per waiting call (task or thread: with its stack), and
    the lock cycle when there is one."""
    lines: list[str] = []
    for batch in hung_batches(result):
        diagnosis = batch.waits
        assert diagnosis is not None
        lines.append(f"hang in batch {batch.index} (stopped at {batch.end_ms} ms, {batch.stop.value}): "
                     "what each unfinished call waits on")
        for wait in diagnosis.waits:
            lines.append(f"  {wait.line()}")
            if wait.state in ("task", "thread"):
                lines.extend(f"      {frame}" for frame in wait.stack[-STACK_FRAMES:])
        if diagnosis.cycle:
            lines.append("  deadlock: " + "; ".join(diagnosis.cycle))
    return lines


def waits_json(batch: BatchRun) -> dict[str, Any] | None:
    return batch.waits.to_json() if batch.waits is not None else None
