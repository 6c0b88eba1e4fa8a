"""`plan --explain` (issue 21): a reason about an op names that op by its id, so a reason about an
op that is not on the edge (the mean inside a group) still says which op it means."""

from engine.devices import hardware
from engine.planner import kinds, make_plan
from engine.planner.cost import CostModel
from tests.support.synthetic import Builder


def test_the_chain_rule_names_the_op_inside_the_group():
    b = Builder(c=32, hw=28)
    c1 = b.add("conv2d", [])
    r = b.add("relu", [c1])
    c2 = b.add("conv2d", [r])
    m = b.add("mean", [c2], shape=[1, 32, 1, 1], pattern="OutEWiseFusable")  # TVM marks a mean so
    cm = CostModel(b.graph("chain"), hardware.get("t4"))
    why = kinds.chain_shape(cm, [cm.index[i] for i in (c1, r, c2, m)])
    assert why == f"mean {m} is not a 4-D convolution"

