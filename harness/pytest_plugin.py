"""The pytest plugin (entry point `pytest11`): run `check_scheduler` from your tests with a seed and
a profile chosen on the command line, keep what fails, and get a one-command reproduce section.

Owns the options `--harness-seed=N|last|random`, `--harness-profile=quick|ci|deep` (`dev` is an
older name of `quick`), `--harness-report-dir=DIR` and `--harness-no-database`, the header line, the
`harness` fixture, the failure section and the example database's life cycle under pytest. As
pytest-randomly does, the seed is chosen once, in the controller: it defaults to 1 under the `ci`
profile (CI set) and to a fresh random seed under `quick`, is printed in the header, reaches every
pytest-xdist worker unchanged and is remembered in pytest's cache, so `--harness-seed=last` reruns
the same exploration (with nothing cached, `last` is a usage error). As Hypothesis does, a test that
fails with `SchedulerCheckFailed` leaves its verified reproducer in `.harness/examples/` in the
rootdir (every failure of the check); the next run of that test replays them first, before exploring;
once one passes it is kept as a regression test, replayed first on every run and reported again if
it fails again (`harness.testing.example_db`). It never runs anything by itself.

    def test_my_policy(harness):
        harness.check(MyPolicy())       # or harness.check("mypackage.policies:MyPolicy")
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.scheduling import Scheduler
from harness.testing.example_db import ExampleDatabase, HarnessDatabaseWarning, bound

if TYPE_CHECKING:
    from harness.testing import CheckReport

_CACHE_KEY = "harness/seed"
_WORKER_KEY = "harness_seed"


@dataclass(frozen=True)
class HarnessSettings:
    """The seed, profile and reproducer directory this pytest run gives `check_scheduler`."""

    seed: int
    profile: str
    report_dir: Path | None
    database: ExampleDatabase | None = None

    def __repr__(self) -> str:  # pytest prints the fixture's value above a failure: keep it one short line
        return f"HarnessSettings(seed={self.seed}, profile={self.profile!r})"

    def check(self, scheduler: Scheduler | str, **options: Any) -> CheckReport:
        """`check_scheduler(scheduler, ...)` with this run's seed, profile and report directory; its
        `CheckReport` when the scheduler passes."""
        __tracebackhide__ = True
        from harness.testing import check_scheduler

        options.setdefault("seed", self.seed)
        options.setdefault("profile", self.profile)
        options.setdefault("report_dir", self.report_dir)
        return check_scheduler(scheduler, **options)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "tool-call scheduler checks (harness)")
    group.addoption("--harness-seed", default=None,
                    help="seed for harness checks: an integer, 'last' (the previous run's) or 'random'")
    group.addoption("--harness-profile", default=None, choices=["quick", "dev", "ci", "deep"],
                    help="how hard harness checks look (default: ci when CI is set, else quick)")
    group.addoption("--harness-report-dir", default=None, help="where failing checks save reproducers")
    group.addoption("--harness-no-database", action="store_true", default=False,
                    help="neither replay nor keep failures in .harness/examples/ (the local example database)")
    group.addoption("--harness-coverage", action="store_true", default=False,
                    help="print what each harness check covered (scenarios, runs, calls started, oracles), "
                         "passed or failed, at the end of the run")


class _XdistHooks:
    """Registered only when pytest-xdist is: hands the controller's seed to each worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = _settings(self.config).seed


@pytest.hookimpl(trylast=True)  # after the cache provider's pytest_configure
def pytest_configure(config: pytest.Config) -> None:
    _settings(config)  # a bad --harness-seed is a usage error before anything is collected
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(config), "harness-xdist")


def _seed(config: pytest.Config, profile: str) -> int:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and _WORKER_KEY in workerinput:
        return int(workerinput[_WORKER_KEY])  # an xdist worker: the controller chose it
    wanted = config.getoption("harness_seed")
    cache = getattr(config, "cache", None)
    if wanted == "last":
        cached = cache.get(_CACHE_KEY, None) if cache is not None else None
        if isinstance(cached, bool) or not isinstance(cached, int):
            raise pytest.UsageError("--harness-seed=last: no previous harness seed is cached "
                                    "(run once without it, or pass --harness-seed=N)")
        return cached
    if wanted in (None, "random"):
        # Only the choice of seed is random; every run made from it is deterministic.
        return 1 if wanted is None and profile == "ci" else secrets.randbelow(2**31)
    try:
        return int(wanted)
    except ValueError:
        raise pytest.UsageError(f"--harness-seed must be an integer, 'last' or 'random', got {wanted!r}") from None


def _settings(config: pytest.Config) -> HarnessSettings:
    cached = getattr(config, "_harness_settings", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    profile = config.getoption("harness_profile") or ("ci" if os.environ.get("CI") else "quick")
    profile = "quick" if profile == "dev" else profile
    seed = _seed(config, profile)
    cache = getattr(config, "cache", None)
    if cache is not None and not hasattr(config, "workerinput"):
        cache.set(_CACHE_KEY, seed)
    directory = config.getoption("harness_report_dir")
    database = None
    if not config.getoption("harness_no_database"):
        try:
            database = ExampleDatabase.in_rootdir(config.rootpath)
        except ValueError as exc:
            config.issue_config_time_warning(HarnessDatabaseWarning(str(exc)), stacklevel=2)
    settings = HarnessSettings(seed, profile, Path(directory) if directory else None, database)
    config._harness_settings = settings  # type: ignore[attr-defined]
    return settings


def pytest_report_header(config: pytest.Config) -> str:
    settings = _settings(config)
    where = f", reproducers in {settings.report_dir}" if settings.report_dir else ""
    line = f"harness: seed {settings.seed}, profile {settings.profile}{where} (rerun with --harness-seed=last)"
    stored = settings.database.count() if settings.database is not None else 0
    fixed = settings.database.count(fixed=True) if settings.database is not None else 0
    if stored:
        # Counted before collection: each is replayed first by the test that stored it, if it runs.
        line += (f"; {stored} stored failure{'s' if stored != 1 else ''} in .harness/ "
                 "(each replayed first by its own test)")
    if fixed:
        line += f"; {fixed} fixed one{'s' if fixed != 1 else ''} kept as regression tests"
    return line


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> HarnessSettings:
    """Settings for `check_scheduler` from the command line; call `harness.check(scheduler)`."""
    return _settings(request.config)


#: What a test's checks covered, kept on the item between the call and its report.
_REPORTS = pytest.StashKey[list[Any]]()
#: The user property each test report carries its checks' coverage in (it crosses to the xdist
#: controller; a failure's message has it already, so it is not a section shown under the failure).
COVERAGE_PROPERTY = "harness coverage"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """While the test runs, `check_scheduler` replays the test's stored failures first, and the
    reports of its checks are kept for the test's report."""
    from harness.testing import collecting_reports

    with bound(_settings(item.config).database, item.nodeid), collecting_reports() as reports:
        item.stash[_REPORTS] = reports
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when != "call":
        return report
    from harness import __version__
    from harness.testing import SchedulerCheckFailed

    settings = _settings(item.config)
    failure = call.excinfo.value if call.excinfo is not None else None
    checks = item.stash.get(_REPORTS, [])
    if checks:
        report.user_properties.append((COVERAGE_PROPERTY, "\n".join(check.summary() for check in checks)))
    if isinstance(failure, SchedulerCheckFailed):
        if settings.database is not None:
            for example in failure.examples:
                settings.database.save(item.nodeid, example, version=__version__)
        report.sections.append(("harness reproduce", _rerun(item, settings, failure.seed, failure.profile)))
    elif report.passed and settings.database is not None:
        settings.database.retire(item.nodeid)  # its stored failures pass now: kept as regression tests
    return report


def _rerun(item: pytest.Item, settings: HarnessSettings, seed: int, profile: str) -> str:
    """The pytest command that reruns the failed test as it ran, from any directory: in the directory
    pytest was started in, with the PYTHONPATH it had (the user's package may be importable only so),
    as `python -m pytest` (which puts that directory on sys.path too), the test file by its absolute
    path; the seed and profile flags only when they are what the check ran with (a test that calls
    `check_scheduler` with its own seed and profile is not changed by them), and the report directory."""
    import shlex

    nodeid = item.nodeid
    target = str(item.path) + nodeid[nodeid.index("::"):] if "::" in nodeid else str(item.path)
    path = os.environ.get("PYTHONPATH")
    command = (f"cd {shlex.quote(str(item.config.invocation_params.dir))} && "
               + (f"PYTHONPATH={shlex.quote(path)} " if path else "") + f"python -m pytest {shlex.quote(target)}")
    if settings.report_dir is not None:
        command += f" --harness-report-dir={shlex.quote(str(settings.report_dir.resolve()))}"
    if (seed, profile) == (settings.seed, settings.profile):
        return f"{command} --harness-seed={seed} --harness-profile={profile}"
    return (f"{command}\n(the test runs check_scheduler with seed={seed}, profile={profile!r} of its own: "
            "--harness-seed and --harness-profile do not change it)")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """With --harness-coverage: what every harness check covered, test by test."""
    if not config.getoption("harness_coverage"):
        return
    shown = [(report.nodeid, text) for reports in terminalreporter.stats.values() for report in reports
             if getattr(report, "when", None) == "call"
             for name, text in getattr(report, "user_properties", ()) if name == COVERAGE_PROPERTY]
    if not shown:
        return
    terminalreporter.section("harness coverage")
    for nodeid, text in sorted(shown):
        terminalreporter.write_line(nodeid)
        for line in text.splitlines():
            terminalreporter.write_line(line)
