"""The parent's side of an isolated session: start one child, feed it runs, bring each run back.

Owns `Supervisor`: it starts `python -m harness.isolation.child` (a fresh interpreter, never a fork
of this one) in a session and process group of its own, with a private temporary directory as its
working directory and `TMPDIR`, sends it the scheduler's name and the limits, then the runs (each
scenario once, then by key), reading answers as they come with a deadline of its own: the run's
real-time budget plus a grace. A child past its deadline, or one that dies, closes its channel or
sends garbage, has its whole process group killed (SIGKILL), and its run becomes a result the parent
makes itself (`hang` for a child killed for time, `scheduler-error` otherwise); the next run starts a
fresh child. Closing the supervisor kills the group too, so no thread or process of the user's
outlives it, and removes the private directory. It never judges (callers run the oracles on the
results) and never prints.

Its deadlines are real time (harness.sim.realtime.time_left), by design and outside every simulation:
it measures how long a child takes in wall time, as that module's watchdog does, and nothing it reads
enters a run, its trace or its fingerprint.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.diagnosis.origins import Origins
from harness.isolation import wire
from harness.isolation.asking import Answering
from harness.model import Batch
from harness.policies.registry import UnknownSchedulerError, scheduler_names
from harness.run.result import BatchRun, RunResult, RunStatus
from harness.scenario.spec import Scenario
from harness.sim.arbiter import Chooser
from harness.sim.kernel import StopReason
from harness.sim.realtime import ImportTimeout, WallClockExceeded, resolve_import_timeout, time_left
from harness.world.world import World

#: Real seconds the parent waits beyond a run's own budget (the child's SIGALRM watchdog answers first
#: when it can) before it kills the child: the hard limit for a scheduler that defeats the timer.
GRACE_S = 2.0
#: Default limits of the child: address space (bytes) and open files.
ADDRESS_SPACE = 8 * 1024 ** 3
OPEN_FILES = 1024


def available() -> bool:
    """Whether this system can isolate runs (POSIX process groups, pipes `select` can wait on)."""
    return os.name == "posix" and hasattr(os, "killpg")


class IsolationError(Exception):
    """A session cannot go on, the user's to fix (a usage error): the child could not import or build
    the scheduler (the message is what it said), or a scenario cannot be sent to it."""


class UnknownIsolatedScheduler(IsolationError, UnknownSchedulerError):
    """The child found no scheduler by that name: an `IsolationError` (a usage error to a command) and
    an `UnknownSchedulerError` (a `LookupError`), as building it in this process would raise."""

    def __init__(self, name: str, message: str) -> None:
        Exception.__init__(self, message)
        self.name, self.valid = name, scheduler_names()


@dataclass(frozen=True)
class Limits:
    """What the child may use: `address_space` bytes and `open_files` descriptors (None: as inherited),
    and whether its real-disk writes and new processes are refused (`guard`)."""

    address_space: int | None = ADDRESS_SPACE
    open_files: int | None = OPEN_FILES
    guard: bool = True


@dataclass(frozen=True)
class IsolatedRun:
    """One run that came back from the child (or that the parent had to end itself)."""

    result: RunResult
    #: Where the user's code started and awaited each call (when asked for), for the story.
    origins: Origins | None = None
    #: What the child's code tried and was refused (writes outside its directory, new processes).
    refused: tuple[str, ...] = ()
    #: The parent ended this run itself (killed the child, or it died): the result has no trace.
    ended_by_parent: bool = False


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    to_child: int
    from_child: int
    root: str
    label: str = ""
    #: id(scenario) -> (its key in the child, the scenario, kept alive so its id stays its own), oldest use
    #: first: at most `_KEPT`, so a long swarm exploration (a new scenario each run) holds a bounded number.
    sent: OrderedDict[int, tuple[int, Scenario]] = field(default_factory=OrderedDict)
    next_key: int = 0
    #: Keys the child may drop, told with the next request.
    forget: list[int] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    reader: wire.FrameReader = field(default_factory=wire.FrameReader)


class Supervisor:
    """Runs of one scheduler, each in an isolated child process; use as a context manager.

    `scheduler` is a name as `run()` takes it (a built-in policy or `package.module:attribute`): it is
    imported and built in the child only, under `import_timeout_s`. Each run may take `wall_timeout_s`
    real seconds (0: no limit) under the child's own watchdog; the parent kills the child `GRACE_S`
    later. `origins`: record where the user's code started and awaited calls (for a story).
    """

    def __init__(self, scheduler: str, *, wall_timeout_s: float = 0.0, import_timeout_s: float | None = None,
                 origins: bool = False, limits: Limits | None = None, fresh_per_run: bool = False) -> None:
        self.scheduler = scheduler
        self.wall_timeout_s = wall_timeout_s or 0.0
        self.import_timeout_s = resolve_import_timeout(import_timeout_s)
        self.origins = origins
        self.limits = limits or Limits()
        self._child: _Child | None = None
        self._label = ""
        #: The interrupt grace the scheduler declares (`grace_ms`), known once a child was ready.
        self.grace_ms: int | None = None
        #: Build the scheduler again before each run (a sweep's cells), instead of once per child.
        self.fresh_per_run = fresh_per_run
        #: Refusals noted while building the scheduler.
        self.refused_at_build: tuple[str, ...] = ()

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def label(self) -> str:
        """The scheduler's name as the child's runs record it (known once a child was ready; kept after
        that child is gone, so a run the parent ends itself bears the same name as the others)."""
        return self._child.label if self._child is not None else self._label or self.scheduler

    def start(self) -> None:
        """Start a child and wait until it has built the scheduler (raising `ImportTimeout` or
        `IsolationError` as building it in this process would)."""
        if self._child is not None:
            return
        if not available():
            raise IsolationError("isolated runs need a POSIX system (process groups and pipes select can wait "
                                     "on); run without --isolate here")
        root = tempfile.mkdtemp(prefix="harness-isolated-")
        parent_in, child_out = os.pipe()
        child_in, parent_out = os.pipe()
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": root, "TMP": root, "TEMP": root}
        env.pop("PYTHONSTARTUP", None)
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "harness.isolation.child", str(child_in), str(child_out), str(os.getpid())],
                pass_fds=(child_in, child_out), start_new_session=True, cwd=root, env=env,
                stdin=subprocess.DEVNULL, stdout=_stderr_fd(), close_fds=True)
        except BaseException:
            for fd in (parent_in, child_out, child_in, parent_out):
                os.close(fd)
            shutil.rmtree(root, ignore_errors=True)
            raise
        os.close(child_in)
        os.close(child_out)
        os.set_blocking(parent_in, False)
        os.set_blocking(parent_out, False)
        child = _Child(process, parent_out, parent_in, root)
        self._child = child
        cwd = os.getcwd()
        job = {"sys_path": [os.path.join(cwd, p) if not os.path.isabs(p) else p for p in sys.path],
               "cwd": cwd, "scheduler": self.scheduler, "import_timeout": self.import_timeout_s, "root": root,
               "address_space": self.limits.address_space, "open_files": self.limits.open_files,
               "guard": self.limits.guard}
        try:
            with contextlib.suppress(_Gone):
                self._send(job)
            answer = self._receive(_STARTUP_S)  # the interpreter and the harness, before the import limit
            if answer == ("started",):
                answer = self._receive(self.import_timeout_s + GRACE_S if self.import_timeout_s else None)
        except wire.WireError as exc:
            self._kill()
            raise IsolationError(f"cannot build scheduler {self.scheduler!r}: its isolated process sent {exc}") \
                from None
        except BaseException:
            self._kill()
            raise
        if answer is None:
            self._kill()
            what = f"importing and building the scheduler {self.scheduler}"
            if self._timed_out:
                raise ImportTimeout(f"{what} took more than {self.import_timeout_s:g} s of real time and its "
                                    "isolated process was killed (a slow import, or a constructor that never "
                                    "returns? --import-timeout / import_timeout_s sets the limit)")
            raise IsolationError(f"cannot build scheduler {self.scheduler!r}: its isolated process "
                                     f"{self._death}")
        try:
            kind, detail, message, refused = answer
            if kind == "ready":
                child.label = self._label = str(detail)
                self.refused_at_build = tuple(str(r) for r in refused)
                self.grace_ms = message if type(message) is int and message >= 0 else None
                return
            message = str(message)
        except (TypeError, ValueError):  # not a 4-tuple, or its refusals not a list
            kind, detail, message = "", "", f"its isolated process answered {type(answer).__name__}, not 'ready'"
        self._kill()
        if kind == "build-error" and detail == "import-timeout":
            raise ImportTimeout(message)
        if kind == "build-error" and detail == "unknown":
            raise UnknownIsolatedScheduler(self.scheduler, message)
        if kind == "build-error" and detail == "usage":
            raise IsolationError(message)
        raise IsolationError(f"cannot build scheduler {self.scheduler!r}: {message}")

    def run(self, scenario: Scenario, seed: int, jitter: float = 0.0, *, chooser: Chooser | None = None,
            origins: bool | None = None, wall_timeout_s: float | None = None) -> IsolatedRun:
        """One run in the child (started if need be). With a `chooser` (harness.sim.arbiter) the run is
        order-first and the chooser, which stays in this process, answers each of its choices.
        `origins` and `wall_timeout_s` override the session's for this run."""
        if chooser is None and origins is None and wall_timeout_s is None:
            return next(iter(self.runs([(scenario, seed, jitter)])))
        wall = self.wall_timeout_s if wall_timeout_s is None else wall_timeout_s or 0.0
        self.start()
        answering = Answering(chooser) if chooser is not None else None
        with contextlib.suppress(_Gone):  # the answer says what happened to the child
            self._request(0, scenario, seed, jitter, wall, self.origins if origins is None else origins,
                          answering is not None)
        got = self._answer(0, scenario, seed, jitter, wall, answering)
        if got.ended_by_parent or got.result.wall_clock_exceeded:
            self._kill()
        return got

    def runs(self, requests: Iterable[tuple[Scenario, int, float]]) -> Iterator[IsolatedRun]:
        """The runs of `requests`, in order, pipelined (several requests in flight, so the child never
        waits for the parent). A run the child could not finish ends as a result the parent made; the
        next one starts a fresh child."""
        pending = list(requests)
        position = 0
        outstanding = 0
        try:
            while position < len(pending):
                self.start()
                window = pending[position:position + _WINDOW]
                with contextlib.suppress(_Gone):  # the answers say what happened to the child
                    for offset, (scenario, seed, jitter) in enumerate(window):
                        self._request(position + offset, scenario, seed, jitter, self.wall_timeout_s, self.origins)
                        outstanding += 1
                for offset, (scenario, seed, jitter) in enumerate(window):
                    got = self._answer(position + offset, scenario, seed, jitter, self.wall_timeout_s)
                    outstanding -= 1
                    gone = got.ended_by_parent or got.result.wall_clock_exceeded
                    if gone:  # before yielding: a caller that takes one run (`run`) never resumes us
                        self._kill()  # the rest of the window was for a child that is gone
                        outstanding = 0
                    yield got
                    if gone:
                        position += offset + 1
                        break
                else:
                    position += len(window)
        finally:
            if outstanding:  # the caller stopped early (or something raised): answers would come out of turn
                self._kill()

    def code_identity(self, scenario: Scenario) -> Any:
        """What the child says of the code a run of `scenario` runs (its `CodeIdentity.to_data()`, unchecked:
        the caller parses it), or None when it does not answer in time. The user's modules are imported
        in the child only, so only the child can tell which files they are."""
        self.start()
        try:
            with contextlib.suppress(_Gone):
                self._send(("code", scenario))
            answer = self._receive(_STUCK_S)
        except wire.WireError:
            answer = None
        if not isinstance(answer, tuple) or len(answer) != 2 or answer[0] != "code":
            self._kill()  # no answer, or one out of turn: the session cannot be trusted to stay in step
            return None
        return answer[1]

    def close(self) -> None:
        """Tell the child to stop, then kill its process group whatever it does, and clean up."""
        if self._child is None:
            return
        with contextlib.suppress(_Gone, OSError):
            self._send(("stop",))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._child.process.wait(timeout=_STOP_S)
        self._kill()

    # -- plumbing -------------------------------------------------------------------------------------

    _timed_out = False
    _death = ""

    def _request(self, index: int, scenario: Scenario, seed: int, jitter: float, wall_timeout_s: float,
                 origins: bool, ordered: bool = False) -> None:
        child = self._child
        assert child is not None
        entry = child.sent.get(id(scenario))
        forget, child.forget = child.forget, []
        settings = (wall_timeout_s, origins, ordered, forget, self.fresh_per_run)
        if entry is not None and entry[1] is scenario:  # known to the child: sent by key
            child.sent.move_to_end(id(scenario))
            self._send(("run", index, entry[0], None, seed, jitter, *settings))
            return
        key, child.next_key = child.next_key, child.next_key + 1
        self._send(("run", index, key, scenario, seed, jitter, *settings))
        child.sent[id(scenario)] = (key, scenario)
        while len(child.sent) > _KEPT:  # the child drops it when told, after the runs sent before
            child.forget.append(child.sent.popitem(last=False)[1][0])

    def _answer(self, index: int, scenario: Scenario, seed: int, jitter: float, wall_timeout_s: float,
                answering: Answering | None = None) -> IsolatedRun:
        """The child's answer for run `index`; for an order-first run, answering its questions first.
        The deadline is for the whole run, questions included."""
        left = time_left(wall_timeout_s + GRACE_S) if wall_timeout_s else None
        try:
            while True:
                answer = self._receive(left() if left is not None else None)
                if answer is None:
                    return self._lost(scenario, seed, jitter, wall_timeout_s)
                if answering is None or not isinstance(answer, tuple) or answer[:1] not in (("choose",), ("fault",)):
                    return self._decode(answer, index, scenario, seed, jitter)
                try:
                    reply = answering.reply(answer, index)
                except wire.WireError:
                    raise
                except BaseException:  # the chooser's own: the child's run waits for an answer that never comes
                    self._kill()
                    raise
                with contextlib.suppress(_Gone):  # then the next answer says what happened to the child
                    self._send(reply)
        except wire.WireError as exc:
            self._kill()
            return self._ended(scenario, seed, jitter, RunStatus.SCHEDULER_ERROR,
                               f"the isolated process sent data that is not a run ({exc}): the scheduler's code "
                               "wrote to the harness's channel?")

    def _lost(self, scenario: Scenario, seed: int, jitter: float, wall_timeout_s: float) -> IsolatedRun:
        """The run of a child that went away or ran out of time before answering."""
        self._kill()
        if self._timed_out:
            return self._ended(scenario, seed, jitter, RunStatus.HANG,
                               f"the run took more than {wall_timeout_s:g} s of real time and its isolated "
                               "process was killed (a scheduler that never yields, and ignores or switches off "
                               "the timer?)")
        return self._ended(scenario, seed, jitter, RunStatus.SCHEDULER_ERROR,
                           f"the isolated process running the scheduler {self._death} before the run ended "
                           "(os._exit, a crash, or a closed channel in the scheduler's code?)")

    def _decode(self, answer: Any, index: int, scenario: Scenario, seed: int, jitter: float) -> IsolatedRun:
        """An answer of the child's as a run; anything not shaped as the child writes it is a `WireError`."""
        try:
            kind, number, refused = answer[0], answer[1], tuple(str(r) for r in answer[-1])
            if number != index or kind not in ("result", "timeout", "raised", "error"):
                raise wire.WireError(f"an answer out of turn ({kind!r} for run {number!r}, expected run {index})")
            if kind == "result":
                result = wire.rebuild(answer[2], scenario)
                notes = answer[3]
                origins = Origins(dict(notes[0]), dict(notes[1])) if notes is not None else None
                return IsolatedRun(result, origins, refused)
            message = str(answer[2])
        except wire.WireError:
            raise
        except Exception as exc:  # a tuple too short, a field of the wrong type: forged by the child's code
            raise wire.WireError(f"an answer of the wrong shape ({type(exc).__name__}: {exc})") from None
        self._kill()  # the child ends its session after each of these
        if kind == "timeout":
            raise WallClockExceeded(message)
        if kind == "raised":
            return self._ended(scenario, seed, jitter, RunStatus.SCHEDULER_ERROR, message, refused)
        raise RuntimeError(f"the isolated run failed: {message}")  # what run() itself raised: a harness bug

    def _ended(self, scenario: Scenario, seed: int, jitter: float, status: RunStatus, error: str,
               refused: Sequence[str] = ()) -> IsolatedRun:
        """The result of a run the child never reported: no trace (it died with the child), its first
        batch ended at 0 ms with `status`, so the oracles name the hang or the scheduler's error."""
        batch = scenario.batches[0] if scenario.batches else Batch(())
        stopped = BatchRun(0, batch, 0, 0, (), status, StopReason.DONE, error)
        result = RunResult(scenario, self.label, seed, jitter, (stopped,), (), scenario.world,
                           World.from_state(scenario.world), 0, status, error,
                           wall_clock_exceeded=status is RunStatus.HANG, source=scenario if scenario.looped else None)
        return IsolatedRun(result, None, tuple(refused), ended_by_parent=True)

    def _send(self, message: Any) -> None:
        """Write one frame; while the child's pipe is full, read what it says meanwhile (it may be
        waiting for the parent to read). A child that neither reads nor writes for `_STUCK_S` seconds,
        or whose channel is closed, raises `_Gone`."""
        child = self._child
        assert child is not None
        try:
            data = memoryview(wire.frame(message))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise IsolationError(f"what the run needs cannot be sent to an isolated process ({type(exc).__name__}: "
                                 f"{exc}); a tool or model defined inside a function? run it in process: --no-isolate, "
                                 "isolate=False") \
                from None
        left = time_left(_STUCK_S)
        while data:
            try:
                written = os.write(child.to_child, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:  # EPIPE: the child is gone
                raise _Gone from exc
            if written:
                data, left = data[written:], time_left(_STUCK_S)
                continue
            if not left():
                raise _Gone
            readable, _, _ = select.select([child.from_child], [child.to_child], [], 1.0)
            if readable:
                self._drain(child)

    def _drain(self, child: _Child) -> bool:
        """Read what the child has written so far into its messages; False when its channel closed."""
        try:
            data = os.read(child.from_child, 1 << 20)
        except BlockingIOError:
            return True
        if not data:
            return False
        try:
            child.messages.extend(child.reader.feed(data))
        except wire.WireError as exc:  # kept in order: the answer it spoils raises it (see `_receive`)
            child.messages.append(exc)
        return True

    def _receive(self, seconds: float | None) -> Any:
        """The child's next message, or None when it is gone or `seconds` passed (`_timed_out` says which)."""
        child = self._child
        assert child is not None
        self._timed_out = False
        left = None if seconds is None else time_left(seconds)
        while True:
            if child.messages:
                message = child.messages.pop(0)
                if isinstance(message, wire.WireError):
                    raise message
                return message
            remaining = None if left is None else left()
            if remaining == 0:
                self._timed_out = True
                return None
            ready, _, _ = select.select([child.from_child], [], [], remaining)
            if ready and not self._drain(child):  # closed: the child exited, or its code closed the descriptor
                self._death = _how_it_ended(child.process)
                return None

    def _kill(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            child.process.kill()
        child.process.wait()
        for fd in (child.to_child, child.from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(child.root, ignore_errors=True)


#: Scenarios a session keeps known to the child (sent once, then named by key).
_KEPT = 64
#: Runs in flight at once (requests are small once the scenario was sent).
_WINDOW = 64
#: Seconds a fresh interpreter may take to import the harness, beyond the import limit.
_STARTUP_S = 30.0
#: Seconds the parent waits for a child told to stop before killing it.
_STOP_S = 2.0
#: Seconds a child may neither read the parent's requests nor write anything before it counts as gone.
_STUCK_S = 60.0


class _Gone(Exception):
    """The child stopped reading its requests (its channel closed, or it is stuck)."""


def _how_it_ended(process: subprocess.Popen[bytes]) -> str:
    try:
        code = process.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        return "closed its channel"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


def _stderr_fd() -> int | None:
    """Where the child's stdout goes: this process's stderr, so a print of the user's code never mixes
    with a report on stdout (None, inherited, when there is no usable stderr)."""
    try:
        os.fstat(2)
    except OSError:
        return subprocess.DEVNULL
    return 2
