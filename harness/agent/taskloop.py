"""`taskloop`: seed 004's TaskLoop (hermes-agent's task loop as the article describes it).

Owns that policy: at most `max_round` model decisions (15, its AGENT_MAX_ROUND); four action types;
an `invalid` decision (unparseable output, wrong field names) and a tool_call naming a tool the
registry does not know are re-prompted with an error in the context and counted, never executed;
`ToolRetryPolicy`: the same tool with the same argument signature failing with the same error
`retry_same_signature + 1` times (2 + 1 by default) marks the tool unavailable for the rest of the
task, and later calls to it are refused with an error the model reads; a `ContextWindow` of
`context_messages` (20) messages, where the system prompt and the user's task are never dropped and an
observation longer than `observation_chars` (600) is compressed by its rule (keep the lines with
totals, %, amounts, conclusions, errors; at most 30 lines, cut at the limit); a replanning summary
(goal, done, failed, unavailable) put at the front every `replan_every` (5) rounds; `ask_user` waits
for the scripted user's reply and goes on. Every step is an event on the bus (into the trace).

Where seed 004's loop runs one tool per decision, this one runs a decision's whole batch through
the scheduler under test. It never schedules calls itself.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from harness.agent.runtime import (
    AGENT_FINISHED,
    AGENT_STARTED,
    CONTEXT_UPDATED,
    HUMAN_CONFIRM_REQUIRED,
    TOOL_ERROR,
    TOOL_FINISHED,
    TOOL_STARTED,
    LoopLimits,
    Outcome,
    Request,
    RunCalls,
    Task,
    observation,
)
from harness.agent.spec import ActionKind, AgentSpec, EmittedCall, Message
from harness.model import CallResult
from harness.model import Outcome as CallOutcome

SYSTEM = "You are hermes-agent. Decide the next action: tool_call, final_answer, ask_user."
REPROMPT = "The model returned an invalid action; re-plan and answer with a valid one."
#: Seed 004's ContextCompressor marks (total, sum, %, yuan, conclusion, error), plus their English.
IMPORTANT = ("总", "合计", "%", "元", "结论", "Error", "错误", "error", "total")


class ContextWindow:
    """Seed 004's ContextWindow: keeps the last `size` messages, never the system prompt or task."""

    def __init__(self, size: int, observation_chars: int) -> None:
        self.size, self.observation_chars = size, observation_chars
        self.pinned: list[Message] = []
        self.summary: Message | None = None
        self.recent: list[Message] = []
        self.dropped = 0

    @property
    def messages(self) -> list[Message]:
        return [*self.pinned, *([self.summary] if self.summary else []), *self.recent]

    def pin(self, message: Message) -> None:
        self.pinned.append(message)

    def add(self, message: Message) -> tuple[bool, int]:
        """Add a message (compressing a long observation); returns (compressed, dropped now)."""
        compressed = False
        if message.role == "tool" and len(message.content) > self.observation_chars:
            message = Message(message.role, compress(message.content, self.observation_chars), message.call_id)
            compressed = True
        self.recent.append(message)
        room = max(0, self.size - len(self.pinned) - (1 if self.summary else 0))
        dropped = max(0, len(self.recent) - room)
        if dropped:
            self.recent = self.recent[dropped:]
            self.dropped += dropped
        return compressed, dropped


def compress(text: str, limit: int) -> str:
    """Seed 004's `ContextCompressor.compress`: the important lines, at most 30, cut at `limit`."""
    if len(text) <= limit:
        return text
    kept = [line for line in text.split("\n") if any(mark in line for mark in IMPORTANT)]
    joined = "\n".join(kept[:30])
    return joined[:limit] + " ...(truncated)"


def signature(call: EmittedCall) -> str:
    """Tool plus canonical arguments (the raw text when it is not JSON)."""
    try:
        arguments = json.dumps(json.loads(call.arguments), sort_keys=True)
    except ValueError:
        arguments = call.arguments
    return f"{call.name}:{arguments}"


class TaskLoop:
    name = "taskloop"
    description = ("seed 004's TaskLoop: max_round 15, invalid re-prompted, a hint after 2 failures of a tool in "
                   "a row, same error 3 times disables a tool, "
                   "20-message context window, observations over 600 chars compressed, replanning summary")
    source = "seed 004"
    #: AGENT_MAX_ROUND, and ToolRetryPolicy's max_retry_same_signature (seed 004).
    MAX_ROUND = 15
    RETRY_SAME_SIGNATURE = 2
    #: Consecutive failed calls of one tool after which the model gets seed 004's "may be unavailable,
    #: consider an alternative" hint (its TOOL_ERROR subscriber); 0: no hint.
    FAILURE_HINT_AFTER = 2

    def limits(self, spec: AgentSpec) -> LoopLimits:
        """What this loop enforces (the loop-policy oracle holds it to them): the scenario's settings,
        else seed 004's defaults."""
        return LoopLimits(spec.setting("max_round", self.MAX_ROUND),
                          spec.setting("retry_same_signature", self.RETRY_SAME_SIGNATURE))

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        spec = task.spec
        limits = self.limits(spec)
        assert limits.max_round is not None and limits.retry_same_signature is not None
        max_round, retries = limits.max_round, limits.retry_same_signature
        replan_every = spec.setting("replan_every", 5)
        context = ContextWindow(spec.setting("context_messages", 20), spec.setting("observation_chars", 600))
        context.pin(Message("system", SYSTEM))
        context.pin(Message("user", spec.task))
        task.emit(AGENT_STARTED, loop=self.name, task=spec.task, max_round=max_round)
        errors: dict[str, list[str]] = {}
        # Seed 004's TOOL_ERROR subscriber: a tool whose calls failed this many times in a row (any
        # arguments) gets a hint in the context, before the same-signature limit disables it.
        hint_after = spec.setting("failure_hint_after", self.FAILURE_HINT_AFTER)
        streaks: dict[str, int] = {}
        invalid = 0
        reprompted = False
        for round_ in range(1, max_round + 1):
            if replan_every and round_ > 1 and (round_ - 1) % replan_every == 0:
                context.summary = Message("system", _summary(task))
                task.emit(CONTEXT_UPDATED, round=round_, change="replan", messages=len(context.messages))
            action = yield from task.decide(round_, context.messages, reprompted=reprompted)
            reprompted = False
            if action.kind is ActionKind.FINAL_ANSWER:
                task.emit(AGENT_FINISHED, round=round_, status="final_answer", answer=action.content)
                return task.outcome("final_answer", action.content, round_, invalid)
            if action.kind is ActionKind.ASK_USER:
                task.emit(HUMAN_CONFIRM_REQUIRED, round=round_, question=action.content)
                if action.reply is None:
                    task.emit(AGENT_FINISHED, round=round_, status="ask_user", detail="the user never answered")
                    return task.outcome("ask_user", action.content, round_, invalid, "the user never answered")
                yield task.reply_pause(action, round_)
                task.replies.append(action.reply)
                context.add(Message("assistant", action.content))
                self._added(task, context, Message("user", action.reply), round_)
                continue
            unknown = [c.name for c in action.calls if c.name not in task.known_tools]
            if action.kind is ActionKind.INVALID or unknown or not action.calls:
                invalid += 1
                reprompted = True
                problem = (f"unknown tool {unknown[0]!r}" if unknown else action.problem or "unparseable output")
                self._added(task, context, Message("error", f"{REPROMPT} ({problem})"), round_, rejected=problem)
                continue
            refused = [c for c in action.calls if c.name in task.unavailable]
            runnable = tuple(c for c in action.calls if c.name not in task.unavailable)
            context.add(Message("assistant", json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments}
                                                         for c in action.calls], ensure_ascii=False)))
            results: tuple[CallResult, ...] = ()
            if runnable:
                for call in runnable:
                    task.emit(TOOL_STARTED, round=round_, call=call.id, tool=call.name)
                results = tuple((yield RunCalls(runnable, f"round-{round_}")))
                task.tool_calls += len(runnable)
            now = task.kernel.now
            by_id = {r.call_id: r for r in results}
            for call in action.calls:
                hint = None
                if call in refused:
                    result = CallResult(call.id, CallOutcome.ERROR, None,
                                        f"tool {call.name!r} is unavailable for this task (it failed the same way "
                                        f"{retries + 1} times)", 0, now, now)
                    task.emit(TOOL_ERROR, round=round_, call=call.id, tool=call.name, error=result.error,
                              refused=True)
                else:
                    found = by_id.get(call.id)
                    if found is None:
                        continue  # the scheduler reported no result for it: the protocol oracle says so
                    result = found
                    if result.ok:
                        errors.pop(self.signature(call), None)
                        streaks.pop(call.name, None)
                        task.emit(TOOL_FINISHED, round=round_, call=call.id, tool=call.name)
                    else:
                        task.emit(TOOL_ERROR, round=round_, call=call.id, tool=call.name, error=result.error)
                        streaks[call.name] = streaks.get(call.name, 0) + 1
                        if hint_after and streaks[call.name] == hint_after:
                            hint = Message("system", f"Tool {call.name} may be unavailable: its last {hint_after} "
                                           f"calls failed ({result.error or result.outcome.value}); consider an "
                                           "alternative.")
                        seen = errors.setdefault(self.signature(call), [])
                        seen.append(result.error or result.outcome.value)
                        if (len(seen) >= retries + 1 and len(set(seen[-(retries + 1):])) == 1
                                and call.name not in task.unavailable):
                            task.unavailable.append(call.name)
                            self._added(task, context, Message(
                                "system", f"Tool {call.name} is disabled for this task: it failed {retries + 1} times "
                                f"with the same error ({seen[-1]})."), round_, disabled=call.name)
                task.record([result])
                self._added(task, context, Message("tool", observation(result), call.id), round_)
                if hint is not None:
                    self._added(task, context, hint, round_, hinted=call.name)
        task.emit(AGENT_FINISHED, round=max_round, status="max_round",
                  detail=f"more than {max_round} rounds: the task was stopped (AgentLoopLimitError)")
        return task.outcome("max_round", "", max_round, invalid, f"exceeded max_round {max_round}")

    def signature(self, call: EmittedCall) -> str:
        """What makes two failing calls "the same" for ToolRetryPolicy: tool plus canonical arguments."""
        return signature(call)

    @staticmethod
    def _added(task: Task, context: ContextWindow, message: Message, round_: int, **change: Any) -> None:
        compressed, dropped = context.add(message)
        task.emit(CONTEXT_UPDATED, round=round_, role=message.role, call=message.call_id,
                  compressed=compressed or None, dropped=dropped or None, messages=len(context.messages),
                  **{k: v for k, v in change.items() if v is not None})


def _summary(task: Task) -> str:
    """Seed 004's Replanner: the goal, what is done, what failed, what is unavailable."""
    done = [call for call, r in task.results.items() if r.ok]
    failed = [call for call, r in task.results.items() if not r.ok]
    return (f"Replan. Goal: {task.spec.task} | done: {', '.join(done) or '-'} | failed: {', '.join(failed) or '-'}"
            f" | unavailable: {', '.join(task.unavailable) or '-'}")
