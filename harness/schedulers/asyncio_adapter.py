"""`from_asyncio`'s historical import path: the bridge lives in `harness.schedulers.bridge_asyncio`.

Owns nothing; re-exports the bridge's public names so existing imports keep working.
"""

from harness.schedulers.bridge_asyncio import (
    BridgeToolCall,
    ExecutorError,
    FromAsyncio,
    ScenarioLimits,
    Toolbox,
    ToolFailed,
    VirtualLoop,
    from_asyncio,
)

__all__ = ["BridgeToolCall", "ExecutorError", "FromAsyncio", "ScenarioLimits", "ToolFailed", "Toolbox", "VirtualLoop",
           "from_asyncio"]
