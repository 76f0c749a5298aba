"""The pytest plugin (entry point `pytest11`): run `check_scheduler` from your tests with a seed and
a profile chosen on the command line, and get a reproduce section when it fails.

Owns the options `--harness-seed=N|last|random`, `--harness-profile=quick|ci|deep` (`dev` is an
older name of `quick`) and `--harness-report-dir=DIR`, the header line, the `harness` fixture and the
failure section. The seed defaults to 1 under the `ci` profile (CI=true) and to a fresh random seed
under `quick`; either way it is printed and remembered, so `--harness-seed=last` reruns the same
exploration. It never runs anything by itself.

    def test_my_policy(harness):
        harness.check(MyPolicy())       # or harness.check("mypackage.policies:MyPolicy")
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.schedulers import Scheduler

_CACHE_KEY = "harness/seed"


@dataclass(frozen=True)
class HarnessSettings:
    seed: int
    profile: str
    report_dir: Path | None

    def check(self, scheduler: Scheduler | str, **options: Any) -> None:
        from harness.testing import check_scheduler

        options.setdefault("seed", self.seed)
        options.setdefault("profile", self.profile)
        options.setdefault("report_dir", self.report_dir)
        check_scheduler(scheduler, **options)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "tool-call scheduler checks (harness)")
    group.addoption("--harness-seed", default=None,
                    help="seed for harness checks: an integer, 'last' (the previous run's) or 'random'")
    group.addoption("--harness-profile", default=None, choices=["quick", "dev", "ci", "deep"],
                    help="how hard harness checks look (default: ci when CI is set, else quick)")
    group.addoption("--harness-report-dir", default=None, help="where failing checks save reproducers")


def _settings(config: pytest.Config) -> HarnessSettings:
    cached = getattr(config, "_harness_settings", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    profile = config.getoption("harness_profile") or ("ci" if os.environ.get("CI") else "quick")
    profile = "quick" if profile == "dev" else profile
    wanted = config.getoption("harness_seed")
    cache = getattr(config, "cache", None)
    if wanted == "last":
        seed = int(cache.get(_CACHE_KEY, 1)) if cache is not None else 1
    elif wanted in (None, "random"):
        # Only the choice of seed is random; every run made from it is deterministic.
        seed = 1 if wanted is None and profile == "ci" else secrets.randbelow(2**31)
    else:
        try:
            seed = int(wanted)
        except ValueError:
            raise pytest.UsageError(f"--harness-seed must be an integer, 'last' or 'random', got {wanted!r}") from None
    if cache is not None:
        cache.set(_CACHE_KEY, seed)
    directory = config.getoption("harness_report_dir")
    settings = HarnessSettings(seed, profile, Path(directory) if directory else None)
    config._harness_settings = settings  # type: ignore[attr-defined]
    return settings


def pytest_report_header(config: pytest.Config) -> str:
    settings = _settings(config)
    where = f", reproducers in {settings.report_dir}" if settings.report_dir else ""
    return f"harness: seed {settings.seed}, profile {settings.profile}{where} (rerun with --harness-seed=last)"


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> HarnessSettings:
    """Settings for `check_scheduler` from the command line; call `harness.check(scheduler)`."""
    return _settings(request.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    from harness.testing import SchedulerCheckFailed

    if call.excinfo is not None and isinstance(call.excinfo.value, SchedulerCheckFailed):
        settings = _settings(item.config)
        lines = [f"seed {settings.seed}, profile {settings.profile}",
                 f"rerun this test: pytest {item.nodeid} --harness-seed={settings.seed} "
                 f"--harness-profile={settings.profile}"]
        if call.excinfo.value.replay_command is not None:
            lines.append(f"replay the failing run: {call.excinfo.value.replay_command}")
        report.sections.append(("harness reproduce", "\n".join(lines)))
    return report
