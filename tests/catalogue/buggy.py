"""Realistic buggy schedulers: each one is how a runtime author really gets a batch wrong.

Owns the buggy policies of the catalogue (`tests.catalogue.cases` pairs each with the scenario that
exposes it and the labels the oracles must report). Every policy is written the way its runtime
family writes it — a hand-written executor over `SchedulerContext`, a plan with the wrong
`ExecutionPolicy`, or an unchanged asyncio executor run through `from_asyncio` — and its docstring
names the family, the mistake and the REFERENCE.md pattern. Nothing here is deliberately absurd:
each bug is one plausible line away from a correct runtime. Importable as
`tests.catalogue.buggy:NAME`, so `harness run ... --scheduler` can run them too.

It never judges a run (the oracles do) and never picks scenarios (`cases` does).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import posixpath
import shlex
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

import simpy

from harness.agent.spec import EmittedCall
from harness.agent.taskloop import TaskLoop, signature
from harness.bridges import from_asyncio, from_gate
from harness.bridges.asyncio import FromAsyncio
from harness.bridges.planners.adapters import OpenAIToolCall
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.policies.hermes_paths import v4a_scope_paths
from harness.policies.hermes_segments import HermesSegments
from harness.policies.partition import MAX_CONCURRENCY, Partition, concurrency_safe
from harness.scheduling import ExecutionPolicy, Plan, PlanScheduler, SchedulerContext
from harness.scheduling.approval_gate import gate, refused
from harness.scheduling.approvals import Approval
from harness.scheduling.context import CallHandle, SchedulerProcess
from harness.scheduling.plan import CallExecutor
from harness.scheduling.runtime import BatchRuntime, run_call

Tools = Mapping[str, Callable[..., Awaitable[Any]]]
CallProcess = Generator[simpy.Event, Any, CallResult]

#: The file tools a path-aware planner scopes (hermes' PATH_SCOPED_TOOLS plus the test runner).
PATH_TOOLS = frozenset({"read_file", "write_file", "write_file_atomic", "patch", "run_tests", "search_files"})
WRITERS = frozenset({"write_file", "write_file_atomic", "patch"})


def _raw_path(call: ToolCall) -> str | None:
    args = call.parsed_arguments() or {}
    raw = args.get("path", "." if call.name in ("run_tests", "search_files") else None)
    return raw if isinstance(raw, str) and raw else None


def _overlap(a: str, b: str) -> bool:
    """hermes' `Path.parts` prefix overlap: same path, or one inside the other."""
    pa, pb = [p for p in a.split("/") if p], [p for p in b.split("/") if p]
    common = min(len(pa), len(pb))
    return pa[:common] == pb[:common]


def _value(event: simpy.Event) -> CallResult:
    """The `CallResult` a settled call event (handle, settle, worker process) carries."""
    value = event.value
    assert isinstance(value, CallResult)
    return value


def _await(event: simpy.Event) -> CallProcess:
    """Wait for a call event and return its `CallResult` (`yield from` it inside a worker)."""
    yield event
    return _value(event)


def _in_model_order(batch: Batch, runs: Mapping[str, simpy.Process]) -> list[CallResult]:
    return [_value(runs[call.id]) for call in batch]


def _args(tool_call: OpenAIToolCall) -> dict[str, Any]:
    parsed = json.loads(tool_call.function.arguments)
    if not isinstance(parsed, dict):
        raise TypeError("arguments must be a JSON object")
    return parsed


def idempotency_key_of(call: ToolCall) -> str:
    """Seed 003's key, "a hash of the tool and its arguments" — without the call id (the bug)."""
    return "idem-" + hashlib.sha256(f"{call.name}\x1f{call.arguments}".encode()).hexdigest()[:16]


# -- pattern 1: lost update ------------------------------------------------------------------------


class RawPathMutex:
    """A thread per call; file tools take a per-file mutex from a dict keyed by `args["path"]`.

    The mutex map is the obvious fix for parallel edits of one file (letta-code#377, pi#2327), but the
    key is the path *as the model spelled it*: `config.yaml` and `./config.yaml` get two mutexes and
    the two read-modify-write patches overlap. REFERENCE.md pattern 1 -> `lost-update`.
    """

    name = "raw_path_mutex"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        mutexes: dict[str, simpy.Resource] = {}

        def worker(call: ToolCall) -> CallProcess:
            raw = _raw_path(call) if call.name in PATH_TOOLS else None
            if raw is None:
                return (yield from _await(ctx.settle(ctx.start(call))))
            mutex = mutexes.setdefault(raw, ctx.resource(1))  # the bug: keyed by the raw text
            with mutex.request() as held:
                yield held
                if ctx.interrupted:  # waited for the mutex through an Esc: do not start
                    return ctx.skip(call)
                return (yield from _await(ctx.settle(ctx.start(call))))

        runs = {call.id: ctx.env.process(worker(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


# -- pattern 2: torn read --------------------------------------------------------------------------


class OneSidedSegments(PlanScheduler):
    """hermes-style reader/writer segments whose conflict test only looks at the *incoming* call.

    The rule is "close the run when a path overlaps a reserved path and either side is a writer";
    this version writes `if writer and overlaps(...)`, so a reader that follows a writer of the same
    path joins the writer's segment. `write_file` then `run_tests` overlap and the test run reads the
    half-written (truncated) file. REFERENCE.md pattern 2 (pi#8318) -> `torn-read` or `stale-read`.
    """

    name = "one_sided_segments"
    description = "reader/writer path segments; only a writer closes a run (one-sided conflict check)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        reserved: list[str] = []
        for call in batch:
            raw = _raw_path(call) if call.name in PATH_TOOLS else None
            if raw is None:  # not path-scoped: a barrier, alone
                if current:
                    segments.append(current)
                segments.append([call])
                current, reserved = [], []
                continue
            path = ctx.realpath(posixpath.normpath(posixpath.join(ctx.cwd, raw)))
            writer = call.name in WRITERS
            if writer and any(_overlap(path, other) for other in reserved):  # the bug: `or reader-after-writer`
                segments.append(current)
                current, reserved = [], []
            current.append(call)
            reserved.append(path)
        if current:
            segments.append(current)
        return Plan.segments(batch, segments)


# -- pattern 3: stale read -------------------------------------------------------------------------


class EagerReads:
    """Writes run one by one in model order; read-only calls start at once, "because reads are safe".

    A common latency optimisation (zeptoclaw#115, strands-agents#614): the author serialises the
    mutating calls and lets every declared reader go immediately. A state query that follows the
    service call it should observe reads the old state. REFERENCE.md pattern 3 -> `stale-read`.
    """

    name = "eager_reads"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        handles: dict[str, simpy.Event] = {}
        for call in batch:
            declared = ctx.declared(call)
            if declared is not None and declared.read_only:
                handles[call.id] = ctx.settle(ctx.start(call))
        skipped: dict[str, CallResult] = {}
        for call in batch:
            if call.id in handles:
                continue
            if ctx.interrupted:
                skipped[call.id] = ctx.skip(call)
                continue
            handles[call.id] = ctx.settle(ctx.start(call))
            yield handles[call.id]
        yield ctx.all_of(handles.values())
        return [skipped[call.id] if call.id in skipped else _value(handles[call.id]) for call in batch]


class LifoWorkQueue:
    """A single worker draining the batch from a list with `pending.pop()`: last in, first out.

    The author meant a FIFO queue (`pop(0)` / `popleft()`); with `pop()` a serial runtime runs the
    batch backwards, so "show me the config, then raise the timeout" shows the already raised
    timeout. Reports in model order. REFERENCE.md pattern 3, reversed -> `future-read`.
    """

    name = "lifo_work_queue"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        pending = list(batch.calls)
        results: dict[str, CallResult] = {}
        while pending:
            call = pending.pop()  # the bug: LIFO
            if ctx.interrupted:
                results[call.id] = ctx.skip(call)
                continue
            results[call.id] = yield ctx.settle(ctx.start(call))
        return [results[call.id] for call in batch]


class ReadyOnStartDag:
    """Seed 003's DAG, where a call's "done" event is set when its task *starts*, not when it ends.

    The wrapper signals readiness before awaiting the tool (`ready[id].set(); await tool(...)`), so a
    call that declares `depends_on` starts together with its dependency instead of after it. The
    test run that needs the fix reads the file the fix is still writing. REFERENCE.md pattern 3 ->
    `stale-read` or `torn-read` (depends_on ignored in effect).
    """

    name = "ready_on_start_dag"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        ready = {call.id: ctx.env.event() for call in batch}

        def task(call: ToolCall) -> CallProcess:
            needs = [ready[d] for d in ctx.depends_on(call) if d in ready]
            if needs:
                yield ctx.all_of(needs)
            if ctx.interrupted:
                ready[call.id].succeed()
                return ctx.skip(call)
            handle = ctx.start(call)
            ready[call.id].succeed()  # the bug: should fire once `handle` has settled
            return (yield from _await(ctx.settle(handle)))

        runs = {call.id: ctx.env.process(task(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


# -- pattern 4: results in completion order --------------------------------------------------------


async def as_completed_executor(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """smolagents / goose style: results appended as the futures complete (pattern 4 -> `out-of-order`)."""

    async def one(tc: OpenAIToolCall) -> dict[str, Any]:
        try:
            return {"id": tc.id, "success": True, "result": await tools[tc.function.name](**_args(tc))}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": str(error)}

    return [await done for done in asyncio.as_completed([one(tc) for tc in tool_calls])]


async def zip_as_completed_executor(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Outputs collected with `as_completed`, then zipped back onto `tool_calls` by position.

    The author fixed the ordering complaint by pairing outputs with the calls in model order — but
    the outputs are still in completion order, so each call gets a sibling's answer (vercel/ai#16577,
    bifrost#4410). REFERENCE.md pattern 4 -> `mispaired-result`.
    """
    async def one(tc: OpenAIToolCall) -> Any:
        try:
            return await tools[tc.function.name](**_args(tc))
        except Exception as error:
            return f"Error: {error}"

    outputs = [await done for done in asyncio.as_completed([one(tc) for tc in tool_calls])]
    return [{"tool_call_id": tc.id, "content": out} for tc, out in zip(tool_calls, outputs, strict=True)]


# -- pattern 5 / fail-fast ------------------------------------------------------------------------


def parallel_cancel_siblings() -> PlanScheduler:
    """Everything at once; the first failing call cancels its running siblings (Claude Code's
    "Cancelled: parallel tool call … errored", pydantic-ai when an exception escapes).

    A benign 503 of a web search cancels a running build — whose subprocess ignores the cancel, so
    the build output lands while the build is reported `cancelled`. REFERENCE.md patterns 5 and 11
    -> `ghost-effect`.
    """
    return from_gate(lambda calls: True, name="parallel_cancel_siblings",
                     description="all parallel; a failure cancels running siblings",
                     execution=ExecutionPolicy(on_failure="cancel_siblings", honest_outcomes=False))


async def first_exception_executor(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Fail fast with `asyncio.wait(..., return_when=FIRST_EXCEPTION)`, cancel what is pending, and
    report what is done.

    The results of the cancelled siblings are simply dropped: the model gets fewer results than
    calls (most providers then reject the next request). -> `missing-result`.
    """
    async def one(tc: OpenAIToolCall) -> Any:
        return await tools[tc.function.name](**_args(tc))

    tasks = [asyncio.ensure_future(one(tc)) for tc in tool_calls]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    results = []
    for tc, task in zip(tool_calls, tasks, strict=True):
        if task not in done:
            continue  # the bug: a cancelled sibling gets no result at all
        error = task.exception()
        results.append({"id": tc.id, "success": error is None, "result": None if error else task.result(),
                        "error": str(error) if error else None})
    return results


async def gather_fail_whole_batch(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """`asyncio.gather` without `return_exceptions=True`, wrapped in one try/except.

    The first exception escapes `gather`, the handler reports the whole batch as failed and returns —
    but `gather` does not cancel the other awaitables, which keep running past the end of the turn
    (their results can only arrive in a later one). Runtime error -> `orphaned-call`.
    """
    try:
        values = await asyncio.gather(*(tools[tc.function.name](**_args(tc)) for tc in tool_calls))
    except Exception as error:
        return [{"id": tc.id, "success": False, "error": f"batch failed: {error}"} for tc in tool_calls]
    return [{"id": tc.id, "success": True, "result": value} for tc, value in zip(tool_calls, values, strict=True)]


class PoolBailsOutOnError:
    """A long-lived thread pool; results collected with `for f in as_completed(futures):
    results[futures[f]] = f.result()` inside one try/except.

    The first exception (a 503 from one backend) jumps to the handler, which answers every call
    "batch failed" and returns; the other futures are still running and nobody cancels them — their
    results can only surface in a later turn. Runtime error -> `orphaned-call`.
    """

    name = "pool_bails_out_on_error"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        handles = {call.id: ctx.start(call) for call in batch}
        pending: list[CallHandle] = list(handles.values())
        while pending:
            yield ctx.any_of(pending)
            for handle in [h for h in pending if h.triggered]:
                pending.remove(handle)
                failure = handle.result
                if failure.outcome is not Outcome.OK:  # the bug: return without cancelling `pending`
                    return [CallResult(call.id, Outcome.ERROR, None, f"batch failed: {failure.error}", 1,
                                       handles[call.id].started_ms, ctx.now) for call in batch]
        return [handles[call.id].result for call in batch]


# -- pattern 6: orphans after an interrupt ---------------------------------------------------------


class InterruptReturnsAtOnce:
    """Everything at once; on Esc the UI stops waiting and answers every unfinished call
    "cancelled by user" — without cancelling the tasks (crush#529, penguin-harness#621).

    The calls keep running after the turn ended. REFERENCE.md pattern 6 -> `orphaned-call`.
    """

    name = "interrupt_returns_at_once"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        handles = [ctx.start(call) for call in batch]
        yield ctx.any_of([ctx.all_of(handles), ctx.interrupt])
        return [h.result if h.triggered else
                CallResult(h.call.id, Outcome.CANCELLED, None, "cancelled by user", 1, h.started_ms, ctx.now)
                for h in handles]  # the bug: no ctx.cancel(h) for the ones still running


# -- pattern 7: hang -------------------------------------------------------------------------------


async def gather_without_timeout(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Seed 003's executor with the `wait_for` left out ("the tools have their own timeouts").

    One stuck call blocks the turn; nothing — not even the user's Esc — ends it, and the finished
    siblings are never flushed (aden-hive/hive#4948, hermes-agent#54562). REFERENCE.md pattern 7 ->
    `hang`.
    """

    async def one(tc: OpenAIToolCall) -> dict[str, Any]:
        try:
            return {"id": tc.id, "success": True, "result": await tools[tc.function.name](**_args(tc))}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": str(error)}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


# -- pattern 8: duplicate side effects -------------------------------------------------------------


def retry_everything_on_timeout() -> PlanScheduler:
    """Serial, with a tenacity-style retry decorator around every tool: 800 ms timeout, two retries,
    no idempotency key, and no check of whether the tool is idempotent (agno#10366, composio#3654).

    A ticket request that timed out after the server created the ticket is sent again.
    REFERENCE.md pattern 8 -> `duplicate-effect`.
    """
    return from_gate(lambda calls: False, name="retry_everything_on_timeout",
                     description="serial; retry any timed-out call, no idempotency key",
                     execution=ExecutionPolicy(timeout_ms=800, retries=2, backoff_ms=100,
                                               retry_non_idempotent=True, idempotency_keys=False))


class KeyPerAttempt:
    """Seed 003's retry loop with the idempotency key minted *inside* the loop.

    `key = f"{call.id}-{uuid4()}"` sits one line too low: every attempt carries a fresh key, so the
    ticket API cannot recognise the retry and creates a second ticket. REFERENCE.md pattern 8 ->
    `duplicate-effect`.
    """

    name = "key_per_attempt"

    def __init__(self, timeout_ms: int = 500, retries: int = 1, backoff_ms: int = 100) -> None:
        self.timeout_ms, self.retries, self.backoff_ms = timeout_ms, retries, backoff_ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            first = ctx.now
            attempt = 0
            while True:
                attempt += 1
                key = f"{call.id}-attempt-{attempt}"  # the bug: a new key per attempt
                result: CallResult = yield ctx.with_timeout(ctx.start(call, attempt=attempt, idempotency_key=key),
                                                            self.timeout_ms)
                if result.outcome not in (Outcome.TIMEOUT, Outcome.ERROR) or attempt > self.retries:
                    break
                yield ctx.sleep(self.backoff_ms * 2 ** (attempt - 1))
                if ctx.interrupted:  # no retry after the user pressed Esc (during the backoff too)
                    break
            results.append(CallResult(call.id, result.outcome, result.value, result.error, attempt, first,
                                      result.end_ms))
        return results


class ArgsHashKey:
    """Risky operations one at a time, each sent with seed 003's idempotency key, "a hash of the
    tool and its arguments".

    The key leaves out the call id, so two identical calls of one turn — restart, roll back, restart
    again — share a key, and the operations API answers the second restart with the first one's
    response: the service is never restarted on the rolled-back version. REFERENCE.md pattern 8
    (identical calls with different ids, deduplicated wrongly).
    """

    name = "args_hash_key"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            results.append((yield ctx.settle(ctx.start(call, idempotency_key=idempotency_key_of(call)))))
        return results


class ResultCache:
    """crewAI-style tool cache: a result is cached under (tool, arguments) and reused.

    Fine for `web_search`; for a non-idempotent call the model sent twice (toggle the light twice)
    the second call is answered from the cache and never runs. REFERENCE.md pattern 8 (identical
    calls with different ids, deduplicated) -> `fabricated-result`.
    """

    name = "result_cache"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        cache: dict[tuple[str, str], CallResult] = {}
        results: list[CallResult] = []
        for call in batch:
            key = (call.name, json.dumps(call.parsed_arguments(), sort_keys=True))
            hit = cache.get(key)
            if hit is not None:  # the bug: no check that the tool is read-only / idempotent
                results.append(CallResult(call.id, hit.outcome, hit.value, hit.error, 0, ctx.now, ctx.now,
                                          ("from cache",)))
                continue
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            result: CallResult = yield ctx.settle(ctx.start(call))
            if result.ok:
                cache[key] = result
            results.append(result)
        return results


# -- pattern 9: shared implicit state --------------------------------------------------------------

#: Commands that "only look": they write no file (Claude Code / pydantic-ai style read-only check).
READ_ONLY_COMMANDS = frozenset({"cd", "ls", "cat", "pwd", "echo", "head", "tail", "grep", "true"})


def read_only_command(command: str) -> bool:
    """True when every command of the line is on the read-only list and nothing is redirected."""
    try:
        words = shlex.split(command.replace("&&", " && ").replace(";", " ; "))
    except ValueError:
        return False
    if any(w in (">", ">>") for w in words):
        return False
    heads = [words[0]] + [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("&&", ";")] if words else []
    return bool(heads) and all(h in READ_ONLY_COMMANDS for h in heads)


class ReadOnlyShellPartition(Partition):
    """Claude Code's partition, plus a classifier that admits "read-only" shell commands as
    concurrency-safe — and `cd` is on the list, because it writes no file.

    But `cd` moves the shared shell session: `cd src` and `cat app.py` overlap and `cat` looks in the
    old directory (pydantic-ai#3120). REFERENCE.md pattern 9 -> `stale-read`.
    """

    name = "read_only_shell_partition"
    description = "partition; terminal commands classified read-only run concurrently"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        def safe(call: ToolCall) -> bool:
            if call.name == "terminal":
                command = (call.parsed_arguments() or {}).get("command")
                return isinstance(command, str) and read_only_command(command)
            declared = ctx.declared(call)
            return declared is not None and declared.read_only and not declared.interactive

        segments: list[list[ToolCall]] = []
        for call in batch:
            if safe(call) and segments and all(safe(c) for c in segments[-1]):
                segments[-1].append(call)
            else:
                segments.append([call])
        return Plan.segments(batch, segments, cap=MAX_CONCURRENCY)


class ProcessCwdSegments(PlanScheduler):
    """hermes-style reader/writer segments whose paths come from `os.path.realpath(os.path.abspath(p))`
    evaluated in the runtime process — whose cwd never follows the shell's `cd`.

    After `cd src`, `settings.py` means /repo/src/settings.py to the tools and /repo/settings.py to the
    planner, so two patches of one file land in one parallel segment. REFERENCE.md known gap
    (planner and tools resolve relative paths differently), pattern 9 -> `lost-update`.
    """

    name = "process_cwd_segments"
    description = "reader/writer path segments, paths resolved against the runtime process's cwd"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        reserved: list[tuple[str, bool]] = []
        for call in batch:
            raw = _raw_path(call) if call.name in PATH_TOOLS else None
            if raw is None:
                if current:
                    segments.append(current)
                segments.append([call])
                current, reserved = [], []
                continue
            # the bug: ctx.process_cwd (os.getcwd() of the runtime) instead of the shell's ctx.cwd
            path = ctx.realpath(posixpath.normpath(posixpath.join(ctx.process_cwd, raw)))
            writer = call.name in WRITERS
            if any(_overlap(path, other) and (writer or other_writer) for other, other_writer in reserved):
                segments.append(current)
                current, reserved = [], []
            current.append(call)
            reserved.append((path, writer))
        if current:
            segments.append(current)
        return Plan.segments(batch, segments, cap=8)


# -- pattern 10: external lock contention ----------------------------------------------------------


class ShellCommandsInParallel:
    """Every terminal call in its own subprocess, all at once ("shell commands are independent
    processes"); other calls too. Two git commands race for `.git/index.lock` in a real repository.
    REFERENCE.md pattern 10 (cannot be provoked by the harness today: see the case's notes).
    """

    name = "shell_commands_in_parallel"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        waits = [ctx.settle(ctx.start(call)) for call in batch]
        yield ctx.all_of(waits)
        return [_value(w) for w in waits]


# -- pattern 11: ghost effects after a timeout -----------------------------------------------------


class TimeoutPartition(Partition):
    """Claude Code's partition with a 2 s per-call timeout added to keep turns snappy.

    The timeout abandons the call and reports `timeout` — but a shell subprocess does not stop when
    its awaiting task is cancelled, and its output lands afterwards. The runtime should report
    "effect unknown" (or not time out non-cancellable tools). REFERENCE.md pattern 11 -> `ghost-effect`.
    """

    name = "timeout_partition"
    description = "partition with a 2 s per-call timeout, reported as a plain timeout"

    def __init__(self) -> None:
        super().__init__(ExecutionPolicy(timeout_ms=2000, honest_outcomes=False))


async def wait_for_reports_error(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Seed 003's executor verbatim, with a 2 s `asyncio.wait_for`: a timeout becomes
    `{"success": False, "error": ...}`.

    For a chat message that the server already posted, "failed" is a lie the model acts on (it sends
    the message again). REFERENCE.md pattern 11 -> `ghost-effect`.
    """

    async def one(tc: OpenAIToolCall) -> dict[str, Any]:
        try:
            result = await asyncio.wait_for(tools[tc.function.name](**_args(tc)), timeout=2)
            return {"id": tc.id, "success": True, "result": result}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": f"{type(error).__name__}: {error}"}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


async def semaphore_wait_for(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Seed 003's `async with semaphore: await asyncio.wait_for(tool(...), 2)`, with a cap of 3.

    When `wait_for` gives up, the `async with` releases the slot — but the blocking request runs on in
    its worker thread (`asyncio.to_thread` cannot be cancelled), so the next call starts next to it
    and the API sees more than 3 requests at once. -> `cap-exceeded`.
    """
    semaphore = asyncio.Semaphore(3)

    async def one(tc: OpenAIToolCall) -> dict[str, Any]:
        async with semaphore:
            try:
                result = await asyncio.wait_for(tools[tc.function.name](**_args(tc)), timeout=2)
                return {"id": tc.id, "success": True, "result": result}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": f"{type(error).__name__}: {error}"}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


# -- pattern 12: lock-arrival order ----------------------------------------------------------------


class ArrivalOrderLocks:
    """OpenHands-SDK-style executor: each call starts once its declared dependencies are done, then
    takes FIFO locks on its resource keys in sorted order.

    The locks do serialise the two writes of REPORT.md — in the order the threads *arrived* at the
    lock, i.e. the order their queries happened to finish, not model order; the final file is the
    summary the model wrote first. REFERENCE.md pattern 12 -> `lost-update`.
    """

    name = "arrival_order_locks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        locks: dict[str, simpy.Resource] = {}
        done = {call.id: ctx.env.event() for call in batch}

        def task(call: ToolCall) -> CallProcess:
            needs = [done[d] for d in ctx.depends_on(call) if d in done]
            if needs:
                yield ctx.all_of(needs)
            declared = ctx.declared(call)
            keys = [] if declared is None or declared.read_only else sorted(ctx.resource_keys(call))
            requests = []
            for key in keys:
                request = locks.setdefault(key, ctx.resource(1)).request()
                requests.append((key, request))
                yield request
            try:
                result: CallResult = ctx.skip(call) if ctx.interrupted else (yield ctx.settle(ctx.start(call)))
            finally:
                for key, request in requests:
                    locks[key].release(request)
            done[call.id].succeed()
            return result

        runs = {call.id: ctx.env.process(task(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


# -- interrupts -------------------------------------------------------------------------------------


class SegmentBoundaryInterrupt:
    """Segments on a pool of 8 worker threads; the interrupt flag is checked before each *segment*.

    Within a segment every call is submitted to the pool at once (`executor.map`), and queued
    submissions still start when a worker frees up after the user pressed Esc. -> `start-after-interrupt`.
    """

    name = "segment_boundary_interrupt"
    workers = 8

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        pool = ctx.resource(self.workers)
        results: dict[str, CallResult] = {}
        for segment in self._segments(batch, ctx):
            if ctx.interrupted:  # the only interrupt check
                for call in segment:
                    results[call.id] = ctx.skip(call)
                continue
            runs = {call.id: ctx.env.process(self._on_worker(pool, call, ctx)) for call in segment}
            yield ctx.all_of(runs.values())
            results.update({call_id: _value(run) for call_id, run in runs.items()})
        return [results[call.id] for call in batch]

    @staticmethod
    def _segments(batch: Batch, ctx: SchedulerContext) -> Iterator[list[ToolCall]]:
        segment: list[ToolCall] = []
        for call in batch:
            declared = ctx.declared(call)
            if declared is not None and declared.read_only and not declared.interactive:
                segment.append(call)
                continue
            if segment:
                yield segment
            segment = []
            yield [call]
        if segment:
            yield segment

    @staticmethod
    def _on_worker(pool: simpy.Resource, call: ToolCall, ctx: SchedulerContext) -> CallProcess:
        with pool.request() as worker:
            yield worker
            return (yield from _await(ctx.settle(ctx.start(call))))


class JoinWithoutGrace:
    """A pool of 2 worker threads that stops dispatching on Esc (correct) and then joins the running
    workers with `executor.shutdown(wait=True)` — no grace deadline, because a Python thread cannot
    be killed anyway. A 6 s test run keeps the turn open long past the grace period.
    -> `grace-exceeded`.
    """

    name = "join_without_grace"
    workers = 2

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        pool = ctx.resource(self.workers)

        def worker(call: ToolCall) -> CallProcess:
            with pool.request() as slot:
                yield slot
                if ctx.interrupted:
                    return ctx.skip(call)
                return (yield from _await(ctx.start(call)))  # the bug: plain join, not ctx.settle (no grace)

        runs = {call.id: ctx.env.process(worker(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


class PollingPartition(Partition):
    """Claude Code's partition run by a main loop that waits in 5 s slices (`wait(timeout=5)`, as
    hermes does for heartbeats) and only looks at the interrupt flag between slices.

    Between the Esc and the next poll, queued calls keep starting and running ones overrun the grace
    period. -> `start-after-interrupt` / `grace-exceeded`.
    """

    name = "polling_partition"
    description = "partition; the interrupt is noticed only every 5 s"

    def __init__(self) -> None:
        super().__init__(ExecutionPolicy(poll_interval_ms=5000))


# -- caps -------------------------------------------------------------------------------------------


async def single_semaphore(tool_calls: list[OpenAIToolCall], tools: Tools) -> list[dict[str, Any]]:
    """Seed 003's `asyncio.Semaphore(5)` around every call — one global limit, and the per-tool
    limit of the scraped site is nowhere. -> `cap-exceeded`."""
    semaphore = asyncio.Semaphore(5)

    async def one(tc: OpenAIToolCall) -> dict[str, Any]:
        async with semaphore:
            try:
                return {"id": tc.id, "success": True, "result": await tools[tc.function.name](**_args(tc))}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}

    return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


# -- exclusivity ------------------------------------------------------------------------------------


class ReadOnlyMeansSafe(Partition):
    """Claude Code's partition where "concurrency-safe" is just `declared.read_only`.

    `clarify` changes nothing, so it is declared read-only — and now runs next to a file read and a
    web search while the user is being asked whether those should happen at all. -> `exclusivity`.
    """

    name = "read_only_means_safe"
    description = "partition; any read-only tool (clarify included) is concurrency-safe"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        def safe(call: ToolCall) -> bool:
            declared = ctx.declared(call)
            return declared is not None and declared.read_only  # the bug: interactive/exclusive ignored

        segments: list[list[ToolCall]] = []
        for call in batch:
            if safe(call) and segments and all(safe(c) for c in segments[-1]):
                segments[-1].append(call)
            else:
                segments.append([call])
        return Plan.segments(batch, segments, cap=MAX_CONCURRENCY)


# -- aliases ----------------------------------------------------------------------------------------


class PathLocks:
    """OpenHands-style per-file FIFO locks, every call on its own thread, locks requested in model
    order. The lock key is the file's path after `resolve`:

    - `abspath`: `os.path.abspath` text — a symlink is a second file (hermes' old gate);
    - `realpath`: `os.path.realpath` — symlinks resolved, but hard links and case aliases on a
      case-insensitive disk still get their own lock (`normcase` is the identity on POSIX).

    Two read-modify-write patches of one file then run at once. REFERENCE.md known gaps -> `lost-update`.
    """

    def __init__(self, resolve: str = "realpath") -> None:
        if resolve not in ("abspath", "realpath"):
            raise ValueError(f"resolve must be 'abspath' or 'realpath', got {resolve!r}")
        self.resolve = resolve
        self.name = f"path_locks[{resolve}]"

    def key(self, raw: str, ctx: SchedulerContext) -> str:
        path = posixpath.normpath(posixpath.join(ctx.cwd, raw))
        return ctx.realpath(path) if self.resolve == "realpath" else path

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        locks: dict[str, simpy.Resource] = {}

        def thread(call: ToolCall) -> CallProcess:
            raw = _raw_path(call) if call.name in PATH_TOOLS else None
            if raw is None:
                return (yield from _await(ctx.settle(ctx.start(call))))
            lock = locks.setdefault(self.key(raw, ctx), ctx.resource(1))
            with lock.request() as held:
                yield held
                if ctx.interrupted:
                    return ctx.skip(call)
                return (yield from _await(ctx.settle(ctx.start(call))))

        runs = {call.id: ctx.env.process(thread(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


# -- degrade ----------------------------------------------------------------------------------------


class FirstCallOnly:
    """crewAI's degrade: when the turn contains a tool that is not read-only, only the first call is
    executed ("one action per step") and the rest are silently dropped instead of being answered
    "not executed". -> `missing-result`.
    """

    name = "first_call_only"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        mutating = any((d := ctx.declared(c)) is None or not d.read_only for c in batch)
        calls: Sequence[ToolCall] = batch.calls[:1] if mutating else batch.calls
        results: list[CallResult] = []
        for call in calls:
            results.append(ctx.skip(call) if ctx.interrupted else (yield ctx.settle(ctx.start(call))))
        return results


class CapsByCancelling:
    """A cap on parallel tool calls per turn (`max_parallel_tools = 2`) that answers the excess
    "cancelled" instead of queueing it, with the skip helper's default reason: the model is told a
    user interrupt stopped calls nobody stopped, and the work is never done. -> `dropped-call`.
    """

    name = "caps_by_cancelling"
    cap = 2

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        handles = {call.id: ctx.start(call) for call in batch.calls[:self.cap]}
        yield ctx.all_of([ctx.settle(h) for h in handles.values()])
        return [handles[call.id].result if call.id in handles else ctx.skip(call) for call in batch]


# -- approvals and checkpoints (issue 12, item 4) --------------------------------------------------


def _approved(answered: simpy.Event) -> bool:
    return answered.triggered and isinstance(answered.value, Approval) and answered.value.approved


class OptimisticApproval:
    """Every call at once; a call that needs confirmation starts while the prompt is on screen (to hide
    the user's think time) and is cancelled if the user says no.

    Cancelling does not unsend a request: the operations API restarts the service before anyone
    approved it, and a rollback the user denies lands anyway. Seeds 001/002 (approve first, then run)
    -> `unapproved-effect`.
    """

    name = "optimistic_approval"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        def worker(call: ToolCall) -> CallProcess:
            if not ctx.needs_approval(call):
                return (yield from _await(ctx.start(call)))
            answered = ctx.approval(call)
            handle = ctx.start(call)  # the bug: it runs while the user is still reading the prompt
            yield ctx.any_of([answered, ctx.sleep(ctx.execution.approval_timeout_ms, "approval-timeout")])
            if _approved(answered):
                return (yield from _await(handle))
            ctx.cancel(handle, reason="denied by the user")
            return refused(ctx, call, f"denied by the user: {call.name} was cancelled")

        runs = {call.id: ctx.env.process(worker(call)) for call in batch}
        yield ctx.all_of(runs.values())
        return _in_model_order(batch, runs)


class SilenceIsConsent:
    """One call at a time; the approval prompt times out into "go ahead", so that an unattended agent
    never blocks on a user who walked away.

    Nobody approved the destructive cache wipe, and it runs. Seed 001 (hermes asks, and a command
    without approval does not run) -> `unapproved-effect`.
    """

    name = "silence_is_consent"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            if ctx.needs_approval(call):
                answered = ctx.approval(call)
                yield ctx.any_of([answered, ctx.sleep(ctx.execution.approval_timeout_ms, "approval-timeout")])
                if answered.triggered and not _approved(answered):
                    results.append(refused(ctx, call, f"denied by the user: {call.name} was not run"))
                    continue
                # the bug: no answer by the deadline is taken for a yes
            results.append((yield ctx.settle(ctx.start(call))))
        return results


class RetryDenied:
    """One call at a time behind the approval check, with a generic retry wrapper around execution.

    A denial comes back as an error result like any other, and the retry path calls the tool directly
    — below the approval check of the first dispatch — so the rollback the user refused runs on the
    second try. REFERENCE.md pattern 8's retry-everything, meeting seed 002's confirmation
    -> `unapproved-effect` (a denied call takes effect).
    """

    name = "retry_denied"

    def __init__(self, retries: int = 1, backoff_ms: int = 500) -> None:
        self.retries, self.backoff_ms = retries, backoff_ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            denied = yield from gate(ctx, call, ctx.execution.approval_timeout_ms, stop=ctx.interrupt)
            result: CallResult = denied if denied is not None else (yield ctx.settle(ctx.start(call)))
            attempt = 1
            while result.outcome is Outcome.ERROR and attempt <= self.retries and not ctx.interrupted:
                yield ctx.sleep(self.backoff_ms * 2 ** (attempt - 1), "backoff")
                attempt += 1
                result = yield ctx.settle(ctx.start(call, attempt=attempt))  # the bug: no approval check here
            results.append(result)
        return results


class PromptWithoutTimeout:
    """One call at a time behind an approval prompt that waits as long as it takes.

    A user who walked away never answers: the turn blocks on the prompt and every call after it waits
    forever (REFERENCE.md pattern 7, a hang with finished siblings never flushed; seed 001's approval
    has a timeout for this reason). -> `hang`.
    """

    name = "prompt_without_timeout"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            if ctx.needs_approval(call):
                answered = ctx.approval(call)
                yield answered | ctx.interrupt  # the bug: no timer beside the prompt
                if not _approved(answered):
                    results.append(refused(ctx, call, f"not approved: {call.name} was not run"))
                    continue
            results.append((yield ctx.settle(ctx.start(call))))
        return results


class RollbackOnTimeout:
    """hermes-style checkpoints (seed 001): one call at a time, a snapshot of the file tree before each
    call that may write, a 2 s per-call timeout, and on a timeout or error a rollback to the snapshot,
    so a half-done write leaves nothing behind.

    The rollback runs the moment the timeout fires, but a shell subprocess does not stop when it is
    abandoned: the build's output lands on the freshly restored tree. `wait=True` is the fix (wait for
    the abandoned attempt to end, then restore). REFERENCE.md pattern 11 -> `rollback-mismatch`.
    """

    def __init__(self, wait: bool = False, timeout_ms: int = 2000) -> None:
        self.wait, self.timeout_ms = wait, timeout_ms
        self.name = "rollback_on_timeout" + ("[wait]" if wait else "")

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            declared = ctx.declared(call)
            checkpoint = ctx.checkpoint(f"before {call.id}") if declared is None or not declared.read_only else None
            handle = ctx.start(call)
            result: CallResult = yield ctx.with_timeout(handle, self.timeout_ms)
            if checkpoint is not None and result.outcome in (Outcome.TIMEOUT, Outcome.ERROR):
                if self.wait and handle.process is not None and handle.process.is_alive:
                    yield handle.process  # the fix: the abandoned attempt ends first
                ctx.rollback(checkpoint)  # without the wait, the bug: the attempt is still running
                result = CallResult(call.id, result.outcome, None, f"{result.error}; rolled back to checkpoint "
                                    f"{checkpoint.id}", result.attempts, result.start_ms, result.end_ms)
            results.append(result)
        return results


# -- named instances --------------------------------------------------------------------------------


def asyncio_executor(fn: Callable[[list[OpenAIToolCall], Tools], Awaitable[Sequence[Any]]],
                     name: str) -> FromAsyncio:
    """An unchanged asyncio executor as a scheduler (the name shows in traces and reports)."""
    return from_asyncio(fn, name=name, description=(fn.__doc__ or "").strip().splitlines()[0])



# -- reported outcome versus what happened (issue 23, item 6) ---------------------------------------


class ResultUnavailable(HermesSegments):
    """hermes-agent's reader/writer segments with the tool-result pairing bug behind
    NousResearch/hermes-agent#93251 (fixed by #93329): a tool call carries two ids (`id`, `fc_...`,
    and `call_id`, `call_...`); the concurrent path files each tool message under `call_id`, and the
    sanitizer that repairs the message list before the next request pairs results by `id` only. Every
    result of a parallel segment is dropped as an orphan and replaced with a "[Result unavailable]"
    stub; a call run alone keeps its result. The issue saw it as "batches of 4 or more calls lose all
    their results".

    The calls ran and succeeded: the model is told they failed, re-fires the batch and loses it again.
    A stubbed read leaves nothing in the world, so only the report betrays it -> `misreported-outcome`.
    """

    name = "result_unavailable"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        plan = self.plan(batch, ctx)
        # The calls of one segment wait for the same predecessors; a segment of two or more ran concurrently.
        concurrent = {call.id for call in batch if sum(plan.after[c.id] == plan.after[call.id] for c in batch) > 1}
        results = yield from super().__call__(batch, ctx)
        return [CallResult(r.call_id, Outcome.ERROR, None, "[Result unavailable]", r.attempts, r.start_ms, ctx.now)
                if r.call_id in concurrent else r for r in results]
# -- default coverage (issue 23, item 5) -----------------------------------------------------------


class StaleCwdSegments(PlanScheduler):
    """Reader/writer path segments, careful about aliases — two writers never share a segment, so two
    edits of one file through a symlink, a hard link or another case never overlap — but every path
    is resolved once, when the turn arrives, against the shell's cwd at that moment (`ctx.cwd`).

    A `terminal` `cd` runs alone, as it should; the paths after it in the same turn are still resolved
    against the directory the turn started in. After `cd src`, `app.py` is /repo/src/app.py to the
    tools and /repo/app.py to the planner, so the test run of /repo/src joins the segment of the write
    that truncates app.py. REFERENCE.md known gap (planner and tools resolve relative paths against
    different directories), pattern 9 -> `torn-read` / `stale-read`.
    """

    description = "reader/writer segments, writers apart; paths resolved once per turn against its starting cwd"

    def __init__(self, follow_cd: bool = False) -> None:
        super().__init__()
        #: The fix: follow each `cd` of the turn (in model order) when resolving the paths after it.
        self.follow_cd = follow_cd
        self.name = "stale_cwd_segments" + ("[follow-cd]" if follow_cd else "")

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        reserved: list[tuple[str, bool]] = []
        cwd = ctx.cwd
        for call in batch:
            args = call.parsed_arguments() or {}
            raws: list[str] | None = None
            if call.name == "patch" and args.get("mode") == "patch":  # V4A: every file its headers name
                raws = v4a_scope_paths(args.get("patch")) or None
            elif call.name in PATH_TOOLS:
                raw = _raw_path(call)
                raws = [raw] if raw is not None else None
            if raws is None:  # not path-scoped (the shell, a question, bad arguments): alone
                if current:
                    segments.append(current)
                segments.append([call])
                current, reserved = [], []
                command = args.get("command") if call.name == "terminal" else None
                if self.follow_cd and isinstance(command, str) and command.startswith("cd "):
                    cwd = posixpath.normpath(posixpath.join(cwd, command[3:].strip()))
                continue
            # The bug: without follow_cd, cwd stays where the turn started, whatever `cd` ran before.
            paths = [ctx.realpath(posixpath.join(cwd, raw)) for raw in raws]
            writer = call.name in WRITERS
            if any((writer and other_writer) or ((writer or other_writer) and _overlap(path, other))
                   for path in paths for other, other_writer in reserved):
                segments.append(current)
                current, reserved = [], []
            current.append(call)
            reserved.extend((path, writer) for path in paths)
        if current:
            segments.append(current)
        return Plan.segments(batch, segments, cap=8)


class _Permits:
    """`asyncio.Semaphore` on the virtual clock: `acquire()` is an event, `release()` adds a permit
    (unbounded: giving back one that was never taken raises nothing, as asyncio's does)."""

    def __init__(self, ctx: SchedulerContext, value: int) -> None:
        self.ctx, self.value = ctx, value
        self.waiters: list[simpy.Event] = []

    def acquire(self) -> simpy.Event:
        event = self.ctx.env.event()
        if self.value > 0 and not self.waiters:
            self.value -= 1
            event.succeed()
        else:
            self.waiters.append(event)
        return event

    def release(self) -> None:
        if self.waiters:
            self.waiters.pop(0).succeed()
        else:
            self.value += 1


class PermitOnTheExecutor(Partition):
    """Claude Code's partition whose per-tool limits are the runtime's own semaphores, one per capped
    tool (seed 003's `asyncio.Semaphore`), taken by `on_tool_start(tool)` and given back by
    `on_tool_end()`. The end hook gets no argument, so the start hook remembers the permit on the
    executor (`self.permit = sems[tool]`) — the permit the latest call took, not this call's.

    With one capped tool in a turn every permit is that tool's and nothing shows (scrape-fanout). With
    two capped tools interleaved in model order, an extraction that ends gives back the search permit
    the latest search took (or a search an extraction permit): a second search starts next to a
    running one, above the API's quota of one. -> `cap-exceeded`.
    """

    name = "permit_on_the_executor"
    description = "partition; its own semaphore per capped tool, released through the executor's last permit"
    permit: _Permits

    def executor(self, runtime: BatchRuntime, batch: Batch) -> CallExecutor:
        ctx = runtime.ctx
        runtime.tool_slots = {}  # its own semaphores replace the runtime's per-tool queues
        sems = {tool: _Permits(ctx, cap) for tool, cap in sorted(ctx.tool_caps.items())}

        def on_tool_start(tool: str) -> simpy.Event:
            self.permit = sems[tool]
            return self.permit.acquire()

        def on_tool_end() -> None:
            self.permit.release()  # the bug: the permit of the call that started last

        def execute(call: ToolCall) -> CallProcess:
            if call.name not in sems:
                return (yield from run_call(runtime, call))
            yield on_tool_start(call.name)
            try:
                return (yield from run_call(runtime, call))
            finally:
                on_tool_end()

        return execute


class _RwLock:
    """A fair (FIFO) reader/writer lock on the virtual clock, as Codex's tokio RwLock: a reader waits
    only for a writer before it, a writer for everyone before it. `release` is told which kind of hold
    it gives back and trusts it, like `RwLockReadGuard::drop`."""

    def __init__(self, ctx: SchedulerContext) -> None:
        self.ctx = ctx
        self.readers = 0
        self.writer = False
        self.queue: list[tuple[bool, simpy.Event]] = []

    def acquire(self, exclusive: bool) -> simpy.Event:
        event = self.ctx.env.event()
        self.queue.append((exclusive, event))
        self._grant()
        return event

    def release(self, exclusive: bool) -> None:
        if exclusive:
            self.writer = False
        else:
            self.readers -= 1
        self._grant()

    def _grant(self) -> None:
        while self.queue:
            exclusive, event = self.queue[0]
            if self.writer or (exclusive and self.readers):
                return
            self.queue.pop(0)
            if exclusive:
                self.writer = True
            else:
                self.readers += 1
            event.succeed()


class SessionLockOnTheRuntime(PlanScheduler):
    """Codex's fair reader/writer lock (parallel-capable tools shared, others exclusive), one per
    conversation and kept across its turns — which is right: a session's lock is that agent's. The
    runtime object keeps "the session's lock" on itself and makes a fresh one when a turn of another
    session arrives (`if ctx.session is not self.session`), as if it served one conversation at a time.

    Serving two agents at once, the second agent's turn replaces the lock while the first agent's reads
    hold it; when those reads end they give their hold back to the second agent's lock
    (`self.lock.release(...)`). The first agent's patch waits forever behind reads its lock still
    counts, and the second agent's patch starts while its own reads run. Design note 004's fixes (a
    working directory per task, a file lock) cannot help: the tools never see the mix-up. Every
    single-agent scenario passes (one session per run). -> `hang` (and the other agent's turn out of
    its model order: `stale-read` / `torn-read`).
    """

    description = "Codex's fair RwLock per session, the current session's lock kept on the runtime object"
    session: dict[str, Any] | None = None
    lock: _RwLock

    def __init__(self, in_session: bool = False) -> None:
        super().__init__()
        #: The fix: the lock lives in the session (`ctx.session`), found there by each call.
        self.in_session = in_session
        self.name = "session_lock_on_the_runtime" + ("[in-session]" if in_session else "")

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        if self.session is not ctx.session:  # "a new conversation": a fresh lock for it
            self.session, self.lock = ctx.session, _RwLock(ctx)
        return Plan.parallel(batch, summary="every call through the session's reader/writer lock")

    def executor(self, runtime: BatchRuntime, batch: Batch) -> CallExecutor:
        ctx = runtime.ctx

        def execute(call: ToolCall) -> CallProcess:
            exclusive = not concurrency_safe(call, ctx)
            lock = ctx.session.setdefault("rwlock", _RwLock(ctx)) if self.in_session else self.lock
            yield lock.acquire(exclusive)
            try:
                return (yield from run_call(runtime, call))
            finally:
                # the bug: without in_session, whichever session's lock the runtime holds by now
                (lock if self.in_session else self.lock).release(exclusive)

        return execute


# -- loop policies (the loop-policy oracle) ----------------------------------------------------------


class RetryKeyedByCallId(TaskLoop):
    """Seed 004's TaskLoop whose ToolRetryPolicy keys its list of identical failures by the tool-call
    id the model sends (OpenAI's `tool_call_id`), as if a retry were the same call sent again. Every
    call a model makes has a fresh id (`crm`, `crm@2`, `crm@3` ...), so no list ever holds more than
    one failure: the tool is never disabled, and a model that keeps retrying a broken CRM query burns
    all 15 rounds while every scheduling oracle holds. Seed 004 section 5.2 -> `retry-limit-exceeded`.
    """

    name = "retry_keyed_by_call_id"
    description = "seed 004's TaskLoop, same-signature failures counted per tool-call id (never disables)"

    def signature(self, call: EmittedCall) -> str:
        return f"{call.id}:{signature(call)}"  # the bug: the id is new for every call the model makes
