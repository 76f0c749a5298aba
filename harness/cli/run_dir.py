"""One run written in depth into the `--out` directory of `harness run` and `harness replay`.

Owns the files and their names: run.json, trace.jsonl, gantt.png and gantt.json, trace.perfetto.json,
world_diff.txt (against the serial reference run on the same seed) and index.html. It never decides
exit codes and writes nothing outside the directory it is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.atomic import make_dir, write_text
from harness.oracles.verdict import Verdict
from harness.policies import get_scheduler
from harness.run import RunResult, run


def write_run(out: Path, result: RunResult, document: dict[str, Any], verdicts: list[Verdict]) -> None:
    """One run in depth: JSON, trace, Gantt chart (and its data), Perfetto trace, the world diff
    against the serial reference on the same seed, and an index page."""
    import json

    from harness.report import gantt, html, perfetto, plots, world_diff
    from harness.report.hang import hang_lines
    from harness.report.run_json import dumps
    from harness.sim.trace import to_jsonl

    make_dir(out)  # every file is written whole or not at all (harness.atomic)
    write_text(out / "run.json", dumps(document) + "\n")
    write_text(out / "trace.jsonl", to_jsonl(result.trace))
    data = gantt.gantt_data(result, verdicts)
    write_text(out / "gantt.json", json.dumps(data, indent=1, sort_keys=True) + "\n")
    plots.draw_gantt(data, out / "gantt.png")
    write_text(out / "trace.perfetto.json", json.dumps(perfetto.chrome_trace(result, verdicts)) + "\n")
    reference = run(result.replayable, get_scheduler("serial"), result.seed, jitter=result.jitter)
    differences = world_diff.report(reference, result, verdicts)
    write_text(out / "world_diff.txt", differences)
    files = ["run.json", "trace.jsonl", "gantt.png", "gantt.json", "trace.perfetto.json", "world_diff.txt"]
    html.write_run(out / "index.html", document, differences, files, hang_lines(result))
