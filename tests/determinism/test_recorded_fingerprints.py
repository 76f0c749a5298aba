"""The behaviour guard: every built-in scenario x every built-in scheduler x seeds 1, 7 and 2026
gives the fingerprint, status, makespan and verdict labels recorded in `fingerprints.json`, plus
order-first (model-order tape, PCT) and jittered runs under `parallel` and `resource_keys`.

An optimisation (a cache, a cheaper encoding, a cloned world) must not change what a run does; this
test says which run changed and how. Everything recorded is covered: about 1,400 runs with all
oracles take ~4 s on one core (measured 3.7 s to record), so nothing had to be left out.

- A scenario built in but not recorded yet (someone is adding it) is skipped, naming the command
  that records it; a recorded scenario that is no longer built in is skipped too.
- A scenario whose file changed since it was recorded fails with that reason first: new behaviour
  is expected then, and re-recording it is a deliberate step.
- A scheduler added since the recording is reported as not covered (skipped), not as a failure.

Regenerate everything (one command, after a change that is *meant* to alter behaviour)::

    python -m tests.determinism.recorded --regen

or only some scenarios: `python -m tests.determinism.recorded --regen --only config-clobber`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from harness import find_scenario, scenario_names, scheduler_names
from tests.determinism.recorded import (
    ORDERED_KINDS,
    ORDERED_SCHEDULERS,
    REGEN,
    SEEDS,
    load,
    run_ordered,
    run_plain,
    scenario_file_sha,
)

RECORDED: dict[str, Any] = load()["scenarios"]
BUILT_IN = scenario_names()


def _differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    fields = ("fingerprint", "status", "makespan_ms", "labels")
    out = []
    for key, want in expected.items():
        got = actual.get(key)
        if got != want:
            changed = [f"{f}: {w!r} -> {g!r}" for f, w, g in zip(fields, want, got or [None] * 4, strict=True)
                       if w != g]
            out.append(f"  {key}: " + "; ".join(changed))
    return out


def _recorded_or_skip(name: str) -> dict[str, Any]:
    if name not in RECORDED:
        pytest.skip(f"{name} is not recorded yet: `{REGEN} --only {name}` records it")
    if name not in BUILT_IN:
        pytest.skip(f"{name} is recorded but no longer built in: `{REGEN}` drops it")
    entry: dict[str, Any] = RECORDED[name]
    sha = scenario_file_sha(name)
    assert sha == entry["file_sha"], (
        f"scenarios/{name}.toml changed since its behaviour was recorded ({entry['file_sha']} -> {sha}); "
        f"if the change is intended, re-record it: `{REGEN} --only {name}`")
    return entry


@pytest.mark.parametrize("name", sorted(set(BUILT_IN) | set(RECORDED)))
def test_every_scheduler_and_seed_behaves_as_recorded(name: str) -> None:
    entry = _recorded_or_skip(name)
    scenario = find_scenario(name)
    expected: dict[str, Any] = entry["runs"]
    schedulers = [s for s in scheduler_names() if f"{s}/{SEEDS[0]}" in expected]
    actual = {f"{s}/{seed}": run_plain(scenario, s, seed) for s in schedulers for seed in SEEDS}
    diffs = _differences({k: v for k, v in expected.items() if k.split("/")[0] in schedulers}, actual)
    assert not diffs, (f"{name}: {len(diffs)} of {len(actual)} runs differ from the recording "
                       f"(an unintended behaviour change, or re-record with `{REGEN} --only {name}`):\n"
                       + "\n".join(diffs))


@pytest.mark.parametrize("name", sorted(set(BUILT_IN) | set(RECORDED)))
def test_order_first_and_jittered_runs_behave_as_recorded(name: str) -> None:
    entry = _recorded_or_skip(name)
    scenario = find_scenario(name)
    actual = {f"{s}/{kind}": run_ordered(scenario, s, kind) for s in ORDERED_SCHEDULERS for kind in ORDERED_KINDS}
    diffs = _differences(entry["ordered"], actual)
    assert not diffs, f"{name}: order-first / jittered runs differ from the recording:\n" + "\n".join(diffs)


def test_runs_interleaved_across_scenarios_behave_as_recorded() -> None:
    """The same runs in a scrambled order across scenarios and schedulers, each one twice: a cache
    keyed too loosely would hand one run another's data here."""
    current = [name for name in BUILT_IN
               if name in RECORDED and RECORDED[name]["file_sha"] == scenario_file_sha(name)]
    keys = [(name, key) for name in current for key in RECORDED[name]["runs"] if key.endswith(f"/{SEEDS[1]}")]
    keys.sort(key=lambda k: hashlib.sha256("/".join(k).encode()).hexdigest())
    keys = keys[::7]  # every 7th of the scrambled list: all scenarios and schedulers show up, ~4x fewer runs
    diffs = []
    for name, key in keys + keys[::-1]:
        scheduler, seed = key.rsplit("/", 1)
        got = run_plain(find_scenario(name), scheduler, int(seed))
        if got != RECORDED[name]["runs"][key]:
            diffs.append(f"  {name}/{key}: {RECORDED[name]['runs'][key]} -> {got}")
    assert not diffs, "runs differ when interleaved:\n" + "\n".join(diffs)


def test_schedulers_added_since_the_recording_are_reported() -> None:
    recorded = {key.split("/")[0] for entry in RECORDED.values() for key in entry["runs"]}
    missing = sorted(set(scheduler_names()) - recorded)
    if missing:
        pytest.skip(f"schedulers not covered by the recording: {', '.join(missing)}; `{REGEN}` records them")
