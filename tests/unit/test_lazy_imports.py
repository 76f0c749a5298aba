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


def test_import_harness_loads_no_simulation_machinery() -> None:
    """`import harness` is a few milliseconds: SimPy, pyfakefs and asyncio come with the first use."""
    setup = ("import harness\n"
             "left = sorted(m for m in ('simpy', 'pyfakefs', 'asyncio', 'harness.run') if m in sys.modules)\n"
             "assert not left, left")
    _loaded(setup)


def test_lazy_names_are_what_the_eager_imports_made_them() -> None:
    setup = """
import harness, harness.run, harness.scheduling, harness.policies, harness.bridges
import harness.run as module_or_function
from harness import run, RunResult, get_scheduler, scenario_names, __version__
from harness.run import run as the_run
assert run is the_run and harness.run is the_run and module_or_function is the_run  # the function, as before
assert RunResult is sys.modules["harness.run"].RunResult
assert set(harness.__all__) <= set(dir(harness))
from harness.bridges import from_asyncio, from_threads
from harness.policies import Serial, BUILTIN_SCHEDULERS
assert harness.policies.registry.BUILTIN_SCHEDULERS is BUILTIN_SCHEDULERS
for name in harness.__all__:
    getattr(harness, name)
for name in (*harness.scheduling.__all__, *harness.policies.__all__, *harness.bridges.__all__):
    assert any(hasattr(p, name) for p in (harness.scheduling, harness.policies, harness.bridges))
try:
    harness.no_such_name
except AttributeError:
    pass
else:
    raise AssertionError("harness.no_such_name")
"""
    _loaded(setup)


def test_importing_the_check_loads_no_simulation_machinery() -> None:
    """A test module's `from harness.testing import check_scheduler` costs a few times `python -c pass`:
    the search and all it needs load on the first check (`dataclasses`, with the `inspect` it imports,
    alone was half of what remained)."""
    setup = ("from harness.testing import DEFAULT_SCENARIOS, SchedulerCheckFailed, check_scheduler, default_scenarios\n"
             "left = sorted(m for m in ('simpy', 'pyfakefs', 'hypothesis', 'asyncio', 'harness.run',\n"
             "                          'harness.testing.checking', 'dataclasses', 'inspect') if m in sys.modules)\n"
             "assert not left, left")
    _loaded(setup)


def test_the_checks_lazy_names_are_its_modules_names() -> None:
    setup = """
import harness.testing as testing
from harness.testing import LOOP_SCENARIOS, CheckReport, Failure, GENERATED_PATHS, assert_fixed, reproducers
from harness.testing.checking import LOOP_SCENARIOS as the_loop_scenarios
from harness.testing.coverage import CheckReport as the_report
from harness.oracles.loop_policy import CONFORMANCE_SCENARIOS
from harness.testing import generated
assert LOOP_SCENARIOS is the_loop_scenarios is CONFORMANCE_SCENARIOS and CheckReport is the_report
assert generated.NAME == testing.GENERATED == testing.default_scenarios()[-1]
for name in testing.__all__:
    getattr(testing, name)
"""
    _loaded(setup)
