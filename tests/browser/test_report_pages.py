"""The report pages in a real headless browser (Debian's `chromium`, driven by playwright): every
image loads, nothing logs an error, and the compare page's unsafe row is drawn hatched. Skipped
when playwright or a Chromium is missing; `nox -s browser` runs it and keeps the screenshots under
reports/browser/ (or where HARNESS_SCREENSHOTS says)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium, or set HARNESS_CHROMIUM)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


def screenshots(tmp_path: Path) -> Path:
    keep = os.environ.get("HARNESS_SCREENSHOTS")
    folder = Path(keep) if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def render(browser: Any, page_path: Path, shot: Path) -> tuple[Any, list[str]]:
    """Open a page; returns it and every error it logged (console errors, page errors, failed loads)."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: errors.append(f"failed to load {request.url}"))
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    images = page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    assert images, "the page shows no image"
    broken = [src for src, complete, width in images if not complete or width == 0]
    assert not broken, f"images that did not load: {broken}"
    page.screenshot(path=str(shot), full_page=True)
    return page, errors


def test_compare_page(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "compare"
    ran = CliRunner().invoke(main, ["compare", "config-clobber", "--schedulers", "serial,parallel,resource_keys",
                                    "--runs", "6", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    page, errors = render(browser, out / "index.html", screenshots(tmp_path) / "compare-config-clobber.png")
    assert errors == []
    unsafe = page.locator('table.verdicts tr[data-policy="parallel"]')
    assert "fast but wrong: 100% of runs violate" in unsafe.inner_text()
    background = unsafe.locator("td").first.evaluate("cell => getComputedStyle(cell).backgroundImage")
    assert "repeating-linear-gradient" in background  # drawn hatched, not just classed
    best = page.locator('table.verdicts tr.best td.speedup').first
    assert best.evaluate("cell => getComputedStyle(cell).fontWeight") in ("700", "bold")
    page.close()


def test_run_page_of_edit_then_test(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    ran = CliRunner().invoke(main, ["run", "edit-then-test", "--scheduler", "parallel", "--out", str(out)])
    assert ran.exit_code == 1, ran.output
    page, errors = render(browser, out / "index.html", screenshots(tmp_path) / "run-edit-then-test.png")
    assert errors == []
    assert "the tests ran against an empty file" in page.locator("ul.why").inner_text()
    assert "an observation differs" in page.locator("pre").inner_text()
    page.close()
