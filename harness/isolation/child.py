"""The isolated child: `python -m harness.isolation.child IN OUT`, started by `Supervisor` only.

Owns the child's side of a session: read the job from descriptor IN (the parent's `sys.path`, the
scheduler's name, the limits), confine itself (harness.isolation.confine), import and build the
scheduler, answer "ready", then run each scenario the parent sends (with the real-time limit and the
origins recording it asks for; an order-first run asks the parent for each choice, see
harness.isolation.asking) and write each run back as data (harness.isolation.wire) on descriptor OUT,
until told to stop; then it leaves with `os._exit`, so a
thread the user's code left running cannot keep it alive. It never judges a run: the parent's
oracles do, on the data. Its stdout is the parent's stderr; it never prints itself.
"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext, suppress
from typing import Any


def main(argv: list[str]) -> None:
    inbox, outbox, parent = int(argv[0]), int(argv[1]), int(argv[2])
    _die_with(parent)
    from harness.isolation import wire

    job = wire.read_frame(inbox)
    if not isinstance(job, dict):
        os._exit(2)
    try:
        serve(job, inbox, outbox)
    except BaseException:
        os._exit(3)
    os._exit(0)


def serve(job: dict[str, Any], inbox: int, outbox: int) -> None:
    from harness.diagnosis.origins import recording, show_paths_from
    from harness.isolation import wire
    from harness.isolation.asking import AskingChooser
    from harness.isolation.confine import DiskGuard, apply_limits
    from harness.policies.registry import build_scheduler
    from harness.run import run
    from harness.run.driver import describe_error, scheduler_label
    from harness.scenario.spec import Scenario
    from harness.sim.realtime import ImportTimeout, WallClockExceeded, wall_limit_per_run, watching_user_interrupts

    sys.path[:] = job["sys_path"]
    show_paths_from(job["cwd"])  # a story's source lines read as they would in the parent
    sys.dont_write_bytecode = True
    apply_limits(job["address_space"], job["open_files"], None)
    guard = DiskGuard(job["root"])
    if job["guard"]:
        guard.install()
    seen = 0

    def refusals() -> list[str]:
        nonlocal seen
        new, seen = guard.refused[seen:], len(guard.refused)
        return new

    # The interpreter and the harness are up: from here the import limit counts (the parent's deadline).
    wire.write_frame(outbox, ("started",))
    with watching_user_interrupts():
        try:
            scheduler = build_scheduler(job["scheduler"], job["import_timeout"])
        except ImportTimeout as exc:
            wire.write_frame(outbox, ("build-error", "import-timeout", str(exc), refusals()))
            return
        except WallClockExceeded as exc:
            wire.write_frame(outbox, ("build-error", "import-timeout", str(exc), refusals()))
            return
        except BaseException as exc:
            if isinstance(exc.__context__, ImportTimeout):
                wire.write_frame(outbox, ("build-error", "import-timeout", str(exc.__context__), refusals()))
                return
            kind = "unknown" if isinstance(exc, LookupError) else "usage" if isinstance(exc, Exception) else "raised"
            wire.write_frame(outbox, ("build-error", kind, describe_error(exc) if kind == "raised" else str(exc),
                                      refusals()))
            return
        wire.write_frame(outbox, ("ready", scheduler_label(scheduler)[0], _grace_of(scheduler), refusals()))
        scenarios: dict[int, Scenario] = {}
        while True:
            request = wire.read_frame(inbox)
            if request is None or request[0] == "stop":
                return
            if request[0] == "code":  # which of the user's files a run of this scenario runs (for a reproducer)
                from harness.reproducers.file import code_identity

                wire.write_frame(outbox, ("code", code_identity(job["scheduler"], request[1], scheduler).to_data()))
                continue
            _, index, key, scenario, seed, jitter, wall_timeout, want_origins, ordered, forget, fresh = request
            for old in forget:  # the parent no longer names these
                scenarios.pop(old, None)
            if scenario is not None:
                scenarios[key] = scenario
            scenario = scenarios[key]
            _cpu_budget(wall_timeout)
            # An order-first run asks the parent for each choice: the explorer's chooser stays there.
            chooser = AskingChooser(index, inbox, outbox) if ordered else None
            try:
                if fresh:  # built again for this run, as a sweep builds it for each cell in process
                    scheduler = build_scheduler(job["scheduler"], job["import_timeout"])
                recorder = recording() if want_origins else nullcontext()
                with wall_limit_per_run(wall_timeout), recorder as origins:
                    result = run(scenario, scheduler, seed, jitter=jitter, chooser=chooser)
            except WallClockExceeded as exc:
                if exc.result is None:
                    wire.write_frame(outbox, ("timeout", index, str(exc), refusals()))
                    return
                result = exc.result
            except KeyboardInterrupt as exc:  # no Ctrl-C reaches the child: the scheduler's own
                wire.write_frame(outbox, ("raised", index, describe_error(exc), refusals()))
                return
            except Exception as exc:  # what run() itself raises (a harness bug, a bad seed)
                wire.write_frame(outbox, ("error", index, describe_error(exc), refusals()))
                return
            notes = (dict(origins.started), dict(origins.awaited)) if origins is not None else None
            wire.write_frame(outbox, ("result", index, wire.pack(result, scenario), notes, refusals()))
            if result.wall_clock_exceeded:
                return  # the scheduler spun: nothing else runs in this process


def _grace_of(scheduler: object) -> int | None:
    """The interrupt grace the scheduler declares (`grace_ms`, an int), for the parent's swarm; None
    if it declares none (the parent checks it as harness.explore.swarm.declared_grace_ms does)."""
    try:
        grace = getattr(scheduler, "grace_ms", None)
    except Exception:
        return None
    return grace if type(grace) is int else None


def _die_with(parent: int) -> None:
    """Linux: the kernel kills this process when the parent goes (even by SIGKILL, when it cannot kill
    the child itself), so a spinning child is never left behind. It is tied to the parent's thread
    that started the child (prctl PR_SET_PDEATHSIG): a supervisor lives on one thread for its session.
    Elsewhere the CPU-time backstop (`_cpu_budget`) and the closed channel end the child."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent was gone before the request was made
        os._exit(1)


def _cpu_budget(wall_timeout: float) -> None:
    """Let the next run use at most about its real-time budget in CPU seconds more (soft limit; SIGXCPU
    ends the child): a backstop behind the parent's wall-clock kill, for a spin no timer stops."""
    if not wall_timeout:
        return
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    soft = spent + int(wall_timeout * 2) + 5
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


if __name__ == "__main__":
    main(sys.argv[1:])
