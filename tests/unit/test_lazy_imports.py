"""`import harness` and `harness --help` load neither pandas nor matplotlib."""

import subprocess
import sys

CHECK = """
import sys
{setup}
heavy = sorted(m for m in ("pandas", "matplotlib", "numpy") if m in sys.modules)
print(",".join(heavy) or "none")
"""


def _loaded(setup: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHECK.format(setup=setup)], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip().splitlines()[-1]


def test_import_harness_is_light() -> None:
    assert _loaded("import harness") == "none"


def test_cli_help_is_light() -> None:
    setup = "from harness.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    assert _loaded(setup) == "none"
