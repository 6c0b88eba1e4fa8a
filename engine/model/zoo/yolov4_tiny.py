"""YOLOv4-tiny, layer for layer from darknet's cfg/yolov4-tiny.cfg (Bochkovskiy et al. 2020).

Node names are darknet layer indices ("layers.7.conv", "layers.11.split").  Convs are
conv+BN+LeakyReLU(0.1); `[route] groups=2 group_id=1` is a Split into halves keeping the
second; `[maxpool] size=2 stride=2` is MaxPool 2x2/2; `[upsample] stride=2` is nearest Resize.
The two YOLO heads are the raw 1x1 conv outputs (255 = 3 anchors x (5 + 80 classes)), without
decoding: "output0" at stride 32 (13x13 at 416) and "output1" at stride 16 (26x26).
The resolution must be a multiple of 32 so the upsampled map matches layer 23.
"""
from .onnx_builder import Builder


def build(resolution: int = 416):
    if resolution % 32:
        raise ValueError(f"YOLOv4-tiny needs a resolution divisible by 32, got {resolution}")
    b, L = Builder(resolution), {}

    def conv(i, src, c, k=3, s=1):
        L[i] = b.cba(L[src], c, k, f"layers.{i}", s=s, act="leaky", names=("conv", "bn", "act"))

    def csp(i, c):  # layers i..i+6: second half of L[i-1] -> two 3x3 convs -> concat -> 1x1 -> concat, maxpool
        L[i] = b.split2(L[i - 1], f"layers.{i}.split")[1]
        conv(i + 1, i, c // 2)
        conv(i + 2, i + 1, c // 2)
        L[i + 3] = b.concat([L[i + 2], L[i + 1]], f"layers.{i + 3}.concat")
        conv(i + 4, i + 3, c, k=1)
        L[i + 5] = b.concat([L[i - 1], L[i + 4]], f"layers.{i + 5}.concat")
        L[i + 6] = b.maxpool(L[i + 5], f"layers.{i + 6}.maxpool")

    L[-1] = "input"
    conv(0, -1, 32, s=2)
    conv(1, 0, 64, s=2)
    conv(2, 1, 64)
    csp(3, 64)       # 3..9
    conv(10, 9, 128)
    csp(11, 128)     # 11..17
    conv(18, 17, 256)
    csp(19, 256)     # 19..25
    conv(26, 25, 512)
    conv(27, 26, 256, k=1)
    conv(28, 27, 512)
    L[29] = b.conv(L[28], 255, 1, "layers.29.conv", bias=True)  # [yolo] 30 reads this
    conv(32, 27, 128, k=1)                                          # [route] 31 = layers -4 (27)
    L[33] = b.upsample2(L[32], "layers.33.upsample")
    L[34] = b.concat([L[33], L[23]], "layers.34.concat")
    conv(35, 34, 256)
    L[36] = b.conv(L[35], 255, 1, "layers.36.conv", bias=True)  # [yolo] 37 reads this
    return b.model({"output0": L[29], "output1": L[36]}, "YOLOv4-tiny", __doc__)
