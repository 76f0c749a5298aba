"""Schedulers a user might name, for the tests of isolated explorations and sweeps (not adversaries):
a 5 s poller that declares its grace, and one that keeps state between runs."""

from __future__ import annotations

from harness.bridges.threads import from_threads
from harness.model import Batch
from harness.policies import Parallel, Serial
from harness.scheduling import SchedulerContext, SchedulerProcess
from tests.policies.seed000_executor import execute as hermes

#: hermes' executor (polls every 5 s), promising the 5 s grace its design needs.
poller5s = from_threads(hermes, grace_ms=5000)


class Warms:
    """Serial for its first five batches, parallel after: state kept between runs, in one instance."""

    name = "warms"

    def __init__(self) -> None:
        self.batches = 0

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        self.batches += 1
        return (Serial() if self.batches <= 5 else Parallel())(batch, ctx)


class BuiltForever:
    """A constructor that ignores SIGALRM and never returns: only the parent's kill ends it."""

    name = "built-forever"

    def __init__(self) -> None:
        import signal

        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        return Serial()(batch, ctx)
