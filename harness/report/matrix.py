"""The scenario × scheduler matrix: for each cell, the verdict (pass or the violation labels) and the
makespan of one seeded run.

Owns computing the matrix and rendering it as terminal tables (split by scheduler so each fits the
width), Markdown or JSON; the README's policy table is its Markdown output (`harness matrix
--markdown`). It never interprets a label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.oracles import check
from harness.policies import get_scheduler
from harness.run import run
from harness.scenario import find_scenario
from harness.scenario.trust import TrustLike

if TYPE_CHECKING:
    from rich.table import Table


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


def compute(scenarios: Sequence[str], schedulers: Sequence[str], seed: int, *, trust: TrustLike | None = None
            ) -> list[Cell]:
    """Every scenario under every scheduler once; scenario files import and read only what `trust`
    allows (`harness.scenario.trust`)."""
    cells = []
    for scenario_name in scenarios:
        scenario = find_scenario(scenario_name, trust=trust)
        for scheduler_name in schedulers:
            result = run(scenario, get_scheduler(scheduler_name), seed)
            # Every label, not each oracle's first: a lost update behind a misread is named too.
            labels = tuple(dict.fromkeys(x.label for v in check(result) for x in v.violations))
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


#: A cell wider than this wraps (several labels); the column stays this wide.
MAX_CELL = 22


def to_tables(cells: Sequence[Cell], scenarios: Sequence[str], schedulers: Sequence[str], seed: int,
              width: int) -> list[Table]:
    """Rich tables of the matrix, each at most `width` columns wide: as many schedulers per table as
    fit beside the scenario column (at least one), violations in bold red."""
    from rich.table import Table
    from rich.text import Text

    by_key = {(c.scenario, c.scheduler): c for c in cells}
    first = max([len(f"scenario (seed {seed})"), *(len(s) for s in scenarios)])

    def column(scheduler: str) -> int:
        longest = max([len(scheduler), *(len(by_key[(s, scheduler)].text()) for s in scenarios)])
        return min(longest, max(MAX_CELL, len(scheduler)))

    groups: list[list[str]] = [[]]
    used = first + 4  # borders and padding of the scenario column
    for scheduler in schedulers:
        needed = column(scheduler) + 3
        if groups[-1] and used + needed > width:
            groups.append([])
            used = first + 4
        groups[-1].append(scheduler)
        used += needed
    tables = []
    for number, group in enumerate(groups, 1):
        part = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
        table = Table(title=f"verdict and makespan (virtual ms) per cell{part}", title_justify="left")
        table.add_column(Text(f"scenario (seed {seed})"), no_wrap=True, min_width=first)
        for scheduler in group:
            table.add_column(Text(scheduler), max_width=column(scheduler), no_wrap=False)
        for scenario in scenarios:
            row = [by_key[(scenario, s)] for s in group]
            # Text, never markup: a scenario name is user data.
            table.add_row(Text(scenario), *(Text(c.text(), style="" if c.passed else "bold red") for c in row))
        tables.append(table)
    return tables
