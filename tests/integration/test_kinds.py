"""Fusion kinds beyond FuseOps (engine/planner/kinds.py) and the `optimal` strategy.

Kinds are read from one rule: these tests check the classification on small graphs built by hand,
that the DP forms a kind only where the profile allows it, and that `optimal` bounds the DP."""

from dataclasses import replace
import pytest
from engine.planner.setup import Setup
from engine.devices import hardware
from engine.planner import kinds, make_plan, optimal
from engine.planner.cost import CostModel

from engine.planner.validate import check_convex_acyclic, check_partition
from tests.support.kinds import effnet  # noqa: F401


@pytest.mark.parametrize("hw", ["host", "t4"])
def test_optimal_bounds_dp_and_greedy(effnet, hw):
    prof = hardware.get(hw)
    opt = make_plan(effnet, "optimal", Setup(prof))
    check_partition(effnet, opt.groups)
    check_convex_acyclic(effnet, opt.groups)
    cm = CostModel(effnet, prof)
    assert all(cm.group(g).legal for g in opt.groups)
    for s in ("dp", "greedy"):
        assert opt.estimated_us <= make_plan(effnet, s, Setup(prof)).estimated_us * (1 + 1e-9)
    assert opt.notes["optimal"]["objective_us"] == pytest.approx(opt.estimated_us, rel=1e-6)


@pytest.mark.parametrize("target, says", [("rpc://127.0.0.1:1/pi", "cannot reach"), ("bogus", "unknown target")])
def test_measured_cost_on_a_target_that_is_not_there_is_one_line_and_exit_2(target, says):
    import subprocess
    import sys

    from tests.conftest import ROOT

    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "plan", "zoo:mobilenetv2@32", "--strategy", "dp",
                        "--cost", "measured", "--target", target], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_prologue_groups_schedule_and_match_onnxruntime(effnet):
    """With prologues allowed, the DP puts pads/elementwise ops in front of anchors; the scheduled
    build of that plan computes what ONNX Runtime computes."""
    from engine.kernels import build
    from engine.measure import ort_check
    from engine import schedules
    from engine.planner.apply import apply

    hw = replace(hardware.get("host"), kinds={"prologue": {"enabled": True}})
    p = make_plan(effnet, "dp", Setup(hw))
    assert any(k["kind"] == "prologue" for k in p.group_kinds)
    x = build.random_inputs(effnet, seed=2)
    ref = ort_check.onnxruntime_outputs(effnet, x)
    smod, report = schedules.schedule(apply(effnet, p.groups), "cpu")
    assert not report.unscheduled, report.summary()
    out = build.run(build.build(smod, "cpu"), x)
    assert len(out) == len(ref) and all(a.shape == b.shape and abs(a - b).max() <= 1e-4 * abs(b).max() + 1e-5 for a, b in zip(out, ref))

