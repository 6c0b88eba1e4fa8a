"""Checks for the ONNX rewrites (engine/model/rewrites): a rewritten model must compute what the
original computes, as ONNX Runtime runs both, and hold none of the rewritten operators."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from engine.model import rewrites


def run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # the model as written
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def random_feeds(model: onnx.ModelProto, seed: int = 0, values: dict | None = None) -> dict:
    """N(0,1) floats, small non-negative ints, for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        if values and vi.name in values:
            feeds[vi.name] = values[vi.name]
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
        if dt.kind == "f":
            feeds[vi.name] = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[vi.name] = rng.integers(0, 3, shape).astype(dt)
    return feeds


def rewrite(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return rewrites.apply(m, "test")


def assert_same_as_ort(model: onnx.ModelProto, feeds: dict | None = None, rtol=1e-4, atol=1e-5,
                       gone: tuple = ()) -> onnx.ModelProto:
    """Rewrite `model`, check no node of an op in `gone` is left and that ONNX Runtime gives the same
    outputs on both (within rtol/atol); returns the rewritten model."""
    feeds = feeds if feeds is not None else random_feeds(model)
    want = run_ort(model, feeds)
    new = rewrite(model)
    left = [n.op_type for n in new.graph.node if n.op_type in gone]
    assert not left, f"still in the rewritten model: {left}"
    onnx.checker.check_model(new, full_check=True)
    got = run_ort(new, feeds)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, f"output {k}: shape {a.shape} != {b.shape}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {k}")
    return new
