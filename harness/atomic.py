"""Writing the user's files whole or not at all: every file a command or a report writes goes through here.

Owns the one way a file on the real disk is (re)written: into a temporary file beside it (same
directory, so the same filesystem), flushed and synced, then renamed over the target. A write that
fails (disk full, quota, a read-only or special directory such as /proc or /sys, no permission)
leaves the old file as it was and no partial or temporary file behind, and is raised as
`OutputError`: one line naming the file and the reason, which the command line turns into exit 74
(harness.exitcodes.ExitCode.IO_ERROR). It also owns appending whole lines to a file that grows (a
sweep's JSONL). It never decides what is written or where (its callers do), and it never touches the
simulated world (harness.world).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


class OutputError(Exception):
    """A file could not be written: `str()` is `PATH: cannot write: REASON` (the OS's words)."""

    def __init__(self, path: str | os.PathLike[str], exc: OSError) -> None:
        reason = exc.strerror or str(exc) or type(exc).__name__
        super().__init__(f"{os.fspath(path)}: cannot write: {reason}")
        self.path = os.fspath(path)
        self.errno = exc.errno


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """`path` holds `text` (UTF-8) afterwards, or is as it was before and `OutputError` says why."""
    with replacing(path) as file:
        file.write(text)


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text file (UTF-8, `\\n` line ends) that becomes `path` when the block ends without an error;
    on any error (the block's, or the disk's) the temporary file is removed and `path` is untouched.
    OSError from the block or the disk is raised as OutputError."""
    with _replacing(path) as descriptor, os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as file:
        yield file
        file.flush()


@contextlib.contextmanager
def replacing_bytes(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """As `replacing`, for a binary file (an image)."""
    with _replacing(path) as descriptor, os.fdopen(descriptor, "wb") as file:
        yield file
        file.flush()


@contextlib.contextmanager
def _replacing(path: str | os.PathLike[str]) -> Iterator[int]:
    """A descriptor of a new temporary file beside `path`, renamed over it after the block (synced first)."""
    given = Path(path)
    # Through a symlink, as open(path, "w") writes: the file it names is replaced, the link stays.
    target = Path(os.path.realpath(given))
    try:
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:80]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(given, exc) from None
    try:
        yield os.dup(descriptor)  # the block's file object closes its own copy
        os.fsync(descriptor)
        os.close(descriptor)
        descriptor = -1
        _keep_mode(target, temporary)
        os.replace(temporary, target)
    except BaseException as exc:
        if descriptor >= 0:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise OutputError(given, exc) from None
        raise


def _keep_mode(target: Path, temporary: str) -> None:
    """A rewritten file keeps its permissions; a new one gets the umask's (mkstemp's is 0600)."""
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)


def append_lines(file: IO[bytes], path: str | os.PathLike[str], lines: list[str]) -> None:
    """Append whole lines to a file opened unbuffered for appending (`open(path, "ab", buffering=0)`).
    A write that fails part-way is cut back to the last whole line (a reader skips nothing it should
    keep, and nothing torn stays) and raised as OutputError."""
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    try:
        size = os.fstat(file.fileno()).st_size
    except OSError as exc:
        raise OutputError(path, exc) from None
    try:
        view = memoryview(data)
        while view:
            written = file.write(view)
            view = view[written or 0:]
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(file.fileno(), size)
        raise OutputError(path, exc) from None


def make_dir(path: str | os.PathLike[str]) -> None:
    """`mkdir -p`, or OutputError naming the directory."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(path, exc) from None
