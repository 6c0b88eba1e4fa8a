"""Small ONNX graphs built in code for tests."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_onnx(batch="batch", hw=8, op_override=None) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node(op_override or "Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("Add", ["r", "c"], ["y"], name="add0"),
             helper.make_node("Split", ["y"], ["s1", "s2"], axis=1, num_outputs=2, name="split0"),
             helper.make_node("Mul", ["s1", "s2"], ["z"], name="mul0")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, hw, hw])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 4, hw, hw])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def small_cnn_onnx(hw=32, seed=0, bn=False, blocks=((8, 1, 1), (8, 4, 1), (16, 4, 2))) -> onnx.ModelProto:
    """A MobileNetV2-like network in miniature: a 3x3 stem convolution, inverted-residual blocks
    (out channels, expansion, stride: 1x1 expand, 3x3 depthwise, 1x1 project, ReLU6 after all but the
    projection, a residual add where the shape allows), a 1x1 head, global pool and classifier. 39
    operators after import as it is (69 with bn=True: batch norm after each convolution instead of a
    bias). Multi-op fused groups, several conv2d, and greedy / dp plans that share some groups and
    differ in others (t4, a100); opens and plans with TVM in about a second."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    k = {"n": 0}

    def name(prefix):
        k["n"] += 1
        return f"{prefix}{k['n']}"

    def const(arr, prefix):
        n = name(prefix)
        inits.append(numpy_helper.from_array(np.asarray(arr, dtype="float32"), n))
        return n

    def conv(x, cin, cout, kernel=1, stride=1, group=1, act=True):
        w = const(rng.standard_normal((cout, cin // group, kernel, kernel)) * 0.2, "w")
        y = name("conv")
        pad = kernel // 2
        ins = [x, w] if bn else [x, w, const(rng.standard_normal(cout) * 0.1, "cb")]
        nodes.append(helper.make_node("Conv", ins, [y], kernel_shape=[kernel, kernel], strides=[stride, stride],
                                      pads=[pad] * 4, group=group, name=y))
        if bn:
            stats = [const(rng.uniform(0.5, 1.5, cout), "g"), const(rng.standard_normal(cout) * 0.1, "b"),
                     const(rng.standard_normal(cout) * 0.1, "m"), const(rng.uniform(0.5, 1.5, cout), "v")]
            z = name("bn")
            nodes.append(helper.make_node("BatchNormalization", [y, *stats], [z], name=z))
        else:
            z = y
        if not act:
            return z
        a = name("relu6")
        nodes.append(helper.make_node("Clip", [z, const(0.0, "lo"), const(6.0, "hi")], [a], name=a))
        return a

    def block(x, cin, cout, expand, stride):
        h = conv(x, cin, cin * expand) if expand != 1 else x
        h = conv(h, cin * expand, cin * expand, kernel=3, stride=stride, group=cin * expand)
        h = conv(h, cin * expand, cout, act=False)
        if stride == 1 and cin == cout:
            y = name("add")
            nodes.append(helper.make_node("Add", [h, x], [y], name=y))
            return y
        return h

    x, c = conv("x", 3, 16, kernel=3, stride=2), 16
    for cout, expand, stride in blocks:
        x, c = block(x, c, cout, expand, stride), cout
    x = conv(x, c, 32)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flat"))
    nodes.append(helper.make_node("Gemm", ["flat", const(rng.standard_normal((10, 32)) * 0.2, "fc"),
                                           const(np.zeros(10), "fcb")], ["y"], transB=1, name="fc"))
    g = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
