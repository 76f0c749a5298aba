"""Replaying reproducers: the self-check before saving one, and `python -m harness.reproducers.replay`.

Owns `verify` / `save_verified` (a reproducer that does not replay is not saved: it is replayed in
this process and, optionally, in a fresh one under another PYTHONHASHSEED, which runs this module
with the reproducer on stdin; before a file is written, its bytes are loaded back as `harness replay`
loads them and replayed once more) and `SelfCheck`, what they found. It never explores.

The reproducer API is importable from here, as it was before this module was split: the file
format is `harness.reproducers.file`, the printed command `harness.reproducers.command`, the
comparison with the recording `harness.reproducers.divergence`, and the judgement of a replay
(reproduced, nondeterministic, fixed, still fails) `harness.reproducers.judgement`.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.reproducers.code_identity import identity_of
from harness.reproducers.command import modules_named, replay_command, search_path_prefix
from harness.reproducers.divergence import (
    Divergence,
    Replay,
    describe_divergence,
    first_difference,
    likely_cause,
    replay,
)
from harness.reproducers.file import (
    FORMAT,
    Reproducer,
    ReproducerError,
    code_identity,
    load,
    loads,
    reproducer_of,
    save,
    to_json,
)
from harness.reproducers.judgement import (
    DIVERGED,
    EXPECTATIONS,
    FIXED,
    NONDETERMINISTIC,
    REPRODUCED,
    STILL_FAILS,
    Judgement,
    judge,
)
from harness.run.elsewhere import RunsElsewhere
from harness.scenario.dump import NotSerializable
from harness.scheduling import Scheduler

__all__ = ["DIVERGED", "EXPECTATIONS", "FIXED", "FORMAT", "NONDETERMINISTIC", "REPRODUCED", "STILL_FAILS",
           "Divergence", "Judgement", "Replay", "Reproducer", "ReproducerError", "SelfCheck", "Unloadable",
           "code_identity", "describe_divergence", "first_difference", "judge", "likely_cause", "load", "loads",
           "modules_named", "replay", "replay_command", "reproducer_of", "save", "save_verified", "search_path_prefix",
           "to_json", "verify"]


@dataclass(frozen=True)
class SelfCheck:
    """Whether a reproducer replays: here, and (if asked) in a fresh process under another hash seed."""

    here: Replay
    #: (identical, description) of the replay in a fresh process; None when not asked for.
    fresh: tuple[bool, str] | None = None
    #: Where "here" is: "this process", or "its isolated process" (a scheduler that runs elsewhere).
    where: str = "this process"

    @property
    def ok(self) -> bool:
        return self.here.identical and (self.fresh is None or self.fresh[0])

    def describe(self) -> str:
        if self.ok:
            where = f"in {self.where}" + (" and in a fresh one under another PYTHONHASHSEED" if self.fresh else "")
            return f"replays {where}"
        if not self.here.identical:
            return f"nondeterministic: replaying in {self.where} {self.here.describe()}; {self.cause()}"
        assert self.fresh is not None
        return (f"nondeterministic: in a fresh process under another PYTHONHASHSEED it {self.fresh[1]}; likely "
                "cause: an order that depends on string hashing (iterating a set, or a dict built from one)")

    def cause(self) -> str:
        return self.here.cause()


def verify(reproducer: Reproducer, *, fresh_process: bool = False, scheduler: Scheduler | None = None) -> SelfCheck:
    """Replay `reproducer` here (under `scheduler`, an instance, if given) and, with `fresh_process`,
    in a new interpreter under another PYTHONHASHSEED (the scheduler must then be importable by name)."""
    here = replay(reproducer, scheduler)
    fresh = _replay_fresh(reproducer) if fresh_process and here.identical else None
    return SelfCheck(here, fresh, "its isolated process" if isinstance(scheduler, RunsElsewhere) else "this process")


class Unloadable(NotSerializable):
    """A reproducer whose file `harness replay` would refuse or run differently (a shrinking or
    serialisation bug): it is not saved, and the message says why."""


def save_verified(reproducer: Reproducer, directory: Path, *, version: str, fresh_process: bool = False,
                  scheduler: Scheduler | None = None) -> tuple[Path | None, SelfCheck]:
    """Save the reproducer only if it replays (see `verify`) and its file, read back exactly as
    `harness replay` reads it (parsed and validated from the bytes about to be written, its modules
    trusted as the replay command trusts them), replays identically too; returns (path or None, the
    check). Raises `Unloadable` for a file that would not load or would replay differently, and
    `harness.scenario.dump.NotSerializable` for a scenario that data cannot name."""
    check = verify(reproducer, fresh_process=fresh_process, scheduler=scheduler)
    if not check.ok:
        return None, check
    if reproducer.code is not None:
        # The same packages' files again, now that a run of it happened in this process: a module the
        # code imports only while it runs (the exploration may have run in other processes) counts too.
        # Run elsewhere (an isolated child), that process imported it and tells.
        again = code_identity(reproducer.scheduler, reproducer.scenario, scheduler) \
            if isinstance(scheduler, RunsElsewhere) else identity_of(reproducer.code.packages)
        reproducer = dataclasses.replace(reproducer, code=again)
    text = to_json(reproducer, version=version)
    _check_loads(text, reproducer, scheduler)
    return save(reproducer, directory, version=version, text=text), check


def _check_loads(text: str, reproducer: Reproducer, scheduler: Scheduler | None) -> None:
    """Raise `Unloadable` unless `text` loads as `harness replay` loads it and replays identically."""
    try:
        loaded = loads(text, "<the reproducer being saved>", trust=reproducer.modules,
                       own_scheduler=scheduler is None)
    except ReproducerError as exc:
        raise Unloadable(f"it would not load as `harness replay` loads it: {exc}") from None
    again = replay(loaded, scheduler)
    if not again.identical:
        raise Unloadable(f"loaded from its file it replays differently from the run it records: {again.describe()}")


def _replay_fresh(reproducer: Reproducer) -> tuple[bool, str]:
    from harness import __version__

    env = dict(os.environ)
    current = env.get("PYTHONHASHSEED", "")
    env["PYTHONHASHSEED"] = str((int(current) + 4241) % 4294967295 or 1) if current.isdigit() else "4241"
    # The child sees the modules this process sees (a user's scheduler imported from a test tree).
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # This process made the reproducer from code it already runs: the child may import the same.
    trust = [arg for module in reproducer.modules for arg in ("--trust-module", module)]
    done = subprocess.run([sys.executable, "-m", "harness.reproducers.replay", *trust],
                          input=to_json(reproducer, version=__version__), capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    if done.returncode not in (0, _DIVERGED):
        raise ReproducerError(f"the reproducer could not be replayed in a fresh process (exit {done.returncode}): "
                              f"{done.stderr.strip()[-300:]}")
    return done.returncode == 0, done.stdout.strip()


#: `python -m harness.reproducers.replay`'s exit code for a replay that ran and differs (anything else but 0 is
#: a replay that could not run, e.g. a scheduler that does not import there).
_DIVERGED = 3


def _main() -> int:
    """`python -m harness.reproducers.replay [--trust-module M ...]`: replay the reproducer on stdin; exit 0 if
    identical, 3 if not."""
    args = sys.argv[1:]
    trust = tuple(args[i + 1] for i in range(len(args) - 1) if args[i] == "--trust-module")
    outcome = replay(loads(sys.stdin.read(), "<stdin>", trust=trust))
    print(outcome.describe())
    return 0 if outcome.identical else _DIVERGED


if __name__ == "__main__":
    sys.exit(_main())
