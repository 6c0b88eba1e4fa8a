"""A readable name for an operator: TVM's op names ("conv2d_nchwc", "tir_sigmoid", "fused_add3") as
the words a user of the model knows ("conv", "dwconv", "sigmoid", "add"). The model's own module:
engine/model/scopes.py names structural blocks by them, and engine/report/group_names.py names groups.
"""
from __future__ import annotations

import math
import re

# TVM's names -> the words a user of the model knows
_WORDS = {"conv2d": "conv", "conv2d_nchwc": "conv", "conv2d_nchwc_dw": "conv", "conv1d": "conv1d", "conv3d": "conv3d", "conv2d_transpose": "deconv",
          "matmul": "matmul", "dense": "matmul", "max_pool2d": "maxpool", "avg_pool2d": "avgpool",
          "adaptive_avg_pool2d": "avgpool", "mean": "mean", "subtract": "sub", "multiply": "mul",
          "divide": "div", "maximum": "max", "minimum": "min", "add": "add", "sigmoid": "sigmoid",
          "batch_matmul": "matmul", "softmax": "softmax", "layer_norm": "layernorm"}
_DW_FLOPS_PER_OUTPUT = {18, 50, 98}   # 2 * k * k with one input channel per output: 3x3, 5x5, 7x7 depthwise


def op_word(node) -> str:
    """A readable op name: 'tir_sigmoid' -> 'sigmoid', 'conv2d' -> 'conv' (or 'dwconv' for a depthwise one)."""
    op = re.sub(r"^(tir_|fused_)+", "", node.op or "")
    op = re.sub(r"\d+$", "", op).rstrip("_") or node.op
    word = _WORDS.get(op, op)
    if word == "conv" and node.shape and node.flops:
        outs = math.prod(node.shape) if all(isinstance(d, int) for d in node.shape) else 0
        if outs and round(node.flops / outs) in _DW_FLOPS_PER_OUTPUT:
            word = "dwconv"
    return word
