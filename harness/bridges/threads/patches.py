"""Where the bridged primitives are installed: module attributes and the executor's own globals.

Owns `Installation`: for as long as any bridged batch is running, `threading.Lock`, `RLock`,
`Condition`, `Semaphore`, `BoundedSemaphore`, `Event`, `Thread`, `Timer`, `current_thread` and
`get_ident` / `get_native_id` (`_thread`'s too), `queue.SimpleQueue` (and the clock `queue.Queue`
reads), the clock functions of `time`, `datetime.datetime` / `datetime.date`, `concurrent.futures`'
`Future`, and the host facts (`os.cpu_count`, `os.process_cpu_count`, `os.sched_getaffinity`,
`threading.active_count` and `enumerate`, answered from the machine each installation declares) name
the bridged versions of `primitives`, `thread`, `queues`, `virtual_time`, `host` and
`harness.bridges.clock`; so do names the executor's module imported from them (`from time import
sleep`). Every replacement decides per call: in a bridge thread it is bridged (and the clocks also on a
bridged asyncio loop, while its run steps it), anywhere else it is the real thing, so the harness, the
test runner and foreign threads are never affected while patches are in place. A real
`threading.Thread` started from a bridge thread (a subclass defined before the run) is refused with
the reason, since it would run outside the turnstile. Everything is restored when the last bridged
batch ends, also on error. It never creates threads or decides anything about them.
"""

from __future__ import annotations

import _thread
import concurrent.futures._base as futures_base
import logging
import operator
import os
import queue
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from harness.bridges import clock as bridged_clock
from harness.bridges import start_order
from harness.bridges.threads import host, primitives, queues, virtual_time
from harness.bridges.threads import thread as bridged_thread
from harness.bridges.threads.turnstile import ThreadReleased, current
from harness.sim.machine import Machine

#: (module, attribute, replacement). The real values are read when patches are installed.
_TARGETS: tuple[tuple[Any, str, Any], ...] = (
    (threading, "Lock", primitives.Lock),
    (threading, "RLock", primitives.RLock),
    (threading, "Condition", primitives.Condition),
    (threading, "Semaphore", primitives.Semaphore),
    (threading, "BoundedSemaphore", primitives.BoundedSemaphore),
    (threading, "Event", primitives.Event),
    (threading, "Thread", bridged_thread.Thread),
    (threading, "Timer", bridged_thread.Timer),
    (threading, "current_thread", bridged_thread.current_thread),
    (threading, "currentThread", bridged_thread.current_thread),
    (threading, "get_ident", bridged_thread.get_ident),
    (_thread, "get_ident", bridged_thread.get_ident),
    (queue, "SimpleQueue", queues.SimpleQueue),
    (queue, "time", virtual_time.monotonic),  # `queue.Queue.get(timeout=...)` measures with it
    (time, "sleep", virtual_time.sleep),
    (time, "monotonic", virtual_time.monotonic),
    (time, "monotonic_ns", virtual_time.monotonic_ns),
    (time, "perf_counter", virtual_time.perf_counter),
    (time, "perf_counter_ns", virtual_time.perf_counter_ns),
    (time, "time", virtual_time.time),
    (time, "time_ns", virtual_time.time_ns),
    (futures_base, "Future", queues.Future),
)
#: The host facts bridged code reads, answered from the declared machine (`harness.sim.machine`):
#: `ThreadPoolExecutor()` sizes itself by `os.cpu_count()` (`os.process_cpu_count()` on 3.13), and
#: `multiprocessing.cpu_count()` asks `os.cpu_count()`. Functions this platform lacks are left out.
#: The CPU counts are loop-aware (`harness.bridges.clock`): they join the clock tier, so code on a bridged
#: loop sees the declared machine too; the thread counts need a bridge thread.
_MACHINE_TARGETS: tuple[tuple[Any, str, Any], ...] = tuple(
    (module, name, replacement) for module, name, replacement in (
        (os, "cpu_count", host.cpu_count),
        (os, "process_cpu_count", host.process_cpu_count),
        (os, "sched_getaffinity", host.sched_getaffinity),
        (threading, "active_count", host.active_count),
        (threading, "activeCount", host.active_count),
        (threading, "enumerate", host.enumerate_threads),
    ) if hasattr(module, name))
_TARGETS += _MACHINE_TARGETS
_TARGETS += tuple((module, "get_native_id", bridged_thread.get_native_id) for module in (threading, _thread)
                  if hasattr(module, "get_native_id"))
#: Each target's value when this module was imported: a name imported from it before a test faked the
#: host beneath the patches (`from os import cpu_count`, then `os.cpu_count` monkeypatched) is swapped too.
_ORIGINALS: dict[tuple[int, str], Any] = {(id(module), name): getattr(module, name) for module, name, _ in _TARGETS}
#: The function `threading.Thread.start` starts an OS thread with (3.11, 3.12; 3.13 renamed it).
_START_NAMES = ("_start_new_thread", "_start_joinable_thread")

_depth = 0
#: The thread tier's real values while it is installed (see `_Tier`), else None.
_thread_reals: tuple[tuple[Any, ...], ...] | None = None
#: The clock tier (the table's clocks in their loop-aware form, the datetime stand-ins, see
#: `harness.bridges.clock`, and the seeded `as_completed`, see `start_order`): installed by every
#: installation, and alone for an asyncio-bridged run, whose code on the loop reads virtual clocks but
#: must keep real locks and threads (a module imported during the run would otherwise subclass a
#: bridged `threading.Thread` for good, as anyio's worker does).
_clock_depth = 0
_clock_reals: tuple[tuple[Any, ...], ...] | None = None
#: `threading`'s real start functions replaced with the clock tier (see `_START_NAMES`): (name, real).
_start_saved: list[tuple[str, Any]] = []


class _Tier:
    """A tier's targets grouped by module: each module's names are read and replaced a dictionary at a
    time (`setattr` on a module is a write to its `__dict__`: one `itemgetter` and one `update` a module
    instead of a `getattr`, a `setattr` and a saved triple a name, at every bridged batch), and
    restored the same way. Each step walks the modules in C (`map`), not in a loop of Python's."""

    __slots__ = ("_last", "_restores", "groups", "host_facts", "namespaces", "order", "readers", "replacements")

    def __init__(self, targets: tuple[tuple[Any, str, Any], ...]) -> None:
        modules: list[Any] = []
        names: list[list[str]] = []
        replacements: list[dict[str, Any]] = []
        order = []
        for module, name, replacement in targets:
            at = next((i for i, m in enumerate(modules) if m is module), None)
            if at is None:
                at = len(modules)
                modules.append(module)
                names.append([])
                replacements.append({})
            order.append((module, name, at, len(names[at])))
            names[at].append(name)
            replacements[at][name] = replacement
        #: (module's dict, its names, the names' replacements), by module.
        self.groups = tuple((vars(module), tuple(group), replaced)
                            for module, group, replaced in zip(modules, names, replacements, strict=True))
        self.namespaces = tuple(namespace for namespace, _, _ in self.groups)
        #: Each group's reader of its names' values, as a tuple (`itemgetter` of one name gives the bare
        #: value: that name is read twice, and only the first is used).
        self.readers = tuple(operator.itemgetter(*group) if len(group) > 1 else operator.itemgetter(*group, *group)
                             for _, group, _ in self.groups)
        self.replacements = tuple(replaced for _, _, replaced in self.groups)
        #: (module, name, group, position) in the targets' order.
        self.order = tuple(order)
        #: The host facts among the targets: (name, group, position).
        self.host_facts = tuple((name, at, position) for module, name, at, position in order
                                if name in host.HOST and (module is os or module is threading))
        #: The reals of the latest installation, and each group's names -> reals as a dictionary: the
        #: same objects batch after batch (unless a test fakes a target beneath the patches), and a
        #: module restored from a ready dictionary is one `update` without a zip to walk.
        self._last: tuple[tuple[Any, ...], ...] | None = None
        self._restores: tuple[dict[str, Any], ...] = ()

    def install(self) -> tuple[tuple[Any, ...], ...]:
        """Replace every target; returns the real values, by group (the very tuple of the previous
        installation when they are the same objects, which `restore` recognises)."""
        # Every group is read before any is replaced: a target gone from its module raises here, with
        # nothing replaced yet.
        reals = tuple(map(operator.call, self.readers, self.namespaces))
        # `dict.update` answers None: `any` runs every update, in C.
        any(map(dict.update, self.namespaces, self.replacements))
        # `==` on tuples compares their items by identity first: the same reals as last time, cheaply.
        if reals == self._last:
            return self._last
        facts = host.HOST  # what the replacements answer code that is not bridged (a test may fake them)
        for name, at, position in self.host_facts:
            facts[name] = reals[at][position]
        self._last = reals
        self._restores = tuple(dict(zip(names, values, strict=False))  # strict=False: a name read twice
                               for (_, names, _), values in zip(self.groups, reals, strict=True))
        return reals

    def restore(self, reals: tuple[tuple[Any, ...], ...]) -> None:
        if reals is self._last:  # the common case: every module from its ready dictionary
            any(map(dict.update, self.namespaces, self._restores))
            return
        for (namespace, names, _), values in zip(self.groups, reals, strict=True):
            namespace.update(zip(names, values, strict=False))

    def saved(self, reals: tuple[tuple[Any, ...], ...] | None) -> list[tuple[Any, str, Any]]:
        """(module, name, real) in the targets' order, if installed."""
        if reals is None:
            return []
        return [(module, name, reals[at][position]) for module, name, at, position in self.order]


def _clock_targets() -> tuple[tuple[Any, str, Any], ...]:
    global _clock_table
    if _clock_table is None:  # computed once: installed for every asyncio-bridged run
        _clock_table = (tuple((module, name, bridged_clock.LOOP_AWARE[replacement])
                              for module, name, replacement in _TARGETS
                              if replacement in bridged_clock.LOOP_AWARE)
                        + bridged_clock.CLASSES + start_order.TARGETS)
    return _clock_table


def _thread_targets() -> tuple[tuple[Any, str, Any], ...]:
    global _thread_table
    if _thread_table is None:
        _thread_table = tuple(target for target in _TARGETS if target[2] not in bridged_clock.LOOP_AWARE)
    return _thread_table


def _targets() -> tuple[tuple[Any, str, Any], ...]:
    """Everything that may be installed (each tier installs its own part)."""
    return _thread_targets() + _clock_targets()


_clock_table: tuple[tuple[Any, str, Any], ...] | None = None
_thread_table: tuple[tuple[Any, str, Any], ...] | None = None


def _refuse_real_threads(real: Callable[..., Any]) -> Callable[..., Any]:
    refusal = _refusals.get(real)
    if refusal is None:
        refusal = _refusals[real] = _refusal(real)
    return refusal


#: Each real start function's refusing stand-in (made once: installed at every batch).
_refusals: dict[Callable[..., Any], Callable[..., Any]] = {}


def _refusal(real: Callable[..., Any]) -> Callable[..., Any]:
    def start(*args: Any, **kwargs: Any) -> Any:
        if current() is not None:
            raise RuntimeError("a real threading.Thread cannot start inside a bridged run (its class was "
                               "defined before the run, e.g. a subclass at import): it would run outside the "
                               "turnstile; create it with threading.Thread(target=...) instead")
        blocker = bridged_clock.loop_blocker()
        if blocker is not None:  # started from the bridged loop: it runs beside the simulation
            blocker.real_thread(getattr(args[0], "__self__", None) if args else None)
        return real(*args, **kwargs)

    return start


class _QuietRelease(logging.Filter):
    """Drops the 'Exception in worker' record a pool worker logs while `ThreadReleased` unwinds it at
    the end of a run: the bridge's own doing, not the executor's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.exc_info[0] is ThreadReleased)


_quiet = _QuietRelease()


def _tiers() -> tuple[_Tier, _Tier]:
    """The thread tier and the clock tier, grouped once."""
    global _tier_pair
    if _tier_pair is None:
        _tier_pair = (_Tier(_thread_targets()), _Tier(_clock_targets()))
    return _tier_pair


_tier_pair: tuple[_Tier, _Tier] | None = None


def _install() -> None:
    global _thread_reals
    _thread_reals = _tiers()[0].install()
    futures_base.LOGGER.addFilter(_quiet)


def _restore() -> None:
    global _thread_reals
    reals, _thread_reals = _thread_reals, None
    if reals is not None:
        _tiers()[0].restore(reals)
    futures_base.LOGGER.removeFilter(_quiet)


def _install_clocks() -> None:
    global _clock_reals
    _clock_reals = _tiers()[1].install()
    for name in _START_NAMES:  # with the clocks: a thread started from a bridged loop is noted
        real = getattr(threading, name, None)
        if real is not None:
            _start_saved.append((name, real))
            setattr(threading, name, _refuse_real_threads(real))


def _restore_clocks() -> None:
    global _clock_reals
    while _start_saved:
        name, real = _start_saved.pop()
        setattr(threading, name, real)
    reals, _clock_reals = _clock_reals, None
    if reals is not None:
        _tiers()[1].restore(reals)


def _saved_now(clocks_only: bool) -> list[tuple[Any, str, Any]]:
    """(module, name, real) of every name replaced now (the thread tier's first unless `clocks_only`),
    the start functions excepted."""
    thread_tier, clock_tier = _tiers()
    clocks = clock_tier.saved(_clock_reals)
    return clocks if clocks_only else thread_tier.saved(_thread_reals) + clocks


#: `_replacements` by tier, with the reals it was read from (the same objects run after run, unless a
#: test fakes a host fact beneath the patches): an asyncio-bridged run swaps its executor's module at
#: every batch, and reading the table each time was ~5% of a small run.
_replacements_of: dict[bool, tuple[tuple[Any, ...], dict[int, Any]]] = {}


def _swap_globals(namespace: MutableMapping[str, Any], clocks_only: bool = False) -> list[tuple[str, Any]]:
    """Point names the executor's module imported from the patched modules at the replacements."""
    reals = (_clock_reals,) if clocks_only else (_thread_reals, _clock_reals)
    cached = _replacements_of.get(clocks_only)
    # The same reals slot by slot (`==` on functions and classes is `is`) give the same table.
    if cached is None or cached[0] != reals:
        cached = _replacements_of[clocks_only] = (reals, _replacements(clocks_only))
    replacements = cached[1]
    # Most modules import none of them: the names are only walked when some value is one. The executor's
    # module, batch after batch, holds the very values it held at its last look (compared by identity,
    # in C: no value's `__eq__` runs), and so still none of them.
    values = tuple(namespace.values())
    scanned = _scanned.get(clocks_only)
    if (scanned is not None and scanned[0] is namespace and scanned[1] is replacements
            and len(scanned[2]) == len(values) and all(map(operator.is_, scanned[2], values))):
        return []
    if replacements.keys().isdisjoint(map(id, values)):
        _scanned[clocks_only] = (namespace, replacements, values)
        return []
    _scanned.pop(clocks_only, None)  # holds no value longer than it serves
    swapped = []
    for name, value in list(namespace.items()):
        replacement = replacements.get(id(value))
        if replacement is not None and value is not replacement:
            swapped.append((name, value))
            namespace[name] = replacement
    return swapped


#: By tier: the latest namespace found to hold no real value, the table it was looked at with, and its
#: values then (held until another namespace is looked at: values a module has since rebound live that long).
_scanned: dict[bool, tuple[MutableMapping[str, Any], dict[int, Any], tuple[Any, ...]]] = {}


def _replacements(clocks_only: bool) -> dict[int, Any]:
    """What each real value (by id: the reals live as long as the saved patches) is replaced with."""
    saved = _saved_now(clocks_only)
    replacements = {id(real): getattr(module, name) for module, name, real in saved}
    for module, name, _ in saved:
        original = _ORIGINALS.get((id(module), name))
        if original is not None:
            replacements.setdefault(id(original), getattr(module, name))
    return replacements


def replacement_of(value: Any) -> Any:
    """The replacement of a real primitive (`time.sleep` read before the patches went in, then handed
    to a thread as a function), else `value` itself. Only while patches are installed."""
    for module, name, replacement in _targets():
        if value is _real_of(module, name):
            return replacement
    return value


def _real_of(module: Any, name: str) -> Any:
    for saved_module, saved_name, real in _saved_now(False):
        if saved_module is module and saved_name == name:
            return real
    return None


class _Swap:
    """One namespace's swapped names, shared by every installation that swapped it (two batches of one
    executor running at once, the agents of a crew): restored when the last of them closes."""

    __slots__ = ("clocks_only", "names", "namespace", "users")

    def __init__(self, namespace: MutableMapping[str, Any], clocks_only: bool) -> None:
        self.namespace, self.clocks_only = namespace, clocks_only
        self.names = _swap_globals(namespace, clocks_only)
        self.users = 0


#: The namespaces swapped now, in the order they were.
_swaps: list[_Swap] = []


def _hold(namespace: MutableMapping[str, Any], clocks_only: bool) -> _Swap:
    for swap in _swaps:  # a loop, not a generator: every bridged batch comes here
        if swap.namespace is namespace and swap.clocks_only == clocks_only:
            break
    else:
        swap = _Swap(namespace, clocks_only)
        _swaps.append(swap)
    swap.users += 1
    return swap


def _let_go(swap: _Swap) -> None:
    swap.users -= 1
    if swap.users == 0:
        _swaps.remove(swap)
        for name, value in swap.names:
            swap.namespace[name] = value


class Installation:
    """Patches in place from construction until `close()` (idempotent). Batches share one
    installation of the module patches, and of each namespace's swapped names: a batch that ends
    while another still runs (the agents of a crew) restores nothing the other still uses."""

    def __init__(self, namespaces: tuple[MutableMapping[str, Any], ...] = (), machine: Machine | None = None, *,
                 clocks_only: bool = False) -> None:
        global _depth, _clock_depth
        if _clock_depth == 0:
            _install_clocks()
        _clock_depth += 1
        self.clocks_only = clocks_only
        if not clocks_only:
            if _depth == 0:
                _install()
            _depth += 1
        #: What bridged code reads as the host (`os.cpu_count()`...) while this installation is open.
        self.machine = machine if machine is not None else Machine()
        host.declare(self.machine)
        self._swapped: list[_Swap] = []
        self._open = True
        for namespace in namespaces:
            self.swap(namespace)

    def swap(self, namespace: MutableMapping[str, Any]) -> None:
        """Also point `namespace`'s imported names at the replacements, until `close()`: the module of
        work handed to a thread later in the run (`asyncio.to_thread(tool)` with `from time import
        sleep` in the tool's module). A namespace already swapped is left alone."""
        if not self._open:
            return
        for swapped in self._swapped:  # a loop, not a generator: every bridged batch comes here
            if swapped.namespace is namespace:
                return
        self._swapped.append(_hold(namespace, self.clocks_only))

    def close(self) -> None:
        global _depth, _clock_depth
        if not self._open:
            return
        self._open = False
        host.undeclare(self.machine)
        for swap in reversed(self._swapped):
            _let_go(swap)
        if not self.clocks_only:
            _depth -= 1
            if _depth == 0:
                _restore()
        _clock_depth -= 1
        if _clock_depth == 0:
            _restore_clocks()
