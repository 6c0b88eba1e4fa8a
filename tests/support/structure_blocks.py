"""What tests/unit/test_structure_blocks.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

from tests.support.synthetic import Builder


def paddle_like(blocks: int = 12, name_style: str = "p2o") -> object:
    """An input transform, `blocks` residual blocks with a two-conv side branch, a long skip from the
    stem to the end (as an FPN neck reads its backbone), and a final softmax-like tail, named as a
    Paddle export names them ("p2o.Conv.3"), or as given."""
    b = Builder()
    counts: dict[str, int] = {}

    def add(op, inputs, onnx_type):
        nid = b.add(op, inputs)
        k = counts.get(onnx_type, 0)
        counts[onnx_type] = k + 1
        b.nodes[-1].onnx_name = {"p2o": f"p2o.{onnx_type}.{k}", "op": f"{onnx_type}.{k}",
                                 "bare": f"{onnx_type}_{k}"}[name_style]
        return nid

    x = add("multiply", [], "Mul")          # the input transform
    x = add("add", [x], "Add")
    stem = x = add("conv2d", [x], "Conv")
    for _ in range(blocks):
        h = add("relu", [add("conv2d", [x], "Conv")], "Relu")
        h = add("relu", [add("conv2d", [h], "Conv")], "Relu")
        s = add("conv2d", [x], "Conv")
        x = add("relu", [add("add", [h, s], "Add")], "Relu")
    x = add("add", [x, stem], "Add")
    add("sum", [add("multiply", [x], "Mul")], "Softmax")   # the final softmax
    return b.graph(f"paddle_like_{name_style}")

