"""The world diff against serial: files with a unified diff, ledgers, shell state; and when the
world is identical but a call observed something else (a torn or stale read), it says so and shows
the two observations side by side."""

from __future__ import annotations

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.report.world_diff import report, side_by_side
from harness.run import RunResult


def against_serial(name: str, scheduler: str = "parallel", seed: int = 1) -> str:
    result = run(find_scenario(name), get_scheduler(scheduler), seed)
    reference: RunResult = run(find_scenario(name), get_scheduler("serial"), seed)
    return report(reference, result, check(result))


def test_a_torn_read_leaves_the_world_identical_but_not_the_observation() -> None:
    text = against_serial("edit-then-test")
    lines = text.splitlines()
    assert lines[0] == "parallel against serial (same scenario, seed 1)"
    assert ("The final world is identical to serial's, but an observation differs: a call saw something serial "
            "would not have shown it.") in " ".join(text.split())
    assert ("run-tests (torn-read): run-tests read /repo/src/app.py at 210 ms, after write-fix truncated it (0 ms)"
            in " ".join(text.split()))
    assert max(len(line) for line in lines) <= 100  # the words wrap; only the side-by-side table is wide
    header = next(i for i, line in enumerate(lines) if line.startswith("  serial (model order) "))
    assert lines[header].split() == ["serial", "(model", "order)", "parallel"]
    table = lines[header:]
    assert '    "failures": [],                            |   "failures": [' in table
    assert any(line.strip().startswith('>   "passed": false,') for line in table)


def test_files_get_a_unified_diff() -> None:
    text = against_serial("config-clobber", seed=3)
    assert "The final world differs from serial's:" in text
    assert "~ file /repo/config.yaml changed" in text
    for line in ("--- serial:/repo/config.yaml", "+++ this run:/repo/config.yaml", "-  retries: 5", "+  retries: 3"):
        assert f"    {line}\n" in text, line


def test_ledgers_and_misplaced_files() -> None:
    risky = against_serial("risky-writes")
    assert "~ ledger operations: 2 entries under serial, 2 entries here" in risky
    assert "    same entries in another order: serial restart, rollback; here rollback, restart" in risky
    shell = against_serial("shared-shell-cwd")
    assert "- file /repo/src/status.txt absent here (serial leaves it with 5 chars)" in shell
    assert "+ file /repo/status.txt created (5 chars; serial does not create it)" in shell
    assert "status (stale-read): status read the shell's working directory at 300 ms" in shell


def test_nothing_differs() -> None:
    text = against_serial("incident-triage")
    assert " ".join(text.split("\n\n", 1)[1].split()) == (
        "The final world is identical to serial's, and every call observed what it observes under serial.")


def test_side_by_side_aligns_and_marks() -> None:
    assert side_by_side({"a": 1, "b": 2}, {"a": 1, "c": 3}, "left", "right", width=12) == [
        "  left           right",
        "  ------------   ------------",
        "  {              {",
        '   "a": 1,        "a": 1,',
        '   "b": 2      |  "c": 3',
        "  }              }",
    ]
