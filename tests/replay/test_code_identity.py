"""Which code a reproducer's identity stands for, how a change is found, and how a replay is judged
from it, in this process (the CLI in a fresh one is tests/replay/test_fix_verdicts.py)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run
from harness.bridges import from_asyncio, from_gate, from_plan, from_threads
from harness.reproducers.code_identity import (
    CodeIdentity,
    changes_since,
    defining_modules,
    harness_identity,
    identity_of,
    user_packages,
)
from harness.reproducers.replay import (
    DIVERGED,
    FIXED,
    NONDETERMINISTIC,
    REPRODUCED,
    STILL_FAILS,
    ReproducerError,
    judge,
    loads,
    reproducer_of,
    save_verified,
    to_json,
)
from harness.scheduling import PlanScheduler

PACKAGE = "rv_identity_pkg"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's package with a scheduler module and a helper module, imported from tmp_path."""
    root = tmp_path / PACKAGE
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("PARALLEL = True\n")
    (root / "unused.py").write_text("X = 1\n")
    (root / "sched.py").write_text(
        "from harness.bridges import from_gate\n"
        f"from {PACKAGE} import helpers\n\n"
        "def gate(calls):\n    return helpers.PARALLEL\n\n"
        "scheduler = from_gate(gate)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield root
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


async def _execute(tool_calls, tools):  # type: ignore[no-untyped-def]
    return []


def _sync(tool_calls, tools):  # type: ignore[no-untyped-def]
    return []


class _Policy(PlanScheduler):
    name = "mine"


class _Holder:
    def plan(self, calls):  # type: ignore[no-untyped-def]
        return [calls]


@pytest.mark.parametrize("make", [
    lambda: from_asyncio(_execute), lambda: from_threads(_sync), lambda: from_gate(lambda calls: True),
    lambda: from_plan(_Holder().plan), lambda: from_asyncio(functools.partial(_execute)), _Policy,
], ids=["from_asyncio", "from_threads", "from_gate lambda", "from_plan bound method", "partial", "subclass"])
def test_an_adapter_stands_for_the_module_of_what_it_wraps(make) -> None:  # type: ignore[no-untyped-def]
    modules = defining_modules(make())
    assert __name__ in modules
    assert user_packages(modules) == ("tests",)  # the harness, asyncio, functools are never the user's


def test_a_builtin_scheduler_is_the_harness_alone() -> None:
    assert user_packages(defining_modules(get_scheduler("hermes_gate"))) == ()
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 1)
    code = reproducer_of(result, "parallel", "lost-update", "serializability", "t").code
    assert code is not None and code.packages == () and code.files == ()
    assert dict(code.harness)["version"] and dict(code.harness)["source"]


def test_the_identity_holds_every_imported_module_of_the_package_and_a_change_names_the_file(package: Path) -> None:
    sched = importlib.import_module(f"{PACKAGE}.sched")
    result = run(find_scenario("config-clobber"), sched.scheduler, 1)
    code = reproducer_of(result, f"{PACKAGE}.sched:scheduler", "x", "y", "t").code
    assert code is not None and code.packages == (PACKAGE,)
    # The helper module is code the scheduler ran; a module of the package never imported is not.
    assert [name for name, _ in code.files] == [f"{PACKAGE}/__init__.py", f"{PACKAGE}/helpers.py",
                                                f"{PACKAGE}/sched.py"]
    assert not changes_since(code)
    (package / "helpers.py").write_text("PARALLEL = False  # the fix\n")
    changes = changes_since(code)
    assert changes.files == (f"{PACKAGE}/helpers.py",) and changes.harness == ()
    assert changes.describe() == f"{PACKAGE}/helpers.py"
    (package / "helpers.py").unlink()
    assert changes_since(code).describe() == f"{PACKAGE}/helpers.py (gone)"


def test_a_module_imported_now_but_not_then_is_no_change(package: Path) -> None:
    importlib.import_module(f"{PACKAGE}.sched")
    before = identity_of([PACKAGE])
    importlib.import_module(f"{PACKAGE}.unused")
    assert f"{PACKAGE}/unused.py" in dict(identity_of([PACKAGE]).files)
    assert not changes_since(before)


def test_the_instance_names_the_code_when_the_name_does_not(package: Path) -> None:
    """check_scheduler files an instance under its class's name (the adapter's, in the harness):
    the instance given as `policy` still finds the user's package."""
    sched = importlib.import_module(f"{PACKAGE}.sched")
    result = run(find_scenario("config-clobber"), sched.scheduler, 1)
    by_name = reproducer_of(result, "harness.bridges.planners.adapters:_Gate", "x", "y", "t").code
    by_instance = reproducer_of(result, "harness.bridges.planners.adapters:_Gate", "x", "y", "t",
                                policy=sched.scheduler).code
    assert by_name is not None and by_name.packages == ()
    assert by_instance is not None and by_instance.packages == (PACKAGE,)


def test_the_harness_identity_is_computed_once_and_is_cheap() -> None:
    harness_identity.cache_clear()
    began = time.perf_counter()
    first = harness_identity()
    took = time.perf_counter() - began
    assert harness_identity() is first
    assert set(dict(first)) == {"version", "source", "python", "simpy", "pyfakefs"}
    assert took < 2.0  # about 10 ms on a quiet machine; bounded loosely for a busy one


def _reproducer_text(scheduler: str = "parallel", **code: object) -> str:
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 1)
    document = json.loads(to_json(reproducer_of(result, scheduler, "lost-update", "serializability", "t"),
                                  version="t"))
    document["code"].update(code)
    return json.dumps(document)


def test_unchanged_code_reproduces_and_an_older_file_loads() -> None:
    text = _reproducer_text()
    judged = judge(loads(text))
    assert (judged.verdict, judged.code_changed, judged.exit_code) == (REPRODUCED, False, 1)
    older = json.loads(text)
    del older["code"]
    judged = judge(loads(json.dumps(older)))
    assert (judged.verdict, judged.code_changed, judged.exit_code) == (REPRODUCED, None, 1)
    assert "the code identity was not recorded (a reproducer from an older harness)" in judged.lines()


def test_another_harness_version_is_a_change_and_the_run_is_judged_by_the_oracles() -> None:
    harness = {**dict(harness_identity()), "version": "0.0.1"}
    judged = judge(loads(_reproducer_text(harness=harness)))
    assert judged.verdict == STILL_FAILS and judged.exit_code == 1
    assert judged.changes is not None and judged.changes.harness[0].startswith("harness 0.0.1 -> ")
    assert judged.headline().endswith("lost-update still fires; the run is byte for byte the recorded one")
    assert judged.second is None  # the same run as recorded: nothing to check twice
    source = {**dict(harness_identity()), "source": "0" * 16}
    judged = judge(loads(_reproducer_text(harness=source)))
    assert judged.changes is not None and judged.changes.harness == (
        f"harness {dict(harness_identity())['version']}'s own source",)


def test_the_code_behind_the_name_changed_and_the_bug_is_gone_is_fixed() -> None:
    # Recorded as "serial" with parallel's lost update and an older harness: the code behind the name
    # changed, and the run now (serial) holds every oracle.
    harness = {**dict(harness_identity()), "version": "0.0.1"}
    reproducer = loads(_reproducer_text("serial", harness=harness))
    judged = judge(reproducer)
    assert (judged.verdict, judged.exit_code, judged.labels) == (FIXED, 0, ())
    assert judged.second is not None and judged.unstable is None
    assert judge(reproducer, expect="fixed").exit_code == 0
    assert judge(reproducer, expect="fails").exit_code == 1
    # Without a change recorded, the same replay is a divergence (exit 5) unless an expectation asks.
    unchanged = loads(_reproducer_text("serial"))
    assert judge(unchanged).verdict == NONDETERMINISTIC and judge(unchanged).exit_code == 5
    older = json.loads(_reproducer_text("serial"))
    del older["code"]
    assert judge(loads(json.dumps(older))).verdict == DIVERGED
    assert judge(loads(json.dumps(older)), expect="fixed").verdict == FIXED


def test_under_another_scheduler_the_trace_is_not_compared() -> None:
    reproducer = loads(_reproducer_text())
    judged = judge(reproducer, get_scheduler("serial"), under="serial")
    assert (judged.verdict, judged.under, judged.exit_code) == (FIXED, "serial", 0)
    assert judged.headline() == "replayed under serial instead of parallel: every oracle holds"
    assert judge(reproducer, get_scheduler("serial"), under="serial", expect="reproduces").exit_code == 1
    # The recorded name is not another scheduler.
    same = judge(reproducer, get_scheduler("parallel"), under="parallel")
    assert (same.verdict, same.under) == (REPRODUCED, None)


def test_an_expectation_must_be_known() -> None:
    with pytest.raises(ValueError, match="expect: expected one of fixed, fails, reproduces"):
        judge(loads(_reproducer_text()), expect="passes")


@pytest.mark.parametrize(("code", "message"), [
    ("nope", "code: expected an object with harness, packages and files"),
    ({"harness": {}, "packages": ["a"], "files": {"../x.py": "00"}}, "code.files: expected names relative"),
    ({"harness": {"version": 1}, "packages": [], "files": {}}, "code.harness: expected an object of strings"),
    ({"harness": {}, "packages": "acme", "files": {}}, "code.packages: expected a list of package names"),
])
def test_a_malformed_identity_names_the_field(code: object, message: str) -> None:
    document = json.loads(_reproducer_text())
    document["code"] = code
    with pytest.raises(ReproducerError, match=f"r.json: {message}"):
        loads(json.dumps(document), "r.json")


def test_the_identity_round_trips_through_the_file() -> None:
    identity = CodeIdentity((("version", "1"),), ("acme",), (("acme/a.py", "ab"),))
    assert CodeIdentity.from_data(json.loads(json.dumps(identity.to_data())), "code") == identity
    assert identity.summary() == "harness 1, 1 file of acme"


def test_a_saved_reproducer_holds_the_modules_its_self_check_imported(package: Path, tmp_path: Path) -> None:
    """A module the scheduler imports only while it runs counts, even when the run that found it
    happened in another process: save_verified collects the packages' files after its replay."""
    (package / "sched.py").write_text(
        "from harness.bridges import from_gate\n\n"
        f"def gate(calls):\n    from {PACKAGE} import helpers\n    return helpers.PARALLEL\n\n"
        "scheduler = from_gate(gate)\n")
    sched = importlib.import_module(f"{PACKAGE}.sched")
    reproducer = reproducer_of(run(find_scenario("config-clobber"), sched.scheduler, 1), f"{PACKAGE}.sched:scheduler",
                               "lost-update", "serializability", "t", policy=sched.scheduler)
    # As if the run had happened in another process: the helper not imported when the identity was made.
    del sys.modules[f"{PACKAGE}.helpers"]
    delattr(sys.modules[PACKAGE], "helpers")
    early = dataclasses.replace(reproducer, code=identity_of([PACKAGE]))
    assert early.code is not None and f"{PACKAGE}/helpers.py" not in dict(early.code.files)
    path, check = save_verified(early, tmp_path, version="t")
    assert check.ok and path is not None
    assert f"{PACKAGE}/helpers.py" in json.loads(path.read_text())["code"]["files"]
