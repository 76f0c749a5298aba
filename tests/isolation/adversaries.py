"""Issue 26's adversaries: schedulers that attack the harness's own process, which only a separate,
supervised process contains (`--isolate`). Each builds with no arguments, so the command line names it
as `tests.isolation.adversaries:NAME`. Those that write the disk aim at the path in
$HARNESS_TEST_TARGET (a directory outside the run's output directory), so a test can check that nothing
arrived there.
"""

from __future__ import annotations

import contextlib
import io
import os
import posix
import signal
import sqlite3
import sys
import threading
import time
from typing import Any

from harness.model import Batch
from harness.scheduling import SchedulerContext
from tests.containment.adversaries import Process, _serially


def _target(name: str) -> str:
    return os.path.join(os.environ.get("HARNESS_TEST_TARGET", "/tmp"), name)


class IgnoresAlarmAndSpins:
    """Ignores SIGALRM (the in-process watchdog), then spins without yielding."""

    name = "ignores-alarm"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass


class SwitchesTimerOff:
    """Disarms the real-time timer, then spins."""

    name = "timer-off"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        signal.setitimer(signal.ITIMER_REAL, 0)
        while True:
            pass


class NonDaemonThread:
    """Leaves a non-daemon thread running forever, then behaves: the run passes and the process must exit."""

    name = "non-daemon-thread"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        threading.Thread(target=lambda: time.sleep(3600), daemon=False).start()
        return _serially(batch, ctx)


class OsExit:
    """`os._exit(0)` halfway through: no exception, no clean-up, the process just ends."""

    name = "os-exit"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        os._exit(0)


class Forks:
    """`os.fork()`: a second copy of the harness would carry on with the run."""

    name = "forks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        if os.fork() == 0:
            time.sleep(3600)
        return (yield from _serially(batch, ctx))


class ClosesStdout:
    """Closes standard output (the descriptor, not just Python's object), then behaves."""

    name = "closes-stdout"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        sys.stdout.close()
        os.close(1)
        return _serially(batch, ctx)


class Chdir:
    """Moves the process to another directory (where `--out` would then land), then behaves."""

    name = "chdir"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        os.chdir(os.environ.get("HARNESS_TEST_TARGET", "/"))
        return _serially(batch, ctx)


class InterruptWithSigintIgnored:
    """Ignores SIGINT (as under nohup or a CI runner), then raises KeyboardInterrupt itself: no Ctrl-C
    was pressed, so it is the scheduler's error, not the user's interrupt."""

    name = "interrupt-sigint-ignored"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt


class PatchesOracles:
    """Replaces every oracle with one that passes, then reports no results at all (missing-result)."""

    name = "patches-oracles"

    def __init__(self) -> None:
        import harness.oracles as oracles
        from harness.oracles.verdict import Verdict

        for name in list(oracles.ORACLES):
            oracles.ORACLES[name] = lambda result, name=name: Verdict.of(name, [])  # type: ignore[misc]

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        return []


class WritesFileIO:
    name = "writes-fileio"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        with io.FileIO(_target("fileio.txt"), "w") as f:
            f.write(b"escaped")
        return _serially(batch, ctx)


class WritesPosixOpen:
    name = "writes-posix-open"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        fd = posix.open(_target("posix.txt"), os.O_WRONLY | os.O_CREAT)
        os.write(fd, b"escaped")
        os.close(fd)
        return _serially(batch, ctx)


class WritesSqlite:
    name = "writes-sqlite"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        connection = sqlite3.connect(_target("escaped.db"))
        connection.execute("create table t (x)")
        connection.commit()
        connection.close()
        return _serially(batch, ctx)


class WritesOsSystem:
    name = "writes-os-system"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        os.system(f"echo escaped > {_target('system.txt')}")
        return _serially(batch, ctx)


class WritesThroughDirFd:
    """Opens the target directory, then writes a file relative to its descriptor (`dir_fd`): the
    audit event of `os.open` names only the relative path."""

    name = "writes-dir-fd"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        directory = os.open(os.environ.get("HARNESS_TEST_TARGET", "/tmp"), os.O_RDONLY)
        fd = os.open("dirfd.txt", os.O_WRONLY | os.O_CREAT, dir_fd=directory)
        os.write(fd, b"escaped")
        return _serially(batch, ctx)


class WritesPrivately:
    """Writes a scratch file in its working directory (the child's private one): allowed, then behaves."""

    name = "writes-privately"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        with open("scratch.txt", "w") as f:
            f.write("mine")
        return _serially(batch, ctx)


class _RunsInTheReader:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (self.command,))


class ForgesAFrame:
    """Writes its own frame on the harness's channel (the descriptor the child reports on): an answer
    whose unpickling would run `os.system` in whoever reads it, touching $HARNESS_TEST_TARGET/pwned."""

    name = "forges-a-frame"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        import pickle
        import struct

        data = pickle.dumps(("result", 0, _RunsInTheReader(f"touch {_target('pwned')}"), None, []))
        os.write(int(sys.argv[2]), struct.pack("!I", len(data)) + data)
        return _serially(batch, ctx)


class GarbageOnTheChannel:
    """Writes bytes that are no frame at all on every descriptor it can, then behaves."""

    name = "garbage-on-the-channel"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        for fd in range(3, 32):
            with contextlib.suppress(OSError):
                os.write(fd, b"\x00\x00\x00\x05junk!")
        return _serially(batch, ctx)


class ForgesAField:
    """Writes a real run's packed data as its answer, with one field of another type (the status a
    tuple): the oracles reading it would crash (exit 70) unless the parent checks every field."""

    name = "forges-a-field"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        import pickle
        import struct

        from harness import find_scenario, get_scheduler, run
        from harness.isolation import wire

        real = run(find_scenario("config-clobber"), get_scheduler("serial"), 1)
        data = wire.pack(real, real.scenario)
        data["status"] = (1, 2, 3)
        frame = pickle.dumps(("result", 0, data, None, []))
        os.write(int(sys.argv[2]), struct.pack("!I", len(frame)) + frame)
        return _serially(batch, ctx)



class AsksAForgedQuestion:
    """Writes an order-first question of the wrong shape (its step a string) on the channel, as the
    child's arbiter would ask its parent, then behaves: the parent must not hand it to its chooser.
    Not in EXPECTED: a tool for the explore tests."""

    name = "asks-a-forged-question"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        from harness.isolation import wire

        wire.write_frame(int(sys.argv[2]), ("choose", 0, tuple(c.id for c in batch.calls), "one", [], []))
        return _serially(batch, ctx)

#: Each adversary with the exit code of `harness run --isolate` on a two-call scenario (1 s wall timeout).
EXPECTED: dict[str, tuple[int, str]] = {
    "IgnoresAlarmAndSpins": (3, "hang"),
    "SwitchesTimerOff": (3, "hang"),
    "NonDaemonThread": (0, "completed"),
    "OsExit": (4, "scheduler-error"),
    "Forks": (4, "scheduler-error"),
    "ClosesStdout": (0, "completed"),
    "Chdir": (0, "completed"),
    "InterruptWithSigintIgnored": (4, "scheduler-error"),
    "PatchesOracles": (4, "completed"),
    "WritesFileIO": (4, "scheduler-error"),
    "WritesPosixOpen": (4, "scheduler-error"),
    "WritesSqlite": (4, "scheduler-error"),
    "WritesOsSystem": (4, "scheduler-error"),
    "WritesThroughDirFd": (4, "scheduler-error"),
    "WritesPrivately": (0, "completed"),
    "ForgesAFrame": (4, "scheduler-error"),
    "GarbageOnTheChannel": (4, "scheduler-error"),
    "ForgesAField": (4, "scheduler-error"),
}


class SaysPidAndSpins(IgnoresAlarmAndSpins):
    """IgnoresAlarmAndSpins that first prints its process id (to the parent's stderr): a test then
    checks that this process is gone. Not in EXPECTED: a tool for tests."""

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        print(f"isolated-pid={os.getpid()}", flush=True)
        return super().__call__(batch, ctx)


class SpinsUntilTheAlarm:
    """Starts a call, then spins without yielding; the child's own timer stops it (a soft hang, after
    which the child ends its session). Not in EXPECTED: a tool for the supervisor's tests."""

    name = "spins-until-the-alarm"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Process:
        yield ctx.start(batch.calls[0])
        while True:
            pass
