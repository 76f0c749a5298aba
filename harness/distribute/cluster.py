"""Chunks of runs on a Dask distributed cluster (`--dask ADDRESS`, or `--dask local`).

Owns connecting (to an existing `dask scheduler`'s address, or to a `LocalCluster` started for one
command and closed after it), the lazy import of dask (`DaskUnavailable` names the `[dask]` extra
when it is missing), submitting chunks (all at once, or streamed from a lazy source with a few per
worker in flight), handing their results back (as they finish, or in submission order) and
cancelling what is left when the caller stops early or fails. One chunk at a
time runs in each worker process, whatever its thread count: the harness keeps per-process caches
that threads would share, and the GIL gives pure-Python runs nothing from threads anyway.

It never decides what a chunk holds or what its results mean (harness.sweep and harness.explore do,
with harness.distribute.chunks sizing a sweep's chunks,
and sort or order them so that no result depends on which worker ran what, or when), and it never
reaches the simulation.

Limit: a worker runs tasks off its main thread, where no SIGALRM can be armed, so `--wall-timeout`
does not stop a scheduler that spins in Python on a cluster (a local run does), nor `--import-timeout`
an import that never ends (a worker imports a named scheduler before the first run of each chunk).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from harness.distribute.workers import cores

#: The extra that installs dask and distributed (pyproject.toml).
EXTRA = "pip install 'harness[dask]'  (dask[distributed] >= 2026.8.0)"

#: Seconds to wait for a scheduler to answer (a wrong address is a usage error soon), then for its
#: first worker to join (workers may still be starting).
CONNECT_TIMEOUT_S = 10.0
WORKERS_TIMEOUT_S = 60.0

#: Chunks in flight per worker in `Cluster.stream`: one running, one waiting on the worker (Dask hands
#: a one-thread worker two root tasks), so a worker never waits for a round trip between chunks.
AHEAD = 2

#: Results between two counts of a cluster's workers during a stream (each count is a round trip).
WORKERS_REFRESH = 16

_END: Any = object()

#: A LocalCluster's settings: its scheduler, client and workers share this machine's cores with the
#: runs, so their housekeeping is made rarer. No statistical profiler in the workers (it samples the
#: runs' deep stacks every 10 ms, ~4% of a sweep); the event-loop health tick, the system monitor and
#: the nannies' memory poll at a second or more instead of 20, 500 and 100 ms (an idle LocalCluster of
#: 2 workers took 4.3% of a core, client and workers together; 1.2% so).
QUIET_LOCAL = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
               "distributed.admin.system-monitor.interval": "5s", "distributed.worker.memory.monitor-interval": "1s"}

_T = TypeVar("_T")
_R = TypeVar("_R")


class DaskUnavailable(Exception):
    """`--dask` without the `[dask]` extra, or a scheduler that cannot be reached."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise DaskUnavailable(f"--dask needs the dask extra: {EXTRA}") from exc
    return distributed


#: One chunk at a time per worker process (see the module docstring).
_ONE_AT_A_TIME = threading.Lock()


def _serially(fn: Callable[..., _R], *args: Any) -> _R:
    with _ONE_AT_A_TIME:
        return fn(*args)


class Cluster:
    """A connected Dask client and what it is connected to."""

    def __init__(self, client: Any, description: str) -> None:
        self.client = client
        self.description = description

    @property
    def workers(self) -> int:
        """Worker processes now connected (each runs one chunk at a time)."""
        return max(1, len(self.client.scheduler_info(n_workers=-1)["workers"]))

    def _submit(self, fn: Callable[..., _R], chunks: Sequence[_T], shared: tuple[Any, ...]) -> list[Any]:
        # Arguments every chunk needs (an exploration's scenario) go to the workers once, not per chunk.
        sent = [self.client.scatter(arg, broadcast=True, hash=False) for arg in shared]
        return [self.client.submit(_serially, fn, *sent, chunk, pure=False) for chunk in chunks]

    def stream(self, fn: Callable[..., _R], chunks: Iterable[_T], *shared: Any, ahead: int = AHEAD) -> Iterator[_R]:
        """`fn(*shared, chunk)` for every chunk, results as they finish, with `ahead` chunks per worker
        in flight: `chunks` is read lazily, one chunk after each result has been handed on (so a
        generator can size the next chunk from the results seen so far, harness.distribute.chunks),
        and the cluster never holds more than it can start soon. Workers that join meanwhile are
        counted every WORKERS_REFRESH results."""
        distributed = _distributed()
        sent = [self.client.scatter(arg, broadcast=True, hash=False) for arg in shared]
        source = iter(chunks)

        def submit() -> Any | None:
            chunk = next(source, _END)
            if chunk is _END:
                return None
            return self.client.submit(_serially, fn, *sent, chunk, pure=False)

        slots = ahead * self.workers
        live = {f for f in (submit() for _ in range(slots)) if f is not None}  # submitted, result not used yet
        pending = distributed.as_completed(list(live), loop=self.client.loop)
        try:
            for used, future in enumerate(pending, 1):
                result = future.result()
                live.discard(future)  # its result leaves the worker's memory once nothing refers to it
                del future
                yield result
                if used % WORKERS_REFRESH == 0:
                    slots = ahead * self.workers
                while len(live) < slots:  # refill: usually one chunk, for the result just used
                    refill = submit()
                    if refill is None:
                        break
                    live.add(refill)
                    pending.add(refill)
        finally:
            self.client.cancel(list(live))

    def in_order(self, fn: Callable[..., _R], chunks: Sequence[_T], *shared: Any) -> Iterator[_R]:
        """`fn(*shared, chunk)` for every chunk, results in chunk order (the cluster works ahead);
        stopping early cancels the chunks not yet used."""
        futures = self._submit(fn, chunks, shared)
        try:
            for future in futures:
                yield future.result()
        finally:
            self.client.cancel(futures)


@contextlib.contextmanager
def connect(address: str, workers: int | None = None) -> Iterator[Cluster]:
    """A cluster for the length of the block: `local` starts a LocalCluster of `workers` processes
    (default: every core) with one thread each; anything else is a scheduler's address
    (`tcp://host:8786`), whose workers are used as they are."""
    distributed = _distributed()
    if address == "local":
        count = workers or cores()
        import dask

        # Any free port for its status page: the default (8787) would be taken by a second cluster.
        with dask.config.set(QUIET_LOCAL), \
                distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                         dashboard_address=":0", silence_logs=logging.ERROR) as local, \
                distributed.Client(local, set_as_default=False) as client:
            yield Cluster(client, f"LocalCluster of {count} workers")
        return
    if workers is not None:
        raise DaskUnavailable("the number of workers is chosen only for --dask local (a cluster has its own)")
    try:
        # An address distributed cannot parse is refused before a Client exists: a Client whose
        # constructor fails on it is only half built, and its finaliser later prints a traceback
        # (after a 20 s wait) over the clean message.
        distributed.comm.get_address_host(distributed.comm.resolve_address(address))
    except (ValueError, TypeError) as exc:
        raise DaskUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise DaskUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    with client:
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise DaskUnavailable(f"no worker joined the Dask scheduler at {address} within "
                                  f"{WORKERS_TIMEOUT_S:g} s (start some: dask worker {address})") from exc
        yield Cluster(client, address)


def chunk_size(runs: int, workers: int, *, least: int = 1, most: int = 2000) -> int:
    """Large chunks (each task costs the scheduler a round trip and a pickle), but several per worker
    so that a slow chunk does not leave the others idle at the end."""
    return max(least, min(most, runs // (workers * 4) or 1))
