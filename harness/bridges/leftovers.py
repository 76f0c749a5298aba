"""What a bridge does with the work a runtime left running after its batch: it runs on, then ends.

Owns `RUN_ON_MS` and the words both bridges (`from_asyncio`, `from_threads`) use for it. A task or
thread the runtime left running when its executor returned, raised or was cancelled is not tidied away
at its batch's end: it runs on in virtual time while the run's later batches run and, once they are
over, for up to `RUN_ON_MS` more, so what it does later (a call it finishes or starts, its effect on the
world) lands in the run where the oracles see it (`orphaned-call`, `start-after-interrupt`). Only then
is it ended (a task cancelled, a thread released). It never runs or ends anything itself.
"""

from __future__ import annotations

#: How much virtual time what a runtime left running gets, once the run's batches are over, before it is
#: ended. Longer than any latency or grace in the built-in scenarios; a task or thread still waiting then
#: (a timer an hour away, an event nobody sets) is ended as `asyncio.run` or the process's exit would end
#: it. Never beyond the run's virtual-time bound.
RUN_ON_MS = 60_000


def left_running(ended: str) -> str:
    """The trace note's words for leftovers: `ended` is what happens to them at the horizon
    ("cancelled", "released")."""
    return (f"the runtime left them running: they run on, up to {RUN_ON_MS} ms after the run's last batch, "
            f"then are {ended}")
