"""The attention fusion kind (engine/planner/kinds.py: attention_shape) and its CPU schedule rule
(engine/schedules/cpu/attention.py): QK^T -> scale/mask -> softmax -> .V as one group, one kernel
whose score matrix is computed a tile of query rows at a time and never goes to memory.
Tolerance against numpy (float64): max |out - ref| <= 1e-5 * max |ref| + 1e-6."""

from dataclasses import replace

import numpy as np
import onnx
import pytest
import tvm
import tvm_ffi

from tvm import relax, s_tir, tirx
from engine import schedules
from engine.devices import hardware

from engine.devices import tvm_target as target_mod
from engine.devices.device_session import flatten

from engine.kernels import build
from engine.model import loader
from engine.planner import kinds, make_plan
from engine.planner.apply import apply
from engine.planner.cost import CostModel
from engine.planner.setup import Setup
from engine.schedules.base import fastmath
from engine.schedules.cpu.attention import Attention
from tests.support.attention_graphs import attention_onnx, bert_like_onnx, reference


def _graph(tmp_path, model, name):
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return loader.load(str(path), use_cache=False)


def _attention_groups(g):
    """The K transpose on its own, every other op in one group (the attention)."""
    kt = [n.id for n in g.nodes if n.op == "transpose"]
    return [[t] for t in kt] + [[n.id for n in g.nodes if n.id not in kt]]


def _fused_func(mod):
    return next(f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)
                and sum(1 for b in _blocks(f) if b.init is not None) >= 2)


def _blocks(func):
    found = []
    tvm_ffi.structural_walk(func.body, (s_tir.SBlock, found.append), order="post")
    return found


def _lowered_allocs(func):
    """Sizes (elements) of every buffer the scheduled function allocates, after buffer compaction."""
    tgt = target_mod.host_target()
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main").with_attr("target", tgt)})
    seq = tvm.transform.Sequential([s_tir.transform.CanonicalizeLoop(), s_tir.transform.LowerInitBlock(),
                                    s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
                                    s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.CompactBufferAllocation(),
                                    s_tir.transform.LowerMatchBuffer(), s_tir.transform.LowerOpaqueBlock()])
    out = []
    tvm_ffi.structural_walk(seq(mod)["main"].body, (tirx.AllocBuffer, out.append), order="post")
    return [int(np.prod([int(d) for d in a.buffer.shape])) for a in out]


def _on(hw, on: bool):
    return replace(hw, kinds={**hw.kinds, "attention": {"enabled": on}})


def test_the_rule_takes_the_fused_attention_and_keeps_scores_in_tiles(tmp_path):
    heads, seq = 4, 256
    g = _graph(tmp_path, attention_onnx(heads=heads, seq=seq, head_dim=64, mask=True), "att")
    func, _ = fastmath.rewrite_exp(_fused_func(apply(g, _attention_groups(g))))
    with target_mod.host_target():
        sch = Attention().apply(func, target_mod.host_target(), False)
    assert sch is not None
    allocs = _lowered_allocs(sch.mod["main"])
    # per-tile buffers only: no allocation holds more than one tile's rows of one head's scores
    assert allocs and max(allocs) < heads * seq * seq // 4, allocs
    assert max(allocs) <= 16 * seq


def test_the_rule_refuses_what_is_not_an_attention(tmp_path):
    g = _graph(tmp_path, attention_onnx(heads=2, seq=64, head_dim=32), "att")
    ids = [n.id for n in g.nodes]
    pv = [n.id for n in g.nodes if n.op == "matmul"][-1]
    # QK^T -> scale -> softmax without .V: one multiply-accumulate, not an attention
    groups = [[i] for i in ids if i == pv or g.by_id[i].op == "transpose"] + \
        [[i for i in ids if i != pv and g.by_id[i].op != "transpose"]]
    mod = apply(g, groups)
    tgt = target_mod.host_target()
    with tgt:
        for gv, f in mod.functions_items():
            if isinstance(f, tirx.PrimFunc) and gv.name_hint != "main":
                assert Attention().apply(fastmath.rewrite_exp(f)[0], tgt, False) is None, gv.name_hint
    smod, rep = schedules.schedule(mod, "cpu")
    assert "cpu.Attention" not in rep.handled


@pytest.mark.parametrize("heads,seq,dim,softmax,mask", [(4, 64, 64, "op", True), (4, 200, 64, "exporter", True),
                                                       (2, 50, 16, "op", False)])
def test_fused_attention_matches_numpy(tmp_path, heads, seq, dim, softmax, mask):
    g = _graph(tmp_path, attention_onnx(heads=heads, seq=seq, head_dim=dim, softmax=softmax, mask=mask), "att")
    smod, rep = schedules.schedule(apply(g, _attention_groups(g)), "cpu")
    assert len(rep.handled.get("cpu.Attention", [])) == 1, rep.summary()
    vm = relax.VirtualMachine(build.build(smod, "cpu"), tvm.cpu())
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, heads, seq, dim)).astype("float32") for _ in range(3)]
    out = flatten(vm["main"](*[tvm.runtime.tensor(x) for x in xs]))[0]
    ref = reference(*xs, mask=mask)
    assert out.shape == ref.shape
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max() + 1e-6


@pytest.mark.parametrize("softmax", ["op", "exporter"])
def test_the_kind_is_told_apart_and_refuses_a_prologue(tmp_path, softmax):
    g = _graph(tmp_path, attention_onnx(heads=4, seq=128, head_dim=64, mask=True, softmax=softmax), "att")
    cm = CostModel(g, hardware.get("host"))
    groups = _attention_groups(g)
    att = [cm.index[m] for m in groups[-1]]
    assert kinds.features_of(cm, att) == ("attention",)
    assert kinds.classify(cm, [groups[-1]])[0]["kind"] == "attention"
    assert kinds.attention_shape(cm, att) == ""
    # with the K transpose (an op before QK^T): not an attention, and a prologue
    everything = list(range(len(g.nodes)))
    assert "prologue" in kinds.attention_shape(cm, everything)
    # without .V: not an attention (a chain of two anchors)
    pv = max(v for v in att if g.nodes[v].op == "matmul")
    assert "attention" not in kinds.features_of(cm, [v for v in att if v != pv])


def test_the_fused_estimate_drops_the_score_traffic(tmp_path):
    g = _graph(tmp_path, attention_onnx(heads=12, seq=1024, head_dim=64), "att")
    cm = CostModel(g, hardware.get("host"))
    att = [cm.index[m] for m in _attention_groups(g)[-1]]
    fused = cm.group(att)
    assert fused.legal, fused.why
    scores = 12 * 1024 * 1024 * 4
    assert fused.bytes_in + fused.bytes_out < scores             # Q, K, V in and O out: no score matrix
    apart = [cm.group([v]) for v in att]
    assert sum(e.bytes_in + e.bytes_out for e in apart) >= 4 * scores   # S and P written and read back
    assert fused.us < sum(e.us for e in apart)
    off = CostModel(g, _on(hardware.get("host"), False)).group(att)
    assert not off.legal and "attention" in off.why


def test_dp_forms_an_attention_group_where_the_kind_is_on(tmp_path):
    g = _graph(tmp_path, bert_like_onnx(seq=128), "bert")
    host = hardware.get("host")
    on = make_plan(g, "dp", Setup(_on(host, True)))
    att = [grp for grp, k in zip(on.groups, on.group_kinds) if k["kind"] == "attention"]
    assert len(att) == 1
    ops = sorted(g.by_id[m].op for m in att[0])
    assert ops.count("matmul") == 2 and "softmax" in ops
    off = make_plan(g, "dp", Setup(_on(host, False)))
    assert all(k["kind"] != "attention" and "attention" not in k["features"] for k in off.group_kinds)

