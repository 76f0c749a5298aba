"""The scenario × scheduler matrix: for each cell, the verdict (pass or the violation labels) and the
makespan of one seeded run.

Owns computing the matrix and rendering it as Markdown, text or JSON; the README's policy table is
its Markdown output (`harness matrix --format markdown`). It never interprets a label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.oracles import check
from harness.run import run
from harness.scenario import find_scenario
from harness.schedulers import get_scheduler


@dataclass(frozen=True, slots=True)
class Cell:
    scenario: str
    scheduler: str
    makespan_ms: int
    labels: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.labels

    def text(self) -> str:
        verdict = "ok" if self.passed else ", ".join(self.labels)
        return f"{verdict} {self.makespan_ms}"


def compute(scenarios: Sequence[str], schedulers: Sequence[str], seed: int) -> list[Cell]:
    cells = []
    for scenario_name in scenarios:
        scenario = find_scenario(scenario_name)
        for scheduler_name in schedulers:
            result = run(scenario, get_scheduler(scheduler_name), seed)
            labels = tuple(dict.fromkeys(v.label for v in check(result) if not v.ok and v.label))
            cells.append(Cell(scenario_name, scheduler_name, result.makespan_ms, labels))
    return cells


def to_markdown(cells: Sequence[Cell], scenarios: Sequence[str], schedulers: Sequence[str], seed: int) -> str:
    by_key = {(c.scenario, c.scheduler): c for c in cells}
    lines = [f"| scenario (seed {seed}) | " + " | ".join(f"`{s}`" for s in schedulers) + " |",
             "|---|" + "---|" * len(schedulers)]
    for scenario in scenarios:
        row = [by_key[(scenario, s)] for s in schedulers]
        shown = [c.text() if c.passed else f"**{c.text()}**" for c in row]
        lines.append(f"| `{scenario}` | " + " | ".join(shown) + " |")
    return "\n".join(lines) + "\n"


def to_json(cells: Sequence[Cell], seed: int) -> dict[str, Any]:
    return {"seed": seed, "cells": [{"scenario": c.scenario, "scheduler": c.scheduler, "makespan_ms": c.makespan_ms,
                                     "passed": c.passed, "labels": list(c.labels)} for c in cells]}
