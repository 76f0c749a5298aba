"""The thread bridge: thread-based executors (`ThreadPoolExecutor`, `threading.Thread`, `queue`,
`time.sleep`) run unchanged and deterministically on the virtual clock.

Modules: `turnstile` (real OS threads, one running at a time), `primitives` (what `threading`,
`queue`, `time` and `concurrent.futures` give a bridge thread), `patches` (installing them for the
duration of a batch), `reaper` (releasing threads of a run that stops while they wait), `results`
(what the executor returned) and `adapter` (`from_threads`). Recipe: docs/threads.md.
"""

from harness.bridges.threads.adapter import FromThreads, InterruptFlag, ThreadTools, from_threads
from harness.bridges.threads.turnstile import ThreadReleased

__all__ = ["FromThreads", "InterruptFlag", "ThreadReleased", "ThreadTools", "from_threads"]
