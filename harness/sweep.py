"""Sweeps: many (scenario, scheduler, seed) cells, on one process, a local pool or a Dask cluster,
into a table.

Owns the cell grid, the worker function, handing chunks to local worker processes
(harness.distribute: how many, how they start, a pool that can always be stopped; each row comes
back as soon as it is made) or to a Dask cluster (harness.distribute.cluster) in chunks sized from
their measured cost (harness.distribute.chunks), resumption (every finished cell is appended to a
JSONL file at once; a restarted sweep skips the cells already there, and a torn last line is
ignored) and the final table, sorted by cell so that the result does not depend on the number of
processes or the order work finished in. Only `to_frame` imports pandas. It never interprets
results (reports do).
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.atomic import OutputError, append_lines
from harness.distribute.pool import WorkerPool
from harness.distribute.workers import processes_for
from harness.oracles import check
from harness.policies.registry import build_scheduler
from harness.run import run
from harness.scenario import find_scenario
from harness.scenario.trust import Trust, TrustLike
from harness.sim.collector import long_search
from harness.sim.realtime import (
    WallClockExceeded,
    resolve_import_timeout,
    resolve_wall_timeout,
    stopwatch,
    wall_limit_per_run,
    watching_user_interrupts,
)

if TYPE_CHECKING:
    import pandas

    from harness.distribute.cluster import Cluster
    from harness.run import RunResult
    from harness.scenario.spec import Scenario

#: Columns of one row, in order.
COLUMNS = ("scenario", "scheduler", "seed", "makespan_ms", "status", "passed", "labels", "calls", "fingerprint")


@dataclass(frozen=True, order=True, slots=True)
class Cell:
    scenario: str
    scheduler: str
    seed: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scenario, self.scheduler, self.seed)


#: The order of cells (the dataclass's own order, read at C speed).
_CELL_ORDER = operator.attrgetter("scenario", "scheduler", "seed")


def grid(scenarios: Sequence[str], schedulers: Sequence[str], seeds: Iterable[int]) -> list[Cell]:
    """Every combination, scenario-major; the same seeds for every scheduler (paired comparisons)."""
    seed_list = list(seeds)
    return [Cell(sc, sch, seed) for sc in scenarios for sch in schedulers for seed in seed_list]


def run_cell(cell: Cell, import_timeout_s: float | None = None, trust: TrustLike | None = None) -> dict[str, Any]:
    """One row: run the cell and judge it with every single-run oracle. The scheduler is imported and
    built first, under `import_timeout_s` (`build_scheduler`), never inside the run's own budget: a
    worker process's first cell imports the user's runtime. A scenario file imports and reads only
    what `trust` allows (`harness.scenario.trust`)."""
    scheduler = build_scheduler(cell.scheduler, import_timeout_s)
    return _row(cell, run(find_scenario(cell.scenario, trust=trust), scheduler, cell.seed))


def _row(cell: Cell, result: RunResult) -> dict[str, Any]:
    labels = sorted({x.label for v in check(result) for x in v.violations})  # every label, not each oracle's first
    row = {"scenario": cell.scenario, "scheduler": cell.scheduler, "seed": cell.seed,
           "makespan_ms": result.makespan_ms, "status": result.status.value, "passed": not labels,
           "labels": ";".join(labels), "calls": len(result.scenario.calls), "fingerprint": result.fingerprint}
    if result.agent is not None:  # a loop scenario: how the task ended, its rounds and the calls it made
        row.update(task=result.agent.status, rounds=result.agent.rounds, tool_calls=result.agent.tool_calls)
    return row


def _isolated_cells(cells: list[Cell], wall_timeout_s: float, import_timeout_s: float | None,
                    trust: Trust | None) -> Iterator[list[dict[str, Any]]]:
    """Cells whose runs happen in supervised children (harness.isolation), one child per scheduler
    serving all its cells; each judged here. A cell that spins past its budget is a `hang` row (its
    child killed), not the end of the sweep."""
    from harness.isolation import Supervisor

    children: dict[str, Supervisor] = {}
    scenarios: dict[str, Scenario] = {}  # one object per name: a child is sent each scenario once
    try:
        for cell in cells:
            child = children.get(cell.scheduler)
            if child is None:
                # Built again for each cell, as `run_cell` builds it in process: a scheduler that keeps
                # state between runs gives the rows it gives there, whatever the cells' order.
                child = children[cell.scheduler] = Supervisor(cell.scheduler, wall_timeout_s=wall_timeout_s,
                                                              import_timeout_s=import_timeout_s, fresh_per_run=True)
            scenario = scenarios.get(cell.scenario)
            if scenario is None:
                scenario = scenarios[cell.scenario] = find_scenario(cell.scenario, trust=trust)
            yield [_row(cell, child.run(scenario, cell.seed).result)]
    finally:
        for child in children.values():
            child.close()


def _run_chunk(cells: list[Cell], wall_timeout_s: float = 0.0, import_timeout_s: float | None = None,
               trust: Trust | None = None, isolate: bool = False) -> list[dict[str, Any]]:
    """Cells in this process (a Dask worker, or the caller's), each under its own watchdog."""
    return [row for rows in _each_cell(cells, wall_timeout_s, import_timeout_s, trust, isolate) for row in rows]


def _each_cell(cells: list[Cell], wall_timeout_s: float = 0.0, import_timeout_s: float | None = None,
               trust: Trust | None = None, isolate: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Cells in this process, each under its own watchdog, each row as soon as it is made (a local
    pool worker sends it to the caller at once, which writes it to `--out`: a sweep killed often
    still keeps every cell finished before each kill). `isolate`: each run in a supervised child."""
    if isolate:
        yield from _isolated_cells(cells, wall_timeout_s, import_timeout_s, trust)
        return
    try:
        # Thousands of small runs: the heap already there (the caller's modules, a worker's imports)
        # frozen, young collections less often (see harness.sim.collector.long_search).
        with wall_limit_per_run(wall_timeout_s), watching_user_interrupts(), long_search():
            for cell in cells:
                yield [run_cell(cell, import_timeout_s, trust)]
    except WallClockExceeded as exc:
        if multiprocessing.parent_process() is None:
            raise
        raise type(exc)(str(exc)) from None  # a worker sends the message back (and which limit), not the world


def load_finished(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Rows already in a sweep file; a line cut short by an interruption is ignored."""
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    if not path.exists():
        return rows
    # A byte that is not UTF-8 (a corrupted file) spoils only its line, which is then skipped.
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and set(COLUMNS) <= set(row):
            rows[(row["scenario"], row["scheduler"], int(row["seed"]))] = row
    return rows


def _drop_torn_line(path: Path) -> None:
    """Cut a last line an interruption left unfinished (no newline after it): its row runs again, and
    the file stays one JSON object per line. Complete lines are never touched, even ones that are not
    rows (they are skipped when read)."""
    with path.open("rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def sweep(cells: Sequence[Cell], *, processes: int | None = 1, out: Path | None = None,
          chunk_size: int | None = None, on_progress: Callable[[int, int], None] | None = None,
          wall_timeout_s: float | None = None, import_timeout_s: float | None = None,
          cluster: Cluster | None = None, trust: TrustLike | None = None,
          isolate: bool = False) -> list[dict[str, Any]]:
    """Run every cell not already in `out` and return all rows, sorted by cell.

    `processes`: local worker processes (None: every core, but this process alone for fewer than
    harness.distribute.workers.AUTO_POOL_MIN_RUNS cells); with `cluster` the cells run on its workers instead.
    The rows are the same either way.

    With `out`, finished rows are appended to it as they arrive, so an interrupted sweep called again
    with the same file continues where it stopped.

    Each cell (building its scheduler and its run) may take `wall_timeout_s` real seconds (0: no
    limit; None: the limit already in force, else 60 s; a SIGALRM timer in whichever process runs
    the cell). A cell whose scheduler spins without yielding stops the sweep with
    `WallClockExceeded` naming the cell; rows finished before it are kept in `out`, the hung cell is
    not written (its row would depend on the machine's speed). Importing and building a named
    scheduler is not part of a cell's time: it has its own limit, `import_timeout_s` (None: 600 s; 0:
    none; `ImportTimeout` when exceeded), in whichever process imports it. Scenario files import and
    read only what `trust` allows (`harness.scenario.trust`), in every process.

    `isolate`: each cell's run happens in a supervised child process (harness.isolation: one per
    scheduler and sweep process, killed past `wall_timeout_s`, real-disk writes refused) and is
    judged in the process that started it; a cell that spins is then a `hang` row instead of the end
    of the sweep. The rows of cells that end are the same either way.
    """
    if processes is not None and processes < 1:
        raise ValueError("processes must be >= 1")
    done = load_finished(out) if out is not None else {}
    # Sorted by a key of C attribute reads: the dataclass's own order builds two tuples per comparison.
    todo = sorted({cell for cell in cells if cell.key not in done}, key=_CELL_ORDER)
    processes = processes_for(processes, len(todo))
    wanted = {c.key for c in cells}  # built once: inside the comprehension it made resuming quadratic
    rows = {key: row for key, row in done.items() if key in wanted}
    total, finished = len(cells), len(rows)
    if on_progress:
        on_progress(finished, total)
    if out is not None and out.exists():
        _drop_torn_line(out)
    try:
        # Unbuffered: each batch of rows reaches the file whole at once (harness.atomic.append_lines).
        sink = out.open("ab", buffering=0) if out is not None else None
    except OSError as exc:
        raise OutputError(out or "", exc) from None
    try:
        for batch in _execute(todo, processes, chunk_size, resolve_wall_timeout(wall_timeout_s), cluster,
                              resolve_import_timeout(import_timeout_s), Trust.of(trust), isolate):
            for row in batch:
                rows[(row["scenario"], row["scheduler"], row["seed"])] = row
            if sink is not None and out is not None:
                append_lines(sink, out, [json.dumps(row, sort_keys=True) for row in batch])
            finished += len(batch)
            if on_progress:
                on_progress(finished, total)
    finally:
        if sink is not None:
            sink.close()
    return [rows[key] for key in sorted(rows)]


def _execute(todo: list[Cell], processes: int, chunk_size: int | None, wall_timeout_s: float = 0.0,
             cluster: Cluster | None = None, import_timeout_s: float | None = None, trust: Trust | None = None,
             isolate: bool = False) -> Iterator[list[dict[str, Any]]]:
    if not todo:
        return
    if cluster is not None:
        yield from _on_cluster(todo, cluster, chunk_size, wall_timeout_s=wall_timeout_s,
                               import_timeout_s=import_timeout_s, trust=trust, isolate=isolate)
        return
    if processes == 1:
        size = chunk_size or 50
        for start in range(0, len(todo), size):
            yield from _each_cell(todo[start:start + size], wall_timeout_s, import_timeout_s, trust, isolate)
        return
    # Large chunks amortise pickling and scheduling; several per process balance uneven cells.
    size = chunk_size or max(1, min(500, len(todo) // (processes * 4) or 1))
    chunks = [todo[start:start + size] for start in range(0, len(todo), size)]
    each = functools.partial(_each_cell, wall_timeout_s=wall_timeout_s, import_timeout_s=import_timeout_s,
                             trust=trust, isolate=isolate)
    # Workers that share no lock (harness.distribute.pool): one stopped mid-cell cannot hang the rest.
    with WorkerPool(each, min(processes, len(chunks))) as pool:
        yield from pool.as_completed(chunks)


def _on_cluster(todo: list[Cell], cluster: Cluster, chunk_size: int | None, **settings: Any
                ) -> Iterator[list[dict[str, Any]]]:
    """Rows chunk by chunk as each finishes on the cluster. Chunks are sized from the real time the
    finished ones took per cell (harness.distribute.chunks: large while much is left, small at the
    end so that no worker idles through the last one), `chunk_size` cells each if given; only a few
    are in flight at once (the next is sized when a result comes back). The cells go to every worker
    once, as plain tuples; a task names only its range of them (Dask walks a task's arguments, and a
    list of 10,000 cells cost the client 40 ms a chunk)."""
    from harness.distribute.chunks import Chunker

    chunker = Chunker(len(todo), cluster.workers)
    step = chunk_size or 1
    ranges = chunker if chunk_size is None else ((i, min(i + step, len(todo))) for i in range(0, len(todo), step))
    keys = _Keys([cell.key for cell in todo])
    for rows, seconds in cluster.stream(functools.partial(_timed_chunk, **settings), ranges, keys):
        chunker.measured(len(rows), seconds)
        yield rows


class _Keys:
    """The cells of a sweep as one opaque value (Dask walks lists and tuples it is given, item by item)."""

    __slots__ = ("keys",)

    def __init__(self, keys: list[tuple[str, str, int]]) -> None:
        self.keys = keys

    def __getstate__(self) -> list[tuple[str, str, int]]:
        return self.keys

    def __setstate__(self, keys: list[tuple[str, str, int]]) -> None:
        self.keys = keys


def _timed_chunk(keys: _Keys, span: tuple[int, int], **settings: Any) -> tuple[list[dict[str, Any]], float]:
    """A cluster's task: the rows of the cells in `span` (run on the worker, `_run_chunk`), and the
    real seconds they took there (what sizes the next chunks; no row depends on it)."""
    took = stopwatch()
    rows = _run_chunk([Cell(*key) for key in keys.keys[span[0]:span[1]]], **settings)
    return rows, took()


def to_frame(rows: Sequence[dict[str, Any]]) -> pandas.DataFrame:
    import pandas

    return pandas.DataFrame(list(rows), columns=list(COLUMNS))
