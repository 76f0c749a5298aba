"""The behaviour record behind `test_recorded_fingerprints.py`: what every built-in scenario does
under every built-in scheduler, as fingerprints and verdict labels, kept in `fingerprints.json`.

Owns which runs are recorded, how one run is summarised, and the `--regen` command. It never
judges a difference (the test does) and never runs at import time.

Regenerate (after a change that is *meant* to alter behaviour, or to record new scenarios)::

    python -m tests.determinism.recorded --regen

`--only NAME [NAME ...]` re-records just those scenarios and keeps the others as they were.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from random import Random
from typing import Any

from harness import find_scenario, get_scheduler, run, scenario_names, scheduler_names
from harness.explore.pct import PCT
from harness.oracles import check
from harness.run import RunResult
from harness.scenario.library import builtin_dir
from harness.scenario.spec import Scenario
from harness.sim.arbiter import TIME, Tape

RECORD = Path(__file__).resolve().parent / "fingerprints.json"
REGEN = "python -m tests.determinism.recorded --regen"
SEEDS = (1, 7, 2026)
#: Order-first and jittered runs go through the arbiter and the jitter streams, which the plain runs
#: never touch; two contrasting schedulers are enough to pin those paths down.
ORDERED_SCHEDULERS = ("parallel", "resource_keys")
#: Fingerprints are SHA-256; 16 hex digits (64 bits) are plenty to notice a change and keep the file small.
FP_CHARS = 16

Summary = list[Any]  # [fingerprint prefix, status, makespan_ms, ["oracle:label", ...]]


def summarise(result: RunResult) -> Summary:
    """What must not change silently: the fingerprint (trace + final world), the status, the makespan
    and every violation label of every single-run oracle, in report order."""
    labels = [f"{verdict.oracle}:{violation.label}" for verdict in check(result) for violation in verdict.violations]
    return [result.fingerprint[:FP_CHARS], result.status.value, result.makespan_ms, labels]


def scenario_file_sha(name: str) -> str:
    return hashlib.sha256((builtin_dir() / f"{name}.toml").read_bytes()).hexdigest()[:FP_CHARS]


def plain_keys(schedulers: list[str]) -> list[tuple[str, int]]:
    return [(scheduler, seed) for scheduler in schedulers for seed in SEEDS]


def run_plain(scenario: Scenario, scheduler: str, seed: int) -> Summary:
    return summarise(run(scenario, get_scheduler(scheduler), seed))


ORDERED_KINDS = ("tape", "pct", "jitter")


def run_ordered(scenario: Scenario, scheduler: str, kind: str) -> Summary:
    """One run off the random-latency path: model-order order-first (`tape`), PCT at depth 2 over the
    calls and time (`pct`, the explorer's chooser), or latencies jittered (`jitter`)."""
    policy = get_scheduler(scheduler)
    if kind == "tape":
        return summarise(run(scenario, policy, 1, chooser=Tape()))
    if kind == "pct":
        first = run(scenario, policy, 7, chooser=Tape())
        entities = (*(c.id for c in first.scenario.calls), TIME)
        horizon = max(2 * len(first.tape or ()), 2)
        return summarise(run(scenario, get_scheduler(scheduler), 7,
                             chooser=PCT(Random(2026), entities, horizon, depth=2)))
    if kind == "jitter":
        return summarise(run(scenario, policy, 2026, jitter=0.5))
    raise ValueError(kind)


def record_scenario(name: str) -> dict[str, Any]:
    scenario = find_scenario(name)
    schedulers = scheduler_names()
    return {
        "file_sha": scenario_file_sha(name),
        "runs": {f"{s}/{seed}": run_plain(scenario, s, seed) for s, seed in plain_keys(schedulers)},
        "ordered": {f"{s}/{kind}": run_ordered(scenario, s, kind)
                    for s in ORDERED_SCHEDULERS for kind in ORDERED_KINDS},
    }


def load() -> dict[str, Any]:
    if not RECORD.is_file():
        return {"seeds": list(SEEDS), "scenarios": {}}
    data: dict[str, Any] = json.loads(RECORD.read_text())
    return data


def save(scenarios: dict[str, Any]) -> None:
    data = {
        "about": f"Recorded behaviour of every built-in scenario x scheduler; regenerate with `{REGEN}`.",
        "seeds": list(SEEDS),
        "ordered_schedulers": list(ORDERED_SCHEDULERS),
        "scenarios": {name: scenarios[name] for name in sorted(scenarios)},
    }
    RECORD.write_text(_one_run_per_line(data))


def _one_run_per_line(data: dict[str, Any]) -> str:
    """JSON with one run per line, so a regenerated file diffs run by run."""
    head = {k: v for k, v in data.items() if k != "scenarios"}
    lines = ["{", *(f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), ' "scenarios": {']
    names = list(data["scenarios"])
    for i, name in enumerate(names):
        entry = data["scenarios"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "file_sha": {json.dumps(entry["file_sha"])},')
        for j, section in enumerate(("runs", "ordered")):
            lines.append(f"   {json.dumps(section)}: {{")
            rows = list(entry[section].items())
            lines += [f"    {json.dumps(k)}: {json.dumps(v)}" + ("," if n < len(rows) - 1 else "")
                      for n, (k, v) in enumerate(rows)]
            lines.append("   }" + ("," if j == 0 else ""))
        lines.append("  }" + ("," if i < len(names) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record the behaviour the determinism guard compares against.")
    parser.add_argument("--regen", action="store_true", help="run everything and rewrite fingerprints.json")
    parser.add_argument("--only", nargs="+", metavar="SCENARIO", help="re-record only these scenarios")
    args = parser.parse_args(argv)
    if not args.regen:
        parser.print_help()
        return 2
    kept = load()["scenarios"] if args.only else {}
    names = args.only or scenario_names()
    for name in names:
        kept[name] = record_scenario(name)
        print(f"recorded {name}", file=sys.stderr)
    save(kept)
    print(f"wrote {RECORD} ({len(kept)} scenarios)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
