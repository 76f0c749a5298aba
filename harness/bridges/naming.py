"""The name an adapter gives a user's function when it is not told one: where the function comes from.

Owns `origin_name`: `from_asyncio`, `from_threads`, `from_gate` and `from_plan` name their scheduler
after the function they wrap, by module and qualified name (`acme.runtime.execute`,
`acme.runtime.Executor.run`), so that two executors both called `execute` (a runtime's buggy one and
its fix) are told apart in headers, findings, reproducers and traces. The name is in the trace's first
event, so it is part of a run's fingerprint: it must be the same in every process, which module and
qualified name are (an `id()` or a file path would not be). It never decides anything else.
"""

from __future__ import annotations

import functools
from typing import Any


def origin_name(fn: Any, fallback: str) -> str:
    """`module.qualname` of `fn` (a function, a bound method, a `functools.partial` of one, or a
    callable instance, named by its class); `fallback` when it has neither."""
    while isinstance(fn, functools.partial):  # the function it will call
        fn = fn.func
    target = fn if hasattr(fn, "__qualname__") or hasattr(fn, "__name__") else type(fn)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if not isinstance(qualname, str) or not qualname:
        return fallback
    module = getattr(target, "__module__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and module and module != "builtins" else qualname
