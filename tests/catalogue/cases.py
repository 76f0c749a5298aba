"""The catalogue table: each realistic buggy scheduler, the scenario that exposes it and what the
oracles must say.

Owns `Case` and `CASES` (one row per bug: the failure class, the REFERENCE.md pattern or issue class
it reproduces, a scheduler instance, a scenario loader, the violation labels of which any one counts
as "caught", whether catching it depends on latencies or completion order, and notes), and `CORRECT`,
built-in policies that are correct for negative checks. Scenarios are loaded lazily: built-in ones by
name, the catalogue's own from `tests/catalogue/scenarios/`. It never runs anything itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from harness import Scenario, find_scenario, get_scheduler, load_scenario
from harness.bridges import from_asyncio
from harness.scheduling import Scheduler
from tests.catalogue import buggy

SCENARIO_DIR = Path(__file__).parent / "scenarios"

#: A scenario, or a callable that loads one (so importing the table reads no file).
ScenarioSource = Scenario | Callable[[], Scenario]


def builtin(name: str) -> Callable[[], Scenario]:
    """A loader for a built-in scenario (`scenarios/<name>.toml`)."""
    return partial(find_scenario, name)


def local(name: str) -> Callable[[], Scenario]:
    """A loader for one of the catalogue's own scenarios (`tests/catalogue/scenarios/<name>.toml`)."""
    return partial(load_scenario, SCENARIO_DIR / f"{name}.toml")


@dataclass(frozen=True)
class Case:
    """One realistic bug, the scenario that shows it and the labels that count as catching it."""

    name: str
    #: A short name of the failure class (e.g. `lost-update`, `hang`, `ghost-effect`).
    failure_class: str
    #: The REFERENCE.md pattern ("REFERENCE #7") or the issue class the bug reproduces.
    reference: str
    scheduler: Scheduler
    scenario: ScenarioSource
    #: Violation labels the oracles should report; any one of them counts.
    expected_labels: tuple[str, ...]
    #: True when only some latency draws / completion orders expose it (seed-dependent).
    order_or_time_dependent: bool
    notes: str
    #: Set when today's harness cannot report the expected label (a limitation or a harness bug):
    #: the random-exploration test marks the case `xfail(strict=True)` with this reason.
    harness_gap: str | None = None
    #: A buggy *loop policy* (object): the bug is the loop's, `scheduler` is a correct one, and the case
    #: runs `scenario` (a loop scenario) under this loop (`loop_conformance_scenarios`).
    loop: object | None = None

    def load(self) -> Scenario:
        scenario = self.scenario if isinstance(self.scenario, Scenario) else self.scenario()
        if self.loop is None:
            return scenario
        from harness.oracles.loop_policy import loop_conformance_scenarios

        return loop_conformance_scenarios(self.loop, [scenario.name])[0]  # type: ignore[arg-type]

    def baseline(self) -> tuple[Scenario, Scheduler]:
        """What must not show the bug: the scenario under `serial` — or, for a loop's bug, the scenario
        under its own (correct) loop, with the case's scheduler."""
        if self.loop is None:
            return self.load(), get_scheduler("serial")
        return (self.scenario if isinstance(self.scenario, Scenario) else self.scenario()), self.scheduler


CASES: list[Case] = [
    # -- REFERENCE 1-12 ----------------------------------------------------------------------------
    Case("raw-path-mutex", "lost-update", "REFERENCE #1 (letta-code#377, pi#2327)",
         buggy.RawPathMutex(), builtin("config-two-spellings"), ("lost-update",), False,
         "Per-file mutexes keyed by the path text: `config.yaml` and `./config.yaml` get two mutexes; both "
         "patches read at t=0, so one update is lost under every latency draw."),
    Case("one-sided-rw-check", "torn-read", "REFERENCE #2 (pi#8318)",
         buggy.OneSidedSegments(), builtin("edit-then-test"), ("torn-read", "stale-read"), True,
         "A reader after a writer of the same path joins its segment; the test run reads the file the "
         "write truncated, when it reads (10% of 1-3 s) before the write ends (0.1-0.6 s)."),
    Case("eager-reads", "stale-read", "REFERENCE #3 (zeptoclaw#115, strands-agents#614)",
         buggy.EagerReads(), builtin("home-assistant"), ("stale-read",), False,
         "Readers start at once while writes run in order: the state check reads the light before "
         "turn_on lands (fixed latencies, every seed)."),
    Case("lifo-work-queue", "future-read", "REFERENCE #3 (reversed: a read after the later write)",
         buggy.LifoWorkQueue(), local("read-then-edit"), ("future-read",), False,
         "`pending.pop()` instead of `pop(0)`: the serial worker runs the batch backwards."),
    Case("ready-on-start-dag", "stale-read", "REFERENCE #3; seed 003 DAG (depends_on ignored in effect)",
         buggy.ReadyOnStartDag(), builtin("fix-then-test-dag"), ("stale-read", "torn-read", "future-read"), True,
         "The dependency's `ready` fires when it starts, so run-tests overlaps write-fix despite depends_on; "
         "torn-read when the test collection falls inside the write, else it passes."),
    Case("as-completed-results", "out-of-order", "REFERENCE #4 (strands-agents#2112; smolagents, goose)",
         buggy.asyncio_executor(buggy.as_completed_executor, "as_completed_executor"), builtin("incident-triage"),
         ("out-of-order",), False,
         "An unchanged asyncio executor appending results from `asyncio.as_completed` (deploys 2 s < logs "
         "3 s < metrics 4 s, every seed)."),
    Case("zip-as-completed", "mispaired-result", "REFERENCE #4 (vercel/ai#16577, bifrost#4410)",
         buggy.asyncio_executor(buggy.zip_as_completed_executor, "zip_as_completed_executor"),
         builtin("incident-jitter"), ("mispaired-result",), True,
         "Completion-ordered outputs zipped onto the calls in model order; pairs right only when the "
         "jittered queries happen to finish in model order."),
    Case("cascade-cancel-ghost", "ghost-effect", "REFERENCE #5 (claude-code#22264, #64346) and #11",
         buggy.parallel_cancel_siblings(), builtin("cascade-cancel"), ("ghost-effect",), True,
         "A flaky web search (503, rate 0.5) cancels the running build; the shell ignores the cancel and "
         "build.log lands while the build is reported cancelled. Needs the failure before the build ends."),
    Case("interrupt-returns-at-once", "orphaned-call", "REFERENCE #6 (crush#529, penguin-harness#621)",
         buggy.InterruptReturnsAtOnce(), builtin("interrupt-midbatch"), ("orphaned-call",), False,
         "On Esc the runtime reports 'cancelled by user' for unfinished calls without cancelling them; "
         "the 6 s test run keeps going after the turn ended."),
    Case("gather-without-timeout", "hang", "REFERENCE #7 (aden-hive/hive#4948, hermes-agent#54562)",
         from_asyncio(buggy.gather_without_timeout, name="gather_without_timeout", interrupt=None,
                      description="seed 003 without wait_for; Esc is not wired to the executor"),
         builtin("stuck-extract"), ("hang",), True,
         "Seed 003 without `wait_for`, in a runtime whose Esc never reaches the executor (interrupt=None; "
         "Ctrl-C would cancel its task): the extractor is stuck for an hour in 30% of draws. Serial passes: "
         "it honours the interrupt and abandons the stuck call."),
    Case("retry-everything-on-timeout", "duplicate-effect", "REFERENCE #8 (agno#10366, composio#3654)",
         buggy.retry_everything_on_timeout(), builtin("ticket-retry"), ("duplicate-effect",), True,
         "A plan runtime with timeout 800 ms, retries, retry_non_idempotent and no idempotency keys; a "
         "second ticket whenever the first attempt times out (latency median 700 ms)."),
    Case("key-per-attempt", "duplicate-effect", "REFERENCE #8; seed 003 (idempotency keys)",
         buggy.KeyPerAttempt(), builtin("duplicate-ticket"), ("duplicate-effect",), False,
         "The retry loop mints a new idempotency key per attempt; the first attempt (900 ms) times out at "
         "500 ms after creating the ticket at 450 ms."),
    Case("result-cache", "fabricated-result", "REFERENCE #8 (identical calls with different ids); crewAI cache",
         buggy.ResultCache(), local("double-toggle"), ("fabricated-result", "divergent-result", "stale-read"),
         False, "Two identical toggles: the second is answered from a (tool, arguments) cache and never runs."),
    Case("args-hash-idempotency-key", "deduplicated-call", "REFERENCE #8 (identical calls); seed 003 key",
         buggy.ArgsHashKey(), builtin("restart-rollback-restart"),
         ("divergent-world", "divergent-result", "reordered-effect", "lost-update"), False,
         "restart, rollback, restart: both restarts carry the key hash(tool, arguments), so the ops API "
         "deduplicates the second; the service is never restarted on the rolled-back version.",
         harness_gap="oracle gap: serializability replays each call with the idempotency key its attempt "
                     "carried, so two distinct calls sharing one key are deduplicated in the model-order "
                     "replay too, and no oracle checks that distinct calls carry distinct keys"),
    Case("read-only-shell-classifier", "stale-read", "REFERENCE #9 (pydantic-ai#3120, #4322)",
         buggy.ReadOnlyShellPartition(), builtin("cd-then-cat"), ("stale-read", "divergent-result"), True,
         "`cd` is classified read-only (it writes no file), so `cd src` and `cat app.py` overlap and `cat` "
         "resolves app.py against the old cwd when it finishes first."),
    Case("process-cwd-planner", "lost-update", "REFERENCE known gap (planner vs tool cwd); #9 shared shell",
         buggy.ProcessCwdSegments(), builtin("cd-then-edit"), ("lost-update",), False,
         "After `cd src` the planner resolves settings.py against the runtime's cwd (/repo); both patches "
         "of /repo/src/settings.py run together."),
    Case("git-index-lock", "lock-contention", "REFERENCE #10 (.git/index.lock)",
         buggy.ShellCommandsInParallel(), local("git-parallel"), ("divergent-result",), True,
         "`git add` and `git commit` in parallel: real git fails one on index.lock.",
         harness_gap="harness limitation: the mock shell has no git and runs a terminal call's commands "
                     "atomically when the call ends, so no tool holds a lock file across virtual time and "
                     "external lock contention cannot be provoked"),
    Case("timeout-partition-ghost", "ghost-effect", "REFERENCE #11",
         buggy.TimeoutPartition(), local("slow-build"), ("ghost-effect",), True,
         "Partition with a 2 s timeout, reported `timeout`; the build subprocess (median 1.5 s) keeps running "
         "and writes build.log afterwards."),
    Case("wait-for-reports-error", "ghost-effect", "REFERENCE #11; seed 003 executor",
         buggy.asyncio_executor(buggy.wait_for_reports_error, "wait_for_reports_error"), local("slow-notify"),
         ("ghost-effect",), True,
         "`asyncio.wait_for(..., 2)` turns a slow send into `success: False`; the message was posted."),
    Case("arrival-order-locks", "lost-update", "REFERENCE #12 (OpenHands SDK FIFO locks)",
         buggy.ArrivalOrderLocks(), local("report-locks"), ("lost-update",), True,
         "Writes wait for their queries, then a FIFO file lock: they land in query-completion order, so "
         "REPORT.md ends with the first summary when the deploy query finishes first."),
    # -- interrupts, failures, caps, exclusivity, aliases ---------------------------------------------
    Case("segment-boundary-interrupt", "start-after-interrupt", "hermes executor (skip on interrupt); crush#529",
         buggy.SegmentBoundaryInterrupt(), builtin("interrupt-search-fanout"), ("start-after-interrupt",), True,
         "Interrupt checked between segments only; 12 searches on 8 workers, queued ones start when a "
         "worker frees after the Esc at 1.5 s."),
    Case("polling-partition", "start-after-interrupt", "hermes executor (`wait(timeout=5)` slices)",
         buggy.PollingPartition(), builtin("interrupt-search-fanout"), ("start-after-interrupt", "grace-exceeded"),
         True, "The interrupt is noticed at the next 5 s poll; meanwhile partition's queued searches start."),
    Case("join-without-grace", "grace-exceeded", "hermes executor (3 s grace); ThreadPoolExecutor.shutdown",
         buggy.JoinWithoutGrace(), builtin("interrupt-midbatch"), ("grace-exceeded",), False,
         "Stops dispatching on Esc but joins running workers without a deadline: the 6 s test run overruns "
         "the 1 s grace."),
    Case("first-exception-drops-results", "missing-result", "fail-fast (REFERENCE error policies)",
         buggy.asyncio_executor(buggy.first_exception_executor, "first_exception_executor"), local("flaky-triage"),
         ("missing-result",), True,
         "`asyncio.wait(FIRST_EXCEPTION)`, cancel pending, report what is done: needs the metrics 503 "
         "(rate 0.35) to come before the others finish."),
    Case("gather-fails-whole-batch", "orphaned-call", "runtime error; fail-fast without cancelling",
         buggy.asyncio_executor(buggy.gather_fail_whole_batch, "gather_fail_whole_batch"), local("flaky-triage"),
         ("orphaned-call",), True,
         "`gather` without return_exceptions: the first exception ends the turn, the other awaitables "
         "keep running."),
    Case("pool-bails-out-on-error", "orphaned-call", "runtime error; fail-fast without cancelling",
         buggy.PoolBailsOutOnError(), local("flaky-triage"), ("orphaned-call",), True,
         "`as_completed` + `future.result()` in one try/except: the 503 of the metrics query answers the "
         "whole batch 'batch failed' while the logs query is still running."),
    Case("single-semaphore", "cap-exceeded", "seed 003 (asyncio.Semaphore); per-tool caps",
         buggy.asyncio_executor(buggy.single_semaphore, "single_semaphore"), builtin("scrape-fanout"),
         ("cap-exceeded",), False,
         "One Semaphore(5) for everything: six extractions start under the global cap but above the "
         "site's per-tool cap of 2."),
    Case("semaphore-released-on-timeout", "cap-exceeded", "seed 003 (Semaphore + wait_for); REFERENCE #11",
         buggy.asyncio_executor(buggy.semaphore_wait_for, "semaphore_wait_for"), local("scrape-timeouts"),
         ("cap-exceeded",), True,
         "A timed-out extraction's thread keeps running after `async with` released its slot; with slow "
         "pages (p=0.3) a fourth request starts next to it."),
    Case("read-only-means-safe", "exclusivity", "seed 000 (clarify is never parallel)",
         buggy.ReadOnlyMeansSafe(), builtin("clarify-mixed"), ("exclusivity",), False,
         "clarify is declared read-only; treating read-only as concurrency-safe overlaps the question."),
    Case("abspath-locks-symlink", "lost-update", "REFERENCE known gap (symlinks; hermes gate)",
         buggy.PathLocks("abspath"), builtin("symlink-alias"), ("lost-update",), False,
         "Per-file locks keyed by abspath: current.yaml -> config.yaml gets its own lock."),
    Case("realpath-locks-hardlink", "lost-update", "REFERENCE known gap (hard links)",
         buggy.PathLocks("realpath"), builtin("hardlink-alias"), ("lost-update",), False,
         "realpath cannot see that two hard-linked names are one file."),
    Case("realpath-locks-case", "lost-update", "REFERENCE known gap (case aliases)",
         buggy.PathLocks("realpath"), builtin("case-alias"), ("lost-update",), False,
         "On a case-insensitive disk Config.yaml and config.yaml are one file; normcase is the identity "
         "on POSIX."),
    Case("first-call-only", "missing-result", "REFERENCE degrade family (crewAI)",
         buggy.FirstCallOnly(), builtin("shared-shell-cwd"), ("missing-result",), False,
         "With a mutating tool in the turn only the first call runs; the rest get no result at all."),
    Case("caps-by-cancelling", "dropped-call",
         "degrade: a concurrency cap that rejects instead of queueing (cf. REFERENCE #6, a made-up answer)",
         buggy.CapsByCancelling(), builtin("incident-triage"), ("dropped-call",), False,
         "Three incident queries, a cap of two: the third is answered 'skipped due to user interrupt' without "
         "running, though no interrupt is scripted. Every safety oracle passes: nothing ran that could race."),
    # -- approvals and checkpoints (issue 12, item 4) --------------------------------------------------
    Case("optimistic-approval", "unapproved-effect", "seeds 001/002 (confirm before the effect)",
         buggy.OptimisticApproval(), builtin("ops-approvals"), ("unapproved-effect", "misreported-outcome"), False,
         "Each call that needs confirmation starts while its prompt is shown and is cancelled on a no: the "
         "restart runs before the user approves it, and the rollback the user denies lands anyway. The cache "
         "wipe nobody answered has finished by then, yet is reported 'denied by the user: terminal was "
         "cancelled' (misreported-outcome)."),
    Case("silence-is-consent", "unapproved-effect", "seed 001 (hermes' command approval)",
         buggy.SilenceIsConsent(), builtin("ops-approvals"), ("unapproved-effect",), False,
         "The approval prompt times out into 'go ahead': the destructive cache wipe nobody answered runs."),
    Case("retry-denied", "unapproved-effect", "seed 002 (confirmation); REFERENCE #8 (retry everything)",
         buggy.RetryDenied(), builtin("ops-approvals"), ("unapproved-effect",), False,
         "A denial is an error result like any other, and the retry path calls the tool below the approval "
         "check: the rollback the user refused runs on the second try."),
    Case("prompt-without-timeout", "hang", "REFERENCE #7 (a turn that never ends); seed 001 (approval)",
         buggy.PromptWithoutTimeout(), builtin("ops-approvals"), ("hang",), False,
         "The approval prompt has no timeout: nobody answers about the cache wipe, and the turn never ends."),
    Case("rollback-on-timeout", "rollback-mismatch", "REFERENCE #11; seed 001 (checkpoints before writes)",
         buggy.RollbackOnTimeout(), local("slow-build"), ("rollback-mismatch",), True,
         "Checkpoint before each write, 2 s timeout, roll back at once on a timeout: the build subprocess "
         "(median 1.5 s) is still running and writes build.log onto the restored tree."),
    # -- reported outcome versus what happened (issue 23, item 6) -------------------------------------
    Case("result-unavailable", "misreported-outcome", "hermes-agent#93251 (fixed by #93329: id/call_id pairing)",
         buggy.ResultUnavailable(), builtin("code-review"), ("misreported-outcome",), False,
         "hermes segments run the four reads of the review together; the sanitizer pairs their results by the "
         "other id variant and stubs each with '[Result unavailable]'. The reads succeeded and change nothing, so "
         "every other oracle passes; only the last read to end (in the millisecond the batch answers) is not "
         "judged."),
    # -- default coverage (issue 23, item 5) -----------------------------------------------------------
    Case("stale-cwd-planner", "torn-read", "REFERENCE known gap (planner vs tool cwd); #9 shared shell",
         buggy.StaleCwdSegments(), local("cd-then-fix"), ("torn-read", "stale-read"), True,
         "Paths resolved once per turn against the cwd it started in: after `cd src`, app.py is /repo/app.py to "
         "the planner, so the test run of /repo/src overlaps the write that truncates /repo/src/app.py. It "
         "passes every default scenario; check_scheduler's generated batches catch it (a turn that opens with "
         "`cd src` and names src/c.txt both ways)."),
    Case("permit-released-for-another-tool", "cap-exceeded", "seed 003 (a Semaphore per limit); per-tool caps",
         buggy.PermitOnTheExecutor(), builtin("interleaved-caps"), ("cap-exceeded",), False,
         "Its own semaphore per capped tool, released through `self.permit`, the permit the latest call took: "
         "with extractions and searches interleaved, an extraction gives back the search permit and a second "
         "search runs beside the first (quota 1). Passes scrape-fanout, where one tool is capped."),
    Case("session-lock-on-the-runtime", "hang", "design note 004 (tasks at once); Codex RwLock per session",
         buggy.SessionLockOnTheRuntime(), builtin("two-agents-one-runtime"),
         ("hang", "stale-read", "torn-read", "future-read"), False,
         "A reader/writer lock per agent session is right (what crosses agents is the tools' business: "
         "workdirs, a file lock); keeping the current session's lock on the runtime object is not: one "
         "instance serves both agents, the web turn replaces the lock while the api reads hold it, their "
         "releases go to the web lock, and a turn hangs or runs its patch beside its own reads. Passes every "
         "single-agent scenario; the fix (the lock in ctx.session) passes this one."),
    Case("retry-keyed-by-call-id", "retry-limit-exceeded", "seed 004 (ToolRetryPolicy, section 5.2)",
         get_scheduler("serial"), builtin("tool-disabled"), ("retry-limit-exceeded",), False,
         "A loop bug, not a scheduler's: seed 004's TaskLoop counting identical failures per tool-call id, which "
         "is new for every call, so the CRM query that fails with the same 503 every round is never disabled and "
         "the task burns all 15 rounds while every scheduling oracle holds. The seed 004 policy (taskloop) "
         "disables it after the third failure and passes.", loop=buggy.RetryKeyedByCallId()),
]

#: Correct built-in policies (check_scheduler passes them), for negative checks.
CORRECT: list[tuple[str, Scheduler]] = [
    (name, get_scheduler(name)) for name in ("serial", "partition", "rwlock", "hermes_segments")
]
