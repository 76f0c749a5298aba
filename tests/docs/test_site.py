"""The docs site builds in strict mode with no warning: a broken link, a missing page or API reference
fails it. Needs the `docs` extra (CI installs it: .ci/run); skipped without it. `nox -s docs` builds the
same site into site/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs site needs pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings_handlers.python", reason="the docs site needs pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_site_builds_strict_with_no_warning(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "concepts" / "index.html").exists() or (tmp_path / "site" / "concepts.html").exists()
