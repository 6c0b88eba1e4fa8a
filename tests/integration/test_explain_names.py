"""`plan --explain` (issue 21): a reason about an op names that op by its id, so a reason about an
op that is not on the edge (the mean inside a group) still says which op it means."""

import re
import pytest
from engine.planner.setup import Setup

from engine.devices import hardware
from engine.model import loader
from engine.planner import kinds, make_plan


def _unnamed(detail: str, ops) -> list[str]:
    """The op names in `detail` that no node id follows ('mean is ...' rather than 'mean n340 is ...')."""
    return [m[0] for op in ops for m in re.finditer(rf"\b{re.escape(op)}\b(?! n\d+\b)", detail)]


@pytest.mark.parametrize("strategy", ["dp", "greedy"])
def test_every_reason_names_its_ops_by_id(private_cache, strategy):
    g = loader.load("zoo:mobilenetv2@32")
    p = make_plan(g, strategy, Setup(hardware.get("host")))
    ops = {n.op for n in g.nodes}
    assert p.explanations
    bad = [(e["src"], e["dst"], e["detail"]) for e in p.explanations if _unnamed(e["detail"], ops)]
    assert not bad, bad[:3]
    if strategy == "dp":  # the global pool's edge: the reason is about the mean, n340
        (e,) = [e for e in p.explanations if "4-D convolution" in e["detail"]]
        mean = g.by_id[e["dst"]]
        assert mean.op == "mean" and f"mean {mean.id} is not a 4-D convolution" in e["detail"]

