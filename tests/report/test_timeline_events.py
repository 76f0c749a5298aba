"""The text timeline has words for every event the simulation records but its bookkeeping: the user
interrupt, an injected crash, a skipped call and the rest show where they happened."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.report.run_text import BOOKKEEPING, describe_event, render_run

HARNESS = Path(__file__).resolve().parents[2] / "harness"

#: One example of each event kind's fields, as the kernel records them.
EXAMPLES = {
    "interrupt": {"index": 0, "grace_ms": 3000},
    "crash": {},
    "skip": {"call": "c1", "reason": "interrupted before it started"},
    "faults": {"call": "c1", "attempt": 1, "kinds": ["duplicate_delivery", "torn_write"]},
    "delegate": {"call": "c1", "attempt": 1, "agent": "researcher"},
    "lock": {"call": "c1", "attempt": 1, "files": ["/repo/a.txt"]},
    "progress": {"call": "c1", "attempt": 1, "server": "reports", "progress": 3},
    "background": {"call": "c1", "attempt": 1, "vd": "0123456789abcdef"},
}


def _recorded_kinds() -> set[str]:
    """Every event kind a `record("...")` in the harness's source makes."""
    return {kind for path in HARNESS.rglob("*.py") for kind in re.findall(r'\.record\("([a-z_]+)"', path.read_text())}


def test_every_recorded_event_is_described_or_bookkeeping() -> None:
    kinds = _recorded_kinds()
    assert {"interrupt", "crash", "skip"} <= kinds
    for kind in sorted(kinds - BOOKKEEPING):
        fields = EXAMPLES.get(kind)
        if fields is None:
            continue  # described elsewhere, with fields of its own: checked by the runs below
        line = describe_event({"t": 0, "seq": 0, "ev": kind, **fields})
        assert line, kind
    assert not (kinds - BOOKKEEPING) - set(EXAMPLES) - {
        "abandon", "agent", "approval", "approval_requested", "batch", "checkpoint", "checkpoint_begin", "end",
        "input", "note", "report", "rollback", "scheduler_failed", "snapshot_read",
    }, "a new event kind needs words in describe_event"


def test_the_user_interrupt_shows_in_the_timeline_where_it_happened() -> None:
    result = run(find_scenario("interrupt-midbatch"), get_scheduler("parallel"), 1)
    console = Console(record=True, width=160, color_system=None)
    render_run(result, console, version="test", verdicts=check(result))
    timeline = console.export_text().split("results (as reported)")[0]
    lines = [line.rstrip() for line in timeline.splitlines()]
    interrupt = next(i for i, line in enumerate(lines) if "the user interrupts (Ctrl-C)" in line)
    assert lines[interrupt].lstrip().startswith("1500 ") and "1000 ms grace" in lines[interrupt]
    # In time order: after what ended before it, before what ended after it.
    assert any("end ok" in line and line.lstrip().startswith("1200") for line in lines[:interrupt])
    assert any("end ok" in line and line.lstrip().startswith("4000") for line in lines[interrupt:])
