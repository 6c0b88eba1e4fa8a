"""ResNet-50 (He et al. 2015), torchvision layout: bottleneck v1.5 (stride on the 3x3 conv).

Random weights: each bottleneck adds its branch to the shortcut, so with unit-gain branches the
activation variance would double per block (std ~1e3 at the logits after 16 blocks).  As with
torchvision's zero_init_residual, the branch's last BN (bn3) is damped: its gamma is scaled by
1/sqrt(16), keeping activations O(1).  The graph is unaffected.
"""
from .onnx_builder import Builder

LAYERS = [(64, 3), (128, 4), (256, 6), (512, 3)]  # bottleneck width, blocks
DAMP = sum(n for _, n in LAYERS) ** -0.5


def bottleneck(b: Builder, x: str, width: int, s: int, p: str) -> str:
    y = b.cba(x, width, 1, p, act="relu", names=("conv1", "bn1", "relu1"))
    y = b.cba(y, width, 3, p, s=s, act="relu", names=("conv2", "bn2", "relu2"))
    y = b.cba(y, width * 4, 1, p, gamma=DAMP, names=("conv3", "bn3"))
    if s != 1 or b.ch[x] != width * 4:
        x = b.cba(x, width * 4, 1, f"{p}.downsample", s=s)
    return b.relu(b.add(y, x, f"{p}.add"), f"{p}.relu3")


def build(resolution: int = 224):
    b = Builder(resolution)
    x = b.cba("input", 64, 7, "", s=2, act="relu", names=("conv1", "bn1", "relu"))
    x = b.maxpool(x, "maxpool", k=3, s=2, p=1)
    for i, (width, blocks) in enumerate(LAYERS):
        for j in range(blocks):
            x = bottleneck(b, x, width, 2 if i > 0 and j == 0 else 1, f"layer{i + 1}.{j}")
    x = b.flatten(b.gap(x, "avgpool"), "flatten")
    return b.model({"output": b.gemm(x, 2048, 1000, "fc")}, "ResNet-50", __doc__)
