"""Local worker processes: how many a command uses, and how they are started.

Owns the default (every core this process may run on), the threshold under which that default stays
in the caller's process, and the pool's start method. It never decides what a worker runs or in
which order results are used (harness.sweep and harness.explore do, so that a result never depends
on the number of processes).
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile

#: Below this many runs the default (None: every core) stays in this process. A forkserver pool's
#: start-up is about 0.35 s on a 2-core machine (the server imports the harness once), and a checked
#: run about 1-1.5 ms, so two processes only break even at about 500 runs; 1,000 keeps a margin for
#: loaded machines, and `harness explore`'s default budget (100 runs) never pays for a pool.
AUTO_POOL_MIN_RUNS = 1000


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def processes_for(requested: int | None, runs: int) -> int:
    """The processes to use for `runs` runs: as requested, or by default (None) every core, but
    only one when there are fewer than AUTO_POOL_MIN_RUNS runs. An explicit number is always
    honoured (tests use 2 on a handful of runs to exercise the pool)."""
    if requested is not None:
        if requested < 1:
            raise ValueError("processes must be >= 1")
        return requested
    return 1 if runs < AUTO_POOL_MIN_RUNS else cores()


def pool_context() -> multiprocessing.context.BaseContext:
    """`forkserver` with the harness preloaded where the platform has it, else `spawn`.

    Both start workers from a clean process (no threads, no state inherited from the caller, e.g. a
    progress bar's refresh thread); forkserver then forks each worker from a warm server, so the
    harness is imported once rather than once per worker. The forkserver listens on a Unix socket
    under the temporary directory: where that path would be too long for a socket (a deep `TMPDIR`,
    as test runners make), workers are spawned instead.
    """
    if "forkserver" in multiprocessing.get_all_start_methods() and _socket_fits(tempfile.gettempdir()):
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["harness.sweep", "harness.explore.engine"])
        return context
    return multiprocessing.get_context("spawn")


#: The longest path a Unix socket may have (Linux: 108 bytes with the terminating NUL; macOS: 104).
_SOCKET_PATH_MAX = 103


def _socket_fits(temporary: str) -> bool:
    """Whether multiprocessing's forkserver socket (`TMP/pymp-XXXXXXXX/listener-XXXXXXXX`) fits."""
    return len(os.fsencode(temporary)) + len("/pymp-xxxxxxxx/listener-xxxxxxxx") <= _SOCKET_PATH_MAX
