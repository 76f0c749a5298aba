"""An interrupt at the very start of a turn reaches the executor before its first call starts (issue
28 item 5): a real thread pool that looks at the flag first starts nothing, one that never looks is
`start-after-interrupt`, and an asyncio executor's task is cancelled before its first step."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from dataclasses import replace
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.bridges import from_asyncio, from_threads
from harness.oracles import check
from harness.scenario.spec import Interrupt


def _pool(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[Any]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    concurrent.futures.wait(futures)
    pool.shutdown()
    return [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]


def _looks_first(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[Any]:
    if interrupted.is_set():  # Ctrl-C before the turn started: start nothing
        return [{"tool_call_id": tc.id, "outcome": "cancelled"} for tc in tool_calls]
    return _pool(tool_calls, run_tool, interrupted)


async def _gather(tool_calls: list[Any], tools: Any) -> list[Any]:
    return list(await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                       for tc in tool_calls)))


AT_START = replace(find_scenario("interrupt-midbatch"), interrupt=Interrupt(at_ms=0, grace_ms=3000))


def _started_and_labels(scheduler: Any) -> tuple[list[str], set[str]]:
    result = run(AT_START, scheduler, 1)
    events = [e["ev"] for e in result.trace]
    if "start" in events:  # told first, whatever it then did
        assert events.index("interrupt") < events.index("start")
    started = [e["call"] for e in result.trace if e["ev"] == "start"]
    return started, {v.label for verdict in check(result) for v in verdict.violations}


@pytest.mark.parametrize("scheduler", [from_threads(_looks_first), from_asyncio(_gather), get_scheduler("serial")],
                         ids=["pool-that-looks", "asyncio-gather", "serial"])
def test_an_executor_told_before_it_starts_starts_nothing(scheduler: Any) -> None:
    assert _started_and_labels(scheduler) == ([], set())


@pytest.mark.parametrize("scheduler", [from_threads(_pool), get_scheduler("parallel")], ids=["pool", "parallel"])
def test_an_executor_that_never_looks_starts_after_the_interrupt(scheduler: Any) -> None:
    started, labels = _started_and_labels(scheduler)
    assert len(started) == 4 and "start-after-interrupt" in labels
