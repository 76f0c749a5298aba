"""The identity of the code a run ran: what a reproducer records so that a replay tells a fix from nondeterminism.

Owns which source files stand for a run's code and their digests, the harness's own identity, and the
comparison of a recorded identity with the code there is now.

- The harness: its version, a digest of its own source (in a development checkout the version does
  not change when the code does), and the versions of Python, SimPy and pyfakefs, which decide the
  order of events too. Computed once a process (7-20 ms: 160 files, 1.2 MB).
- The user's code: every module *already imported* of the top-level packages that define the
  scheduler (a `module:attr` name, or an instance: its class, and what a harness adapter wraps, such
  as `from_asyncio(execute)`'s `execute` or `from_gate(fn)`'s `fn`) and that the scenario names (tool
  modules, a loop's model and policy modules). So a fix in a helper module (`acme.locks` beside
  `acme.sched`) is a change. The harness's modules, the standard library and `__main__` are never
  among them. Each file is named relative to the directory its top-level package was imported from
  (`acme/locks.py`), so a replay can say which files changed, wherever the package now lives.

A replay compares only the recorded files: a file that changed or is gone is a change, a module of
those packages imported now but not then is not (a test session imports more than `harness explore`
did). It never imports the user's code: it reads modules already imported and files on disk.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Packages whose versions decide a run besides the harness (the event order of SimPy, the fake filesystem).
_LIBRARIES = ("simpy", "pyfakefs")
#: Top-level names that are never the user's code.
_NEVER = frozenset({"harness", "__main__", "builtins", *sys.stdlib_module_names})
#: How many objects the walk from a scheduler instance visits at most (it follows harness adapters only).
_WALK_LIMIT = 400


@dataclass(frozen=True)
class CodeIdentity:
    """The harness's identity (`version`, `source`, `python`, library versions) and the user's files."""

    harness: tuple[tuple[str, str], ...]
    #: The top-level packages whose imported modules were digested, sorted.
    packages: tuple[str, ...]
    #: (name relative to the package's directory, digest), sorted by name.
    files: tuple[tuple[str, str], ...]

    def to_data(self) -> dict[str, Any]:
        return {"harness": dict(self.harness), "packages": list(self.packages), "files": dict(self.files)}

    @classmethod
    def from_data(cls, data: Any, where: str) -> CodeIdentity:
        """Parse the `code` field of a reproducer; a `ValueError` names the field and what was expected."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object with harness, packages and files")
        harness, packages, files = data.get("harness"), data.get("packages"), data.get("files")
        if not isinstance(harness, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in harness.items()):
            raise ValueError(f"{where}.harness: expected an object of strings (version, source, ...)")
        if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
            raise ValueError(f"{where}.packages: expected a list of package names")
        if not isinstance(files, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in files.items()):
            raise ValueError(f"{where}.files: expected an object of file name -> digest")
        if any(name.startswith(("/", "\\")) or ".." in Path(name).parts for name in files):
            raise ValueError(f"{where}.files: expected names relative to a package's directory")
        return cls(tuple(sorted(harness.items())), tuple(sorted(packages)), tuple(sorted(files.items())))

    def summary(self) -> str:
        """'harness 0.1.0, 3 files of acme' (what a replay says when nothing changed)."""
        version = dict(self.harness).get("version", "?")
        if not self.files:
            return f"harness {version}"
        count = len(self.files)
        return f"harness {version}, {count} file{'s' if count != 1 else ''} of {', '.join(self.packages)}"


@dataclass(frozen=True)
class CodeChanges:
    """How the code now differs from a recorded identity."""

    #: The user's files (relative names) that changed or are gone, sorted.
    files: tuple[str, ...]
    #: Readable changes of the harness's identity ('harness 0.1.0 -> 0.2.0', 'python 3.11.9 -> 3.12.1', and
    #: "harness 0.1.0's own source" when a development checkout changed under the same version).
    harness: tuple[str, ...]
    #: Of `files`, those that are gone.
    gone: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.files or self.harness)

    def describe(self) -> str:
        """'acme/locks.py; harness 0.1.0 -> 0.2.0' (empty when nothing changed)."""
        files = [f"{name} (gone)" if name in self.gone else name for name in self.files]
        return "; ".join([*self.harness, ", ".join(files)] if files else self.harness)


# -- the harness ----------------------------------------------------------------------------------


@functools.cache
def harness_identity() -> tuple[tuple[str, str], ...]:
    """The harness's version, a digest of its own `.py` source, and the versions of Python and the
    libraries that order a run's events; computed once a process."""
    from harness import __version__

    root = Path(__file__).resolve().parent.parent  # harness/
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    identity = {"version": __version__, "source": digest.hexdigest()[:16], "python": platform.python_version()}
    for library in _LIBRARIES:
        # Their `__version__` (every run imports them), not importlib.metadata, whose import and scan of
        # the installed distributions costs more than everything else here.
        identity[library] = str(getattr(importlib.import_module(library), "__version__", "unknown"))
    return tuple(sorted(identity.items()))


# -- which code ------------------------------------------------------------------------------------


def defining_modules(target: object) -> list[str]:
    """The modules defining `target` (a scheduler instance, class, function) and, when it is a harness
    adapter, what it wraps: attributes that are functions, classes, bound methods or partials, and
    the values of containers it holds (a `registry=` table), a few levels deep."""
    found: dict[str, None] = {}
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(target, 0)]
    while stack and len(seen) < _WALK_LIMIT:
        item, depth = stack.pop()
        if id(item) in seen or item is None or isinstance(item, str | bytes | int | float | bool):
            continue
        seen.add(id(item))
        if isinstance(item, functools.partial):
            stack.extend((x, depth) for x in (item.func, *item.args, *item.keywords.values()))
            continue
        if inspect.ismethod(item):
            stack.extend([(item.__func__, depth), (item.__self__, depth)])
            continue
        if inspect.isfunction(item) or inspect.isclass(item) or inspect.isbuiltin(item):
            module = getattr(item, "__module__", None)
            if isinstance(module, str):
                found.setdefault(module)
            if inspect.isclass(item):
                found.update(dict.fromkeys(k.__module__ for k in item.__mro__ if isinstance(k.__module__, str)))
            wrapped = getattr(item, "__wrapped__", None)
            if wrapped is not None:
                stack.append((wrapped, depth))
            continue
        if isinstance(item, Mapping):
            # A module's globals (the thread bridge keeps its executor's, to patch `sleep`): the module
            # is already counted, and its values include every library it imported.
            if depth < 4 and "__builtins__" not in item:
                stack.extend((value, depth + 1) for value in list(item.values())[:100])
            continue
        if isinstance(item, list | tuple | set | frozenset):
            if depth < 4:
                stack.extend((value, depth + 1) for value in list(item)[:100])
            continue
        kind = type(item)
        found.update(dict.fromkeys(k.__module__ for k in kind.__mro__ if isinstance(k.__module__, str)))
        # Into the state of the harness's own objects only (adapters, registries): a user's object is
        # its class's code, and walking into it could reach any library it holds.
        if _top(kind.__module__) == "harness" and depth < 4:
            state = getattr(item, "__dict__", None)
            values = list(state.values()) if isinstance(state, dict) else []
            for slot in getattr(kind, "__slots__", ()):
                if isinstance(slot, str) and hasattr(item, slot):
                    values.append(getattr(item, slot))
            stack.extend((value, depth + 1) for value in values)
    return list(found)


def user_packages(modules: Iterable[str]) -> tuple[str, ...]:
    """The top-level packages of `modules` that are the user's (not the harness, the standard
    library or `__main__`), sorted."""
    return tuple(sorted({_top(m) for m in modules if m and _top(m) not in _NEVER}))


def resolve_named(spec: str) -> object | None:
    """The object `package.module:attr` names if its module is already imported, else None (never imports)."""
    module_name, _, attribute = spec.partition(":")
    target: Any = sys.modules.get(module_name)
    if target is None or not attribute:
        return None
    try:
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception:  # the user's module's __getattr__: whatever it raises, the name resolves to nothing
        return None
    return target  # type: ignore[no-any-return]


def identity_of(packages: Iterable[str]) -> CodeIdentity:
    """The identity now: the harness's, and the digests of the imported modules of `packages`."""
    chosen = tuple(sorted(set(packages)))
    files: dict[str, str] = {}
    for name, module in sorted(list(sys.modules.items())):
        if _top(name) not in chosen or module is None:
            continue
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not os.path.isfile(path):
            continue
        relative = _relative(name, path, hasattr(module, "__path__"))
        digest = file_digest(path)
        if digest is not None:
            files.setdefault(relative, digest)
    return CodeIdentity(harness_identity(), chosen, tuple(sorted(files.items())))


def changes_since(recorded: CodeIdentity) -> CodeChanges:
    """What differs now from `recorded`: each recorded file is digested again where its package is
    now (a file gone counts), and the harness's identity is compared field by field."""
    now = dict(harness_identity())
    before = dict(recorded.harness)
    harness: list[str] = []
    for key in sorted(set(before) | set(now)):
        old, new = before.get(key, "?"), now.get(key, "?")
        if old == new:
            continue
        if key == "source":
            if before.get("version") == now.get("version"):  # the version says it otherwise
                harness.append(f"harness {now.get('version', '?')}'s own source")
        else:
            harness.append(f"{'harness' if key == 'version' else key} {old} -> {new}")
    changed, gone = [], []
    roots = {package: package_roots(package) for package in recorded.packages}
    for name, digest in recorded.files:
        candidates = [os.path.join(root, *name.split("/")) for root in roots.get(_top_of_file(name), [])]
        current = next((file_digest(c) for c in candidates if os.path.isfile(c)), None)
        if current is None:
            gone.append(name)
            changed.append(name)
        elif current != digest:
            changed.append(name)
    return CodeChanges(tuple(changed), tuple(harness), tuple(gone))


# -- files -----------------------------------------------------------------------------------------

#: Digests by (path, inode, size, mtime, ctime): a file is read again only when it changed on disk.
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def file_digest(path: str) -> str | None:
    """The SHA-256 (16 hex digits) of a file's bytes, or None if it cannot be read."""
    try:
        stat = os.stat(path)
        key = (os.path.abspath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        cached = _DIGESTS.get(key)
        if cached is None:
            cached = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
            _DIGESTS[key] = cached
        return cached
    except OSError:
        return None


def _top(module: str) -> str:
    return module.partition(".")[0]


def _top_of_file(relative: str) -> str:
    """The top-level package of a relative file name ('acme/locks.py' -> 'acme', 'conftest.py' -> 'conftest')."""
    first = relative.split("/")[0]
    return first if "/" in relative else first.partition(".")[0]


def _relative(name: str, path: str, package: bool) -> str:
    """`path`'s name relative to the directory its top-level package was imported from: the module's
    dotted name as directories, then the file's own name (`acme/locks.py`, `acme/__init__.py`)."""
    parts = name.split(".")
    directories = parts if package else parts[:-1]
    return "/".join([*directories, os.path.basename(path)])


def package_roots(package: str) -> list[str]:
    """The directories `package` is imported from now (several for a namespace package), found
    without importing it when it is not imported yet."""
    module = sys.modules.get(package)
    locations: list[str] = []
    if module is not None:
        paths = getattr(module, "__path__", None)
        if paths is not None:
            locations = [str(p) for p in paths]
        elif isinstance(getattr(module, "__file__", None), str):
            return [os.path.dirname(os.path.abspath(module.__file__ or ""))]
    else:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return []
        if spec.submodule_search_locations is not None:
            locations = list(spec.submodule_search_locations)
        elif spec.origin is not None and os.path.isfile(spec.origin):
            return [os.path.dirname(os.path.abspath(spec.origin))]
    return list(dict.fromkeys(os.path.dirname(os.path.abspath(location)) for location in locations))
