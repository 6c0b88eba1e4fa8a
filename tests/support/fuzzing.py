"""The fuzzing harness shared by tests/{integration,unit}/test_fuzz.py (CI-sized, derandomized) and scripts/fuzz_long.py
(the long run): Hypothesis strategies for mutated ONNX models, mutated plan JSON and random command
lines, and the property each target must keep.

Targets and their property:

    onnx        engine.model.loader.load(path, shapes) on a mutated protobuf, then what `plan` does with the
                graph (check_graph_sizes, make_plan greedy): a graph or a FuseLensError, nothing else.
    onnx_cli    `main.py inspect FILE` and `main.py plan FILE --strategy greedy` on a mutated protobuf.
    plan_json   engine.planner.plan_json.load(file, graph) (what the app's "Open plan" calls) on mutated
                plan JSON: a Plan or a PlanError, nothing else.
    cli         every command on random arguments (and on damaged cache files it reads: devices.json,
                host.json).

A command line keeps the property when it exits 0 or 2 (1 too where a benchmark may find an incorrect
result; 3 for the app without a display), dies of no signal, prints no traceback, and, exiting 2,
prints exactly one line on stderr, an "error: ..." line (argparse's usage errors too: no usage block,
an argument's newlines escaped).
Command lines run in a private cache folder, under a memory limit (MEM_LIMIT), without a display.

A mutation is plain data (a tuple), so that Hypothesis shrinks it and a failure prints as a
reproducible example; the `apply_*` functions turn data into a file.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st
from engine.planner.setup import Setup

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "main.py"
# The largest tensor a fuzzed model may hold (FUSELENS_MAX_TENSOR_BYTES): mutated dims refused early,
# not allocated. Command lines also run under an address-space limit, so a bug that allocates without
# bound fails the run (MemoryError: exit 70) instead of the machine.
MAX_TENSOR_BYTES = 64 << 20
MEM_LIMIT = 6 << 30
INT64 = (-(2 ** 63), 2 ** 63 - 1)


class FuzzFailure(AssertionError):
    """The property does not hold: `kind` (exception, traceback, exit code, signal, hang, stderr) and detail."""

    def __init__(self, kind: str, detail: str):
        self.kind, self.detail = kind, detail
        super().__init__(f"{kind}: {detail}")


# ==== seeds ============================================================================================

def _prefix(model, n_nodes: int):
    """The first `n_nodes` nodes of a zoo model with the initializers they read; its outputs are
    the prefix's values nothing in it consumes."""
    import onnx
    from onnx import helper

    nodes = list(model.graph.node[:n_nodes])
    used = {i for n in nodes for i in n.input}
    produced = [o for n in nodes for o in n.output]
    outs = [o for o in produced if o not in used] or produced[-1:]
    inits = [t for t in model.graph.initializer if t.name in used]
    g = helper.make_graph(nodes, model.graph.name + "_prefix", list(model.graph.input),
                          [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    return onnx.shape_inference.infer_shapes(m)  # value_info to mutate too


def _head_model():
    """A small hand-made model of attribute-heavy ops the zoo prefixes lack: Pad, MaxPool, Resize,
    Transpose, Reshape, Concat, GlobalAveragePool, Flatten, Gemm, Softmax; dynamic batch."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype("float32"), "cw"),
             numpy_helper.from_array(np.array([1.0, 1.0, 2.0, 2.0], "float32"), "scales"),
             numpy_helper.from_array(np.array([0, 2, 3, 1], "int64"), "unused_perm"),
             numpy_helper.from_array(rng.standard_normal((6, 8)).astype("float32"), "fc_w"),
             numpy_helper.from_array(np.zeros(6, "float32"), "fc_b"),
             numpy_helper.from_array(np.array([1, -1], "int64"), "flat")]
    inits.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], "int64"), "pads"))
    nodes = [helper.make_node("Conv", ["x", "cw"], ["c0"], strides=[1, 1], group=1, name="conv0"),
             helper.make_node("Pad", ["c0", "pads"], ["c"], mode="constant", name="pad0"),
             helper.make_node("MaxPool", ["c"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0],
                              name="pool0"),
             helper.make_node("Resize", ["mp", "", "scales"], ["rs"], mode="nearest", name="resize0"),
             helper.make_node("Transpose", ["rs"], ["tr"], perm=[0, 1, 3, 2], name="transpose0"),
             helper.make_node("Concat", ["tr", "rs"], ["cat"], axis=1, name="concat0"),
             helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap0"),
             helper.make_node("Reshape", ["gap", "flat"], ["fl"], name="reshape0"),
             helper.make_node("Gemm", ["fl", "fc_w", "fc_b"], ["fc"], transB=1, alpha=1.0, name="gemm0"),
             helper.make_node("Softmax", ["fc"], ["y"], axis=-1, name="softmax0")]
    g = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(m)


def _recurrent_model():
    """A bidirectional LSTM feeding a GRU: what engine/model/rewrites unrolls."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    H = 4
    w = {n: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
         for n, s in (("lW", (2, 4 * H, 3)), ("lR", (2, 4 * H, H)), ("lB", (2, 8 * H)),
                      ("gW", (1, 3 * H, 2 * H)), ("gR", (1, 3 * H, H)))}
    shape = numpy_helper.from_array(np.array([5, 1, 2 * H], np.int64), "shape")
    nodes = [helper.make_node("LSTM", ["x", "lW", "lR", "lB"], ["Y", "", ""], hidden_size=H, direction="bidirectional",
                              name="/enc/lstm/LSTM"),
             helper.make_node("Transpose", ["Y"], ["Yt"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Yt", "shape"], ["Y2"]),
             helper.make_node("GRU", ["Y2", "gW", "gR"], ["", "h"], hidden_size=H, linear_before_reset=1,
                              name="/enc/gru/GRU")]
    g = helper.make_graph(nodes, "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 3])],
                          [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 1, H])], [*w.values(), shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


@lru_cache(maxsize=None)
def onnx_seeds() -> dict[str, bytes]:
    """name -> serialized model: tests/models.py's tiny model, the head above, and prefixes of three
    zoo models at resolution 32 (their first blocks: Conv, BatchNormalization, Clip, depthwise
    convs, residual Add; SiLU and squeeze-and-excitation; LeakyRelu, Split, Concat, MaxPool). Each
    loads cleanly as it is (tests/{integration,unit}/test_fuzz.py checks)."""
    from engine.model import zoo
    from tests.support.models import tiny_onnx

    seeds = {"tiny": tiny_onnx().SerializeToString(), "head": _head_model().SerializeToString(),
             "rnn": _recurrent_model().SerializeToString()}
    for name, n in (("mobilenetv2", 25), ("efficientnet_b0", 16), ("yolov4_tiny", 22)):
        seeds[f"{name}@32[:{n}]"] = _prefix(zoo.build(name, 32), n).SerializeToString()
    return seeds


SEED_NAMES = ("tiny", "head", "rnn", "mobilenetv2@32[:25]", "efficientnet_b0@32[:16]", "yolov4_tiny@32[:22]")


# ==== ONNX mutations ==================================================================================

_ATTR_NAMES = ["pads", "strides", "group", "axis", "kernel_shape", "dilations", "auto_pad", "num_outputs", "split",
               "perm", "alpha", "epsilon", "mode", "transB", "ceil_mode", "keepdims", "axes", "to", "value"]
# op types a node may become: standard ops of every family, ops TVM lacks, ops with subgraphs, nonsense.
# The ops that make tensors from a shape (ConstantOfShape, Expand, Tile, Range) only in command lines,
# which run under a memory limit (a mutated shape constant could ask for anything).
_OPS = ["Relu", "Conv", "ConvTranspose", "Add", "Mul", "Sub", "Div", "MatMul", "Gemm", "Reshape", "Concat", "Split",
        "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "Transpose", "Resize", "Pad",
        "Clip", "Sigmoid", "Flatten", "Slice", "Gather", "Unsqueeze", "Squeeze", "ReduceMean", "Identity", "Dropout",
        "Cast", "Sum", "Where", "LeakyRelu", "Celu", "If", "Loop", "Scan", "Shape", "Size", "NonZero", "TopK",
        "Einsum", "LayerNormalization", "LSTM", "GRU", "RNN", "OneHot", "ConvInteger", "QLinearConv", "FancyOp", ""]
_BIG_OPS = ["ConstantOfShape", "Expand", "Tile", "Range"]

_int64 = st.integers(*INT64)
_small_or_edge = st.one_of(st.integers(-3, 40), st.sampled_from([0, -1, 2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 62,
                                                                   INT64[0], INT64[1]]))
attr_values = st.one_of(
    _small_or_edge, _int64,
    st.floats(width=32), st.text(max_size=8), st.binary(max_size=8),
    st.lists(_small_or_edge, max_size=9),
    st.lists(st.floats(width=32), max_size=4),
    st.lists(st.text(max_size=4), min_size=1, max_size=3),
)
dims = st.one_of(_small_or_edge, st.text(alphabet="NHWbatch?_ ", max_size=5), st.none())
names = st.one_of(st.sampled_from(["x", "input", "w", "c", "r", "y", "z", "", "scales", "flat",
                                   "\x1b]0;t\x07", "\x1b[2J", "n\nerror: forged", "\u202ex"]),   # printed escaped
                  st.text(max_size=6))


def _pos():
    return st.integers(0, 2 ** 32)


_byte_mutations = st.one_of(
    st.tuples(st.just("flip"), st.lists(st.tuples(_pos(), st.integers(1, 255)), min_size=1, max_size=8)),
    st.tuples(st.just("truncate"), _pos()),
    st.tuples(st.just("delete"), _pos(), st.integers(1, 64)),
    st.tuples(st.just("insert"), _pos(), st.binary(min_size=1, max_size=32)),
    st.tuples(st.just("duplicate"), _pos(), st.integers(1, 256)),
)

_graph_mutations = st.one_of(
    st.tuples(st.just("drop_node"), _pos()),
    st.tuples(st.just("drop_initializer"), _pos()),
    st.tuples(st.just("drop_input"), _pos()),
    st.tuples(st.just("drop_output"), _pos()),
    st.tuples(st.just("drop_value_info"), _pos()),
    st.tuples(st.just("swap_nodes"), _pos(), _pos()),
    st.tuples(st.just("op_type"), _pos(), st.one_of(st.sampled_from(_OPS), st.text(max_size=6))),
    st.tuples(st.just("node_input"), _pos(), _pos(), names),          # rename one input (maybe dangling)
    st.tuples(st.just("node_output"), _pos(), _pos(), names),         # rename one output
    st.tuples(st.just("add_node_input"), _pos(), names),
    st.tuples(st.just("drop_node_input"), _pos(), _pos()),
    st.tuples(st.just("domain"), _pos(), st.sampled_from(["ai.onnx", "com.microsoft", "ai.onnx.ml", "x"])),
)

_attr_mutations = st.one_of(
    st.tuples(st.just("drop_attr"), _pos(), _pos()),
    st.tuples(st.just("clear_attrs"), _pos()),
    st.tuples(st.just("attr"), _pos(), _pos(), attr_values),          # an existing attribute: new value, any type
    st.tuples(st.just("add_attr"), _pos(), st.one_of(st.sampled_from(_ATTR_NAMES), st.text(max_size=5)), attr_values),
    st.tuples(st.just("attr_ints"), _pos(), _pos(), st.sampled_from([-1, 0, -2 ** 31, 2 ** 31, 2 ** 62, INT64[0]])),
)

_type_mutations = st.one_of(
    st.tuples(st.just("dim"), st.sampled_from(["input", "output", "value_info"]), _pos(), _pos(), dims),
    st.tuples(st.just("add_dim"), st.sampled_from(["input", "output", "value_info"]), _pos(), dims),
    st.tuples(st.just("clear_shape"), st.sampled_from(["input", "output", "value_info"]), _pos()),
    st.tuples(st.just("elem_type"), st.sampled_from(["input", "output", "value_info"]), _pos(),
              st.one_of(st.integers(0, 26), st.just(999))),
    st.tuples(st.just("init_dims"), _pos(), st.lists(_small_or_edge, max_size=5)),
    st.tuples(st.just("init_dtype"), _pos(), st.one_of(st.integers(0, 26), st.just(999))),
    st.tuples(st.just("init_raw"), _pos(), st.binary(max_size=64)),
    st.tuples(st.just("init_external"), _pos(),
              st.one_of(st.sampled_from(["../x.bin", "/etc/hostname", "/dev/zero", "weights.bin", "", ".", "..",
                                         "a/../../x.bin", "model.onnx"]), st.text(max_size=12)),
              st.lists(st.tuples(st.sampled_from(["offset", "length", "checksum", "basepath", "junk"]),
                                 st.one_of(st.sampled_from(["0", "-1", "4", "99999999999"]), st.text(max_size=5))),
                       max_size=3)),
)

_model_mutations = st.one_of(
    st.tuples(st.just("opset"), st.one_of(st.integers(-2, 30), st.sampled_from([9999, 2 ** 40]), _int64)),
    st.tuples(st.just("opset_domain"), st.one_of(st.sampled_from(["", "ai.onnx", "com.microsoft"]), st.text(max_size=5))),
    st.tuples(st.just("add_opset"), st.sampled_from(["", "ai.onnx", "com.example"]), st.integers(-1, 30)),
    st.tuples(st.just("drop_opsets")),
    st.tuples(st.just("ir_version"), st.one_of(st.integers(-1, 12), _int64)),
)

onnx_mutation = st.one_of(_byte_mutations, _graph_mutations, _attr_mutations, _type_mutations, _model_mutations)
# with the ops that make tensors from shapes (command lines only: they run under a memory limit)
onnx_mutation_cli = st.one_of(onnx_mutation, st.tuples(st.just("op_type"), _pos(), st.sampled_from(_BIG_OPS)))

shape_args = st.one_of(
    st.none(),
    st.dictionaries(st.one_of(st.sampled_from(["x", "input"]), st.text(max_size=4)),
                    st.lists(st.one_of(st.integers(1, 64), st.sampled_from([2 ** 20, 2 ** 40])), min_size=1, max_size=5),
                    min_size=1, max_size=2),
)


def onnx_cases(cli: bool = False):
    """(seed name, mutations, input shapes or None)."""
    return st.tuples(st.sampled_from(SEED_NAMES),
                     st.lists(onnx_mutation_cli if cli else onnx_mutation, min_size=1, max_size=4),
                     shape_args)


def _pick(seq, i):
    return seq[i % len(seq)] if len(seq) else None


def _value_infos(m, where: str):
    return {"input": m.graph.input, "output": m.graph.output, "value_info": m.graph.value_info}[where]


def _attr(name: str, value):
    """An AttributeProto `name` holding `value` (its type follows the value's), or None."""
    from onnx import AttributeProto, helper

    try:
        if isinstance(value, list) and not value:
            return helper.make_attribute(name, value, attr_type=AttributeProto.INTS)
        return helper.make_attribute(name, value)
    except (ValueError, TypeError, OverflowError):
        return None


def _apply_graph(m, mut) -> None:
    """One structural mutation of ModelProto `m`, in place (a no-op where it has nothing to act on)."""
    import onnx

    kind, *a = mut
    g = m.graph
    nodes = g.node
    if kind in ("drop_node", "drop_initializer", "drop_input", "drop_output", "drop_value_info"):
        seq = {"drop_node": g.node, "drop_initializer": g.initializer, "drop_input": g.input,
               "drop_output": g.output, "drop_value_info": g.value_info}[kind]
        if len(seq):
            del seq[a[0] % len(seq)]
    elif kind == "swap_nodes" and len(nodes) > 1:
        i, j = a[0] % len(nodes), a[1] % len(nodes)
        ni, nj = onnx.NodeProto(), onnx.NodeProto()
        ni.CopyFrom(nodes[i])
        nj.CopyFrom(nodes[j])
        nodes[i].CopyFrom(nj)
        nodes[j].CopyFrom(ni)
    elif kind == "op_type" and len(nodes):
        nodes[a[0] % len(nodes)].op_type = a[1]
    elif kind in ("node_input", "node_output") and len(nodes):
        n = nodes[a[0] % len(nodes)]
        seq = n.input if kind == "node_input" else n.output
        if len(seq):
            seq[a[1] % len(seq)] = a[2]
    elif kind == "add_node_input" and len(nodes):
        nodes[a[0] % len(nodes)].input.append(a[1])
    elif kind == "drop_node_input" and len(nodes):
        n = nodes[a[0] % len(nodes)]
        if len(n.input):
            del n.input[a[1] % len(n.input)]
    elif kind == "domain" and len(nodes):
        nodes[a[0] % len(nodes)].domain = a[1]
    elif kind == "drop_attr" and len(nodes):
        n = nodes[a[0] % len(nodes)]
        if len(n.attribute):
            del n.attribute[a[1] % len(n.attribute)]
    elif kind == "clear_attrs" and len(nodes):
        del nodes[a[0] % len(nodes)].attribute[:]
    elif kind == "attr" and len(nodes):
        n = nodes[a[0] % len(nodes)]
        if len(n.attribute):
            k = a[1] % len(n.attribute)
            new = _attr(n.attribute[k].name, a[2])
            if new is not None:
                n.attribute[k].CopyFrom(new)
    elif kind == "add_attr" and len(nodes):
        new = _attr(a[1], a[2]) if a[1] else None
        if new is not None:
            n = nodes[a[0] % len(nodes)]
            for k in range(len(n.attribute)):
                if n.attribute[k].name == a[1]:
                    del n.attribute[k]
                    break
            n.attribute.append(new)
    elif kind == "attr_ints" and len(nodes):
        # one element of an ints attribute (pads, strides, kernel_shape, perm, ...) becomes an edge value
        n = nodes[a[0] % len(nodes)]
        lists = [at for at in n.attribute if len(at.ints)]
        if lists:
            at = lists[a[1] % len(lists)]
            at.ints[a[1] % len(at.ints)] = a[2]
        elif len(n.attribute) and n.attribute[0].type == onnx.AttributeProto.INT:
            n.attribute[0].i = a[2]
    elif kind == "dim":
        vi = _pick(_value_infos(m, a[0]), a[1])
        if vi is not None and vi.type.HasField("tensor_type") and len(vi.type.tensor_type.shape.dim):
            dd = vi.type.tensor_type.shape.dim
            k = a[2] % len(dd)
            if a[3] is None:
                del dd[k]
            elif isinstance(a[3], int):
                dd[k].dim_value = a[3]
            else:
                dd[k].dim_param = a[3]
    elif kind == "add_dim":
        vi = _pick(_value_infos(m, a[0]), a[1])
        if vi is not None and vi.type.HasField("tensor_type"):
            d = vi.type.tensor_type.shape.dim.add()
            if isinstance(a[2], int):
                d.dim_value = a[2]
            elif a[2] is not None:
                d.dim_param = a[2]
    elif kind == "clear_shape":
        vi = _pick(_value_infos(m, a[0]), a[1])
        if vi is not None and vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    elif kind == "elem_type":
        vi = _pick(_value_infos(m, a[0]), a[1])
        if vi is not None:
            vi.type.tensor_type.elem_type = a[2]
    elif kind == "init_dims" and len(g.initializer):
        t = g.initializer[a[0] % len(g.initializer)]
        del t.dims[:]
        t.dims.extend(a[1])
    elif kind == "init_dtype" and len(g.initializer):
        g.initializer[a[0] % len(g.initializer)].data_type = a[1]
    elif kind == "init_raw" and len(g.initializer):
        t = g.initializer[a[0] % len(g.initializer)]
        for f in ("float_data", "int32_data", "int64_data", "double_data"):
            t.ClearField(f)
        t.raw_data = a[1]
    elif kind == "init_external" and len(g.initializer):
        t = g.initializer[a[0] % len(g.initializer)]
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        for k, v in [("location", a[1]), *a[2]]:
            e = t.external_data.add()
            e.key, e.value = k, v
    elif kind == "opset":
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = a[0]
    elif kind == "opset_domain" and len(m.opset_import):
        m.opset_import[0].domain = a[0]
    elif kind == "add_opset":
        o = m.opset_import.add()
        o.domain, o.version = a[0], a[1]
    elif kind == "drop_opsets":
        del m.opset_import[:]
    elif kind == "ir_version":
        m.ir_version = a[0]


_BYTE_KINDS = {"flip", "truncate", "delete", "insert", "duplicate"}


def _apply_bytes(data: bytes, mut) -> bytes:
    kind, *a = mut
    if not data:
        return data
    if kind == "flip":
        b = bytearray(data)
        for pos, x in a[0]:
            b[pos % len(b)] ^= x
        return bytes(b)
    p = a[0] % (len(data) + 1)
    if kind == "truncate":
        return data[:p]
    if kind == "delete":
        return data[:p] + data[p + a[1]:]
    if kind == "insert":
        return data[:p] + a[1] + data[p:]
    if kind == "duplicate":
        return data[:p] + data[p:p + a[1]] + data[p:]
    return data


def apply_onnx_mutations(seed: bytes, mutations) -> bytes:
    """The seed model's bytes after `mutations`, in order. A structural mutation after a byte one
    acts on the bytes re-parsed, and is skipped where they no longer parse."""
    import onnx

    model, data = None, seed
    for mut in mutations:
        if mut[0] in _BYTE_KINDS:
            if model is not None:
                data, model = model.SerializeToString(), None
            data = _apply_bytes(data, mut)
            continue
        if model is None:
            try:
                model = onnx.ModelProto()
                model.ParseFromString(data)
            except Exception:  # noqa: BLE001 - bytes that no longer parse: structure mutations do not apply
                model = None
                continue
        try:
            _apply_graph(model, mut)
        except (ValueError, TypeError, OverflowError, IndexError):  # protobuf refuses the value: skip it
            pass
    if model is not None:
        try:
            data = model.SerializeToString()
        except Exception:  # noqa: BLE001 - e.g. a string field that is not valid UTF-8
            pass
    return data


def write_onnx_case(case, folder: Path) -> tuple[Path, dict | None]:
    """Write the mutated model of `case` (from onnx_cases) as folder/model.onnx; (path, shapes)."""
    seed, muts, shapes = case
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "model.onnx"
    p.write_bytes(apply_onnx_mutations(onnx_seeds()[seed], muts))
    return p, shapes


def shape_argv(shapes: dict | None) -> list[str]:
    return [x for name, d in (shapes or {}).items() for x in ("--input-shape", f"{name}={','.join(map(str, d))}")]


# ==== the in-process properties =========================================================================

@contextlib.contextmanager
def private_env(cache: Path, **extra):
    """FUSELENS_CACHE_DIR = cache (and FUSELENS_MAX_TENSOR_BYTES, `extra`), restored afterwards;
    the loader's in-process memo cleared before and after."""
    from engine.model import loader

    want = {"FUSELENS_CACHE_DIR": str(cache), "FUSELENS_MAX_TENSOR_BYTES": str(MAX_TENSOR_BYTES), **extra}
    old = {k: os.environ.get(k) for k in want}
    os.environ.update(want)
    loader.clear_memo()
    try:
        yield
    finally:
        loader.clear_memo()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _user_error(e: Exception, where: str) -> None:
    if not str(e).strip():
        raise FuzzFailure("empty message", f"{where}: {type(e).__name__} with no message")


@contextlib.contextmanager
def captured_output():
    """What the code inside prints, as a command line's terminal would show it: fd 1 and fd 2 (native
    code's prints included) and the Python warnings that print by default. Yields a dict filled on exit."""
    import tempfile
    import warnings

    out: dict[str, str] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as f1, tempfile.TemporaryFile() as f2, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.dup2(f1.fileno(), 1)
        os.dup2(f2.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            for key, f in (("stdout", f1), ("stderr", f2)):
                f.seek(0)
                out[key] = f.read().decode("utf-8", "replace")
            quiet = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)  # hidden by default
            out["warnings"] = "\n".join(f"{w.category.__name__}: {w.message}" for w in caught
                                        if not issubclass(w.category, quiet))


def check_loader(path: Path, shapes: dict | None) -> str:
    """The `onnx` property: load, check sizes and plan greedily as `plan` does. 'ok' or 'error' (a
    FuseLensError); anything else raises FuzzFailure: another exception, or anything printed on the
    way (a line on stdout or stderr, a warning) that a command line would show besides its own."""
    from engine.devices import hardware
    from engine.model import loader, onnx_input
    from engine.planner import make_plan
    from engine.util.errors import FuseLensError

    failure = None
    with captured_output() as out:
        try:
            g = loader.load(str(path), shapes)
            onnx_input.check_graph_sizes(g, str(path))
            make_plan(g, "greedy", Setup(hardware.get("t4")))
            outcome = "ok"
        except FuseLensError as e:
            outcome = "error"
            if not str(e).strip():
                failure = FuzzFailure("empty message", f"loader: {type(e).__name__} with no message")
        except Exception as e:  # noqa: BLE001 - the property: nothing but a FuseLensError
            failure = FuzzFailure("exception", f"{type(e).__name__}: {str(e)[:500]}")
            failure.__cause__ = e
    if failure is not None:
        raise failure
    for key in ("stderr", "stdout", "warnings"):
        if out[key].strip():
            raise FuzzFailure(f"printed on {key}", out[key][-2000:])
    return outcome


# ==== plan JSON ===========================================================================================

@lru_cache(maxsize=None)
def plan_seeds(cache: str) -> dict:
    """name -> (graph, plan dict): plans of the tiny model (greedy, none, dp) and of the mobilenetv2
    prefix (greedy), made in the cache folder `cache` (a fuzzed plan of one model meets the other's
    graph: ids of another model)."""
    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import make_plan, plan_json

    hw = hardware.get("t4")
    out = {}
    Path(cache).mkdir(parents=True, exist_ok=True)
    with private_env(Path(cache)):
        for model, strategies in (("tiny", ("greedy", "none", "dp")), ("mobilenetv2@32[:25]", ("greedy",))):
            f = Path(cache) / f"{model.replace('@', '_').replace('[', '_').replace(']', '_').replace(':', '_')}.onnx"
            f.write_bytes(onnx_seeds()[model])
            g = loader.load(str(f))
            for s in strategies:
                out[f"{model}/{s}"] = (g, json.loads(json.dumps(plan_json.to_dict(make_plan(g, s, Setup(hw)), g, hw),
                                                                default=list)))
    return out


PLAN_SEEDS = ("tiny/greedy", "tiny/none", "tiny/dp", "mobilenetv2@32[:25]/greedy")

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), st.text(max_size=10),
              st.sampled_from(["n0", "n1", "n2", "n9999", "fuselens-plan/1", "greedy", "t4", ""])),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(
        st.one_of(st.sampled_from(["id", "nodes", "name", "sha256", "estimated_us", "groups", "schema"]),
                  st.text(max_size=5)), kids, max_size=4)),
    max_leaves=12)

_plan_mutations = st.one_of(
    st.tuples(st.just("set"), _pos(), json_values),                       # any JSON value in any field
    st.tuples(st.just("drop"), _pos()),                                   # a dropped key or list item
    st.tuples(st.just("graft"), st.sampled_from(PLAN_SEEDS),
              st.sampled_from(["model", "nodes", "groups", "model.sha256", "hardware", "strategy"])),
    st.tuples(st.just("dup_node"), _pos(), _pos()),                       # a node in two groups
    st.tuples(st.just("move_node"), _pos(), _pos()),                      # a node moved to another group
    st.tuples(st.just("lose_node"), _pos()),                              # a node in no group
    st.tuples(st.just("merge_groups"), _pos(), _pos()),                   # maybe not convex
    st.tuples(st.just("split_group"), _pos()),
    st.tuples(st.just("nest"), _pos(), st.one_of(st.integers(1, 60), st.sampled_from([1000, 5000, 200000]))),
    st.tuples(st.just("number"), _pos(), st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "-0", "1" * 5000,
                                                          "-" + "9" * 4400, "0." + "0" * 5000 + "1", "1e-999",
                                                          "1" + "0" * 400, "-" + "9" * 320])),
    st.tuples(st.just("big_string"), _pos(), st.sampled_from([10 ** 4, 10 ** 6, 8 * 10 ** 6])),  # a 1 MB node id
    st.tuples(st.just("text_flip"), st.lists(st.tuples(_pos(), st.integers(1, 255)), min_size=1, max_size=4)),
    st.tuples(st.just("text_truncate"), _pos()),
    st.tuples(st.just("text_insert"), _pos(), st.sampled_from([b"\xff\xfe", b"\xef\xbb\xbf", b"\x00", b"{", b"]",
                                                               b",", b'"', b"\\u", b"\xed\xa0\x80", b"//"])),
)


def plan_cases():
    """(seed plan, the graph to load it against: its own or the other model's, mutations)."""
    return st.tuples(st.sampled_from(PLAN_SEEDS), st.sampled_from(["own", "own", "own", "other"]),
                     st.lists(_plan_mutations, min_size=1, max_size=4))


_NEST = "@@fuzz-nest-{}-{}@@"
_NUM = "@@fuzz-number-{}@@"


def _paths(o, pre=()):
    yield pre
    if isinstance(o, dict):
        for k, v in list(o.items()):
            yield from _paths(v, pre + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o[:6]):
            yield from _paths(v, pre + (i,))


def _at(o, path):
    for k in path:
        o = o[k]
    return o


def _set(d, path, value):
    if not path:
        return value
    _at(d, path[:-1])[path[-1]] = value
    return d


def apply_plan_mutations(seed: dict, plans: dict, mutations) -> bytes:
    """The plan file's bytes: `seed` (a plan dict) after `mutations`; `plans` (name -> plan dict) are
    the plans a "graft" takes a field from."""
    import copy

    d = copy.deepcopy(seed)
    text_muts, subs = [], {}
    for mut in mutations:
        kind, *a = mut
        if kind.startswith("text_"):
            text_muts.append(mut)
            continue
        paths = list(_paths(d))
        try:
            groups = d.get("groups") if isinstance(d, dict) else None
            glists = [g["nodes"] for g in groups if isinstance(g, dict) and isinstance(g.get("nodes"), list)] \
                if isinstance(groups, list) else []
            if kind == "set":
                d = _set(d, paths[a[0] % len(paths)], a[1])
            elif kind == "drop":
                p = paths[a[0] % len(paths)]
                if p:
                    parent = _at(d, p[:-1])
                    del parent[p[-1]]
            elif kind == "graft":
                src = plans[a[0]]
                keys = a[1].split(".")
                if isinstance(d, dict) and isinstance(src, dict):
                    v = _at(src, keys)
                    d = _set(d, tuple(keys), copy.deepcopy(v))
            elif kind in ("dup_node", "move_node") and len(glists) > 1:
                g1, g2 = glists[a[0] % len(glists)], glists[a[1] % len(glists)]
                if g1:
                    n = g1[a[1] % len(g1)]
                    if kind == "move_node":
                        g1.remove(n)
                    g2.append(n)
            elif kind == "lose_node" and glists:
                g1 = glists[a[0] % len(glists)]
                if g1:
                    g1.pop(a[0] % len(g1))
            elif kind == "merge_groups" and len(glists) > 1:
                i, j = a[0] % len(groups), a[1] % len(groups)
                if i != j and isinstance(groups[i], dict) and isinstance(groups[j], dict) \
                        and isinstance(groups[i].get("nodes"), list) and isinstance(groups[j].get("nodes"), list):
                    groups[i]["nodes"] += groups[j]["nodes"]
                    del groups[j]
            elif kind == "split_group" and glists:
                g1 = glists[a[0] % len(glists)]
                if len(g1) > 1:
                    half = g1[len(g1) // 2:]
                    del g1[len(g1) // 2:]
                    groups.append({"id": len(groups), "nodes": half, "estimated_us": 0})
            elif kind == "nest":
                key = _NEST.format(len(subs), a[1])
                subs[key] = ("[" * a[1]) + "1" + ("]" * a[1])
                d = _set(d, paths[a[0] % len(paths)], key)
            elif kind == "big_string":
                d = _set(d, paths[a[0] % len(paths)], "n" + "7" * a[1])
            elif kind == "number":
                key = _NUM.format(len(subs))
                subs[key] = a[1]
                d = _set(d, paths[a[0] % len(paths)], key)
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
    text = json.dumps(d, indent=1)
    for key, raw in subs.items():
        text = text.replace(json.dumps(key), raw)
    data = text.encode("utf-8", "surrogatepass")
    for kind, *a in text_muts:
        if kind == "text_flip":
            b = bytearray(data)
            for pos, x in a[0]:
                if b:
                    b[pos % len(b)] ^= x
            data = bytes(b)
        elif kind == "text_truncate":
            data = data[:a[0] % (len(data) + 1)]
        elif kind == "text_insert":
            p = a[0] % (len(data) + 1)
            data = data[:p] + a[1] + data[p:]
    return data


def check_plan(data: bytes, graph, folder: Path) -> str:
    """The `plan_json` property: plan_json.load of a file holding `data`, against `graph`: 'ok' (a
    Plan, whose groups are then a legal partition of the graph) or 'error' (a PlanError)."""
    from engine.planner import plan_json
    from engine.planner.validate import check_convex_acyclic, check_partition
    from engine.util.errors import FuseLensError, PlanError

    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "plan.json"
    f.write_bytes(data)
    try:
        p = plan_json.load(f, graph)
    except PlanError as e:
        _user_error(e, "plan_json.load")
        return "error"
    except FuseLensError as e:
        raise FuzzFailure("exception", f"{type(e).__name__} (not a PlanError): {e}") from e
    except Exception as e:  # noqa: BLE001
        raise FuzzFailure("exception", f"{type(e).__name__}: {str(e)[:500]}") from e
    try:
        check_partition(graph, p.groups)
        check_convex_acyclic(graph, p.groups)
    except Exception as e:  # noqa: BLE001
        raise FuzzFailure("illegal plan loaded", f"{type(e).__name__}: {e}") from e
    return "ok"


# ==== command lines =====================================================================================

def limit_memory(limit: int = MEM_LIMIT):
    """A preexec_fn for a fuzzed command line: its address space capped at `limit` bytes."""
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def cli_env(cache: Path, **extra) -> dict:
    """The environment of a fuzzed command line: no display (the app exits 3), a private cache."""
    from tests.support.cli import cli_env as plain

    return plain(cache, **{"FUSELENS_MAX_TENSOR_BYTES": str(MAX_TENSOR_BYTES), **extra})


# the standard streams a caller may close (cron jobs, services): the shell's redirections
CLOSE = {"stdin": "<&-", "stdout": ">&-", "stderr": "2>&-", "all": "<&- >&- 2>&-"}


def run_cli(argv: list[str], cache: Path, *, allow=(0, 2), timeout: float = 300, cwd: Path | None = None,
            env: dict | None = None, mem_limit: int = MEM_LIMIT, close: str | None = None) -> str:
    """Run `main.py argv` and check the property; returns 'ok' (exit 0), 'error' (2) or the exit code.
    Raises FuzzFailure otherwise. No display (the app exits 3), a private cache, a memory limit;
    `env`: more variables; `close`: a key of CLOSE, the streams the shell closes before main.py starts
    (with stderr closed only the exit code is checked)."""
    cmd = [sys.executable, str(MAIN), *argv]
    if close:
        cmd = ["sh", "-c", f'exec "$@" {CLOSE[close]}', "sh", *cmd]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout,
                           env=cli_env(cache, **(env or {})), cwd=str(cwd or ROOT),
                           stdin=None if close in ("stdin", "all") else subprocess.DEVNULL,
                           preexec_fn=limit_memory(mem_limit))
    except subprocess.TimeoutExpired:
        raise FuzzFailure("hang", f"no exit within {timeout:g} s") from None
    if close in ("stderr", "all"):   # nothing to read the line from: the code alone
        if r.returncode < 0 or r.returncode not in allow:
            raise FuzzFailure(f"exit {r.returncode}", f"with {close} closed")
        return {0: "ok", 2: "error"}.get(r.returncode, str(r.returncode))
    out = check_exit(r.returncode, r.stderr, allow)
    raw = [c for c in RAW_CONTROLS if c in r.stdout or c in r.stderr]
    if raw and "--debug" not in argv:   # --debug keeps TVM's own output as it is
        raise FuzzFailure("terminal", f"raw control characters {raw} printed: {(r.stdout + r.stderr)[-800:]!r}")
    return out


def check_exit(returncode: int, stderr: bytes, allow) -> str:
    """The command-line property on one finished command, from its exit code and what it printed on
    stderr; returns 'ok' (exit 0), 'error' (2) or the exit code."""
    err = stderr.decode("utf-8", "replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if returncode < 0:
        raise FuzzFailure("signal", f"killed by signal {-returncode}; stderr: {err[-1500:]}")
    if "Traceback" in err:
        raise FuzzFailure("traceback", err[-3000:])
    if returncode not in allow:
        raise FuzzFailure(f"exit {returncode}", err[-1500:])
    if returncode == 2:
        # every exit 2, argparse's usage errors included: exactly one "error: ..." line, no usage block
        if len(lines) != 1:
            raise FuzzFailure("stderr", f"exit 2 with {len(lines)} lines on stderr (want one): {err[-1500:]}")
        if not lines[0].startswith("error: "):
            raise FuzzFailure("stderr", f"exit 2, but the line is not an 'error: ...' line: {lines[0][:300]}")
    return {0: "ok", 2: "error"}.get(returncode, str(returncode))


def check_onnx_cli(path: Path, shapes: dict | None, cache: Path) -> list[str]:
    """The `onnx_cli` property: inspect and plan --strategy greedy on the file."""
    extra = shape_argv(shapes)
    return [run_cli(["inspect", str(path), *extra], cache),
            run_cli(["plan", str(path), "--strategy", "greedy", *extra], cache)]


# ---- random arguments -----------------------------------------------------------------------------------
# Placeholders, filled in by fill_argv for each run's own folder:
#   {TINY} the tiny model   {DIR} a folder   {RO} a read-only file   {FIFO} a named pipe
#   {LINK} a symlink to the tiny model       {DANGLING} a symlink to nothing
#   {NULL_LINK} a symlink to /dev/null

# Text a terminal acts on (issue 31): printed, it must come out escaped (run_cli checks)
HOSTILE_TEXT = ["\x1b]0;pwned\x07", "\x1b[2J", "a\x07b", "\u202etxt", "x\udcff", "x\nerror: forged", "\x1b[31mred",
                "\x9b2J", "\u2066iso\u2069"]
RAW_CONTROLS = (b"\x1b", b"\x07", b"\x00", b"\xe2\x80\xae", b"\xc2\x9b", b"\xe2\x81\xa6")

# Text a shell could pass: any characters but NUL, with the surrogates Python maps undecodable bytes to.
_argv_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00") | \
    st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00, 7)])
argv_text = st.text(_argv_chars, max_size=40)

_SPECIAL_PATHS = ["{TINY}", "{DIR}", "{RO}", "{FIFO}", "{LINK}", "{DANGLING}", "", " ", ".", "..", "/", "-", "--",
                  "~", "~/", "~nosuchuser-fuzz/x.onnx", "/dev/null", "/dev/zero", "/dev/stdin", "/proc/self/status",
                  "/etc", "{DIR}/missing/x.onnx", "{TINY}/x", "{DIR}/" + "a" * 300 + ".onnx",
                  "{DIR}/" + "b" * 250, "zoo:mobilenetv2@32", "zoo:nope", "zoo:", "zoo:mobilenetv2@",
                  "zoo:mobilenetv2@-32", "zoo:mobilenetv2@1e3", "zoo:yolov4_tiny@100", "zoo:mobilenetv2@0x20",
                  "zoo:mobilenetv2@ 64", "zoo:mobilenetv2@" + "9" * 5000, "zoo:@32", "zoo:mobilenetv2@32@32",
                  *(f"{{DIR}}/{h}.onnx" for h in HOSTILE_TEXT), *(f"zoo:{h}" for h in HOSTILE_TEXT)]
paths = st.one_of(
    st.sampled_from(_SPECIAL_PATHS), st.sampled_from(_SPECIAL_PATHS),
    argv_text,
    st.builds(lambda pre, t: pre + t, st.sampled_from(["{DIR}/", "~", "zoo:", "zoo:mobilenetv2@", "/", "./", "../"]),
              argv_text),
)
out_paths = st.one_of(
    # never a real device as an output: written over by os.replace, run as root, it would be gone
    st.sampled_from(["{DIR}/out.json", "{DIR}/out.onnx", "{DIR}", "{DIR}/", "{RO}", "{DIR}/missing/out.json",
                     "{DIR}/" + "c" * 255, "{DIR}/" + "d" * 245, "{TINY}/x", "{NULL_LINK}", "{FIFO}",
                     "/", "", "~nosuchuser-fuzz/out", "/proc/version", "{DANGLING}"]),
    st.builds(lambda t: "{DIR}/" + t.replace("/", "_"), argv_text),
)
ints = st.one_of(st.integers(-5, 40), st.sampled_from([0, -1, 31, 32, 33, 64, 96, 100, 4096, 4097, 4128, 100000,
                                                       100001, 2 ** 31, 2 ** 63, 10 ** 30]),
                 st.integers(-2 ** 70, 2 ** 70)).map(str)
numbers = st.one_of(ints, st.sampled_from(["nan", "inf", "-inf", "0.0", "1e-9", "1e309", "0x10", "1_000", " 5 ",
                                           "١٢", "", "ten"]), argv_text)
_hosts = st.one_of(st.sampled_from(["127.0.0.1", "localhost", "0.0.0.0", "[::1]", "::1", "", "256.1.1.1"]),
                   st.text(alphabet="abc.-_:[]", max_size=8))
_ports = st.one_of(st.sampled_from(["1", "0", "65535", "65536", "99999999999999999999", "-1", ""]),
                   st.integers(0, 70000).map(str))
targets = st.one_of(
    st.sampled_from(["cpu", "llvm", "host", "cuda", "cuda:0", "cuda:7", "cuda:sm_75", "cuda:sm_", "cuda:-1", "gpu",
                     "rpc://", "rpc://:9190", "opencl", "", " cpu ", "CPU", "cuda:" + "9" * 30,
                     *(f"cpu{h}" for h in HOSTILE_TEXT), "rpc://\x1b[2J:9190/k\u202e"]),
    st.builds(lambda h, p, k, t: f"rpc://{h}:{p}{k}{t}", _hosts, _ports,
              st.one_of(st.just(""), st.builds(lambda k: "/" + k, st.text(alphabet="ab/?=", max_size=5))),
              st.one_of(st.just(""), st.builds(lambda t: "?target=" + t, st.sampled_from(["cuda", "llvm", "x", ""])))),
    argv_text,
)
hardwares = st.one_of(st.sampled_from(["t4", "a100", "h200", "rpi4b", "host", "host-calibrated", "pi4", "T4", "",
                                       "cpu", "host calibrated"]), argv_text)
shapes_text = st.one_of(
    st.sampled_from(["x=1,3,8,8", "x=2,3,8,8", "x=1,3,100000,100000", "x=1,3,8", "x=0,3,8,8", "x=-1", "x=", "=1",
                     "x", "y=1,3,8,8", "x=1x3x8x8", "x=1,,3,8,8", "x=1.5,3,8,8", "x=" + "9" * 5000,
                     "x=1,3,8,8=2", "x=١,3,8,8"]),
    st.builds(lambda n, d: f"{n}={','.join(map(str, d))}", st.sampled_from(["x", "input", "y"]),
              st.lists(st.integers(-2, 2 ** 40), max_size=5)),
    argv_text,
)
strategies_text = st.one_of(st.sampled_from(["none", "greedy", "dp", "tvm", "hybrid", "optimal", "none,foo", "",
                                             ",", "none,none", " none ", "NONE", "none,,dp"]), argv_text)
junk = st.lists(st.one_of(argv_text, st.sampled_from(["--help", "-h", "--debug", "--", "-", "--force", "--json",
                                                      "--out", "--strategy", "--target", "--input-shape",
                                                      "--repeat", "--nope", "-x"])), max_size=3)


def _opt(flag, values):
    """[] or [flag, value]."""
    return st.one_of(st.just([]), values.map(lambda v: [flag, v]))


def _flat(x) -> list[str]:
    return [y for p in x for y in _flat(p)] if isinstance(x, list) else [x]


def _cat(*parts):
    """One argv list from strategies of strings and (nested) lists of strings."""
    return st.tuples(*parts).map(lambda ps: _flat(list(ps)))


def cli_zoo():
    return st.one_of(
        _cat(st.just(["zoo", "list"]), st.lists(st.one_of(argv_text, st.sampled_from(["--all", "-v", "x"])),
                                                 min_size=1, max_size=2)),   # `zoo list` itself: built every model
        _cat(st.just(["zoo", "export"]),
             st.one_of(st.sampled_from(["mobilenetv2", "yolov4_tiny", "nope", "", "zoo:mobilenetv2", "MobileNetV2",
                                        "vgg16"]), argv_text),
             out_paths, _opt("--resolution", numbers), junk),
        _cat(st.just(["zoo"]), junk),
    ).filter(_no_big_export)


def _no_big_export(argv):
    # vgg16 and resnet50 exported at a valid resolution write 100-550 MB: only with a resolution that fails
    if argv[:3] in (["zoo", "export", "vgg16"], ["zoo", "export", "resnet50"]):
        return "--resolution" in argv and argv[argv.index("--resolution") + 1:][:1] in (["0"], ["-1"], ["ten"])
    return True


def cli_inspect():
    return _cat(st.just(["inspect"]), paths, st.lists(_opt("--input-shape", shapes_text), max_size=2),
                st.one_of(st.just([]), st.just(["--json"])), junk)


def cli_plan():
    return _cat(st.just(["plan"]), st.one_of(st.just("{TINY}"), paths),
                _opt("--strategy", st.one_of(st.sampled_from(["greedy", "dp", "none", "tvm", "hybrid", "optimal"]),
                                             argv_text)),
                _opt("--hardware", hardwares), _opt("--out", out_paths), _opt("--input-shape", shapes_text),
                st.one_of(st.just([]), st.just(["--explain"])),
                _opt("--cost", st.one_of(st.just("model"), argv_text)),  # measured times kernels: not here
                _opt("--target", targets))


_STRATS = ("none", "tvm", "greedy", "dp", "hybrid", "optimal")


def cli_bench():
    """bench on the tiny model (a valid line builds and times it: a few seconds), strategy none."""
    return _cat(st.just(["bench", "{TINY}"]),
                _opt("--strategies", strategies_text).map(lambda o: o or ["--strategies", "none"]),
                st.one_of(st.just(["--repeat", "1"]), _opt("--repeat", numbers)),
                _opt("--target", targets), _opt("--hardware", hardwares), _opt("--json", out_paths),
                _opt("--input-shape", shapes_text), st.one_of(st.just([]), st.just(["--force"])),
                st.one_of(st.just([]), st.just(["--unscheduled"]))).filter(_cheap_bench)


def _last(argv, flag, default=None):
    return argv[len(argv) - 1 - argv[::-1].index(flag) + 1] if flag in argv[:-1] else default


def _cheap_bench(argv):
    """A valid bench of anything but `none`, or of more than 3 repeats, takes too long here: keep
    such lines only where another argument fails."""
    s = _last(argv, "--strategies", "none")
    names = [x.strip() for x in s.split(",")]
    valid = bool(s.strip()) and all(n in _STRATS for n in names) and len(set(names)) == len(names)
    if valid and names != ["none"]:
        return False
    try:
        return int(_last(argv, "--repeat", "10")) <= 3
    except ValueError:
        return True


# Lines of table, tune and calibrate end with an argument that fails (validation checks every argument
# before any work, so the random ones before it are all checked): a valid line would run for minutes.
_BAD_PARSE_TARGET = st.sampled_from(["gpu", "tpu", "", "rpc://", "cuda:x", "rpc://h:1:2", "opencl"])


def cli_table():
    models = st.one_of(st.sampled_from(["", ",", "vgg16,nosuch", "yolov4_tiny@100", "mobilenetv2@0", "zoo:vgg16",
                                        "vgg16,,dp", "mobilenetv2@32", "mobilenetv2@ 32", "vgg16,vgg16"]), argv_text)
    return _cat(st.just(["table"]), _opt("--models", models), _opt("--repeat", numbers),
                _opt("--hardware", hardwares), _opt("--out", out_paths),
                _opt("--cost", st.sampled_from(["model", "measured", "fast"])), st.one_of(st.just([]), st.just(["--force"])),
                st.just("--target"), st.one_of(_BAD_PARSE_TARGET, st.sampled_from(["cuda:7", "rpc://127.0.0.1:1",
                                                                                    "rpc://127.0.0.1:1/key"])))


def cli_tune():
    return _cat(st.just(["tune"]), st.one_of(st.just("{TINY}"), paths), _opt("--trials", numbers),
                _opt("--time-limit", numbers), _opt("--strategy", st.sampled_from(["greedy", "dp", "x"])),
                _opt("--hardware", hardwares), st.one_of(st.just([]), st.just(["--clear"])),
                _opt("--input-shape", shapes_text), st.just("--target"), _BAD_PARSE_TARGET)


def cli_misc():
    return st.one_of(
        _cat(st.just(["devices"]), junk),
        _cat(st.just(["cache", "clear"]), _opt("--what", st.one_of(
            st.sampled_from(["models", "results", "kernels", "tuning", "layout", "logs", "zoo", "all", "ALL", "",
                             "models,results", "../", "*"]), argv_text)), junk),
        _cat(st.just(["cache"]), junk),
        _cat(st.just(["calibrate"]), st.lists(paths, max_size=2), st.just("{DIR}/missing/x.onnx")),
        _cat(st.lists(st.sampled_from(["zoo", "inspect", "plan", "bench", "tune", "calibrate", "devices", "cache",
                                       "gui", "--debug", "--help", "-h", "--version", "-", "--"]),
                      min_size=0, max_size=2), junk).filter(_not_expensive_raw),
    )


def _not_expensive_raw(argv):
    """A raw line (command words and junk) that runs no real work: no `zoo list` (it builds every
    model), and no tune or calibrate that could get a model (they would run for minutes)."""
    words = [a for a in argv if a != "--debug"]
    return words[:2] != ["zoo", "list"] and not (words[:1] in (["tune"], ["calibrate"]) and len(words) > 1
                                                  and not words[1].startswith("-"))


# Cache files the user or an older FuseLens may have left, damaged: a line may start with
# "@cache:NAME=CONTENT" items, written into the private cache folder before the command runs;
# {HOST_FACTS} in CONTENT stands for this machine's hardware.cpu_facts() (host.json is only read when
# its facts match the machine's).
_HW_FIELDS = ["name", "title", "kind", "peak_flops", "bandwidth", "units", "onchip_bytes", "launch_us",
              "compute_efficiency", "bandwidth_efficiency", "kinds", "source"]
_T4 = {"name": "host", "title": "t", "kind": "cpu", "peak_flops": 1e12, "bandwidth": 1e10, "units": 2,
       "onchip_bytes": 1 << 20, "launch_us": 5.0, "compute_efficiency": 0.3, "bandwidth_efficiency": 0.8,
       "kinds": None, "source": ""}
_edge_numbers = st.sampled_from([0, -1, 0.0, -1e9, 1e308, 2 ** 70, "1e12", None, True, [], {}, float("nan"),
                                 5e-324, 1e300, -5, float("inf"), 1e-300])   # damaged numbers (issue 31)
_rpc_lists = st.one_of(st.lists(st.one_of(targets, json_values), max_size=3), json_values)


def cli_cache_files():
    devices_json = st.one_of(st.builds(lambda v: json.dumps({"rpc": v}), _rpc_lists),
                             json_values.map(json.dumps), argv_text)
    hardware = st.builds(lambda over: {**_T4, **over},
                         st.dictionaries(st.sampled_from(_HW_FIELDS), st.one_of(_edge_numbers, json_values), max_size=3))
    host_json = st.one_of(
        st.builds(lambda hw: '{"facts": {HOST_FACTS}, "hardware": ' + json.dumps(hw) + "}", hardware),
        st.builds(lambda v: '{"facts": {HOST_FACTS}, "hardware": ' + json.dumps(v) + "}", json_values),
        json_values.map(json.dumps))
    return st.one_of(
        _cat(devices_json.map(lambda c: "@cache:devices.json=" + c), st.just(["devices"])),
        _cat(host_json.map(lambda c: "@cache:host.json=" + c),
             st.sampled_from([["plan", "{TINY}", "--hardware", "host", "--strategy", "greedy"],
                              ["plan", "{TINY}", "--hardware", "host", "--strategy", "dp", "--explain"]])),
    )


CLI_COMMANDS = {"zoo": cli_zoo, "inspect": cli_inspect, "plan": cli_plan, "bench": cli_bench, "table": cli_table,
                "tune": cli_tune, "misc": cli_misc, "cache_files": cli_cache_files}


def make_fixtures(folder: Path) -> dict[str, str]:
    """The files the placeholders name, in `folder`; made again as they should be before each line
    (a fuzzed --out may have written over one)."""
    import shutil
    import stat

    from tests.support.models import tiny_onnx

    folder.mkdir(parents=True, exist_ok=True)
    model = tiny_onnx().SerializeToString()
    tiny, d, ro, fifo = folder / "tiny.onnx", folder / "dir", folder / "readonly.onnx", folder / "fifo"
    link, dangling, null = folder / "link.onnx", folder / "dangling.onnx", folder / "null-link"
    for f, ok in ((tiny, lambda: tiny.is_file() and not tiny.is_symlink() and tiny.read_bytes() == model),
                  (ro, lambda: ro.is_file() and ro.read_bytes() == model and not ro.stat().st_mode & 0o222),
                  (d, lambda: d.is_dir() and not d.is_symlink()),
                  (fifo, lambda: stat.S_ISFIFO(fifo.lstat().st_mode)),
                  (link, lambda: link.is_symlink() and os.readlink(link) == str(tiny)),
                  (dangling, lambda: dangling.is_symlink() and not dangling.exists()),
                  (null, lambda: null.is_symlink() and os.readlink(null) == os.devnull)):
        try:
            good = ok()
        except OSError:
            good = False
        if good:
            continue
        if f.is_dir() and not f.is_symlink():
            shutil.rmtree(f)
        elif f.is_symlink() or f.exists():
            f.chmod(0o600) if not f.is_symlink() else None
            f.unlink()
        if f == tiny:
            tiny.write_bytes(model)
        elif f == ro:
            ro.write_bytes(model)
            ro.chmod(stat.S_IRUSR)
        elif f == d:
            d.mkdir()
        elif f == fifo:
            os.mkfifo(fifo)
        elif f == link:
            link.symlink_to(tiny)
        elif f == null:
            null.symlink_to(os.devnull)
        else:
            dangling.symlink_to(folder / "nothing-here")
    return {"{TINY}": str(tiny), "{DIR}": str(d), "{RO}": str(ro), "{FIFO}": str(fifo), "{LINK}": str(link),
            "{DANGLING}": str(dangling), "{NULL_LINK}": str(null)}


def fill_argv(argv: list[str], fixtures: dict[str, str]) -> list[str]:
    out = []
    for a in argv:
        for k, v in fixtures.items():
            a = a.replace(k, v)
        out.append(a)
    return out


def check_cli_args(argv: list[str], fixtures: dict[str, str], cache: Path, timeout: float = 300) -> str:
    """The `cli` property on one random command line (1 allowed for bench: an incorrect result;
    3 for a line that falls through to the app, which has no display here)."""
    make_fixtures(Path(fixtures["{TINY}"]).parent)
    while argv and argv[0].startswith("@cache:"):
        name, _, content = argv[0][len("@cache:"):].partition("=")
        if "{HOST_FACTS}" in content:
            from engine.devices.hardware import cpu_facts

            content = content.replace("{HOST_FACTS}", json.dumps(cpu_facts()))
        cache.mkdir(parents=True, exist_ok=True)
        (cache / name).write_bytes(content.encode("utf-8", "surrogateescape"))
        argv = argv[1:]
    allow = (0, 1, 2) if "bench" in argv[:1] else (0, 2, 3)
    return run_cli(fill_argv(argv, fixtures), cache, allow=allow, timeout=timeout,
                   cwd=Path(fixtures["{DIR}"]))
