import simpy

from harness.sim import Kernel, Limits, RandomStreams, StopReason, TraceRecorder, derive_seed


def test_streams_are_keyed_not_ordered() -> None:
    a, b = RandomStreams(7), RandomStreams(7)
    # Draw in different orders: each keyed stream still yields the same numbers.
    first_a = [a.stream("latency", "c1", 1).random() for _ in range(3)]
    _ = b.stream("latency", "c2", 1).random()
    first_b = [b.stream("latency", "c1", 1).random() for _ in range(3)]
    assert first_a == first_b


def test_streams_differ_by_seed_purpose_key_and_attempt() -> None:
    base = derive_seed(1, "latency", "c1", 1)
    assert len({base, derive_seed(2, "latency", "c1", 1), derive_seed(1, "failure", "c1", 1),
                derive_seed(1, "latency", "c2", 1), derive_seed(1, "latency", "c1", 2)}) == 5


def test_a_stream_seeds_itself_on_first_use_exactly_as_an_eager_one() -> None:
    """Streams are seeded lazily (most are never drawn from); every way to use one must see the
    generator `Random(derive_seed(...))` would have been, and then be a plain `Random`."""
    import copy
    import pickle
    from random import Random

    uses = {
        "random": lambda r: [r.random() for _ in range(3)],
        "randint": lambda r: [r.randint(1, 1000) for _ in range(3)],
        "gauss": lambda r: [r.gauss(0, 1) for _ in range(3)],  # binds self.random before the first draw
        "lognormvariate": lambda r: [r.lognormvariate(0, 1) for _ in range(3)],
        "shuffle": lambda r: (lambda xs: (r.shuffle(xs), xs)[1])(list(range(10))),
        "sample": lambda r: r.sample(range(100), 5),
        "getrandbits": lambda r: r.getrandbits(70),
        "getstate": lambda r: r.getstate(),
        "setstate": lambda r: (r.setstate(Random(3).getstate()), r.random())[1],
        "seed": lambda r: (r.seed(5), r.random())[1],
        "deepcopy": lambda r: copy.deepcopy(r).random(),
        "pickle": lambda r: pickle.loads(pickle.dumps(r)).random(),
    }
    for name, use in uses.items():
        lazy, eager = RandomStreams(42).stream("latency", "c1", 1), Random(derive_seed(42, "latency", "c1", 1))
        assert use(lazy) == use(eager), name
        assert type(lazy) is Random and lazy.random() == eager.random(), name


def test_trace_is_canonical_jsonl_with_stable_hash() -> None:
    t = TraceRecorder()
    t.record(0, "start", call="a", skipped=None)
    t.record(5, "end", call="a", outcome="ok")
    assert t.to_jsonl() == (
        '{"call":"a","ev":"start","seq":0,"t":0}\n{"call":"a","ev":"end","outcome":"ok","seq":1,"t":5}\n'
    )
    other = TraceRecorder()
    other.record(0, "start", call="a")
    other.record(5, "end", outcome="ok", call="a")
    assert other.sha256() == t.sha256()


def _forever(env: simpy.Environment):  # type: ignore[no-untyped-def]
    while True:
        yield env.timeout(10)


def test_kernel_stops_at_time_bound() -> None:
    kernel = Kernel(1, Limits(time_bound_ms=1000, event_budget=10_000))
    never = kernel.env.event()
    kernel.env.process(_forever(kernel.env))
    assert kernel.run_until(never) is StopReason.TIME_BOUND
    assert kernel.now <= 1000


def test_kernel_stops_at_event_budget() -> None:
    kernel = Kernel(1, Limits(time_bound_ms=10**9, event_budget=50))
    never = kernel.env.event()
    kernel.env.process(_forever(kernel.env))
    assert kernel.run_until(never) is StopReason.EVENT_BUDGET
    assert kernel.steps == 50


def test_kernel_reports_deadlock_as_idle() -> None:
    kernel = Kernel(1)
    assert kernel.run_until(kernel.env.event()) is StopReason.IDLE


def test_kernel_time_is_integer_milliseconds() -> None:
    kernel = Kernel(1)
    done = kernel.delay(250)
    assert kernel.run_until(done) is StopReason.DONE
    assert kernel.now == 250 and isinstance(kernel.now, int)


def test_trace_encoding_is_json_dumps_byte_for_byte() -> None:
    """The trace is encoded with one reused C encoder; it must spell everything as `json.dumps` with
    the canonical options does, and fail the same way."""
    import json

    import pytest

    from harness.sim.trace import to_jsonl

    def reference(events: list[dict[str, object]]) -> str:
        return "".join(json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
                       for e in events)

    events: list[dict[str, object]] = [
        {"t": 0, "seq": 0, "ev": "run", "text": "é\u2028\"\\\n\ud800\x00", "big": -10**30, "none": None},
        {"t": 1, "seq": 1, "ev": "x", "nested": {"b": [1.5, float("inf"), -0.0, True], "a": {}}, "nan": float("nan")},
    ]
    assert to_jsonl(events) == reference(events)
    assert to_jsonl(iter(events)) == reference(events)
    circular: dict[str, object] = {}
    circular["self"] = circular
    for bad, error in (([{"a": object()}], TypeError), ([{"a": {1: 2, "b": 3}}], TypeError), ([circular], ValueError)):
        with pytest.raises(error) as ours:
            to_jsonl(bad)
        with pytest.raises(error) as theirs:
            reference(bad)
        assert str(ours.value) == str(theirs.value)
