"""The attention fusion kind (engine/planner/kinds.py: attention_shape) and its CPU schedule rule
(engine/schedules/cpu/attention.py): QK^T -> scale/mask -> softmax -> .V as one group, one kernel
whose score matrix is computed a tile of query rows at a time and never goes to memory.
Tolerance against numpy (float64): max |out - ref| <= 1e-5 * max |ref| + 1e-6."""

import numpy as np
import tvm

from tvm import relax, s_tir, tirx
from engine import schedules
from engine.devices import hardware
from engine.devices.device_session import flatten

from engine.kernels import build
from engine.model import loader
from engine.planner import kinds, make_plan
from engine.planner.apply import apply
from engine.planner.setup import Setup


def test_dp_build_of_a_transformer_with_attention_groups_matches_onnxruntime():
    from engine.measure.ort_check import onnxruntime_outputs

    g = loader.load("tests/data/transformer_dynamo_export.onnx", {"input_ids": [1, 128]})
    plan = make_plan(g, "dp", Setup(hardware.get("host")))
    assert sum(k["kind"] == "attention" for k in plan.group_kinds) == 2
    smod, rep = schedules.schedule(apply(g, plan.groups), "cpu")
    assert rep.handled.get("cpu.Attention"), rep.summary()
    vm = relax.VirtualMachine(build.build(smod, "cpu"), tvm.cpu())
    x = build.random_inputs(g, seed=0)
    out = flatten(vm["main"](*[tvm.runtime.tensor(v) for v in x]))
    ref = onnxruntime_outputs(g, x)
    assert all(np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5 for a, b in zip(out, ref))

