"""The blocked channel layout pass (engine/model/blocked_layout.py): structure on hand-built Relax modules,
numerics against the unblocked module and against ONNX Runtime on whole models, FuseOps == greedy
on blocked graphs, and every fusion kind's build on blocked MobileNetV2."""

from dataclasses import replace
import numpy as np
import pytest

import tvm
from tvm import relax
from engine.kernels import build
from engine.model import blocked_layout, loader
from tests.support.blocked_layout import blocked_mobilenet  # noqa: F401


RNG = np.random.default_rng(0)


def _const(*shape, scale=0.2, positive=False):
    a = RNG.standard_normal(shape).astype("float32") * scale
    return relax.const(np.abs(a) + 0.5 if positive else a, "float32")


def _module(body, *input_shapes):
    """A main of `body(bb, *params)` (emits into a dataflow block, returns the output) in the form
    prepare has it before LegalizeOps."""
    bb = relax.BlockBuilder()
    params = [relax.Var(f"x{i}", relax.TensorType(s, "float32")) for i, s in enumerate(input_shapes)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(bb, *params))
        bb.emit_func_output(out)
    return bb.get()


def _conv(bb, x, cin, cout, k=3, groups=1, stride=1):
    w = _const(cout, cin // groups, k, k)
    return bb.emit(relax.op.nn.conv2d(x, w, strides=stride, padding=k // 2, groups=groups))


def _bias_relu(bb, y, c):
    b = bb.emit(relax.op.expand_dims(_const(c), axis=[0, 2, 3]))
    return bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(y, b))))


def _bn(bb, y, c):
    """A decomposed batch norm, as DecomposeOpsForInference leaves it (expand_dims of constants)."""
    e = lambda k: bb.emit(relax.op.expand_dims(k, axis=[0, 2, 3]))  # noqa: E731
    y = bb.emit(relax.op.subtract(y, e(_const(c))))
    sd = bb.emit(relax.op.sqrt(bb.emit(relax.op.add(e(_const(c, positive=True)), relax.const(1e-5, "float32")))))
    y = bb.emit(relax.op.divide(y, sd))
    y = bb.emit(relax.op.multiply(y, e(_const(c, positive=True))))
    return bb.emit(relax.op.add(y, e(_const(c))))


def _calls(mod):
    return [b for blk in mod["main"].body.blocks for b in blk.bindings if isinstance(b.value, relax.Call)]


def _op(b):
    return str(getattr(b.value.op, "name", ""))


def _transforms(mod):
    return [b for b in _calls(mod) if _op(b) == "relax.layout_transform"]


def _blocked_convs(mod):
    return [b for b in _calls(mod) if _op(b) == "relax.call_tir"
            and b.value.args[0].name_hint.startswith(blocked_layout.DENSE_NAME)]


def _no_cancelling_pair(mod):
    made = {b.var for b in _transforms(mod)}
    for b in _transforms(mod):
        assert b.value.args[0] not in made, "a layout_transform of a layout_transform"


def _run(mod, inputs, legalize=None):
    mod = relax.transform.LegalizeOps(legalize)(mod)
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    exe = relax.build(mod, target=tvm.target.Target({"kind": "llvm"}))
    vm = relax.VirtualMachine(exe, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(x) for x in inputs]).numpy()


def _check(mod, block, n_transforms, *input_shapes):
    """The pass's result: n layout transforms, no cancelling pair, the same numbers as the original."""
    out = blocked_layout.apply(mod, block)
    assert len(_transforms(out)) == n_transforms, out["main"].script()
    _no_cancelling_pair(out)
    xs = [RNG.standard_normal(s).astype("float32") for s in input_shapes]
    want = _run(mod, xs)
    got = _run(out, xs, blocked_layout.LEGALIZE)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return out


def _weight_shapes(mod):
    shapes = []
    for b in _blocked_convs(mod):
        w = b.value.args[1].fields[1]
        assert isinstance(w, tvm.ir.GenericConst), "the packed weight is a constant of the module"
        shapes.append(tuple(w.value.numpy().shape))
    return shapes


def _out_shape(b):
    return tuple(int(d) for d in b.var.ty.shape.values)


def test_conv_bias_relu_is_one_blocked_region():
    mod = _module(lambda bb, x: _bias_relu(bb, _conv(bb, x, 32, 32), 32), (1, 32, 8, 8))
    out = _check(mod, 16, 2, (1, 32, 8, 8))  # into the block at the input, out of it at the output
    assert _weight_shapes(out) == [(2, 2, 3, 3, 16, 16)]
    relu = next(b for b in _calls(out) if _op(b) == "relax.nn.relu")
    assert _out_shape(relu) == (1, 2, 8, 8, 16)
    assert not [b for b in _calls(out) if _op(b) == "relax.nn.conv2d"]


def test_conv_bn_relu6_residual_shares_the_input_transform():
    def body(bb, x):
        y = _bn(bb, _conv(bb, x, 16, 16), 16)
        y = bb.emit(relax.op.clip(y, 0.0, 6.0))
        return bb.emit(relax.op.add(y, x))
    out = _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))
    add = [b for b in _calls(out) if _op(b) == "relax.add"][-1]
    assert _out_shape(add) == (1, 1, 8, 8, 16)
    # the batch norm's statistics were folded and repacked: no expand_dims or sqrt is left
    assert not [b for b in _calls(out) if _op(b) in ("relax.expand_dims", "relax.sqrt")]


def test_importers_clip_call_tir_is_carried_blocked():
    """The ONNX frontend's Clip: call_tir(maximum/minimum, (x, scalar)); its PrimFunc is 4-D."""
    from tvm import topi

    def body(bb, x):
        y = _conv(bb, x, 16, 16)
        y = bb.emit_te(topi.maximum, y, relax.const(0.0, "float32"), primfunc_name_hint="maximum")
        return bb.emit_te(topi.minimum, y, relax.const(6.0, "float32"), primfunc_name_hint="minimum")
    out = _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))
    assert {_out_shape(b) for b in _calls(out) if _op(b) in ("relax.maximum", "relax.minimum")} == {(1, 1, 8, 8, 16)}


def test_depthwise_conv_packs_its_weight_per_channel_block():
    mod = _module(lambda bb, x: _bias_relu(bb, _conv(bb, x, 32, 32, groups=32), 32), (1, 32, 8, 8))
    out = _check(mod, 16, 2, (1, 32, 8, 8))
    [conv] = _blocked_convs(out)
    assert conv.value.args[0].name_hint.startswith(blocked_layout.DEPTHWISE_NAME)
    assert _weight_shapes(out) == [(2, 1, 3, 3, 1, 16)]


def test_24_channels_take_block_8_and_grouped_convs_stay_nchw():
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 24, k=1), 24)
        return _conv(bb, y, 24, 24, groups=2)  # grouped, not depthwise: NCHW
    out = _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))
    assert _weight_shapes(out) == [(3, 1, 1, 1, 16, 8)]
    assert len([b for b in _calls(out) if _op(b) == "relax.nn.conv2d"]) == 1


def test_three_channel_image_is_read_as_one_block():
    mod = _module(lambda bb, x: _bias_relu(bb, _conv(bb, x, 3, 16, stride=2), 16), (1, 3, 16, 16))
    out = _check(mod, 16, 2, (1, 3, 16, 16))
    first = _transforms(out)[0]
    assert _out_shape(first) == (1, 1, 16, 16, 3)
    assert _weight_shapes(out) == [(1, 1, 3, 3, 3, 16)]


def test_squeeze_excite_branch_stays_blocked_with_a_whole_channel_block():
    """EfficientNet's SE: mean -> 1x1 conv to 6 channels (no block of 4 or more divides 6: the whole
    channel dim is one block, [1, 1, 1, 1, 6]) -> swish -> 1x1 conv back to 32 -> sigmoid -> scale."""
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 32), 32)
        s = bb.emit(relax.op.mean(y, axis=[2, 3], keepdims=True))
        s = _bias_relu(bb, _conv(bb, s, 32, 6, k=1), 6)
        s = bb.emit(relax.op.multiply(s, bb.emit(relax.op.sigmoid(s))))
        s = bb.emit(relax.op.sigmoid(_conv(bb, s, 6, 32, k=1)))
        return bb.emit(relax.op.multiply(y, s))
    out = _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))  # only the input's and the output's
    assert _weight_shapes(out) == [(2, 1, 3, 3, 16, 16), (1, 2, 1, 1, 16, 6), (2, 1, 1, 1, 6, 16)]
    reduce_conv = _blocked_convs(out)[1]
    assert _out_shape(reduce_conv) == (1, 1, 1, 1, 6)
    assert not [b for b in _calls(out) if _op(b) == "relax.nn.conv2d"]


def test_channels_no_block_divides_stay_nchw_above_whole_max():
    """66 channels: no block of 4 or more divides them and they are over WHOLE_MAX: that conv stays
    NCHW (its input leaves the block), so does the next one, which reads those 66 channels; the report
    says why."""
    assert blocked_layout.WHOLE_MAX < 66
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 16), 16)
        y = _bias_relu(bb, _conv(bb, y, 16, 66, k=1), 66)
        return _conv(bb, y, 66, 16, k=1)
    mod = _module(body, (1, 16, 8, 8))
    out = _check(mod, 16, 2, (1, 16, 8, 8))
    assert len([b for b in _calls(out) if _op(b) == "relax.nn.conv2d"]) == 2
    report = {}
    blocked_layout.apply(mod, 16, report=report)
    assert [c["reason"] for c in report["convs"]] == ["output channels have no block", "input channels have no block"]
    assert [(e["op"], e["shape"]) for e in report["exits"]] == [("nn.conv2d", [1, 16, 8, 8])]
    assert [(e["op"], e["shape"]) for e in report["entries"]] == [("nn.conv2d", [1, 16, 8, 8])]


def test_concat_on_the_channel_axis_stays_blocked():
    def body(bb, x):
        a = _bias_relu(bb, _conv(bb, x, 16, 16), 16)
        b = _bias_relu(bb, _conv(bb, x, 16, 16, k=1), 16)
        c = bb.emit(relax.op.concat([a, b], axis=1))
        return _conv(bb, c, 32, 16, k=1)
    out = _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))
    cat = next(b for b in _calls(out) if _op(b) == "relax.concat")
    assert _out_shape(cat) == (1, 2, 8, 8, 16)


def test_pool_head_leaves_the_block_once_before_flatten_and_matmul():
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 32), 32)
        y = bb.emit(relax.op.nn.max_pool2d(y, pool_size=3, strides=2, padding=1))
        y = bb.emit(relax.op.nn.avg_pool2d(y, pool_size=2, strides=2))
        p = bb.emit(relax.op.mean(y, axis=[2, 3], keepdims=True))
        f = bb.emit(relax.op.reshape(p, [1, 32]))
        return bb.emit(relax.op.matmul(f, _const(32, 10)))
    out = _check(_module(body, (1, 16, 16, 16)), 16, 2, (1, 16, 16, 16))
    pools = [b for b in _calls(out) if _op(b) in ("relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.mean")]
    assert [_out_shape(b) for b in pools] == [(1, 2, 8, 8, 16), (1, 2, 4, 4, 16), (1, 2, 1, 1, 16)]
    assert _out_shape(_transforms(out)[-1]) == (1, 32, 1, 1)


def test_a_tensor_leaves_the_block_once_for_all_its_nchw_consumers():
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 16), 16)
        a = bb.emit(relax.op.reshape(y, [1, 16, 64]))
        b = bb.emit(relax.op.permute_dims(y, [0, 2, 3, 1]))
        return bb.emit(relax.op.add(bb.emit(relax.op.reshape(b, [1, 64, 16])), bb.emit(relax.op.permute_dims(a, [0, 2, 1]))))
    _check(_module(body, (1, 16, 8, 8)), 16, 2, (1, 16, 8, 8))


def test_global_average_pool_without_keepdims_and_adaptive_pool():
    def body(bb, x):
        y = _bias_relu(bb, _conv(bb, x, 16, 32), 32)
        g = bb.emit(relax.op.nn.adaptive_avg_pool2d(y, output_size=[1, 1]))
        m = bb.emit(relax.op.mean(y, axis=[-2, -1], keepdims=False))
        return bb.emit(relax.op.add(bb.emit(relax.op.reshape(g, [1, 32])), m))
    _check(_module(body, (1, 16, 8, 8)), 8, 2, (1, 16, 8, 8))


def test_none_is_the_identity_and_a_bad_block_is_one_message():
    mod = _module(lambda bb, x: _conv(bb, x, 16, 16), (1, 16, 8, 8))
    assert blocked_layout.apply(mod, None) is mod
    for bad in (0, -4, "16", 2.5, True):
        with pytest.raises(ValueError, match="bad channel block"):
            blocked_layout.apply(mod, bad)


def test_channel_block():
    cb = blocked_layout.channel_block
    assert [cb(c, 16) for c in (32, 24, 20, 3, 6, 1000)] == [16, 8, 4, None, None, 8]
    assert cb(24, 4) == 4 and cb(6, 4) is None
    tb = blocked_layout.tensor_block  # the whole channel dim where no block divides, up to WHOLE_MAX
    assert [tb(c, 16) for c in (32, 24, 3, 6, 10, 1, 42, 64, 255, 66)] == [16, 8, 3, 6, 10, 1, 42, 16, None, None]
    assert tb(10, 8) == 10 and tb(6, 4) == 6


def test_block_for_targets():
    from engine.devices.tvm_target import vector_lanes

    host = blocked_layout.block_for("cpu")
    assert host == vector_lanes(build.tvm_target("cpu"))
    assert blocked_layout.block_for({"kind": "llvm", "mcpu": "skylake-avx512"}) == 16
    assert blocked_layout.block_for({"kind": "llvm", "mcpu": "haswell"}) == 8
    assert blocked_layout.block_for("rpi4b") == 4
    assert blocked_layout.block_for({"kind": "cuda"}) is None
    assert blocked_layout.block_for(None) is None


def test_blocked_convs_are_named_and_refused_as_chains_in_one_line(blocked_mobilenet):
    from engine.devices import hardware
    from engine.planner import kinds
    from engine.planner.cost import CostModel
    from engine.report import group_names

    g = blocked_mobilenet
    convs = [n for n in g.nodes if n.op.startswith(blocked_layout.DENSE_NAME)]
    words = {group_names.op_word(n) for n in convs}
    assert words == {"conv", "dwconv"}
    cm = CostModel(g, replace(hardware.get("host"), kinds={k: {"enabled": True} for k in kinds.BEYOND}))
    why = kinds.chain_shape(cm, [cm.index[c.id] for c in convs[1:5]])  # 4 blocked convs: more than BlockedChain takes
    assert "blocked (NCHW[x]c) convolution" in why

