"""Turns of a run: where the batches the run gives its scheduler come from.

Owns `StaticTurns` (a scenario's fixed batches, in order) and `LoopTurns` (a loop policy driving a
scripted model: it answers the policy's requests — a batch for the scheduler, or time passing while
the model thinks or the user types — and records the batches the model emitted, with their scripted
latencies, failures, results and data flow, as a plain *realized* scenario the oracles read like any
other). `run()` asks for the next batch after each one; it never knows which kind it has. This module
never runs a batch or judges one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from harness.agent.model import ModelLoadError
from harness.agent.registry import UnknownLoopError, get_loop
from harness.agent.runtime import AGENT_FINISHED, LoopPolicy, Outcome, Pause, RunCalls, Task
from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.model import Batch, CallResult, JSONValue, ToolCall
from harness.scenario.spec import REALIZED, Scenario
from harness.sim.kernel import Kernel, StopReason


class Turns(Protocol):
    #: The scenario as far as it is known: what the scheduler context of the next batch reads.
    current: Scenario
    outcome: Outcome | None

    def next_batch(self, results: Sequence[CallResult] | None) -> Batch | None: ...

    def stop(self, reason: str) -> None: ...

    def realized(self) -> Scenario: ...


class StaticTurns:
    """A scenario's own batches, one after another."""

    outcome: Outcome | None = None

    def __init__(self, scenario: Scenario) -> None:
        self.current = scenario
        self._next = 0

    def next_batch(self, results: Sequence[CallResult] | None) -> Batch | None:
        if self._next >= len(self.current.batches):
            return None
        self._next += 1
        return self.current.batches[self._next - 1]

    def stop(self, reason: str) -> None:
        pass

    def realized(self) -> Scenario:
        return self.current


class LoopTurns:
    """A loop policy and a model deciding the batches as the run goes."""

    def __init__(self, scenario: Scenario, kernel: Kernel, positions: dict[str, int] | None = None,
                 loop: LoopPolicy | None = None) -> None:
        spec = scenario.agent
        assert spec is not None
        self.source = scenario
        self.kernel = kernel
        self.positions = positions
        self.outcome: Outcome | None = None
        self.batches: list[Batch] = []
        self.latency: dict[str, LatencyModel] = dict(scenario.call_latency)
        self.failures: dict[str, FailureModel] = dict(scenario.call_failures)
        self.depends: dict[str, tuple[str, ...]] = dict(scenario.depends_on)
        self.results: dict[str, JSONValue] = {}
        self.args_from: dict[str, dict[str, str]] = {k: dict(v) for k, v in scenario.args_from.items()}
        self.current = self._realized()
        self._started = False
        try:
            self.policy = loop if loop is not None else get_loop(spec.loop)
            model = spec.model.start()
        except (UnknownLoopError, ModelLoadError) as exc:
            self.task: Task | None = None
            self._finish(Outcome("model-error", detail=str(exc)))
            return
        self.task = Task(spec, model, kernel, frozenset(scenario.catalogue))
        self._gen = self.policy(self.task)

    def next_batch(self, results: Sequence[CallResult] | None) -> Batch | None:
        if self.outcome is not None:
            return None
        try:
            if not self._started:
                self._started = True
                request: Any = next(self._gen)
            else:
                request = self._gen.send(tuple(results or ()))
            while isinstance(request, Pause):
                stop = self.kernel.run_until(self.kernel.delay(request.ms, request.purpose))
                if stop is not StopReason.DONE:
                    self.stop(f"virtual time ran out while waiting ({request.purpose}): {stop.value}")
                    return None
                request = self._gen.send(None)
        except StopIteration as done:
            value = done.value
            self.outcome = value if isinstance(value, Outcome) else Outcome("stopped", detail=repr(value))
            return None
        except Exception as exc:  # the user's model or loop raised: the task ends there, the run goes on
            self._finish(Outcome("model-error", detail=f"{type(exc).__name__}: {exc}"))
            return None
        if not isinstance(request, RunCalls):
            self._finish(Outcome("model-error", detail=f"the loop policy yielded {request!r}, not RunCalls or Pause"))
            return None
        return self._batch(request)

    def stop(self, reason: str) -> None:
        """The run ended the task early (the scheduler failed, the runtime crashed, the user interrupted)."""
        if self.outcome is not None:
            return
        if self._started:
            self._gen.close()
        task = self.task
        self._finish(Outcome("stopped", rounds=len(task.decisions) if task else 0,
                             tool_calls=task.tool_calls if task else 0, detail=reason))

    def _finish(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.kernel.record("agent", event=AGENT_FINISHED, status=outcome.status, detail=outcome.detail or None)

    def _batch(self, request: RunCalls) -> Batch:
        calls = []
        for position, emitted in enumerate(request.calls):
            calls.append(ToolCall(emitted.id, emitted.name, emitted.arguments, position))
            if emitted.latency is not None:
                self.latency[emitted.id] = emitted.latency
            if emitted.failure is not None:
                self.failures[emitted.id] = emitted.failure
            if emitted.has_result:
                self.results[emitted.id] = emitted.result
            if emitted.depends_on:
                self.depends[emitted.id] = tuple(emitted.depends_on)
            if emitted.args_from:
                self.args_from[emitted.id] = dict(emitted.args_from)
            if self.positions is not None:
                self.positions.setdefault(emitted.id, len(self.positions))
        batch = Batch(tuple(calls), request.label)
        self.batches.append(batch)
        self.current = self._realized()
        return batch

    def _realized(self) -> Scenario:
        spec = self.source.agent
        loop = spec.loop if spec is not None else "?"
        return replace(self.source, batches=tuple(self.batches), agent=None,
                       source=f"{REALIZED}{loop} on {self.source.name}" + (
                           f" ({self.source.source})" if self.source.source else ""),
                       catalogue=self.source.catalogue.with_results(self.results), call_latency=dict(self.latency),
                       call_failures=dict(self.failures), depends_on=dict(self.depends),
                       args_from={k: dict(v) for k, v in self.args_from.items()})

    def realized(self) -> Scenario:
        return self.current
