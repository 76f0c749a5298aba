"""`taskloop`: seed 004's TaskLoop (hermes-agent's task loop as the article describes it).

Owns that policy: at most `max_round` model decisions (15, its AGENT_MAX_ROUND); four action types;
an `invalid` decision (unparseable output, wrong field names) and a tool_call naming a tool the
registry does not know are re-prompted with an error in the context and counted, never executed;
`ToolRetryPolicy`: the same tool with the same argument signature failing with the same error
`retry_same_signature + 1` times (2 + 1 by default) marks the tool unavailable for the rest of the
task, and later calls to it are refused with an error the model reads (a model that calls it again is
stuck: the loop stops and asks the user, `ask_when_stuck`; `ask_after_failed_rounds` failing rounds in
a row stop it too); a `ContextWindow` of
`context_messages` (20) messages, where the system prompt and the user's task are never dropped, old
successes go before old failures and the last two rounds go last, and an observation longer than
`observation_chars` (600) is compressed by its rule, over a text value's own lines (keep the lines with
totals, %, amounts, conclusions, errors; at most 30 lines, cut at the limit); what the window drops is
archived, and the loop's own `recall` tool gives it back; a replanning summary
(goal, done, failed, unavailable) put at the front every `replan_every` (5) rounds; `ask_user` waits
for the scripted user's reply and goes on. Every step is an event on the bus (into the trace).

Where seed 004's loop runs one tool per decision, this one runs a decision's whole batch through
the scheduler under test. It never schedules calls itself.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
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
    """Seed 004's ContextWindow: the last `size` messages, never the system prompt or the task.

    When it is full, what goes first is what seed 004 drops first (sections 3.3 and 5.3): the oldest
    message that is neither a failure nor from the last two rounds, then the oldest failure outside
    them; the last two rounds go only when nothing else is left. What goes is kept in `archive`
    (its ConversationStore's long-term part), oldest first, where the loop's `recall` tool finds it."""

    def __init__(self, size: int, observation_chars: int) -> None:
        self.size, self.observation_chars = size, observation_chars
        self.pinned: list[Message] = []
        self.summary: Message | None = None
        self.recent: list[Message] = []
        self.archive: list[tuple[int, Message]] = []  # (round, message), oldest first
        self.dropped = 0
        self._kept: list[tuple[int, bool]] = []  # each recent message's (round, failure)
        self._round = 0

    @property
    def messages(self) -> list[Message]:
        return [*self.pinned, *([self.summary] if self.summary else []), *self.recent]

    def pin(self, message: Message) -> None:
        self.pinned.append(message)

    def add(self, message: Message, round_: int = 0, *, failure: bool = False,
            compressed: bool = False) -> tuple[bool, int]:
        """Add a message of round `round_` (a long observation compressed, unless `compressed` says
        it was already); returns (compressed, dropped now)."""
        if not compressed and message.role == "tool" and len(message.content) > self.observation_chars:
            message = Message(message.role, compress(message.content, self.observation_chars), message.call_id)
            compressed = True
        self.recent.append(message)
        self._kept.append((round_, failure))
        self._round = max(self._round, round_)
        room = max(0, self.size - len(self.pinned) - (1 if self.summary else 0))
        dropped = 0
        while len(self.recent) > room:
            victim = self._victim()
            self.archive.append((self._kept.pop(victim)[0], self.recent.pop(victim)))
            dropped += 1
        self.dropped += dropped
        return compressed, dropped

    def _victim(self) -> int:
        """Which recent message goes: seed 004's order (see the class)."""
        older = [i for i, (round_, _) in enumerate(self._kept) if round_ < self._round - 1]
        for i in older:
            if not self._kept[i][1]:
                return i
        return older[0] if older else 0


#: Seed 004's recall_tool: the model asks for context the window archived.
RECALL = "recall"


def recall(call: EmittedCall, archive: Sequence[tuple[int, Message]], now: int) -> CallResult:
    """The loop's answer to a `recall` call: the archived messages of `{"round": N}`, those containing
    `{"query": "text"}`, or all of them (`{}`), oldest first, with how many the archive holds."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict) or not set(arguments) <= {"round", "query"} \
            or not isinstance(arguments.get("round", 0), int) or not isinstance(arguments.get("query", ""), str):
        return CallResult(call.id, CallOutcome.ERROR, None, 'recall takes {"round": N}, {"query": "text"} or {}',
                          0, now, now)
    found = [{"round": round_, "role": m.role, "content": m.content, **({"call": m.call_id} if m.call_id else {})}
             for round_, m in archive
             if arguments.get("round", round_) == round_ and arguments.get("query", "") in m.content]
    return CallResult(call.id, CallOutcome.OK, {"archived": len(archive), "messages": found}, None, 1, now, now)


def observed(result: CallResult, limit: int) -> tuple[str, bool]:
    """The observation the model reads of `result`, and whether it was compressed: longer than
    `limit`, a text value (a log, a report) is compressed by its own lines, anything else by the lines
    of the observation's JSON (one field a line); never the JSON encoding of a text, one line."""
    text = observation(result)
    if len(text) <= limit:
        return text, False
    if result.ok and isinstance(result.value, str) and "\n" in result.value:
        body = {"call_id": result.call_id, "outcome": result.outcome.value, "value": compress(result.value, limit)}
        return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True), True
    return compress(text, limit), True


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
    #: Tools the loop itself answers (a model's rules may call them without the scenario declaring them).
    LOOP_TOOLS = (RECALL,)
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
        # Seed 004's "human on the loop": stuck (a disabled tool called again) or failing round after
        # round, the loop stops and asks the user instead of going on.
        ask_when_stuck = spec.setting("ask_when_stuck", 1)
        ask_after_failed_rounds = spec.setting("ask_after_failed_rounds", 0)
        failed_rounds = 0
        # A scenario tool of the same name wins over the loop's own.
        loop_tools = tuple(name for name in self.LOOP_TOOLS if name not in task.known_tools)
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
                context.add(Message("assistant", action.content), round_)
                self._added(task, context, Message("user", action.reply), round_)
                continue
            unknown = [c.name for c in action.calls if c.name not in task.known_tools and c.name not in loop_tools]
            if action.kind is ActionKind.INVALID or unknown or not action.calls:
                invalid += 1
                reprompted = True
                problem = (f"unknown tool {unknown[0]!r}" if unknown else action.problem or "unparseable output")
                self._added(task, context, Message("error", f"{REPROMPT} ({problem})"), round_, failure=True,
                            rejected=problem)
                continue
            refused = [c for c in action.calls if c.name in task.unavailable]
            # The loop's own tool answers from its archive, here and now: the scheduler never sees it.
            runnable = tuple(c for c in action.calls if c.name not in task.unavailable and c.name not in loop_tools)
            context.add(Message("assistant", json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments}
                                                         for c in action.calls], ensure_ascii=False)), round_)
            results: tuple[CallResult, ...] = ()
            if runnable:
                for call in runnable:
                    task.emit(TOOL_STARTED, round=round_, call=call.id, tool=call.name)
                results = tuple((yield RunCalls(runnable, f"round-{round_}")))
                task.ran(runnable)
            now = task.kernel.now
            by_id = {r.call_id: r for r in results}
            went: list[bool] = []  # each answered call of the round: did it succeed?
            for call in action.calls:
                hint = None
                if call.name in loop_tools and call not in refused:
                    result = recall(call, context.archive, now)
                    task.emit(TOOL_FINISHED if result.ok else TOOL_ERROR, round=round_, call=call.id, tool=call.name,
                              error=result.error, loop_tool=True)
                elif call in refused:
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
                                f"with the same error ({seen[-1]})."), round_, failure=True, disabled=call.name)
                task.record([result])
                went.append(result.ok)
                content, shortened = observed(result, context.observation_chars)
                self._added(task, context, Message("tool", content, call.id), round_, failure=not result.ok,
                            compressed=shortened)
                if hint is not None:
                    self._added(task, context, hint, round_, failure=True, hinted=call.name)
            failed_rounds = failed_rounds + 1 if went and not any(went) else 0
            question = None
            if ask_when_stuck and refused:
                question = (f"I am stuck: the model called {', '.join(dict.fromkeys(c.name for c in refused))} "
                            "again after it was disabled for failing. How should I go on?")
            elif ask_after_failed_rounds and failed_rounds >= ask_after_failed_rounds:
                question = f"Every tool call failed {failed_rounds} rounds in a row. How should I go on?"
            if question is not None:
                task.emit(HUMAN_CONFIRM_REQUIRED, round=round_, question=question, by="loop")
                detail = "the loop stopped to ask the user (human on the loop)"
                task.emit(AGENT_FINISHED, round=round_, status="ask_user", detail=detail)
                return task.outcome("ask_user", question, round_, invalid, detail)
        task.emit(AGENT_FINISHED, round=max_round, status="max_round",
                  detail=f"more than {max_round} rounds: the task was stopped (AgentLoopLimitError)")
        return task.outcome("max_round", "", max_round, invalid, f"exceeded max_round {max_round}")

    def signature(self, call: EmittedCall) -> str:
        """What makes two failing calls "the same" for ToolRetryPolicy: tool plus canonical arguments."""
        return signature(call)

    @staticmethod
    def _added(task: Task, context: ContextWindow, message: Message, round_: int, *, failure: bool = False,
               compressed: bool = False, **change: Any) -> None:
        compressed, dropped = context.add(message, round_, failure=failure, compressed=compressed)
        task.emit(CONTEXT_UPDATED, round=round_, role=message.role, call=message.call_id,
                  compressed=compressed or None, dropped=dropped or None, messages=len(context.messages),
                  **{k: v for k, v in change.items() if v is not None})


def _summary(task: Task) -> str:
    """Seed 004's Replanner: the goal, what is done, what failed, what is unavailable."""
    done = [call for call, r in task.results.items() if r.ok]
    failed = [call for call, r in task.results.items() if not r.ok]
    return (f"Replan. Goal: {task.spec.task} | done: {', '.join(done) or '-'} | failed: {', '.join(failed) or '-'}"
            f" | unavailable: {', '.join(task.unavailable) or '-'}")
