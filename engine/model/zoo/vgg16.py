"""VGG-16 with batch norm (Simonyan & Zisserman 2014, configuration D; torchvision vgg16_bn).

Names follow torchvision: features.N (Conv/BN/Relu/MaxPool), classifier.0/1/3/4/6.

Non-224 resolutions: torchvision has AdaptiveAvgPool2d((7, 7)) before the classifier, so the
classifier always sees 7x7x512 = 25088 features.  After the five pools the map is S = R // 32.
If S == 7 the pool is the identity and is omitted (as in an exported 224 model).  Otherwise the
adaptive pool is written exactly as two MatMuls with a constant 7xS averaging matrix P
(y = P @ x @ P^T, PyTorch's bins [floor(i*S/7), ceil((i+1)*S/7))), which is legal for any S,
up- or down-sampling, and keeps the classifier (and the parameter count) unchanged.
"""
import numpy as np

from .onnx_builder import Builder

CFG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def adaptive_pool_matrix(s: int, out: int = 7) -> np.ndarray:
    p = np.zeros((out, s), np.float32)
    for i in range(out):
        lo, hi = i * s // out, -(-(i + 1) * s // out)
        p[i, lo:hi] = 1.0 / (hi - lo)
    return p


def build(resolution: int = 224):
    b, x, i = Builder(resolution), "input", 0
    for v in CFG_D:
        if v == "M":
            x, i = b.maxpool(x, f"features.{i}"), i + 1
        else:
            x, i = b.cba(x, v, 3, "features", bias=True, act="relu", names=(str(i), str(i + 1), str(i + 2))), i + 3
    if (s := resolution // 32) != 7:
        p = adaptive_pool_matrix(s)
        x = b.matmul(b.const("avgpool.rows.P", p), x, "avgpool.rows")
        x = b.matmul(x, b.const("avgpool.cols.PT", np.ascontiguousarray(p.T)), "avgpool.cols")
    x = b.flatten(x, "flatten")
    x = b.relu(b.gemm(x, 512 * 7 * 7, 4096, "classifier.0"), "classifier.1")
    x = b.relu(b.gemm(x, 4096, 4096, "classifier.3"), "classifier.4")
    return b.model({"output": b.gemm(x, 4096, 1000, "classifier.6")}, "VGG-16-BN", __doc__)
