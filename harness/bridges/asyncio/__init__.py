"""The asyncio bridge: a runtime's real asyncio executor, run unchanged on the virtual clock.

The user's `async def execute(tool_calls, tools)` (or `execute(tool_calls)` with its own module-level
tool table passed as `registry=`) runs on an asyncio event loop whose clock is the SimPy clock:
`asyncio.sleep`, `wait_for`, `gather`, `Semaphore`, `TaskGroup` and friends behave as in production,
in virtual milliseconds. One loop serves a whole run (leftover tasks run on into later turns, then
are cancelled and drained); the same loop object is reused by the next run in the thread, so asyncio
primitives created at import keep working. Modules: `loop` (the virtual loop and its lending),
`calls` (call objects and scenario limits), `toolbox` (bridged tools), `threads` (work handed to a
thread, `run_in_executor` / `asyncio.to_thread`, on the thread bridge's turnstile: a sync tool there
blocks its thread until the call ends), `results` (reading what the executor returns), `settling`
(the checks of what it did, and what the bridge reports when the interrupt cancelled it), `run_state`
(one run's loop and the pump that steps it), `bridge` (the scheduler). The bridge never decides an
order: the user's code does.

    async def execute(tool_calls, tools):                      # seed 003's shape
        async def one(tc):
            try:
                args = json.loads(tc.function.arguments)       # or tc["function"]["arguments"]
                return {"id": tc.id, "success": True,
                        "result": await asyncio.wait_for(tools[tc.function.name](**args), timeout=10)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return await asyncio.gather(*(one(tc) for tc in tool_calls))

    scheduler = from_asyncio(execute)
"""

from harness.bridges.asyncio.bridge import FromAsyncio, InterruptHook, from_asyncio
from harness.bridges.asyncio.calls import BridgeFunction, BridgeToolCall, ScenarioLimits
from harness.bridges.asyncio.loop import VirtualLoop
from harness.bridges.asyncio.run_state import RunState
from harness.bridges.asyncio.settling import ExecutorError
from harness.bridges.asyncio.toolbox import Toolbox, ToolFailed

__all__ = ["BridgeFunction", "BridgeToolCall", "ExecutorError", "FromAsyncio", "InterruptHook", "RunState",
           "ScenarioLimits", "ToolFailed", "Toolbox", "VirtualLoop", "from_asyncio"]
