"""The blocked-layout anchor-chain rule (engine/schedules/cpu/blocked_chain.py): MobileNetV2's inverted
residuals in NCHW16c merged into one group become one PrimFunc with 2-3 blocked convolutions;
cpu.BlockedChain computes it band by band and must equal the unscheduled PrimFunc; the planner
(kinds.chain_shape) allows the chains the rule computes and refuses the others in one line; a dp plan
of blocked MobileNetV2 with anchor chains builds and matches ONNX Runtime.
Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32)."""

from dataclasses import replace
from engine.planner.setup import Setup

from engine.kernels import build
from engine.measure import ort_check

from engine.devices import hardware
from engine.model import loader
from engine import schedules
from engine.planner import kinds, make_plan
from engine.planner.apply import apply
from tests.support.chain_rules import _args, _chain_funcs, _conv_count, _lowered_allocs, _parallel_loops, _run, close


def test_dp_plan_of_blocked_mobilenet_with_chains_matches_onnxruntime(private_cache):
    g = loader.load("zoo:mobilenetv2@64", block=16)
    hw = replace(hardware.get("host"), kinds={k: {"enabled": True} for k in kinds.BEYOND})
    p = make_plan(g, "dp", Setup(hw, cost="roofline"))
    mod = apply(g, p.groups)
    smod, report = schedules.schedule(mod, "cpu")
    taken = report.handled.get("cpu.BlockedChain", [])
    assert len(taken) >= 3, report.summary()
    x = build.random_inputs(g, seed=4)
    ref = ort_check.onnxruntime_outputs(g, x)
    out = build.run(build.build(smod, "cpu"), x)
    assert close(out, ref)

