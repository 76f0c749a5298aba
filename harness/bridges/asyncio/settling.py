"""What a batch of `from_asyncio` comes to once its executor's task has ended, beyond the items it
returned (`results` reads those).

Owns `ExecutorError` and the checks that raise it for what a scheduler must not do (report a tool's
un-awaited coroutine as a value; report an error for a well-formed call of a known tool it never
started, while nothing had gone wrong: an exception in its glue swallowed into a result), the results
the bridge reports itself when the user interrupt cancelled the executor (each call as it stands, in
the bridge's words: `SKIPPED_BY_BRIDGE`, `unknown` for calls left running), and the ending of approval
waits of calls the executor gave up on. It never runs the executor (`bridge` does) and never judges
whether the results are right (the oracles do).
"""

from __future__ import annotations

from collections.abc import Callable
from types import CoroutineType

from harness.bridges.asyncio.toolbox import Toolbox
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scheduling.context import SchedulerContext

#: What the bridge reports for a call the executor never started when the user interrupt cancelled
#: it: the runtime itself reports nothing (its task died with CancelledError), so the text says whose.
SKIPPED_BY_BRIDGE = ("skipped (reported by the harness's asyncio bridge: the user interrupt cancelled the runtime's "
                     "executor before it started this call)")


class ExecutorError(RuntimeError):
    """The bridged executor did something a scheduler must not; the message says what."""


def check_unawaited_values(toolbox: Toolbox, results: list[CallResult]) -> None:
    """A result whose value is a tool's coroutine: the runtime called an async tool like a plain
    function (a sync tool function run on the event loop) and reported what it got back."""
    coroutines = [result for result in results if isinstance(result.value, CoroutineType)]
    if not coroutines:  # the common case: no value is a coroutine at all
        return
    made = {id(coroutine): call for call, coroutine in toolbox.made}
    for result in coroutines:
        call = made.get(id(result.value))
        if call is not None:
            raise ExecutorError(
                f"the executor reported an un-awaited coroutine of the tool {call.name} as the result of "
                f"{result.call_id}: it called the async tool like a plain function (a sync tool function run on "
                f"the event loop?). If the real tool is a plain function (blocking I/O), declare it "
                f"`[tools.{call.name}] sync = true` in the scenario: called on the loop it then holds the loop for "
                "the call and returns its value (docs/asyncio.md, \"Clocks and blocking on the loop\"); else await it")


def interrupted_results(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox) -> list[CallResult]:
    """The results the bridge reports for a runtime whose executor Ctrl-C cancelled (the runtime
    itself reports nothing: its task ended with CancelledError): each call started as it ended
    (abandoned ones `unknown`), the others skipped, in the bridge's words.

    A call whose tool task the runtime left running (it cancelled the executor's task but not the
    tool tasks it made: pydantic-ai's Ctrl-C bug) is not abandoned for it: it is reported `unknown`
    and runs on, so the oracles see it outlive the turn (`orphaned-call`), and what it does later.
    So is a call a bridge thread is running (a sync tool under `asyncio.to_thread`): cancelling the
    executor cancels the future the runtime awaited, never the thread. A call nothing awaits any more
    (a dead runtime) is abandoned as before."""
    ctx.note("asyncio: the user interrupt cancelled the executor's task; the bridge reports each call as it stands")
    results = []
    left: list[str] = []
    for call in batch:
        handles = toolbox.handles.get(call.id, [])
        if not handles:
            results.append(ctx.skip(call, SKIPPED_BY_BRIDGE))
            continue
        last = handles[-1]
        if not last.triggered:
            waiter = toolbox.waiting.get(last)
            in_thread = last in toolbox.waiting and waiter is None  # a thread cannot be cancelled
            if in_thread or (waiter is not None and not waiter.done()):
                left.append(call.id)
                what = ("the runtime stopped awaiting it, but the thread running it cannot be cancelled" if in_thread
                        else "the runtime left its tool task running")
                results.append(CallResult(call.id, Outcome.UNKNOWN, None, f"interrupted: {what}; effect unknown",
                                          len(handles), handles[0].started_ms, ctx.now))
                continue
            ctx.cancel(last, outcome=Outcome.UNKNOWN, reason="interrupted; effect unknown")
        result = last.result
        results.append(CallResult(call.id, result.outcome, result.value, result.error, len(handles),
                                  handles[0].started_ms, result.end_ms))
    if left:
        ctx.note(f"asyncio: the runtime left the tool task{'s' if len(left) > 1 else ''} of {', '.join(left)} "
                 "running after the interrupt cancelled its executor: reported unknown, "
                 f"{'they run' if len(left) > 1 else 'it runs'} on")
    return results


def approval_waits(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox,
                   results: list[CallResult]) -> list[CallResult]:
    """Calls the executor gave up on while their tool waited for the user's approval: a tool still
    asking in a thread the executor stopped waiting for stops asking now. Their results stay as the
    executor reported them (see `asking`)."""
    if not toolbox.asking:  # no tool asked the user
        return results
    for result in results:
        asking = toolbox.asking.get(result.call_id)
        if (asking is not None and not toolbox.handles.get(result.call_id) and asking.waiting
                and result.outcome is not Outcome.OK):
            asking.give_up()
    return results


def check_unstarted(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox, results: list[CallResult],
                    known: Callable[[ToolCall], bool]) -> None:
    """An error reported for a well-formed call of a known tool that never started, while nothing
    had gone wrong in the batch, is an exception inside the executor (its glue, an asyncio primitive)
    swallowed into a result: make it a scheduler error rather than a run where every oracle holds."""
    if ctx.interrupted:
        return
    for result in results:  # a loop, not `all()` over a generator: every bridged batch comes here
        if result.outcome is not Outcome.OK:
            break
    else:
        return  # nothing reported an error (the loop below skips OK results)
    if any(h.triggered and h.result.outcome is not Outcome.OK for hs in toolbox.handles.values() for h in hs):
        return
    calls = {call.id: call for call in batch}
    for result in results:
        call = calls.get(result.call_id)
        asking = toolbox.asking.get(result.call_id)
        if (call is None or result.outcome is Outcome.OK or toolbox.handles.get(call.id)
                or not known(call) or call.parsed_arguments() is None or call.id in toolbox.refused
                or (asking is not None and asking.gave_up_ms is not None)):
            continue
        raise ExecutorError(
            f"the executor reported {call.id} as {result.outcome.value} ({result.error}) without ever starting it, "
            "though its tool is known and its arguments are well-formed: an exception inside the executor before "
            "the call started (glue code, an asyncio primitive), swallowed into a result. Pass "
            "allow_unstarted_errors=True to from_asyncio if your runtime refuses calls on purpose")
