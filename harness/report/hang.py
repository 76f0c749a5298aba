"""A hung run's diagnosis in words: what each unfinished call waited on when the run gave up.

Owns the text every report prints for a hang (`harness run`, `replay` and `explore` text, a failing
`check_scheduler`, the run page) and the JSON of it (run JSON's `batches[i].waits`, the liveness
oracle's `hang` witness). The diagnosis itself is read from the live simulation by
`harness.run.hang` at the hang point and kept on the hung `BatchRun`; this module only lays
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
    the lock cycle when there is one. A cycle across the batches of several agents is one deadlock:
    it is said once, after the last of them, naming the batches."""
    batches = hung_batches(result)
    sharing: dict[frozenset[str], list[BatchRun]] = {}  # a cycle (any rotation) -> the batches it was read from
    for batch in batches:
        if batch.waits is not None and batch.waits.cycle:
            sharing.setdefault(frozenset(batch.waits.cycle), []).append(batch)
    lines: list[str] = []
    for batch in batches:
        diagnosis = batch.waits
        assert diagnosis is not None
        lines.append(f"hang in batch {batch.index} (stopped at {batch.end_ms} ms, {batch.stop.value}): "
                     "what each unfinished call waits on")
        for wait in diagnosis.waits:
            lines.append(f"  {wait.line()}")
            if wait.state in ("task", "thread"):
                lines.extend(f"      {frame}" for frame in wait.stack[-STACK_FRAMES:])
        group = sharing.get(frozenset(diagnosis.cycle), []) if diagnosis.cycle else []
        if group and batch is group[-1]:
            first = group[0].waits
            assert first is not None
            indexes = [str(b.index) for b in group]
            across = f" across batches {', '.join(indexes[:-1])} and {indexes[-1]}" if len(group) > 1 else ""
            lines.append(f"  deadlock{across}: " + "; ".join(first.cycle))
    return lines


def waits_json(batch: BatchRun) -> dict[str, Any] | None:
    return batch.waits.to_json() if batch.waits is not None else None
