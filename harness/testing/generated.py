"""`check_scheduler`'s generated part: Hypothesis-made batches over a small repository with aliases.

Owns the generated world (two files, a symlink and a hard link to them, a subdirectory for `cd` and
relative paths, a test file that reads the tree), the search (each batch runs order-first under PCT,
timers included; Hypothesis shrinks a failing batch; a batch tried again in one search is not run
again) and what it covered. Hypothesis keeps its files in a temporary home for the search, so nothing
lands in the caller's working directory. It never reports: `harness.testing` turns what it found into
failures.
"""

from __future__ import annotations

from dataclasses import fields
from random import Random

from harness.explore.by_hypothesis import hypothesis_home_elsewhere
from harness.explore.findings import Exploration, Finding, add_started, first_violation
from harness.explore.findings import started_tools as started_in
from harness.explore.pct import PCT
from harness.model import Batch
from harness.run import run
from harness.scenario import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import TIME
from harness.sim.collector import long_search
from harness.testing.profiles import GENERATED
from harness.world import World
from harness.world.state import WorldState

#: What coverage summaries and failures call the generated part.
NAME = GENERATED

GENERATED_FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/src/c.txt": "gamma\n",
                   "/repo/tests/test_a.txt": "requires a.txt alpha\n"}
GENERATED_PATHS = ("/repo/a.txt", "/repo/b.txt", "/repo/src/c.txt", "/repo/link.txt", "/repo/hard.txt",
                   "c.txt", "./a.txt")


def generated_world() -> World:
    world = World(cwd="/repo")
    world.populate(files=sorted(GENERATED_FILES.items()), symlinks=[("/repo/link.txt", "/repo/a.txt")],
                   hardlinks=[("/repo/b.txt", "/repo/hard.txt")])
    return world


#: The generated world's state, kept with the files it was made of (GENERATED_FILES is a public dict).
_STATE: list[tuple[tuple[tuple[str, str], ...], WorldState]] = []


def generated_state() -> WorldState:
    """The generated world's state: one object for every search of a session (while GENERATED_FILES
    stays as it is), so the model-order replays the serializability oracle remembers by initial
    world (`harness.oracles.replays`) serve every scheduler checked on the same batches."""
    files = tuple(sorted(GENERATED_FILES.items()))
    if not _STATE or _STATE[0][0] != files:
        _STATE[:] = [(files, generated_world().state())]
    return _STATE[0][1]


class _Examples:
    """What one search does with each generated batch, made once per search rather than per example:
    the scenario around a batch (a copy of one built scenario but for its batch: the same fields, none
    of the defaults made again), its PCT chooser (forked from one per list of call ids: the generated
    ids are `call-1`, `call-2`, ... so a handful serve the search), and each distinct batch's verdict.

    Hypothesis often tries a batch it tried before (different draws, e.g. of how many calls follow,
    can give equal batches: about one example in five of a 500-example search). A run is a pure
    function of (scenario, scheduler, seed, chooser), and here the batch is the only one that varies,
    so an equal batch is not run and judged again: its verdict and the tools it started are
    remembered. (Hypothesis's own shrinking already asks the same of the scheduler: a batch must fail
    again when it is run again.)"""

    def __init__(self, policy: Scheduler, seed: int, state: WorldState) -> None:
        self.policy, self.seed = policy, seed
        self._template = Scenario(name=NAME, batches=(Batch(()),), world=state)
        self._state = state
        # Copied only while a scenario holds nothing but its fields (no slots, nothing derived from
        # its batches in `__post_init__`): else each example's is made by the constructor.
        self.copyable = set(getattr(self._template, "__dict__", ())) == {f.name for f in fields(Scenario)}
        self._choosers: dict[tuple[str, ...], PCT] = {}
        self._judged: dict[Batch, tuple[bool, dict[str, int]]] = {}

    def scenario(self, batch: Batch) -> Scenario:
        """The one-batch scenario `Scenario(name=NAME, batches=(batch,), world=state)` (equal to it),
        copied from the template: its validation is the batch's own (distinct call ids)."""
        if not self.copyable:
            return Scenario(name=NAME, batches=(batch,), world=self._state)
        scenario = object.__new__(Scenario)
        vars(scenario).update(vars(self._template))
        object.__setattr__(scenario, "batches", (batch,))
        return scenario

    def chooser(self, batch: Batch) -> PCT:
        """`PCT(Random(seed), [*batch.ids, TIME], 16)`, unused."""
        ids = batch.ids
        drawn = self._choosers.get(ids)
        if drawn is None:
            drawn = self._choosers[ids] = PCT(Random(self.seed), [*ids, TIME], 16)
        return drawn.fork()

    def judge(self, batch: Batch) -> tuple[bool, dict[str, int]]:
        """Whether the batch's run shows a violation, and the tools it started (by name)."""
        known = self._judged.get(batch)
        if known is None:
            result = run(self.scenario(batch), self.policy, self.seed, chooser=self.chooser(batch))
            known = self._judged[batch] = (first_violation(result) is not None, started_in(result))
        return known


def explore_generated(policy: Scheduler, examples: int, seed: int) -> Exploration:
    """Up to `examples` generated batches under `policy`; the exploration's finding is the batch
    Hypothesis shrank (one finding: the first label of the shrunk run)."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    from harness.strategies import batches

    state = generated_state()
    exploration = Exploration("hypothesis", NAME, "")  # its scope: the tools started, no timers
    made = _Examples(policy, seed, state)

    def failing(batch: Batch) -> bool:
        exploration.runs += 1  # every example, a batch tried before included (`_Examples`)
        failed, started = made.judge(batch)
        add_started(exploration, started)
        return failed

    try:
        with long_search(), hypothesis_home_elsewhere():  # the session's heap frozen; no .hypothesis/ here
            batch = find(batches(max_size=5, paths=GENERATED_PATHS), failing, random=Random(seed),
                         settings=settings(max_examples=examples, deadline=None, database=None,
                                           suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return exploration
    result = run(Scenario(name=NAME, batches=(batch,), world=state), policy, seed,
                 chooser=PCT(Random(seed), [*batch.ids, TIME], 16))
    found = first_violation(result)
    assert found is not None
    exploration.findings.append(Finding(*found, result, 0, (), "hypothesis"))
    return exploration
