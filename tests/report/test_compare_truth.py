"""Compare tells the truth at a glance: one verdict table at the top of index.html, unsafe policies
marked ("fast but wrong"), the best speedup picked among safe policies only, and the data behind
the plots saying which policies are unsafe and which ECDF curves coincide."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.report.compare import identical_series, verdict_table


@pytest.fixture(scope="module")
def clobber(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clobber")
    ran = CliRunner().invoke(main, ["compare", "config-clobber", "--schedulers", "serial,parallel,resource_keys",
                                    "--runs", "8", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    return out


def rows_of(page: str) -> dict[str, tuple[str, list[str]]]:
    """Per policy: the row's class and its cells' text, from the verdict table."""
    table = page[page.index('<table class="verdicts"'):]
    table = table[:table.index("</table>")]
    rows = {}
    for match in re.finditer(r'<tr class="([^"]*)"\s+data-policy="([^"]+)">(.*?)</tr>', table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", match[3], re.S)]
        rows[match[2]] = (match[1], cells)
    return rows


def test_the_verdict_table_comes_first_and_marks_the_unsafe_policy(clobber: Path) -> None:
    page = (clobber / "index.html").read_text()
    assert page.index('<table class="verdicts"') < page.index("<h2>")
    rows = rows_of(page)
    assert list(rows) == ["serial", "parallel", "resource_keys"]
    css, cells = rows["parallel"]
    assert css.split() == ["unsafe"]
    assert cells[-2:] == ["100%", "fast but wrong: 100% of runs violate (lost-update)"]
    assert float(cells[3]) > 1.0  # it is faster, and still not the best
    for safe in ("serial", "resource_keys"):
        css, cells = rows[safe]
        assert css.split() == ["safe", "best"] and cells[-2:] == ["0%", "safe and fastest: no run violates"]
    assert "tr.unsafe td" in page and "tr.best td.speedup" in page  # drawn red and hatched; best highlighted


def test_plot_data_says_which_policies_are_unsafe_and_which_curves_coincide(clobber: Path) -> None:
    data = json.loads((clobber / "plot_data.json").read_text())
    assert data["violation_rate"]["config-clobber"] == {"serial": 0.0, "parallel": 1.0, "resource_keys": 0.0}
    assert data["identical"]["config-clobber"] == [["serial", "resource_keys"]]
    assert data["ecdf"]["config-clobber"]["serial"] == data["ecdf"]["config-clobber"]["resource_keys"]


def test_best_speedup_only_among_safe_policies() -> None:
    def stats(speedup: float | None, passed: int, violations: dict[str, int] | None = None) -> dict[str, object]:
        return {"runs": 1000, "passed_runs": passed, "violation_rate": 1 - passed / 1000, "p50_ms": 1.0,
                "p95_ms": 2.0, "speedup_vs_serial": speedup, "violations": violations or {}}

    summary = {"scenarios": {"s": {"serial": stats(1.0, 1000), "fast": stats(3.0, 998, {"torn-read": 2}),
                                   "ok": stats(2.0, 1000), "slow": stats(0.5, 0, {"hang": 1000})}}}
    table = {r["scheduler"]: r for r in verdict_table(summary, ["serial", "fast", "ok", "slow"])}
    assert [name for name, r in table.items() if r["best"]] == ["ok"]
    assert table["fast"]["verdict"] == "fast but wrong: 0.2% of runs violate (torn-read)"
    assert table["fast"]["violations_pct"] == "0.2%"  # never rounded to 0%
    assert table["slow"]["verdict"] == "wrong: 100% of runs violate (hang)"
    assert table["ok"]["verdict"] == "safe and fastest: no run violates"
    assert table["serial"]["verdict"] == "safe: no run violates"


def test_identical_series() -> None:
    assert identical_series({"a": [1, 2], "b": [1, 3], "c": [1, 2], "d": [1, 3], "e": [5]}) == [["a", "c"], ["b", "d"]]
