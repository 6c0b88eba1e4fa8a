"""EfficientNet-B0 (Tan & Le 2019), torchvision layout: MBConv with squeeze-and-excitation.

SiLU is exported as x * Sigmoid(x); SE is GlobalAveragePool -> 1x1 conv -> SiLU -> 1x1 conv ->
Sigmoid -> Mul, squeezing to a quarter of the block's *input* channels.
"""
from .onnx_builder import Builder

# expansion, kernel, first stride, output channels, repeats
STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
          (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def mbconv(b: Builder, x: str, e: int, k: int, s: int, cout: int, p: str) -> str:
    cin, y, n = b.ch[x], x, 0
    if e != 1:
        y, n = b.cba(y, cin * e, 1, f"{p}.block.0", act="silu"), 1
    y = b.cba(y, cin * e, k, f"{p}.block.{n}", s=s, g=cin * e, act="silu")
    se = f"{p}.block.{n + 1}"
    z = b.silu(b.conv(b.gap(y, f"{se}.avgpool"), max(1, cin // 4), 1, f"{se}.fc1", bias=True), f"{se}.activation")
    z = b.sigmoid(b.conv(z, cin * e, 1, f"{se}.fc2", bias=True), f"{se}.scale_activation")
    y = b.cba(b.mul(y, z, f"{se}.scale"), cout, 1, f"{p}.block.{n + 2}")
    return b.add(y, x, f"{p}.add") if s == 1 and cin == cout else y


def build(resolution: int = 224):
    b = Builder(resolution)
    x = b.cba("input", 32, 3, "features.0", s=2, act="silu")
    for i, (e, k, s, c, n) in enumerate(STAGES, start=1):
        for j in range(n):
            x = mbconv(b, x, e, k, s if j == 0 else 1, c, f"features.{i}.{j}")
    x = b.cba(x, 1280, 1, "features.8", act="silu")
    x = b.flatten(b.gap(x, "avgpool"), "flatten")
    return b.model({"output": b.gemm(x, 1280, 1000, "classifier.1")}, "EfficientNet-B0", __doc__)
