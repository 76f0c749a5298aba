"""How a `harness` command fails: the one wrapper every command wears.

Owns the translation of exceptions into exit codes and one-line messages on stderr: known user
mistakes (unknown scenario or scheduler, malformed scenario file or reproducer) are exit 2, a hang
exit 3 (an import or constructor that outlasts `--import-timeout` too, said as such), nondeterminism
exit 5, Ctrl-C exit 130, a closed stdout pipe a quiet exit 0, a file that cannot be written (disk
full, no permission, read-only: harness.atomic.OutputError, or the OS's error on the way) exit 74 and
anything else a harness bug (exit 70), never a traceback. It never parses options or prints results.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from harness.atomic import OutputError
from harness.exitcodes import ExitCode
from harness.policies import UnknownSchedulerError
from harness.reproducers.file import ReproducerError
from harness.scenario import ScenarioError, UnknownScenarioError
from harness.sim.realtime import ImportTimeout, WallClockExceeded

F = TypeVar("F", bound=Callable[..., Any])

#: Errors of the machine's disk or the user's permissions, never of the harness: an I/O error (exit 74).
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPERM, errno.EACCES, errno.EROFS, errno.EIO,
                         errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP,
                         errno.EINVAL, errno.ENXIO, errno.ENODEV, errno.EBUSY, errno.ETXTBSY})


def guarded(command: F) -> F:
    """Turn known user mistakes into one-line errors (exit 2) and anything else into exit 70."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (UnknownScenarioError, UnknownSchedulerError, ScenarioError, ReproducerError) as exc:
            if isinstance(exc.__context__, WallClockExceeded):  # "cannot build": its constructor spun
                out_of_time(exc.__context__)
            click.echo(f"harness: {exc}", err=True)
            sys.exit(ExitCode.USAGE_ERROR)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:  # the user's Ctrl-C (a scheduler's own is its scheduler-error, exit 4)
            click.echo("harness: interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:  # the reader went away (`harness list scenarios | head -1`)
            quiet_exit()
        except OutputError as exc:
            io_error(str(exc))
        except OSError as exc:
            if exc.errno not in DISK_ERRORS:
                internal_error(exc)
            io_error(f"{exc.filename}: {exc.strerror}" if exc.filename is not None else str(exc))
        except WallClockExceeded as exc:  # outside a run (oracles, reorder runs, an import): still a hang
            out_of_time(exc)
        except Exception as exc:
            from harness.explore.findings import NondeterministicScheduler

            if isinstance(exc, NondeterministicScheduler):
                click.echo(f"harness: nondeterministic: {exc}", err=True)
                sys.exit(ExitCode.NONDETERMINISM)
            internal_error(exc)

    return wrapper  # type: ignore[return-value]


def out_of_time(exc: WallClockExceeded) -> None:
    """A real-time limit ran out: exit 3, one line saying which (a run's hang, or a slow import)."""
    kind = "import timeout" if isinstance(exc, ImportTimeout) else "hang"
    click.echo(f"harness: {kind}: {exc}", err=True)
    sys.exit(ExitCode.LIVENESS_VIOLATION)


def quiet_exit() -> None:
    """Stop quietly with exit 0 when stdout's reader has gone, as `head` and pagers expect; stdout
    is pointed at /dev/null first so the interpreter's last flush cannot fail on the closed pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(ExitCode.PASS)


def io_error(message: str) -> None:
    """A file the command needs could not be written or read (the disk, not the input): one line, exit 74."""
    click.echo(f"harness: {message}", err=True)
    sys.exit(ExitCode.IO_ERROR)


def internal_error(exc: Exception) -> None:
    """A bug in the harness, not in the user's input: one line, exit 70."""
    click.echo(f"harness: internal error (a harness bug, please report it): {type(exc).__name__}: {exc}", err=True)
    sys.exit(ExitCode.HARNESS_BUG)
