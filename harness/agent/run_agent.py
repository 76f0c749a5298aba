"""`run_agent`: seed 003's agent loop, as its article writes it.

Owns that policy: `for step in range(8)`: ask the model; a response without tool calls is returned
as the answer (a final answer, but also a question for the user or output the loop could not parse:
seed 003 has no parser, so what is not a tool call *is* the answer); otherwise append the response,
run the batch (unknown tools included: they fail as the executor reports them) and append one tool
message per result with its `tool_call_id`, the result as JSON. No retry policy, no context window,
no replanning. After 8 steps it stops with "任务执行步骤超过限制，已停止继续调用工具。".

Seed 003 has no event bus; the same agent events are written to the trace anyway, so reports of
both loops read alike. It never schedules calls itself.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from harness.agent.runtime import (
    AGENT_FINISHED,
    AGENT_STARTED,
    TOOL_ERROR,
    TOOL_FINISHED,
    TOOL_STARTED,
    LoopLimits,
    Outcome,
    Request,
    RunCalls,
    Task,
)
from harness.agent.spec import ActionKind, AgentSpec, Message

SYSTEM = ("你是一名技术故障处理助手。1. 互不依赖的只读查询可以同时调用；2. 写操作必须等待必要的查询和分析结果；"
          "3. 工具调用失败时，不能把失败解释为没有异常；4. 高风险操作必须等待用户确认；5. 最终结论必须说明依据。")
STEP_LIMIT = "任务执行步骤超过限制，已停止继续调用工具。"


class RunAgent:
    name = "run_agent"
    description = "seed 003's run_agent: 8 steps; a response without tool calls is the answer; no retry policy"
    source = "seed 003"
    #: `for step in range(8)`.
    MAX_ROUND = 8

    def limits(self, spec: AgentSpec) -> LoopLimits:
        """Its step limit (the scenario's `max_round`, else 8); no same-signature limit: seed 003 has none."""
        return LoopLimits(spec.setting("max_round", self.MAX_ROUND), None)

    def __call__(self, task: Task) -> Generator[Request, Any, Outcome]:
        steps = self.limits(task.spec).max_round or self.MAX_ROUND
        messages = [Message("system", SYSTEM), Message("user", task.spec.task)]
        task.emit(AGENT_STARTED, loop=self.name, task=task.spec.task, max_round=steps)
        for step in range(1, steps + 1):
            action = yield from task.decide(step, messages)
            if action.kind is not ActionKind.TOOL_CALL or not action.calls:
                status = {ActionKind.FINAL_ANSWER: "final_answer", ActionKind.ASK_USER: "ask_user"}.get(
                    action.kind, "unparsed-answer")
                task.emit(AGENT_FINISHED, round=step, status=status, answer=action.content)
                return task.outcome(status, action.content, step, 0,
                                    "" if status == "final_answer" else "a response without tool calls is returned "
                                    "as the answer")
            messages.append(Message("assistant", json.dumps(
                [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in action.calls], ensure_ascii=False)))
            for call in action.calls:
                task.emit(TOOL_STARTED, round=step, call=call.id, tool=call.name)
            results = tuple((yield RunCalls(action.calls, f"step-{step}")))
            task.ran(action.calls)
            task.record(results)
            for result in results:
                tool = next((c.name for c in action.calls if c.id == result.call_id), "")
                if result.ok:
                    task.emit(TOOL_FINISHED, round=step, call=result.call_id, tool=tool)
                else:
                    task.emit(TOOL_ERROR, round=step, call=result.call_id, tool=tool, error=result.error)
                body = {"call_id": result.call_id, "tool": tool, "success": result.ok,
                        "result": result.value, "error": result.error}
                messages.append(Message("tool", json.dumps(body, ensure_ascii=False), result.call_id))
        task.emit(AGENT_FINISHED, round=steps, status="max_round", answer=STEP_LIMIT)
        return task.outcome("max_round", STEP_LIMIT, steps, 0, f"exceeded {steps} steps")
