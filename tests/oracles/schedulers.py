"""Deliberately broken schedulers: each one has the bug an oracle exists to catch.

Importable as `tests.oracles.schedulers:NAME`, so the CLI can run them too.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harness.model import Batch, CallResult, Outcome
from harness.policies import Parallel
from harness.scheduling import SchedulerContext

Process = Generator[Any, Any, Any]


class Reverse:
    """Serial, but in reverse model order (reports in model order)."""

    name = "reverse"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = {}
        for call in reversed(batch.calls):
            results[call.id] = yield ctx.start(call)
        return [results[c.id] for c in batch]


class DropsLast:
    """Forgets the last call's result."""

    name = "drops-last"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from Parallel()(batch, ctx)
        return results[:-1]


class DoublesFirst:
    """Returns two results for the first call."""

    name = "doubles-first"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from Parallel()(batch, ctx)
        return [results[0], *results]


class Relabels:
    """Collects results in completion order, then stamps them with model-order ids: the values are
    paired with the wrong calls (the classic `results.append` as tasks finish)."""

    name = "relabels"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        finished = yield from Parallel(order="completion")(batch, ctx)
        return [CallResult(call.id, r.outcome, r.value, r.error, r.attempts, r.start_ms, r.end_ms)
                for call, r in zip(batch, finished, strict=True)]


class Fabricates:
    """Reports success for calls it never ran."""

    name = "fabricates"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.sleep(1)
        return [CallResult(call.id, Outcome.OK, {"fake": True}) for call in batch]


class Raises:
    name = "raises"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        raise RuntimeError("scheduler bug")


class NeverReturns:
    name = "never-returns"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        for call in batch:
            ctx.start(call)
        yield ctx.env.event()


class FireAndForget:
    """Waits for the first call only and reports the others as cancelled without cancelling them."""

    name = "fire-and-forget"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        handles = [ctx.start(call) for call in batch]
        first = yield handles[0]
        return [first] + [CallResult(h.call.id, Outcome.CANCELLED, None, "gave up", 1, 0, ctx.now)
                          for h in handles[1:]]


class TimesOutAndRetries:
    """Gives each attempt `timeout_ms`; retries a timed-out call once, with or without a key."""

    name = "times-out-and-retries"

    def __init__(self, timeout_ms: int = 100, use_key: bool = False) -> None:
        self.timeout_ms, self.use_key = timeout_ms, use_key

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = []
        for call in batch:
            key = f"idem-{call.id}" if self.use_key else None
            result = yield ctx.with_timeout(ctx.start(call, idempotency_key=key), self.timeout_ms)
            if result.outcome is Outcome.TIMEOUT:
                retry = yield ctx.start(call, attempt=2, idempotency_key=key)
                result = CallResult(call.id, retry.outcome, retry.value, retry.error, 2, result.start_ms, retry.end_ms)
            results.append(result)
        return results


class TimesOut:
    """Gives each call `timeout_ms` and reports the timeout (asyncio.wait_for)."""

    name = "times-out"

    def __init__(self, timeout_ms: int = 100) -> None:
        self.timeout_ms = timeout_ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        waits = [ctx.with_timeout(ctx.start(call), self.timeout_ms) for call in batch]
        yield ctx.all_of(waits)
        return [w.value for w in waits]


class StartsAfterInterrupt:
    """Ignores the user interrupt: keeps starting calls one by one."""

    name = "starts-after-interrupt"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = []
        for call in batch:
            results.append((yield ctx.start(call)))
        return results


class SpinsInPython:
    """Never yields: a CPU loop only a wall-clock watchdog can stop."""

    name = "spins-in-python"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        while True:
            pass
        yield  # pragma: no cover - makes this a generator


class StubsResults:
    """All at once, then every result that came back ok is replaced by a failure stub before it is
    reported (hermes-agent's "[Result unavailable]": the results were lost on the way to the model)."""

    name = "stubs-results"

    def __init__(self, outcome: Outcome = Outcome.ERROR, error: str | None = "[Result unavailable]") -> None:
        self.outcome, self.error = outcome, error

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        results = yield from Parallel()(batch, ctx)
        yield ctx.sleep(1)  # the runtime builds the next request a moment later
        return [CallResult(r.call_id, self.outcome, None, self.error, r.attempts, r.start_ms, ctx.now) if r.ok else r
                for r in results]


class SwallowsFailures:
    """All at once; a failed call is reported ok with an empty value (an executor whose `except`
    returns `None` as the tool's answer)."""

    name = "swallows-failures"

    def __init__(self, timeout_ms: int | None = None) -> None:
        self.timeout_ms = timeout_ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        handles = [ctx.start(call) for call in batch]
        waits = [ctx.with_timeout(h, self.timeout_ms) if self.timeout_ms else h for h in handles]
        yield ctx.all_of(waits)
        return [w.value if w.value.ok else CallResult(w.value.call_id, Outcome.OK, None, None, w.value.attempts,
                                                      w.value.start_ms, w.value.end_ms) for w in waits]
