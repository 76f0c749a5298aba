"""How a world operation fails: `WorldError`, the error a real system call would raise.

Owns the message a failed file operation shows the model (`[Errno 2] No such file or directory:
'/repo/x'`, Linux's numbers and words on any host, since the text goes into results and
fingerprints), its pickling, and turning a pyfakefs `OSError` into one. It never decides *whether*
an operation fails: resolution and the file operations do.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import Any

#: Linux's number and message for each errno name. The world is pinned to Linux semantics (see
#: `World.__init__`), and an error's text goes into results and fingerprints, so it must read the same
#: on any host: macOS numbers ELOOP 62, not 40, and its libc words some messages differently.
_LINUX_ERRNO: dict[str, tuple[int, str]] = {
    "EPERM": (1, "Operation not permitted"),
    "ENOENT": (2, "No such file or directory"),
    "EIO": (5, "Input/output error"),
    "EACCES": (13, "Permission denied"),
    "EBUSY": (16, "Device or resource busy"),
    "EEXIST": (17, "File exists"),
    "EXDEV": (18, "Invalid cross-device link"),
    "ENOTDIR": (20, "Not a directory"),
    "EISDIR": (21, "Is a directory"),
    "EINVAL": (22, "Invalid argument"),
    "ENAMETOOLONG": (36, "File name too long"),
    "ENOTEMPTY": (39, "Directory not empty"),
    "ELOOP": (40, "Too many levels of symbolic links"),
}


class WorldError(Exception):
    """A world operation failed the way the real system call would, with its errno.

    `WorldError(errno.ENOENT, "/repo/x")` reads `[Errno 2] No such file or directory: '/repo/x'`,
    exactly what `str(OSError)` gives in the tool's process, so the model sees the error a real tool
    would show it; `WorldError(errno.ENOENT, a, b)` reads `...: 'a' -> 'b'` as a failed rename does.
    `errno` is the host's constant (compare it with `errno.ENOENT`), `name` its symbolic name; the
    number printed is Linux's whatever the host. `text` replaces the whole message for errors that
    are not the kernel's (Python's `embedded null byte`). A lone string is a free-form message with
    no errno, for callers that predate errnos.
    """

    def __init__(self, code: int | str, filename: str | None = None, filename2: str | None = None, *,
                 text: str | None = None) -> None:
        if isinstance(code, str):  # WorldError("message"): free-form, no errno
            self.errno: int | None = None
            self.name: str | None = None
            self.strerror = code
            message = code
        else:
            self.errno = code
            self.name = _errno.errorcode.get(code, f"E{code}")
            number, self.strerror = _LINUX_ERRNO.get(self.name, (code, os.strerror(code)))
            message = f"[Errno {number}] {self.strerror}"
            if filename is not None:
                message += f": {filename!r}" + (f" -> {filename2!r}" if filename2 is not None else "")
        self.filename = filename
        self.filename2 = filename2
        super().__init__(text if text is not None else message)

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls `WorldError(message)`, which would drop the errno.
        return (_restore_world_error, (self.errno, self.strerror, self.filename, self.filename2, str(self)))


def _restore_world_error(code: int | None, strerror: str, filename: str | None, filename2: str | None,
                         text: str) -> WorldError:
    return WorldError(strerror if code is None else code, filename, filename2, text=text)


def from_os_error(exc: OSError, filename: str, filename2: str | None = None) -> WorldError:
    """A pyfakefs failure as the WorldError of the path the tool asked for (pyfakefs raises host
    errnos, so the name maps to Linux's number and message)."""
    return WorldError(exc.errno if isinstance(exc.errno, int) else _errno.EIO, filename, filename2)


def null_byte_error(path: str) -> WorldError:
    """A path with a NUL byte never reaches the kernel: Python refuses it with this ValueError text."""
    return WorldError(_errno.EINVAL, path, text="embedded null byte")

