"""A tiny helper for writing ONNX graphs in code, with deterministic random weights.

Every op method takes its input tensor name(s) and a node name, and returns the name of
the output tensor, which is the node name itself (so "layer2.1.bn2" is both the node and
the tensor it produces).  Names must be unique; a duplicate raises immediately.

Weights come from ``numpy.random.default_rng(seed)`` in construction order, so the same
code always yields byte-identical models.  Conv/Gemm weights are He-scaled
(std = sqrt(2 / fan_in)) and BatchNormalization parameters are drawn near identity
(gamma ~ 1+0.1N, beta ~ 0.1N, mean ~ 0.1N, var ~ U(0.5, 1.5)) so activations stay O(1)
through deep nets.  BatchNormalization is kept as its own node (not folded), as in a
plain PyTorch export with ``do_constant_folding=False``.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # the IR version that introduced opset 17; loadable by older runtimes


class Builder:
    def __init__(self, resolution: int, seed: int = 0):
        if resolution < 32:
            raise ValueError(f"resolution must be at least 32, got {resolution}")
        self.resolution, self.rng = int(resolution), np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.weights: list[tuple[str, np.ndarray]] = []  # initializers, in creation order
        self.names = {"input"}
        self.ch = {"input": 3}  # channel count of each tensor: gives Conv its fan-in

    # -- tensors -------------------------------------------------------------------------
    def _unique(self, name: str) -> str:
        if name in self.names:
            raise ValueError(f"duplicate tensor/node name {name!r}")
        self.names.add(name)
        return name

    def const(self, name: str, value) -> str:
        self.weights.append((self._unique(name), np.asarray(value)))
        return name

    def normal(self, name: str, shape, std: float = 1.0, mean: float = 0.0) -> str:
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(std)
        if mean:
            w += np.float32(mean)
        return self.const(name, w)

    def shared(self, name: str, value) -> str:
        """A constant created once and shared by every node that uses it (e.g. Clip bounds)."""
        return name if name in self.names else self.const(name, value)

    # -- generic node --------------------------------------------------------------------
    def op(self, op_type: str, inputs: list[str], name: str, ch: int | None = None,
           outputs: int = 1, **attrs) -> str | list[str]:
        outs = [name] if outputs == 1 else [f"{name}.{i}" for i in range(outputs)]
        for n in dict.fromkeys([name, *outs]):
            self._unique(n)
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        for o in outs:
            self.ch[o] = self.ch.get(inputs[0]) if ch is None else ch
        return outs[0] if outputs == 1 else outs

    # -- layers --------------------------------------------------------------------------
    def conv(self, x: str, cout: int, k: int, name: str, s: int = 1, g: int = 1,
             bias: bool = False) -> str:
        """k x k convolution with 'same' padding (k // 2), as in all zoo models."""
        cin = self.ch[x]
        ins = [x, self.normal(f"{name}.weight", (cout, cin // g, k, k), np.sqrt(2 / (cin // g * k * k)))]
        if bias:
            ins.append(self.normal(f"{name}.bias", (cout,), 0.1))
        return self.op("Conv", ins, name, cout, kernel_shape=[k, k], strides=[s, s],
                       pads=[k // 2] * 4, group=g, dilations=[1, 1])

    def bn(self, x: str, name: str, gamma: float = 1.0, eps: float = 1e-5) -> str:
        """BatchNormalization in inference form; `gamma` scales the drawn weights (gamma ~ 1+0.1N)."""
        c = self.ch[x]
        ins = [x, self.normal(f"{name}.weight", (c,), 0.1 * gamma, gamma), self.normal(f"{name}.bias", (c,), 0.1),
               self.normal(f"{name}.running_mean", (c,), 0.1),
               self.const(f"{name}.running_var", self.rng.uniform(0.5, 1.5, c).astype(np.float32))]
        return self.op("BatchNormalization", ins, name, epsilon=eps, momentum=0.9)

    def cba(self, x: str, cout: int, k: int, prefix: str, s: int = 1, g: int = 1, act: str | None = None,
            bias: bool = False, gamma: float = 1.0, names=("0", "1", "2")) -> str:
        """Conv -> BatchNormalization -> optional activation, named prefix.0/.1/.2 (or `names`)."""
        n = [f"{prefix}.{n}" if prefix else n for n in names]
        x = self.bn(self.conv(x, cout, k, n[0], s=s, g=g, bias=bias), n[1], gamma)
        return getattr(self, act)(x, n[2]) if act else x

    def relu(self, x: str, name: str) -> str:
        return self.op("Relu", [x], name)

    def leaky(self, x: str, name: str) -> str:
        return self.op("LeakyRelu", [x], name, alpha=0.1)

    def relu6(self, x: str, name: str) -> str:
        lo, hi = self.shared("relu6.min", np.float32(0)), self.shared("relu6.max", np.float32(6))
        return self.op("Clip", [x, lo, hi], name)

    def sigmoid(self, x: str, name: str) -> str:
        return self.op("Sigmoid", [x], name)

    def silu(self, x: str, name: str) -> str:
        """SiLU as PyTorch exports it: x * Sigmoid(x)."""
        return self.mul(x, self.sigmoid(x, f"{name}.sigmoid"), name)

    def add(self, a: str, b: str, name: str) -> str:
        return self.op("Add", [a, b], name)

    def mul(self, a: str, b: str, name: str) -> str:
        return self.op("Mul", [a, b], name)

    def matmul(self, a: str, b: str, name: str) -> str:
        return self.op("MatMul", [a, b], name)

    def maxpool(self, x: str, name: str, k: int = 2, s: int = 2, p: int = 0) -> str:
        return self.op("MaxPool", [x], name, kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)

    def gap(self, x: str, name: str) -> str:
        return self.op("GlobalAveragePool", [x], name)

    def flatten(self, x: str, name: str) -> str:
        return self.op("Flatten", [x], name, axis=1)

    def gemm(self, x: str, cin: int, cout: int, name: str) -> str:
        """Fully connected layer as PyTorch exports nn.Linear: Gemm(x, W[out,in], b, transB=1)."""
        w = self.normal(f"{name}.weight", (cout, cin), np.sqrt(2 / cin))
        return self.op("Gemm", [x, w, self.normal(f"{name}.bias", (cout,), 0.1)], name, cout,
                       alpha=1.0, beta=1.0, transB=1)

    def concat(self, xs: list[str], name: str) -> str:
        return self.op("Concat", xs, name, sum(self.ch[x] for x in xs), axis=1)

    def split2(self, x: str, name: str) -> list[str]:
        """Split channels into two equal halves (outputs name.0 and name.1)."""
        return self.op("Split", [x], name, self.ch[x] // 2, outputs=2, axis=1)

    def upsample2(self, x: str, name: str) -> str:
        """Nearest-neighbour x2 upsampling, as PyTorch exports nn.Upsample(scale_factor=2)."""
        scales = self.const(f"{name}.scales", np.array([1, 1, 2, 2], np.float32))
        return self.op("Resize", [x, "", scales], name, mode="nearest",
                       coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    # -- result --------------------------------------------------------------------------
    def model(self, outputs: dict[str, str], title: str, doc: str = "") -> onnx.ModelProto:
        """Assemble, shape-infer (strict) and check the model.

        `outputs` maps graph output names (e.g. "output") to the tensors that become them;
        those tensors are renamed, their nodes keep their names.  Inference and checking run
        on a skeleton in which large weights are typed graph inputs (VGG-16's 553 MB would
        cost seconds to copy through them); the weights are added as initializers last.
        """
        rename = {t: o for o, t in outputs.items()}
        for n in self.nodes:
            n.input[:] = [rename.get(t, t) for t in n.input]
            n.output[:] = [rename.get(t, t) for t in n.output]
        r, big = self.resolution, [(n, w) for n, w in self.weights if w.size > 64]
        graph = helper.make_graph(
            self.nodes, title,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, r, r])] +
            [helper.make_tensor_value_info(n, _dtype(w), w.shape) for n, w in big],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
            [numpy_helper.from_array(w, n) for n, w in self.weights if w.size <= 64])
        m = helper.make_model(graph, producer_name="fuselens.zoo", doc_string=doc.strip(),
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = IR_VERSION
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
        onnx.checker.check_model(m)
        del m.graph.input[1:], m.graph.initializer[:]
        for n, w in self.weights:
            t = m.graph.initializer.add()
            t.name, t.data_type, t.raw_data = n, _dtype(w), np.asarray(w, w.dtype.newbyteorder("<")).tobytes()
            t.dims.extend(w.shape)
        return m


def _dtype(w: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(w.dtype)
