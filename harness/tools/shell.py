"""Shell-like tools: `run_tests` and `terminal`.

Owns their behaviour. `run_tests` reads the whole tree shortly after it starts, and passes only if
every `requires FILE TEXT` line of every `test_*` file under its path holds (so a test run that saw
old or truncated code fails). `terminal` runs a tiny deterministic shell (cd, pwd, ls, cat, echo
with > and >>, export, rm, mkdir, touch, true, false) in the *shared* session: its `cd` moves every
later command, which is the implicit shared state that fools schedulers. It ignores cancellation,
like a real subprocess left running; with `background = true` it returns at once and the command
runs on, touching the world after the call returned (hermes' background processes). A failed system
call prints what coreutils and bash print (`cat: x: No such file or directory`, `rm: cannot remove
'd': Is a directory`). Never a real shell: nothing here can reach the host.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.params import Parameters
from harness.tools.spec import (
    Args,
    Declared,
    Detach,
    ResourceKeys,
    SideEffect,
    ToolError,
    ToolIO,
    ToolSpec,
    require_str,
)
from harness.world.errors import WorldError


def run_tests(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    root = args.get("path", ".")
    if not isinstance(root, str):
        raise ToolError("argument 'path' must be a string")
    yield 0.1  # collection: the test process imports the code under test here
    base = io.path(root)
    tree = {path: io.read_resolved(path) for path in io.list_files(root)}
    failures: list[str] = []
    tests = 0
    for path in sorted(tree):
        if not path.rpartition("/")[2].startswith("test_"):  # the base name (`posixpath.basename`)
            continue
        tests += 1
        for line in tree[path].splitlines():
            if not line.startswith("requires "):
                continue
            parts = line.split(" ", 2)
            if len(parts) < 3:
                failures.append(f"{path}: malformed requirement {line!r}")
                continue
            target = posixpath.normpath(posixpath.join(base, parts[1]))
            if parts[2] not in tree.get(target, ""):
                failures.append(f"{path}: {parts[1]} lacks {parts[2]!r}")
    yield 1.0
    if tests == 0:
        failures.append("no tests collected")
    return {"passed": not failures, "tests": tests, "failures": failures}


def terminal(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    command = require_str(args, "command")
    if args.get("background") is True:
        return (yield from _background(command, io))
    yield 1.0
    out: list[str] = []
    code = 0
    for segment in _split_commands(command):
        try:
            code = _run_one(segment, io, out)
        except ToolError as exc:
            out.append(str(exc))
            code = 1
        except WorldError as exc:  # not raised by one of the commands below: the shell's own words
            out.append(f"bash: {exc.filename}: {_strerror(exc)}\n" if exc.filename else f"bash: {exc}\n")
            code = 1
        if code != 0:
            break
    return {"exit_code": code, "output": "".join(out), "cwd": io.world.cwd}


def _background(command: str, io: ToolIO) -> Generator[float, None, JSONValue]:
    """hermes' `terminal(background=True)`: the process starts and the call returns at once with its
    session id; the command runs on, as a foreground one would (over the call's latency), touching the
    world after the call has returned. Its output goes to the process's log, not to the result."""
    value: JSONValue = {"output": "Background process started", "session_id": f"proc_{io.call_id}", "exit_code": 0}
    yield Detach(value)
    yield 1.0
    for segment in _split_commands(command):
        try:
            if _run_one(segment, io, []) != 0:
                break
        except (ToolError, WorldError):
            break
    return value


def _split_commands(command: str) -> list[list[str]]:
    try:
        words = shlex.split(command.replace("&&", " && ").replace(";", " ; "))
    except ValueError as exc:
        raise ToolError(f"terminal: cannot parse command: {exc}") from None
    segments: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", ";"):
            segments.append([])
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _strerror(exc: WorldError) -> str:
    """The message a command prints for a failed system call: `strerror(errno)`, or the error's own
    text when it has no errno or is not the kernel's (a NUL byte)."""
    return exc.strerror if exc.name is not None and str(exc).startswith("[Errno") else str(exc)


def _fails(exc: WorldError, form: str, raw: str) -> ToolError:
    """A coreutils-style message, `form` naming the operand as the user typed it:
    `cat: x: No such file or directory`, `rm: cannot remove 'd': Is a directory`."""
    return ToolError(form.format(raw) + f": {_strerror(exc)}\n")


def _run_one(words: list[str], io: ToolIO, out: list[str]) -> int:
    name, rest = words[0], words[1:]
    redirect, target = None, None
    if len(rest) >= 2 and rest[-2] in (">", ">>"):
        redirect, target, rest = rest[-2], rest[-1], rest[:-2]
    text = ""
    if name == "cd":
        io.set_cwd(rest[0] if rest else io.world.home)
    elif name == "pwd":
        text = io.get_cwd() + "\n"
    elif name == "ls":
        operand = rest[0] if rest else "."
        try:
            directory = io.path(operand)
            listed = io.list_files(directory)
        except WorldError as exc:
            raise _fails(exc, "ls: cannot access '{}'", operand) from None
        names = sorted({posixpath.relpath(p, directory).split("/")[0] for p in listed})
        text = "".join(n + "\n" for n in names)
    elif name == "cat":
        for path in rest:
            try:
                text += io.read(path)
            except WorldError as exc:
                raise _fails(exc, "cat: {}", path) from None
    elif name == "echo":
        text = " ".join(rest) + "\n"
    elif name == "export":
        for assignment in rest:
            key, _, value = assignment.partition("=")
            io.set_env(key, value)
    elif name == "rm":
        for path in (p for p in rest if not p.startswith("-")):
            try:
                io.remove(path)
            except WorldError as exc:
                raise _fails(exc, "rm: cannot remove '{}'", path) from None
    elif name == "mkdir":
        for path in (p for p in rest if not p.startswith("-")):
            try:
                io.make_dir(path)
            except WorldError as exc:
                raise _fails(exc, "mkdir: cannot create directory '{}'", path) from None
    elif name == "touch":
        for path in rest:
            try:
                if not io.exists(path):
                    io.write(path, "")
            except WorldError as exc:
                raise _fails(exc, "touch: cannot touch '{}'", path) from None
    elif name == "true":
        pass
    elif name == "false":
        return 1
    else:
        out.append(f"{name}: command not found\n")
        return 127
    if redirect is not None and target is not None:
        try:
            current = io.read(target) if redirect == ">>" and io.exists(target) else ""
            io.write(target, current + text)
        except WorldError as exc:
            raise _fails(exc, "bash: {}", target) from None
    else:
        out.append(text)
    return 0


SPECS = (
    ToolSpec(
        "run_tests", "Run the test files under a directory; reads the whole tree.",
        Declared(read_only=True, category="test", resource_keys=ResourceKeys(("path",), default_path=".")),
        run_tests, Fixed(2000), parameters=Parameters.of(path="string?"),
    ),
    ToolSpec(
        "terminal", "Run a shell command in the shared session (cwd and environment persist).",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False, honours_cancel=False,
                 category="shell", resource_keys=ResourceKeys(fixed=("terminal:session",))),
        terminal, Fixed(500), stops_on_cancel=False, parameters=Parameters.of(command="string", background="boolean?"),
    ),
)
