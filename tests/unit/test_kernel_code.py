"""Issue 30: the code of each fused kernel (engine/report/kernel_code.py), `plan --kernel-code` and the
ONNX Runtime profile import (engine/measure/ort_import.py).

A small MobileNetV2-like network at 16x16 (tests/models.small_cnn_onnx): on the rpi4b profile dp makes an
inverted-residual chain (group 0, cpu.Chain), a stitched reduction (group 2: global pool -> matmul,
cpu.Stages), and greedy a plain epilogue group (group 1: depthwise conv + bias + clip, cpu.Anchor)."""
from __future__ import annotations

import json
import re

from types import SimpleNamespace
import pytest
from engine.devices import targets

from engine.planner.setup import Setup
from tests.support.kernel_code import _events, small  # noqa: F401


def _cases(s):
    """(plan, group index, kind) of a chain, a stitched reduction and a plain epilogue group."""
    from engine.report.kernel_code import kernel_groups

    def find(plan, kind):
        return next(gi for gi in kernel_groups(s.graph, plan) if plan.group_kinds[gi]["kind"] == kind
                    and len(plan.groups[gi]) > 1)

    return [(s.dp, find(s.dp, "anchor_chain"), "anchor_chain"), (s.dp, find(s.dp, "reduction_stitch"), "reduction_stitch"),
            (s.greedy, find(s.greedy, "epilogue"), "epilogue")]


def test_cpu_code_of_a_chain_a_stitched_reduction_and_an_epilogue(small):
    from engine.report import kernel_code as K

    rules = {}
    for plan, gi, kind in _cases(small):
        kc = K.generate(small.graph, plan.groups, gi, targets.HOST, strategy=plan.strategy, kind=kind)
        assert kc.error is None, kc.error
        rules[kind] = kc.rule
        assert kc.rule and kc.rule not in ("cpu.Fallback", "Fallback"), kc.summary()
        assert kc.func.startswith("fused_")
        # the TIR is the scheduled function: the rule's marks (parallel / vectorised loops, scheduled attr)
        assert "T.prim_func" in kc.tir and "tirx.is_scheduled" in kc.tir
        assert "T.vectorized" in kc.tir
        assert kc.vector_lanes > 1 and kc.vector_bits == kc.vector_lanes * 32 and kc.vector_dtype == "float32"
        # LLVM IR with the vectors the rule made, and assembly
        assert f"<{kc.vector_lanes} x float>" in kc.llvm, kc.vector_text()
        assert kc.asm.strip() and kc.func in kc.asm
        assert kc.loops and any(lp.kind == "vectorized" for lp in kc.loops)
        text = kc.text(["summary", "loops"])
        assert "schedule rule: " + kc.rule in text and "vector width: " in text and "measured: not measured" in text
        assert not kc.cuda
    assert rules == {"anchor_chain": "cpu.Chain", "reduction_stitch": "cpu.Stages", "epilogue": "cpu.Anchor"}


def test_cuda_source_of_the_same_groups_is_built_not_run(small):
    from engine.report import kernel_code as K

    for plan, gi, kind in _cases(small):
        kc = K.generate(small.graph, plan.groups, gi, targets.parse("cuda:sm_75"), strategy=plan.strategy, kind=kind)
        assert kc.error is None, kc.error
        assert "__global__" in kc.cuda and kc.func in kc.cuda
        assert kc.rule is not None
        assert any(lp.kind == "thread" and lp.thread.startswith(("blockIdx", "threadIdx")) for lp in kc.loops)
        assert not kc.llvm and not kc.asm
        assert "built, not run" in kc.summary()
        assert kc.available() == ["summary", "loops", "tir", "cuda"]


def test_a_single_op_kernel_and_the_code_sections(small):
    from engine.report import kernel_code as K

    g, plan = small.graph, small.greedy
    gi = next(k for k in K.kernel_groups(g, plan) if len(plan.groups[k]) == 1)
    kc = K.generate(g, plan.groups, gi, targets.HOST, strategy="greedy", sections=["tir"])
    assert kc.tir and not kc.llvm and not kc.asm          # only what was asked is compiled
    assert kc.section("tir") == kc.tir
    assert kc.text(["tir"]) == kc.tir                      # one section: bare
    d = K.KernelCode.from_dict(json.loads(json.dumps(kc.to_dict())))
    assert d.loops == kc.loops and d.tir == kc.tir


def test_groups_are_found_by_index_or_name_and_the_other_plans_kernels_for_the_same_ops(small):
    from engine.report import kernel_code as K
    from engine.report.group_names import group_title
    from engine.util.errors import UsageError

    g, dp, greedy = small.graph, small.dp, small.greedy
    chain = next(gi for gi in K.kernel_groups(g, dp) if dp.group_kinds[gi]["kind"] == "anchor_chain")
    assert K.find_group(g, dp, str(chain)) == chain
    stitch = next(gi for gi in K.kernel_groups(g, dp) if dp.group_kinds[gi]["kind"] == "reduction_stitch")
    title = group_title(g, dp.groups[stitch], "reduction_stitch")
    assert K.find_group(g, dp, title.upper()) == stitch
    assert K.find_group(g, dp, "stitched") == stitch
    assert K.find_group(g, dp, title[:20] + "...") == stitch      # as a table cuts it
    with pytest.raises(UsageError, match="names .* groups"):
        K.find_group(g, greedy, "conv")
    with pytest.raises(UsageError, match="groups 0 to"):
        K.find_group(g, dp, "999")
    with pytest.raises(UsageError, match="no group"):
        K.find_group(g, dp, "\x1b[31mnothing")
    # the greedy kernels over the chain's ops: several, every one sharing an op
    others = K.overlapping(g, dp, greedy, chain)
    assert len(others) >= 2 and all(set(greedy.groups[k]) & set(dp.groups[chain]) for k in others)
    assert set().union(*(greedy.groups[k] for k in others)) >= {m for m in dp.groups[chain]
                                                                if g.by_id[m].kind == "call_tir"}


def test_sections_are_checked_against_the_target():
    from engine.report.kernel_code import parse_sections
    from engine.util.errors import UsageError

    assert parse_sections(None, targets.HOST) == ["summary", "loops", "tir"]
    assert parse_sections("ll,asm", targets.HOST) == ["llvm", "asm"]
    assert parse_sections("all", targets.parse("cuda")) == ["summary", "loops", "tir", "cuda"]
    for bad, target in (("cuda", "cpu"), ("llvm", "cuda"), ("tir,,asm", "cpu"), ("ptx", "cpu")):
        with pytest.raises(UsageError):
            parse_sections(bad, targets.parse(target))


def test_measured_time_and_its_share_of_the_peak(small, monkeypatch):
    from engine.report import kernel_code as K
    from engine.report import kernel_report

    monkeypatch.setattr(kernel_report, "peaks", lambda hw, facts=None: kernel_report.Peaks(1e11, 1e10, "test", "test"))
    plan = small.dp
    gi = K.kernel_groups(small.graph, plan)[0]
    ku = [None] * len(plan.groups)
    ku[gi] = 20.0
    m = K.measured(small.graph, plan, gi, Setup(small.hw), bench=SimpleNamespace(kernel_us=ku, error=None, target="cpu"),
                   look_in_caches=False)
    assert m is not None and m.us == 20.0 and "benchmark" in m.source
    assert m.flops > 0 and m.bytes > 0 and m.bound in ("compute", "memory")
    floor = max(m.flops / 1e11, m.bytes / 1e10)
    assert m.roofline_share == pytest.approx(floor / 20e-6)
    assert "of its roofline bound" in m.text()
    assert K.measured(small.graph, plan, gi, Setup(small.hw), look_in_caches=False) is None
    ku[gi] = float("nan")   # a damaged figure is no figure
    assert K.measured(small.graph, plan, gi, Setup(small.hw), bench=SimpleNamespace(kernel_us=ku, error=None),
                      look_in_caches=False) is None


def test_an_ort_profile_colours_every_group_of_any_plan(small, tmp_path):
    from engine.measure import ort_import

    g = small.graph
    onnx_names = list(dict.fromkeys(n.onnx_name for n in g.nodes if n.onnx_name))
    # ORT names a fused Conv+Clip after the Clip with a suffix; one node it inserts has a name of its own
    conv, clip = onnx_names[0], onnx_names[1]
    names = [(f"{clip}_nchwc", "Conv"), ("ReorderOutput", "ReorderOutput")] + [(n, "Op") for n in onnx_names[2:]]
    f = tmp_path / "ort.json"
    f.write_text(json.dumps(_events(names)))
    prof = ort_import.read(f, g)
    assert prof.runs == 3
    fused = next(n for n in prof.nodes if n.name == f"{clip}_nchwc")
    assert set(fused.onnx_nodes) == {conv, clip}
    per = ort_import.op_times(prof, g)
    assert sum(per.values()) == pytest.approx(10 * (len(names) - 1))   # ReorderOutput covers no node
    for plan in (small.dp, small.greedy):
        t = ort_import.group_times(prof, g, plan.groups)
        assert len(t) == len(plan.groups)
        assert sum(x for x in t if x) == pytest.approx(sum(per.values()))
    assert "map onto" in ort_import.summary(prof, g)
    # the "traceEvents" object form reads the same
    f.write_text(json.dumps({"traceEvents": _events(names)}))
    assert len(ort_import.read(f, g).nodes) == len(prof.nodes)


def test_ort_nodes_named_after_output_tensors_map_to_their_nodes(tmp_path):
    """Paddle's exports name nodes one way and tensors another; ORT names a fused node after its output
    (`conv2d_53.tmp_0_nchwc`): tiny_onnx's relu0 and add0 write r and y; ORT's nodes r_nchwc and y."""
    import onnx

    from engine.measure import ort_import
    from engine.model import loader
    from tests.support.models import tiny_onnx

    p = tmp_path / "tiny.onnx"
    onnx.save(tiny_onnx(batch=1), p)
    g = loader.load(str(p))
    f = tmp_path / "ort.json"
    f.write_text(json.dumps(_events([("r_nchwc", "Conv"), ("y", "Add"), ("split0", "Split"), ("mul0", "Mul")])))
    prof = ort_import.read(f, g)
    cover = {n.name: n.onnx_nodes for n in prof.nodes}
    assert "relu0" in cover["r_nchwc"] and "add0" in cover["y"] and cover["mul0"] == ["mul0"]
    assert not prof.missing     # conv0 (its output read by relu0 and add0) joins one of them


@pytest.mark.parametrize("content, why", [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
    (b"{not json", "not valid JSON"),
    (b'{"a": 1}', "JSON list of trace events"),
    (b"[]", "no node timings"),
    (b'[{"cat": "Node", "name": "x_kernel_time", "ts": 0, "dur": NaN}]', "not valid JSON"),
    (b'[{"cat": "Node", "name": "x_kernel_time", "ts": 0, "dur": -5}]', "not a time"),
    (b'[{"cat": "Node", "name": "x_kernel_time", "ts": 0, "dur": 1e300}]', "not valid JSON"),
    (b'[{"cat": "Node", "name": "x_kernel_time", "ts": 0, "dur": true}]', "not a time"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply|not valid JSON"),
    (json.dumps(_events([("not_a_node_of_it", "Conv")])).encode(), "another model"),
])
def test_a_damaged_or_hostile_profile_is_one_clear_line(small, tmp_path, content, why):
    from engine.measure import ort_import

    f = tmp_path / "p.json"
    f.write_bytes(content)
    with pytest.raises(ort_import.ProfileError) as e:
        ort_import.read(f, small.graph)
    msg = str(e.value)
    assert re.search(why, msg) and "\n" not in msg and len(msg) < 500


def test_a_profile_path_that_is_no_file_is_one_line(small, tmp_path):
    import os

    from engine.measure import ort_import

    for path, why in ((tmp_path / "missing.json", "not found"), (tmp_path, "folder")):
        with pytest.raises(ort_import.ProfileError, match=why):
            ort_import.read(path, small.graph)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ort_import.ProfileError, match="not a regular file"):
        ort_import.read(fifo, small.graph)

