"""from_threads leaves nothing behind a run: no cyclic garbage, nothing kept alive.

A thread-bridged run used to be a whole run of cyclic garbage (the turnstile and its threads, the
batch and its reaper and interrupt callbacks: a collection every other run, a tenth of a run's time),
and the reaper's watch kept every run's kernel, environment and trace alive for good.
"""

from __future__ import annotations

import concurrent.futures
import gc
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.bridges.threads import from_threads
from harness.bridges.threads import reaper as reaper_module
from harness.run import RunStatus

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


def _pool(tool_calls: list[Any], run_tool: Any) -> list[Any]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
        concurrent.futures.wait(futures)
    return [{"id": tc.id, "result": future.result()} for tc, future in zip(tool_calls, futures, strict=True)]


def _cyclic_garbage_of(scheduler: Any, seed: int) -> list[str]:
    """The types of what one run leaves to the cyclic collector (refcounting cannot free it)."""
    gc.collect()  # what earlier runs left, freed for good
    gc.set_debug(gc.DEBUG_SAVEALL)  # this run's, kept in gc.garbage to be read
    try:
        result = run(find_scenario("incident-triage"), scheduler, seed=seed)
        assert result.status is RunStatus.COMPLETED
        del result
        gc.collect()
        return sorted(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.usefixtures("no_cycle_collector")
def test_a_thread_bridged_run_leaves_only_the_simulations_own_cycle() -> None:
    parallel = _cyclic_garbage_of(get_scheduler("parallel"), 1)
    assert "simpy.core.Environment" in parallel  # SimPy's environment is a cycle of its own
    for seed in (1, 2):
        bridged = _cyclic_garbage_of(from_threads(_pool), seed)
        # The environment's cycle, and in its queue the reaper's last watch event (nothing else of the
        # harness: not the turnstile, its threads, the batch, the context, the world).
        ours = [name for name in bridged if name.startswith("harness.")]
        assert ours == ["harness.bridges.threads.reaper._Unheard"], ours
        assert len(bridged) <= len(parallel) + 5, (bridged, parallel)


def test_no_run_is_kept_alive_by_the_reaper() -> None:
    gc.collect()
    before = len(reaper_module._watches)
    for seed in (1, 2, 3):
        run(find_scenario("incident-triage"), from_threads(_pool), seed=seed)
    gc.collect()
    assert len(reaper_module._watches) == before
