"""The runner makes its `RunResult` without the frozen dataclass's `__init__` (`harness.run.result.recorded`):
every field set, as `__init__` sets it, and the fingerprint cached as `cached_property` would keep it."""

from __future__ import annotations

from dataclasses import fields, replace

from harness.run import RunResult, run
from harness.run.result import _LOOKS
from harness.scenario import find_scenario


def test_a_recorded_result_has_every_field_and_equals_one_built_by_init() -> None:
    result = run(find_scenario("config-clobber"), "parallel", 5)
    names = [f.name for f in fields(RunResult)]
    assert [name for name in vars(result) if name != _LOOKS] == names
    rebuilt = RunResult(**{name: getattr(result, name) for name in names})
    assert rebuilt == result
    assert _LOOKS not in vars(rebuilt)
    assert rebuilt.fingerprint == result.fingerprint == replace(result).fingerprint


def test_the_fingerprint_is_computed_once_and_kept_in_the_instance() -> None:
    result = run(find_scenario("config-clobber"), "serial", 5)
    assert "fingerprint" not in vars(result)
    first = result.fingerprint
    assert vars(result)["fingerprint"] == first and result.fingerprint is first
    assert RunResult.fingerprint.__doc__ and "SHA-256" in RunResult.fingerprint.__doc__
