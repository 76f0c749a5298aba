"""A touch through another name of a file (a hard link, a symlink) reads in the timeline and the story
as the call wrote it, then the file it reached: the trace keys touches by the file, whose name may be
one no call used."""

from __future__ import annotations

from harness import get_scheduler, run
from harness.report.run_text import describe_event
from tests.helpers import scenario


def test_a_read_through_a_hard_link_names_the_spelling_used_and_the_file() -> None:
    sc = scenario([("r", "read_file", {"path": "/a/x"})], files={"/a/x": "same\n"}, cwd="/a",
                  world_extra={"hardlinks": [["/a/x", "/a/y"]]})
    result = run(sc, get_scheduler("serial"), 5)
    (touch,) = [e for e in result.trace if e["ev"] == "touch"]
    shown = describe_event(touch)
    assert touch["target"] == "/a/y" and touch["as"] == "/a/x"  # the file's identity: its other name
    assert shown == "read /a/x (the file /a/y)"
    plain = scenario([("r", "read_file", {"path": "/a/x"})], files={"/a/x": "same\n"}, cwd="/a")
    (touch,) = [e for e in run(plain, get_scheduler("serial"), 5).trace if e["ev"] == "touch"]
    assert describe_event(touch) == "read /a/x"


def test_a_lost_update_through_a_hard_link_names_the_spelling_in_the_finding_and_the_why() -> None:
    from harness.oracles import ORACLES
    from harness.report.explain import explain_witness

    sc = scenario([("p1", "patch", {"path": "/a/x", "old": "timeout: 30", "new": "timeout: 60"}),
                   ("p2", "patch", {"path": "/a/x", "old": "retries: 1", "new": "retries: 5"})],
                  files={"/a/x": "timeout: 30\nretries: 1\n"}, cwd="/a", world_extra={"hardlinks": [["/a/x", "/a/y"]]})
    result = run(sc, get_scheduler("parallel"), 7)
    (lost,) = [v for v in ORACLES["serializability"](result).violations if v.label == "lost-update"]
    assert lost.witness["target"] == "/a/y"  # keyed by the file
    assert "read /a/x (the file /a/y)" in lost.message  # named as the calls named it
    assert "read /a/x (the file /a/y)" in explain_witness(lost.label, lost.witness, result, lost.message)
