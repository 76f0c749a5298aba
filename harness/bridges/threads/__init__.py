"""The thread bridge: thread-based executors (`ThreadPoolExecutor`, `threading.Thread`, `queue`,
`time.sleep`) run unchanged and deterministically on the virtual clock.

Modules: `turnstile` (real OS threads, one running at a time), what `threading`, `queue`, `time`,
`os` and `concurrent.futures` give a bridge thread — `primitives` (locks, conditions, semaphores,
events), `thread` (`Thread`, `Timer`), `queues` (`SimpleQueue`, `Future`), `virtual_time` (`sleep` and
the clocks), `host` (the declared machine's facts) —, `patches` (installing them for the duration of a
batch), `pools` (the real pool's numbering and worker registry while batches run), `reaper`
(releasing threads of a run that stops while they wait), `results` (what the executor returned) and
`adapter` (`from_threads`). Recipe: docs/threads.md.
"""

from harness.bridges.threads.adapter import FromThreads, InterruptFlag, ThreadTools, from_threads
from harness.bridges.threads.turnstile import ThreadReleased

__all__ = ["FromThreads", "InterruptFlag", "ThreadReleased", "ThreadTools", "from_threads"]
