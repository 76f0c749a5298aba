"""Sweeps: identical on one process and two; an interrupted sweep resumes to the same table."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.sweep import grid, load_finished, sweep, to_frame

CELLS = grid(["config-clobber", "incident-triage"], ["serial", "parallel"], range(1, 41))


def test_two_processes_give_the_same_rows_as_one() -> None:
    assert sweep(CELLS, processes=2) == sweep(CELLS, processes=1)


def test_interrupted_sweep_resumes_to_the_same_table(tmp_path: Path) -> None:
    full = sweep(CELLS)
    out = tmp_path / "sweep.jsonl"
    half = sweep(CELLS[: len(CELLS) // 2], out=out)
    assert len(load_finished(out)) == len(half)
    with out.open("a") as handle:  # the process died half way through writing a row
        handle.write('{"scenario": "config-clobber", "sched')
    seen: list[tuple[int, int]] = []
    resumed = sweep(CELLS, out=out, on_progress=lambda done, total: seen.append((done, total)))
    assert resumed == full
    assert seen[0] == (len(CELLS) // 2, len(CELLS))  # the finished half was not run again
    assert len(load_finished(out)) == len(CELLS)
    assert to_frame(resumed).equals(to_frame(full))
    # The torn row was cut, not closed with a newline: the file is one JSON row per line again.
    lines = out.read_text().splitlines()
    assert len(lines) == len(CELLS) and all(isinstance(json.loads(line), dict) for line in lines)


def test_sweep_command(tmp_path: Path) -> None:
    out, table = tmp_path / "cells.jsonl", tmp_path / "cells.csv"
    args = ["sweep", "--scenarios", "config-clobber", "--schedulers", "serial,parallel", "--runs", "5",
            "--out", str(out), "--csv", str(table)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "config-clobber" in result.stdout and len(out.read_text().splitlines()) == 10
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(not r["passed"] for r in rows if r["scheduler"] == "parallel") == 5
    assert table.read_text().startswith("scenario,scheduler,seed,makespan_ms")
