"""MobileNetV2 (Sandler et al. 2018), width 1.0, torchvision layout; ReLU6 exported as Clip(0, 6)."""
from .onnx_builder import Builder

# expansion t, output channels c, repeats n, first stride s
SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def inverted_residual(b: Builder, x: str, t: int, cout: int, s: int, p: str) -> str:
    cin, y, k = b.ch[x], x, 0
    if t != 1:
        y, k = b.cba(y, cin * t, 1, f"{p}.conv.0", act="relu6"), 1
    y = b.cba(y, cin * t, 3, f"{p}.conv.{k}", s=s, g=cin * t, act="relu6")
    y = b.cba(y, cout, 1, f"{p}.conv", names=(str(k + 1), str(k + 2)))
    return b.add(x, y, f"{p}.add") if s == 1 and cin == cout else y


def build(resolution: int = 224):
    b = Builder(resolution)
    x, i = b.cba("input", 32, 3, "features.0", s=2, act="relu6"), 1
    for t, c, n, s in SETTINGS:
        for j in range(n):
            x, i = inverted_residual(b, x, t, c, s if j == 0 else 1, f"features.{i}"), i + 1
    x = b.cba(x, 1280, 1, f"features.{i}", act="relu6")
    x = b.flatten(b.gap(x, "avgpool"), "flatten")
    return b.model({"output": b.gemm(x, 1280, 1000, "classifier.1")}, "MobileNetV2", __doc__)
