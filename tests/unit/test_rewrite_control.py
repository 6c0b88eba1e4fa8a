"""Control flow rewritten before import (engine/model/rewrites: if_const, loop_unroll, scan_unroll):
before/after structure, and the same outputs as ONNX Runtime on the original."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from engine.model import rewrites
from engine.util.errors import ModelError
from tests.support.rewrite_check import assert_same_as_ort, rewrite

OPSET = [h.make_opsetid("", 17)]


def _if_model(cond_from_shape: bool):
    """y = x + 1 if (x's dim 1 == 4 | a constant True) else x * 2, with a Pad inside the then branch
    whose pads are computed from the outer x's shape (folds once shapes are fixed)."""
    then = h.make_graph(
        [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "one"], ["d1"], axis=0),
         h.make_node("Sub", ["d1", "d1"], ["zero"]),
         h.make_node("Concat", ["zero", "zero", "zero", "zero"], ["pads"], axis=0),
         h.make_node("Pad", ["x", "pads"], ["xp"]), h.make_node("Add", ["xp", "c1"], ["then_out"])],
        "then", [], [h.make_tensor_value_info("then_out", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array([1], np.int64), "one"),
                     numpy_helper.from_array(np.array(1, np.float32), "c1")])
    other = h.make_graph([h.make_node("Mul", ["x", "c2"], ["else_out"])], "else", [],
                         [h.make_tensor_value_info("else_out", T.FLOAT, None)],
                         initializer=[numpy_helper.from_array(np.array(2, np.float32), "c2")])
    nodes, inits = [], []
    if cond_from_shape:
        nodes += [h.make_node("Shape", ["x"], ["xs"]), h.make_node("Gather", ["xs", "idx"], ["dim"], axis=0),
                  h.make_node("Equal", ["dim", "four"], ["condv"]), h.make_node("Squeeze", ["condv"], ["cond"])]
        inits += [numpy_helper.from_array(np.array([1], np.int64), "idx"),
                  numpy_helper.from_array(np.array([4], np.int64), "four")]
    else:
        inits.append(numpy_helper.from_array(np.array(True), "cond"))
    nodes.append(h.make_node("If", ["cond"], ["y"], name="/block/If", then_branch=then, else_branch=other))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 4])], initializer=inits)
    return h.make_model(g, opset_imports=OPSET)


@pytest.mark.parametrize("from_shape", [False, True])
def test_if_with_a_known_condition_keeps_its_branch(from_shape):
    notes = []
    m = _if_model(from_shape)
    new = assert_same_as_ort(m, gone=("If",))
    rewrites.apply(_if_model(from_shape), "t", notes)
    assert any("kept the then branch" in n and "'/block/If'" in n for n in notes), notes
    # the branch's Pad had its pads computed from shapes: folded to a constant input
    pad = next(n for n in new.graph.node if n.op_type == "Pad")
    assert pad.input[1] in {t.name for t in new.graph.initializer}
    assert pad.name.startswith("/block/If/then/")


def test_if_on_an_input_value_names_the_input_and_the_flag():
    m = _if_model(False)
    m.graph.initializer.pop()   # cond becomes a graph input
    m.graph.input.append(h.make_tensor_value_info("cond", T.BOOL, []))
    with pytest.raises(ModelError, match=r"If node '/block/If': its condition depends on the value of input 'cond' "
                                         r"at run time.*--input-value cond=V"):
        rewrite(m)


def test_if_given_the_input_value_keeps_one_branch(tmp_path):
    """--input-value end to end through the loader: the input becomes a constant, the If is gone,
    and the graph's notes say which branch was kept."""
    from engine.model import loader

    m = _if_model(False)
    m.graph.initializer.pop()
    m.graph.input.append(h.make_tensor_value_info("cond", T.BOOL, []))
    p = tmp_path / "if.onnx"
    onnx.save(m, p)
    g = loader.load(str(p), {"cond": {"value": [0]}}, use_cache=False)
    assert g.input_values == {"cond": [0]} and list(g.input_shapes) == ["x"]
    assert any("kept the else branch" in n for n in g.import_notes), g.import_notes
    assert [n.op for n in g.nodes if n.kind == "call_tir"] and all("pad" not in n.op for n in g.nodes)


def _loop_model(trip: int, cond_body: str = "pass", carried_out: bool = True):
    """acc_{i+1} = acc_i * w + x[i]; scan output = acc_{i+1}; the loop runs `trip` times (or until
    the body's condition, i < 2, turns false: cond_body='early'; 'data': acc's sum > 0)."""
    nodes = [h.make_node("Gather", ["x", "i"], ["xi"], axis=0),
             h.make_node("Mul", ["acc", "w"], ["aw"]), h.make_node("Add", ["aw", "xi"], ["acc_out"]),
             h.make_node("Identity", ["acc_out"], ["scan_out"])]
    if cond_body == "pass":
        nodes.append(h.make_node("Identity", ["cond_in"], ["cond_out"]))
    elif cond_body == "early":
        nodes.append(h.make_node("Less", ["i", "two"], ["cond_out"]))
    else:
        nodes += [h.make_node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
                  h.make_node("Greater", ["s", "zero"], ["cond_out"])]
    body = h.make_graph(nodes, "body",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                         h.make_tensor_value_info("acc", T.FLOAT, [3])],
                        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [3]),
                         h.make_tensor_value_info("scan_out", T.FLOAT, [3])],
                        initializer=[numpy_helper.from_array(np.array(2, np.int64), "two"),
                                     numpy_helper.from_array(np.array(-100, np.float32), "zero")])
    loop = h.make_node("Loop", ["M", "c", "a0"], ["acc_final" if carried_out else "acc_unused", "stack"], name="rnn/while",
                       body=body)
    g = h.make_graph([loop], "g", [h.make_tensor_value_info("x", T.FLOAT, [trip, 3]),
                                   h.make_tensor_value_info("a0", T.FLOAT, [3])],
                     [h.make_tensor_value_info("stack", T.FLOAT, ["n", 3])] +
                     ([h.make_tensor_value_info("acc_final", T.FLOAT, [3])] if carried_out else []),
                     initializer=[numpy_helper.from_array(np.array(trip, np.int64), "M"),
                                  numpy_helper.from_array(np.array(True), "c"),
                                  numpy_helper.from_array(np.array([0.5, -1, 2], np.float32), "w")])
    return h.make_model(g, opset_imports=OPSET)


@pytest.mark.parametrize("carried_out", [True, False])
def test_loop_with_a_trip_count_is_unrolled(carried_out):
    new = assert_same_as_ort(_loop_model(5, carried_out=carried_out), gone=("Loop",))
    names = [n.name for n in new.graph.node]
    assert any(n.startswith("/rnn/while/iter4/") for n in names) and not any("/iter5/" in n for n in names)


def test_loop_whose_condition_ends_it_early_runs_as_many_iterations():
    notes = []
    new = assert_same_as_ort(_loop_model(6, "early"), gone=("Loop",))
    rewrites.apply(_loop_model(6, "early"), "t", notes)
    assert "3 iterations (trip count 6, its condition ends it after 3)" in notes[0], notes
    assert not any("/iter3/" in n.name for n in new.graph.node)


def test_loop_whose_condition_depends_on_data_is_fuselens_limit():
    with pytest.raises(ModelError, match=r"Loop node 'rnn/while' is valid ONNX, but FuseLens cannot take it yet: "
                                         r"its loop condition depends on data"):
        rewrite(_loop_model(4, "data"))


@pytest.mark.parametrize("reverse_in,reverse_out,axis_out", [(0, 0, 0), (1, 0, 0), (0, 1, 1), (1, 1, -1)])
def test_scan_is_unrolled(reverse_in, reverse_out, axis_out):
    body = h.make_graph([h.make_node("Add", ["s", "xi"], ["s_out"]), h.make_node("Mul", ["s_out", "xi"], ["y"])],
                        "body", [h.make_tensor_value_info("s", T.FLOAT, [2]), h.make_tensor_value_info("xi", T.FLOAT, [2])],
                        [h.make_tensor_value_info("s_out", T.FLOAT, [2]), h.make_tensor_value_info("y", T.FLOAT, [2])])
    scan = h.make_node("Scan", ["s0", "x"], ["s_final", "ys"], name="scan", body=body, num_scan_inputs=1,
                       scan_input_directions=[reverse_in], scan_output_directions=[reverse_out],
                       scan_input_axes=[1], scan_output_axes=[axis_out])
    g = h.make_graph([scan], "g", [h.make_tensor_value_info("s0", T.FLOAT, [2]), h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("s_final", T.FLOAT, [2]), h.make_tensor_value_info("ys", T.FLOAT, ["a", "b"])])
    new = assert_same_as_ort(h.make_model(g, opset_imports=OPSET), gone=("Scan",))
    assert any(n.name.startswith("/scan/iter3/") for n in new.graph.node)


def _data_if(same_shapes: bool):
    """y = (verify(x) if mean(x) >= 0 else x), the If's condition computed from x's data (as a
    wake-word head runs its verifier only past a threshold); `same_shapes` False: the else branch
    gives [1, 2] where the then branch gives [1, 4]."""
    then = h.make_graph([h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Sigmoid", ["m"], ["t"])], "then", [],
                        [h.make_tensor_value_info("t", T.FLOAT, [1, 4])],
                        initializer=[numpy_helper.from_array(np.eye(4, dtype=np.float32) * 3, "w")])
    other_nodes = [h.make_node("Identity", ["x"], ["e"])] if same_shapes else \
        [h.make_node("Slice", ["x", "s0", "s2", "ax1"], ["e"])]
    other = h.make_graph(other_nodes, "else", [], [h.make_tensor_value_info("e", T.FLOAT, [1, 4 if same_shapes else 2])],
                         initializer=[numpy_helper.from_array(np.array([v], np.int64), n)
                                      for n, v in (("s0", 0), ("s2", 2), ("ax1", 1))])
    nodes = [h.make_node("ReduceMean", ["x"], ["mean"], keepdims=0), h.make_node("GreaterOrEqual", ["mean", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], name="verifier_if", then_branch=then, else_branch=other)]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["a", "b"])],
                     initializer=[numpy_helper.from_array(np.array(0, np.float32), "zero")])
    return h.make_model(g, opset_imports=OPSET)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_on_data_is_predicated_when_both_branches_have_one_shape(sign):
    x = (np.abs(np.random.default_rng(0).standard_normal((1, 4))) * sign).astype(np.float32)
    new = assert_same_as_ort(_data_if(True), {"x": x}, gone=("If",))
    assert [n.op_type for n in new.graph.node][-1] == "Where"
    notes = []
    rewrites.apply(_data_if(True), "t", notes)
    assert "both branches are computed and a Where selects each output (timings include both)" in notes[0]


def test_if_on_data_with_branches_of_other_shapes_is_fuselens_limit():
    with pytest.raises(ModelError, match=r"If node 'verifier_if': its condition is computed from data at run time "
                                         r"and its branches give outputs of different shapes.*FuseLens's limit"):
        rewrite(_data_if(False))
