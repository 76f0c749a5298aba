"""The run-path shortcuts of branch core8 do what the long way did.

- a plain attempt makes its `CallStep`s itself (no `__init__` call): the same attributes and the same
  queue entry as `CallStep(env, ms)`;
- a write's stamp reads the open clock directly (`open_clock`, the run's `_now` read from C): files
  written in a run carry the same times in the lean world and in pyfakefs, the epoch plus the virtual
  time of the write.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import count
from types import SimpleNamespace
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.scheduling import attempt
from harness.sim.kernel import CallStep
from harness.world import World
from harness.world.choice import pyfakefs_worlds
from harness.world.clock import EPOCH_S, file_time, open_clock, virtual_file_times


def test_a_plain_attempts_steps_are_what_callstep_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[CallStep] = []
    real = attempt.heappush

    def spy(queue: list[Any], entry: tuple[Any, ...]) -> None:
        step = entry[3]
        if type(step) is CallStep:
            # What `CallStep(env, ms)` makes and queues at this moment (on a stand-in environment, so the run's
            # own queue and counter are untouched): the same attributes and the same entry.
            env = step.env
            stand_in = SimpleNamespace(_now=env._now, _queue=[], _eid=count(entry[2]))
            made = object.__new__(CallStep)
            CallStep.__init__(made, stand_in, step._delay)  # type: ignore[arg-type]
            assert stand_in._queue == [(entry[0], entry[1], entry[2], made)]
            assert list(vars(step)) == list(vars(made))
            assert {**vars(step), "env": None} == {**vars(made), "env": None}
            compared.append(step)
        real(queue, entry)

    monkeypatch.setattr(attempt, "heappush", spy)
    result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 3)
    assert len(compared) >= 3
    assert result.status.value == "completed"


def _written_times(lean: bool) -> dict[str, float]:
    scenario = find_scenario("edit-then-test")
    if lean:
        result = run(scenario, get_scheduler("parallel"), 4)
    else:
        with pyfakefs_worlds():
            result = run(scenario, get_scheduler("parallel"), 4)
    written = {e["target"]: e["t"] for e in result.trace if e["ev"] == "touch" and e["op"] in ("write", "truncate")}
    assert written
    times = {path: result.world.mtime(path) for path in written}
    for path, ms in written.items():
        assert abs(times[path] - (EPOCH_S + ms / 1000)) < 1e-6, path
    return times


def test_files_written_in_a_run_have_the_same_times_lean_and_pyfakefs() -> None:
    assert _written_times(lean=True) == _written_times(lean=False)


def test_the_open_clock_is_what_file_time_reads() -> None:
    assert open_clock() is None
    now = [1234]
    with virtual_file_times(lambda: now[0]):
        clock = open_clock()
        assert clock is not None and clock() == file_time() == EPOCH_S + 1.234
    assert open_clock() is None


def test_lean_worlds_of_one_state_share_the_users_worked_out_once_but_not_the_dict() -> None:
    from harness.world.lean import LeanWorld
    from harness.world.paths import default_users
    from harness.world.state import WorldState

    state = WorldState(files=(("/home/ann/a", "x"),), dirs=("/home", "/home/ann"), cwd="/home/ann", home="/home/ann",
                       users=(("bob", "/srv/bob"),))
    first, second = World.from_state(state), World.from_state(state)
    assert isinstance(first, LeanWorld) and isinstance(second, LeanWorld)
    expected = default_users("/home/ann", {"bob": "/srv/bob"})
    assert first.users == second.users == expected == {"root": "/root", "ann": "/home/ann", "bob": "/srv/bob"}
    first.users["eve"] = "/e"  # one world's change stays its own
    assert World.from_state(state).users == second.users == expected
    with pyfakefs_worlds():
        assert World.from_state(state).users == expected


def test_virtual_file_times_nest_and_restore_as_the_generator_did() -> None:
    assert open_clock() is None
    with virtual_file_times(lambda: 1000):
        assert file_time() == EPOCH_S + 1.0
        with virtual_file_times(lambda: 2000):
            assert file_time() == EPOCH_S + 2.0
        assert file_time() == EPOCH_S + 1.0
        try:
            with virtual_file_times(lambda: 3000):
                raise KeyError("out")
        except KeyError:
            pass
        assert file_time() == EPOCH_S + 1.0  # restored on the way out of a failing block too
    assert open_clock() is None


def test_the_drivers_process_is_what_env_process_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    import simpy

    from harness.run import single

    seen: list[Any] = []
    real = single.Driver.drive

    def drive(self: Any) -> Any:
        process = self.ctx.env.active_process
        seen.append((type(process), list(vars(process)), process._target, process.callbacks))
        return (yield from real(self))

    monkeypatch.setattr(single.Driver, "drive", drive)
    run(find_scenario("edit-then-test"), get_scheduler("parallel"), 1)
    env = simpy.Environment()

    def nothing() -> Any:
        yield env.timeout(0)

    made = env.process(nothing())
    env.step()  # its Initialize: the process is running as the driver's is when it first runs
    assert seen and all(kind is simpy.Process for kind, _, _, _ in seen)
    assert all(names == list(vars(made)) for _, names, _, _ in seen)
    assert all(type(target).__name__ == "Initialize" for _, _, target, _ in seen)


def test_a_lean_rewrite_makes_the_record_replace_made_and_lists_in_component_order() -> None:
    from harness.world.lean import LeanWorld
    from harness.world.lean_image import FileRecord, components
    from harness.world.state import WorldState

    state = WorldState(files=(("/w/a", "x"), ("/w/b/c", "y"), ("/w/a-b", "q")), dirs=("/w", "/w/b"), cwd="/w")
    world = World.from_state(state)
    assert isinstance(world, LeanWorld)
    before = world._files["/w/a"]
    with virtual_file_times(lambda: 5):
        world.write_text("/w/a", "new")
        world.write_text("/w/b.txt", "z")  # a new name: the listing is sorted again
    after = world._files["/w/a"]
    stamp = int((EPOCH_S + 0.005) * 1e9)
    assert type(after) is FileRecord
    assert after == before._replace(content="new", mtime_ns=stamp, ctime_ns=stamp)
    listed = world.list_files("/w")
    assert listed == sorted(listed, key=components) and "/w/b.txt" in listed
    assert [path for path, _ in world.state().files] == sorted(world._files, key=components)


def test_prepare_reads_the_running_spec_the_catalogue_gives() -> None:
    from harness.model import ToolCall
    from harness.tools.catalogue import BUILTIN, Catalogue, prepare

    def mine(args: Any, io: Any) -> Any:  # a user's tool: the catalogue runs it guarded (another spec)
        yield 1.0
        return "ok"

    fresh = Catalogue({**dict(BUILTIN.items()), "mine": replace(BUILTIN["web_search"], name="mine", behaviour=mine)})
    assert fresh.running("mine") is not fresh["mine"]
    fresh = Catalogue(dict(fresh.items()))
    for catalogue in (fresh, fresh, BUILTIN):  # before and after its memo holds each tool
        for name in [*catalogue, "no_such_tool"]:
            prepared = prepare(ToolCall("c1", name, "{}"), catalogue)
            if name == "no_such_tool":
                assert prepared == "unknown tool 'no_such_tool'"
            else:
                assert isinstance(prepared, tuple) and prepared[0] is catalogue.running(name)
