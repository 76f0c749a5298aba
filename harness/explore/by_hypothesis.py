"""The `hypothesis` strategy: Hypothesis draws which calls to keep and the order choices, and shrinks them.

Owns `explore_hypothesis` (its runs, its one finding and its scope), the order choices as indices
into each decision's enabled set, and `hypothesis_home_elsewhere` (Hypothesis's storage kept out of
the user's directory). It never shrinks the real run further (`harness.explore.shrink` does).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from random import Random
from typing import Any

from harness.explore import scope
from harness.explore.findings import Exploration, Finding, add_started, first_violation, started_tools
from harness.explore.shrink import without_call
from harness.run import run
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler


class _IndexTape:
    """Order choices as indices into the enabled set (0: the first in model order; time is last)."""

    def __init__(self, choices: list[int]) -> None:
        self.choices = choices

    def choose(self, enabled: Any, step: int) -> str:
        index = self.choices[step] if step < len(self.choices) else 0
        return str(enabled[min(index, len(enabled) - 1)])


@contextlib.contextmanager
def hypothesis_home_elsewhere() -> Iterator[None]:
    """Hypothesis's storage in a temporary directory for this search, removed after it. With no
    example database, what Hypothesis still writes is a cache of the constants in the local modules it
    has seen (`.hypothesis/constants/` in the current directory): an exploration writes nothing
    outside the report directory it was given. A home directory the user chose is put back."""
    import tempfile

    from hypothesis import configuration

    previous = vars(configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="harness-hypothesis-") as home:
        configuration.set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


def explore_hypothesis(exploration: Exploration, scenario: Scenario, policy: Scheduler, runs: int, seed: int,
                       labels: tuple[str, ...] | None) -> None:
    """Let Hypothesis search (and shrink) kept calls and order choices, at most `runs` runs, into
    `exploration`: its runs, its one finding and its scope."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample

    calls = [c.id for c in scenario.calls]
    tried = 0

    def build(example: tuple[list[bool], list[int]]) -> Scenario | None:
        keep, _ = example
        current: Scenario | None = scenario
        for call_id, wanted in zip(calls, keep, strict=True):
            if not wanted and current is not None:
                current = without_call(current, call_id)
        return current

    first_failure = 0  # the run that first failed: later ones are Hypothesis shrinking it

    def fails(example: tuple[list[bool], list[int]]) -> bool:
        nonlocal tried, first_failure
        tried += 1
        current = build(example)
        if current is None:
            return False
        result = run(current, policy, seed, chooser=_IndexTape(example[1]))
        add_started(exploration, started_tools(result))
        failed = first_violation(result, labels) is not None
        if failed and not first_failure:
            first_failure = tried
        return failed

    # Index len(calls) is time (the last entry of an enabled set that has it).
    strategy = st.tuples(st.lists(st.booleans(), min_size=len(calls), max_size=len(calls)),
                         st.lists(st.integers(min_value=0, max_value=len(calls)), max_size=4 * len(calls) + 4))
    exploration.scope = {"runs": runs, "seeds": [seed],
                         "latencies": "order choices drawn and shrunk by Hypothesis (a sample, no claim); "
                                      + scope.ORDER_FIRST_LATENCIES,
                         "timers": "ordered against call steps where Hypothesis draws the time index",
                         "faults": scope.faults(scenario, f"drawn from seed {seed}"), "swarm": []}
    try:
        with hypothesis_home_elsewhere():
            example = find(strategy, fails, settings=settings(max_examples=runs, deadline=None, database=None,
                                                              suppress_health_check=list(HealthCheck)),
                           random=Random(seed))
    except NoSuchExample:
        exploration.runs = exploration.scope["runs"] = tried
        return
    exploration.runs = exploration.scope["runs"] = tried
    current = build(example)
    assert current is not None
    result = run(current, policy, seed, chooser=_IndexTape(example[1]))
    found = first_violation(result, labels)
    assert found is not None
    # Hypothesis shrank its own encoding (kept calls, order indices); indices are relative to each
    # decision, so dropping a call shifts them: the greedy pass over the real run finishes the job.
    exploration.findings.append(Finding(*found, result, (first_failure or tried) - 1, (), "hypothesis"))
