"""`--dask` without the `[dask]` extra: a usage error naming the extra, and no dask import otherwise."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from harness.cli import main


@pytest.mark.parametrize("command", [["sweep", "--scenarios", "config-clobber"], ["compare", "config-clobber"],
                                     ["explore", "config-clobber"]])
def test_dask_without_the_extra_is_a_usage_error_naming_it(monkeypatch: pytest.MonkeyPatch,
                                                           command: list[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    result = CliRunner().invoke(main, [*command, "--runs", "2", "--dask", "local"])
    assert result.exit_code == 2, result.output
    assert "harness[dask]" in result.output and "Traceback" not in result.output


def test_dask_is_imported_only_with_dask() -> None:
    code = ("import sys; from click.testing import CliRunner; from harness.cli import main; "
            "r = CliRunner().invoke(main, ['sweep', '--scenarios', 'config-clobber', '--runs', '2']); "
            "assert r.exit_code == 0, r.output; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed')))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "[]"
