"""The hot-path shortcuts of issue 27 (branch core7) do what the long way did.

- the lean world has no Python-level attribute hook (a `__getattr__` kept CPython from specialising
  every attribute read and method call on it), and its pyfakefs-only slots still promote it;
- the kernel steps SimPy's queue itself (no `env.step` call per step) with the same semantics, and
  makes its environment without `bind_early`'s walk: the same attributes and bound classes;
- `SchedulerContext.start` makes a `CallHandle` with the attributes `CallHandle.__init__` sets;
- a world's digest on the typed path (no type walk) is the canonical digest, and falls back where
  orjson refuses.
"""

from __future__ import annotations

import hashlib

import pytest
import simpy
import simpy.core

from harness import get_scheduler, run
from harness.model import Batch, ToolCall
from harness.scenario.spec import Scenario
from harness.scheduling.context import SchedulerContext
from harness.scheduling.handle import CallHandle
from harness.sim import kernel as kernel_module
from harness.sim.kernel import Kernel, Limits, StopReason
from harness.sim.trace import fingerprint
from harness.tools.catalogue import BUILTIN
from harness.world import World
from harness.world import state as state_module
from harness.world.lean import LeanWorld
from harness.world.ledger import LedgerEntry
from harness.world.state import WorldState

STATE = WorldState(files=(("/repo/a.txt", "alpha\n"), ("/repo/b.txt", "beta\n")), dirs=("/repo",), cwd="/repo")


# -- the lean world ------------------------------------------------------------------------------


def test_the_lean_world_has_no_python_attribute_hook() -> None:
    # A `__getattr__` anywhere in the class's MRO makes its attribute lookup a Python-level hook.
    assert not any("__getattr__" in vars(cls) for cls in LeanWorld.__mro__)
    assert LeanWorld.__getattribute__ is object.__getattribute__


@pytest.mark.parametrize("name", ["_found", "_identities", "_walked", "_symlinks"])
def test_reading_a_pyfakefs_only_slot_promotes_the_lean_world(name: str) -> None:
    world = World.from_state(STATE)
    assert type(world) is LeanWorld
    value = getattr(world, name)
    assert type(world) is World
    assert value is getattr(world, name)  # the promoted world's own slot from now on
    assert world.read_text("/repo/b.txt") == "beta\n"


def test_setting_a_pyfakefs_only_slot_promotes_the_lean_world() -> None:
    world = World.from_state(STATE)
    world._walked = {}
    assert type(world) is World
    assert world._walked == {}
    assert world.read_text("/repo/a.txt") == "alpha\n"


def test_an_unknown_attribute_still_raises_attribute_error() -> None:
    world = World.from_state(STATE)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = world.nothing_here
    assert type(world) is LeanWorld  # asking for it promoted nothing


# -- the kernel ------------------------------------------------------------------------------------


def test_run_until_steps_the_queue_without_env_step(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = Kernel(0)
    fired: list[int] = []
    for ms in (5, 1, 3):
        kernel.delay(ms).callbacks.append(lambda _e, ms=ms: fired.append(ms))

    def refused(self: simpy.Environment) -> None:
        raise AssertionError("run_until called env.step")

    monkeypatch.setattr(simpy.Environment, "step", refused)
    assert kernel.run_until(None) is StopReason.DONE
    assert fired == [1, 3, 5] and kernel.now == 5 and kernel.steps == 3


def test_run_until_crashes_on_a_failed_event_nobody_defused() -> None:
    kernel = Kernel(0)
    kernel.env.event().fail(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        kernel.run_until(None)


def test_run_until_limits_and_idle() -> None:
    kernel = Kernel(0)
    kernel.delay(10)
    assert kernel.run_until(kernel.env.event()) is StopReason.IDLE
    bounded = Kernel(0, Limits(time_bound_ms=5, event_budget=2))
    bounded.delay(6)
    assert bounded.run_until(None) is StopReason.TIME_BOUND
    budgeted = Kernel(0, Limits(event_budget=2))
    for ms in (1, 2, 3):
        budgeted.delay(ms)
    assert budgeted.run_until(None) is StopReason.EVENT_BUDGET and budgeted.steps == 2


def test_the_environment_is_made_without_bind_early(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(instance: object) -> None:
        raise AssertionError("bind_early walked the environment's class")

    monkeypatch.setattr(simpy.core.BoundClass, "bind_early", staticmethod(refused))
    env = Kernel(0).env
    monkeypatch.undo()
    real = simpy.Environment()
    assert list(vars(env)) == list(vars(real))
    for name in ("process", "timeout", "event", "all_of", "any_of"):
        bound, expected = getattr(env, name), getattr(real, name)
        assert bound.__func__ is expected.__func__ and bound.__self__ is env
    assert env.now == 0 and env._queue == [] and env.active_process is None
    assert next(env._eid) == 0


def test_another_simpy_environment_falls_back_to_its_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_module, "_BOUND", None)
    made: list[object] = []
    real_init = simpy.Environment.__init__

    def counting(self: simpy.Environment, *args: object) -> None:
        made.append(self)
        real_init(self, *args)

    monkeypatch.setattr(simpy.Environment, "__init__", counting)
    env = Kernel(0).env
    assert made == [env]


# -- call handles ----------------------------------------------------------------------------------


def test_start_makes_the_handle_init_would_make() -> None:
    kernel = Kernel(0)
    world = World.from_state(STATE)
    call = ToolCall("c1", "read_file", '{"path": "a.txt"}')
    ctx = SchedulerContext(kernel, world, BUILTIN, Batch((call,)), "test")
    started = ctx.start(ctx.batch.calls[0])
    made = CallHandle(kernel.env, ctx.batch.calls[0], 1, 0)
    made.process = started.process
    assert list(vars(started)) == list(vars(made))
    assert vars(started) == vars(made)


# -- the world digest ------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [
    STATE,
    WorldState(files=(("/é/ü.txt", "ñ \u2028 \x00 \"quoted\" \\ \x7f"),), dirs=("/é",), cwd="/é",
               env=(("K", "v"),), symlinks=(("/l", "/é/ü.txt"),), users=(("bob", "/home/bob"),)),
    WorldState(files=(("/s.txt", "lone \ud800 surrogate"),), dirs=(), cwd="/\udfff"),  # orjson refuses: json
    WorldState(ledgers=(("tickets", (LedgerEntry("t1", "c1", {"amount": 1e-05}),)),)),  # a float: json
])
def test_the_typed_digest_is_the_canonical_digest(state: WorldState) -> None:
    again = WorldState(**{name: getattr(state, name) for name in state.__dataclass_fields__ if name != "_digest"})
    assert state.digest(typed=True) == again.digest()


def test_the_typed_digest_takes_no_type_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(value: object) -> bytes:
        raise AssertionError("the typed digest walked the state")

    monkeypatch.setattr(state_module, "canonical_bytes", refused)
    state = WorldState(files=STATE.files, dirs=STATE.dirs, cwd=STATE.cwd)
    assert len(state.digest(typed=True)) == 64


def test_a_fingerprinted_run_is_unchanged_by_the_typed_digest() -> None:
    scenario = Scenario(name="core7", batches=(Batch.of([("c1", "read_file", {"path": "a.txt"}),
                                                         ("c2", "write_file", {"path": "c.txt", "content": "x"})]),),
                        world=STATE)
    result = run(scenario, get_scheduler("parallel"), 7)
    final = result.final
    canonical = WorldState(**{name: getattr(final, name) for name in final.__dataclass_fields__ if name != "_digest"})
    assert result.fingerprint == fingerprint(result.trace_sha256, canonical.digest())


# -- remembered digests ----------------------------------------------------------------------------


def test_value_digests_of_short_values_are_remembered_and_equal_sha256() -> None:
    from harness.sim import trace

    value = {"path": "/repo/a.txt", "content": "alpha\n", "lines": [1, 2], "ok": True}
    expected = hashlib.sha256(trace.canonical_bytes(value)).hexdigest()[:16]
    before = trace._small_bytes_digest.cache_info().hits
    assert trace.value_digest(value, True) == expected
    assert trace.value_digest(dict(value), False) == expected  # the walked path finds the same entry
    assert trace._small_bytes_digest.cache_info().hits >= before + 1
    floats = {"x": 1e-05}
    assert trace.value_digest(floats) == hashlib.sha256(b'{"x":1e-05}').hexdigest()[:16]  # json's spelling


def test_long_values_are_digested_without_the_memo() -> None:
    from harness.sim import trace

    value = {"content": "x" * (trace._MEMO_BYTES + 10)}
    size = trace._small_bytes_digest.cache_info().currsize
    assert trace.value_digest(value, True) == hashlib.sha256(trace.canonical_bytes(value)).hexdigest()[:16]
    assert trace._small_bytes_digest.cache_info().currsize == size


def test_touch_digests_are_the_content_digest_prefix() -> None:
    for text in ("", "alpha\n", "é \ud800", "y" * (state_module.MEMO_CHARS + 1)):
        expected = state_module.content_digest(text)[:16]
        assert state_module.touch_digest(text) == expected
        if len(text) <= state_module.MEMO_CHARS:
            assert state_module.small_touch_digest(text) == expected


def test_world_digests_are_remembered_by_their_bytes() -> None:
    first = WorldState(files=STATE.files, dirs=STATE.dirs, cwd=STATE.cwd)
    second = WorldState(files=STATE.files, dirs=STATE.dirs, cwd=STATE.cwd)
    digest = first.digest()
    hits = state_module._small_sha256.cache_info().hits
    assert second.digest() == digest == hashlib.sha256(state_module.canonical_bytes(first.to_json())).hexdigest()
    assert state_module._small_sha256.cache_info().hits == hits + 1
