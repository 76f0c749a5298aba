"""The run report's growing tables print exactly what rich's own table printed, in time linear in
their rows: every built-in scenario's timeline and results, at several widths, and tables made to
wrap, to overflow and to hold what rich cannot be mimicked on."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pytest
from rich.console import Console

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.report import columns
from harness.report.columns import Justify, print_columns
from harness.report.run_text import RESULT_COLUMNS, TIMELINE_COLUMNS, result_rows, timeline_rows
from tests.helpers import scenario

WIDTHS = (40, 80, 120, 200)


def _printed(width: int, table: Sequence[tuple[str, Justify]], rows: Sequence[Sequence[str]], *,
             by_rich: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False, markup=False)
    if by_rich:
        columns._with_rich(console, "title", table, rows)
    else:
        print_columns(console, "title", table, rows)
    # What the CLI's console writes: rich pads lines with spaces, and the report's stream drops them.
    return "\n".join(line.rstrip(" ") for line in out.getvalue().splitlines())


def _same_as_rich(table: Sequence[tuple[str, Justify]], rows: Sequence[Sequence[str]],
                  widths: Sequence[int] = WIDTHS) -> None:
    for width in widths:
        assert _printed(width, table, rows, by_rich=False) == _printed(width, table, rows, by_rich=True), width


@pytest.mark.parametrize("name", scenario_names())
def test_every_built_in_runs_tables_print_as_rich_printed_them(name: str) -> None:
    for policy in ("serial", "parallel"):
        result = run(find_scenario(name), get_scheduler(policy), 2)
        _same_as_rich(TIMELINE_COLUMNS, timeline_rows(result))
        _same_as_rich(RESULT_COLUMNS, result_rows(result))


TWO: tuple[tuple[str, Justify], ...] = (("t ms", "right"), ("event", "left"))


def test_a_long_last_cell_wraps_as_rich_wraps_it() -> None:
    words = " ".join(f"q{i:04d}," for i in range(300))
    rows = [("0", "start"), ("12", f"results reported: {words}"), ("1300", "end ok"),
            ("7", "a b  c   d    " * 20), ("9", "x" * 30 + " " + "y" * 12)]
    _same_as_rich(TWO, rows, widths=(36, 41, 57, 80, 120))


def test_at_every_width_around_the_point_where_rich_narrows_another_column_too() -> None:
    three: tuple[tuple[str, Justify], ...] = (("t ms", "right"), ("call", "left"), ("event", "left"))
    rows = [("0", "c" * 20, "ee " * 30), ("1300", "call", "end ok")]
    _same_as_rich(three, rows, widths=range(30, 100))


def test_what_rich_lays_out_otherwise_is_handed_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[int] = []
    real = columns._with_rich
    monkeypatch.setattr(columns, "_with_rich", lambda *a: (handed.append(1), real(*a))[1])
    three: tuple[tuple[str, Justify], ...] = (("t ms", "right"), ("call", "left"), ("event", "left"))
    cases: list[tuple[tuple[tuple[str, Justify], ...], list[tuple[str, ...]]]] = [
        (three, [("0", "c" * 50, "e" * 50)]),  # a middle column wider than what is left for the last
        (TWO, [("0", "line one\nline two")]),  # a line break in a cell
        (TWO, [("0", "a\ttab")]),
        (TWO, [("0", "w" * 90)]),  # one word longer than the room: rich cuts it with an ellipsis
    ]
    for table, rows in cases:
        before = len(handed)
        _same_as_rich(table, rows, widths=(60,))
        assert len(handed) > before, rows


def test_cells_are_literal_text_on_both_paths() -> None:
    rows = [("0", "[bold]not markup[/bold] :thumbs_up: é 中文 wide")]
    _same_as_rich(TWO, rows, widths=(30, 80))
    assert ":thumbs_up:" in _printed(80, TWO, rows, by_rich=False) and "[bold]" in _printed(80, TWO, rows,
                                                                                             by_rich=False)


def test_a_thousand_call_run_is_laid_out_without_rich_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1,000-call report (its one-line list of every reported id included) never takes rich's
    per-cell path, which took seconds where the run took a fraction of one."""
    monkeypatch.setattr(columns, "_with_rich", lambda *a: pytest.fail("laid out by rich"))
    calls = [(f"q{i:04d}", "web_search", {"query": f"q {i}"}) for i in range(1000)]
    result = run(scenario(calls), get_scheduler("parallel"), 3)
    rows = timeline_rows(result)
    assert any(row[3].startswith("results reported: q0000") for row in rows)
    for width in (80, 120):
        out = io.StringIO()
        print_columns(Console(file=out, width=width, color_system=None), "timeline", TIMELINE_COLUMNS, rows)
        assert all(len(line.rstrip(" ")) <= width for line in out.getvalue().splitlines())
