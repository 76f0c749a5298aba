"""Turns of a run: where the batches the run gives its scheduler come from.

Owns `StaticTurns` (a scenario's fixed batches, in order) and `LoopTurns` (a loop policy driving a
scripted model: it answers the policy's requests — a batch for the scheduler, or time passing while
the model thinks or the user types — and records the batches the model emitted, with their scripted
latencies, failures, results and data flow, as a plain *realized* scenario the oracles read like any
other). `run()` asks for the next batch after each one; it never knows which kind it has. This module
never runs a batch or judges one.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from harness.agent.model import ModelLoadError
from harness.agent.registry import UnknownLoopError, loop_of
from harness.agent.runtime import AGENT_FINISHED, LoopPolicy, ModelFailed, Outcome, Pause, RunCalls, Task
from harness.agent.spec import AgentEntry
from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.model import Batch, CallResult, JSONValue, ToolCall
from harness.scenario.reader import ScenarioError
from harness.scenario.spec import REALIZED, Scenario
from harness.sim.kernel import Kernel, StopReason
from harness.tools.spec import ToolSpec


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
                 loop: LoopPolicy | None = None, entry: AgentEntry | None = None) -> None:
        spec = entry.spec if entry is not None else scenario.agent
        assert spec is not None
        self.spec = spec
        self.entry = entry
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
        # A scenario's fixed batches (none for an agent of a crew) run first, then the model decides.
        self._fixed = list(scenario.batches) if entry is None else []
        self._fixed_sent: Batch | None = None
        self.current = self._realized()
        self._started = False
        self._paused = False
        try:
            self.policy = loop if loop is not None else loop_of(spec)
            model = spec.model.start()
        except (UnknownLoopError, ModelLoadError) as exc:
            # The scenario names code that does not load: the run cannot start (exit 2, naming the
            # component, its module and what it raised), never a task that ends and passes.
            field = "loop" if isinstance(exc, UnknownLoopError) else "model"
            where = f"agents[{entry.name}].{field}" if entry is not None else field
            raise ScenarioError(scenario.path or scenario.name, where, f"a {field} that loads; {exc}",
                                has_got=False) from None
        self.task = Task(spec, model, kernel, frozenset(scenario.catalogue),
                         agent=entry.name if entry is not None else None)
        try:  # a "policy" that fails when called, or returns no generator, is the loop's failure
            self._gen = self.policy(self.task)
        except Exception as exc:
            self._finish(self._so_far("loop-error", f"calling the loop policy raised {type(exc).__name__}: {exc}"))
            return
        if not isinstance(self._gen, Generator):
            returned = repr(self._gen)[:60]
            self._finish(self._so_far("loop-error", f"the loop policy returned {returned}, not a generator"))

    def next_batch(self, results: Sequence[CallResult] | None) -> Batch | None:
        request = self.advance(results)
        while isinstance(request, Pause):
            stop = self.kernel.run_until(self.kernel.delay(request.ms, request.purpose))
            if stop is not StopReason.DONE:
                self.stop(f"virtual time ran out while waiting ({request.purpose}): {stop.value}")
                return None
            request = self.advance(None)
        return request

    def advance(self, results: Sequence[CallResult] | None) -> Batch | Pause | None:
        """One step of the loop policy: the batch it gives the scheduler next, the time it lets pass
        (the caller waits it out, then calls again with None), or None when the task has ended.
        `results` answers the previous batch."""
        if self.outcome is not None:
            return None
        if self._fixed_sent is not None:  # the results of a fixed batch: in the model's transcript
            assert self.task is not None
            self.task.record(results or ())
            self.task.tool_calls += len(self._fixed_sent)
            self._fixed_sent = None
        if self._fixed:
            batch = self._fixed.pop(0)
            self._fixed_sent = batch
            self.batches.append(batch)
            self.current = self._realized()
            return batch
        try:
            if not self._started:
                self._started = True
                request: Any = next(self._gen)
            elif self._paused:
                request = self._gen.send(None)
            else:
                request = self._gen.send(tuple(results or ()))
            self._paused = isinstance(request, Pause)
            if self._paused:
                return request  # type: ignore[no-any-return]
        except StopIteration as done:
            value = done.value
            self.outcome = self._told(value if isinstance(value, Outcome) else Outcome("stopped", detail=repr(value)))
            return None
        except ModelFailed as exc:  # the user's model raised: the task ends there, the run goes on
            self._finish(self._so_far("model-error", str(exc)))
            return None
        except Exception as exc:  # the loop under test raised: its failure (the loop-policy oracle says so)
            self._finish(self._so_far("loop-error", f"{type(exc).__name__}: {exc}"))
            return None
        if not isinstance(request, RunCalls):
            self._finish(self._so_far("loop-error", f"the loop policy yielded {request!r}, not RunCalls or Pause"))
            return None
        return self._batch(request)

    def stop(self, reason: str) -> None:
        """The run ended the task early (the scheduler failed, the runtime crashed, the user interrupted)."""
        if self.outcome is not None:
            return
        if self._started:
            self._gen.close()
        self._finish(self._so_far("stopped", reason))

    def _so_far(self, status: str, detail: str) -> Outcome:
        """An outcome the loop did not return itself, with the rounds and the tool calls handed to the
        scheduler until then (the loop may not have counted a batch whose results it never took in)."""
        task = self.task
        return Outcome(status, rounds=len(task.decisions) if task else 0,
                       tool_calls=sum(len(batch) for batch in self.batches), detail=detail)

    def _told(self, outcome: Outcome) -> Outcome:
        """The outcome with every result the loop reported to the model (the loop-policy oracle reads them)."""
        return replace(outcome, reported=tuple(self.task.results.values())) if self.task is not None else outcome

    def _finish(self, outcome: Outcome) -> None:
        self.outcome = self._told(outcome)
        self.kernel.record("agent", event=AGENT_FINISHED, status=outcome.status, detail=outcome.detail or None)

    def _batch(self, request: RunCalls) -> Batch:
        calls = []
        workdir = self.entry.workdir if self.entry is not None else None
        for position, emitted in enumerate(request.calls):
            arguments = emitted.arguments
            if workdir is not None:
                arguments = confine(arguments, self.source.catalogue.get(emitted.name), workdir)
            calls.append(ToolCall(emitted.id, emitted.name, arguments, position))
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
        label = request.label if self.entry is None else f"{self.entry.name}/{request.label}"
        batch = Batch(tuple(calls), label)
        self.batches.append(batch)
        self.current = self._realized()
        return batch

    def _realized(self) -> Scenario:
        return realized(self.source, self.spec.loop, self.batches, self.results, self.latency, self.failures,
                        self.depends, self.args_from)

    def realized(self) -> Scenario:
        return self.current


def realized(source: Scenario, loop: str, batches: Sequence[Batch], results: Mapping[str, JSONValue],
             latency: Mapping[str, LatencyModel], failures: Mapping[str, FailureModel],
             depends: Mapping[str, tuple[str, ...]], args_from: Mapping[str, Mapping[str, str]]) -> Scenario:
    """The plain scenario a loop run amounts to: the batches its model(s) emitted, in the order they
    started, with what the script gave each call (latency, failure, result, data flow)."""
    return replace(source, batches=tuple(batches), agent=None, agents=(),
                   source=f"{REALIZED}{loop} on {source.name}" + (f" ({source.source})" if source.source else ""),
                   catalogue=source.catalogue.with_results(results), call_latency=dict(latency),
                   call_failures=dict(failures), depends_on=dict(depends),
                   args_from={k: dict(v) for k, v in args_from.items()})


def confine(arguments: str, spec: ToolSpec | None, workdir: str) -> str:
    """Raw JSON arguments with each relative path argument of the tool (its declared `path_args`, or
    its default path when none is given) moved under the task's directory `workdir`: what a runtime
    that gives every task a working directory of its own (seed 004) sends the tool. Arguments that
    are not a JSON object, and tools that declare no path argument, pass unchanged."""
    keys = spec.declared.resource_keys if spec is not None else None
    if keys is None or not (keys.path_args or keys.default_path):
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(parsed, dict):
        return arguments
    changed = False
    given = [name for name in keys.path_args if isinstance(parsed.get(name), str) and parsed[name]]
    for name in given:
        path = parsed[name]
        if not path.startswith(("/", "~")):
            parsed[name], changed = posixpath.join(workdir, path), True
    if not given and keys.default_path is not None and keys.path_args and not keys.default_path.startswith("/"):
        parsed[keys.path_args[0]], changed = posixpath.join(workdir, keys.default_path), True
    return json.dumps(parsed, ensure_ascii=False) if changed else arguments
