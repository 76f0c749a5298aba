"""A later read of a file a lost update damaged is explained by that lost update (its calls named), not
as a read 'no racing write explains' that sends the user to look at how the reader ran."""

from __future__ import annotations

from harness import get_scheduler, run
from harness.oracles import ORACLES
from harness.report.explain import explain_witness
from tests.helpers import scenario

PATCHES = [("p1", "patch", {"path": "/a/x", "old": "timeout: 30", "new": "timeout: 60"}),
           ("p2", "patch", {"path": "/a/x", "old": "retries: 1", "new": "retries: 5"})]


def test_a_read_after_a_lost_update_names_it() -> None:
    sc = scenario(PATCHES, files={"/a/x": "timeout: 30\nretries: 1\n"}, cwd="/a",
                  extra_batches=[[("r3", "read_file", {"path": "/a/x"})]])
    result = run(sc, get_scheduler("parallel"), 7)
    violations = {v.label: v for v in ORACLES["serializability"](result).violations}
    assert set(violations) == {"lost-update", "divergent-result"}
    read = violations["divergent-result"]
    assert read.witness["follows"] == "lost-update" and read.witness["upstream"] == ["p1", "p2"]
    text = explain_witness(read.label, read.witness, result, read.message)
    assert "saw what the lost-update on it (p1 and p2) left" in text and "no single racing write" not in text

