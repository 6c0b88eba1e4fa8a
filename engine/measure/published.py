"""The published comparison we reproduce: DP vs greedy fusion on an NVIDIA T4 (latency in ms).

Also reported there: DP costs about +35% compile time over greedy on average; a hybrid (DP on
the top-20% critical path, greedy elsewhere) keeps about 90% of DP's gain at about +15%.

The figures are for batch 1 at each model's published input resolution (PUBLISHED_RESOLUTION,
the zoo's default resolutions): for_model() gives them only for the same model at that resolution,
so zoo:mobilenetv2@32 is never shown beside the 224x224 figures.
"""
from __future__ import annotations

PUBLISHED_T4 = {
    "vgg16": {"title": "VGG-16", "baseline": 42.3, "greedy": 28.7, "dp": 21.4, "speedup": 1.98},
    "mobilenetv2": {"title": "MobileNetV2", "baseline": 15.6, "greedy": 11.2, "dp": 8.9, "speedup": 1.75},
    "efficientnet_b0": {"title": "EfficientNet", "baseline": 38.9, "greedy": 25.4, "dp": 19.1, "speedup": 2.04},
    "yolov4_tiny": {"title": "YOLOv4-tiny", "baseline": 23.7, "greedy": 16.8, "dp": 12.3, "speedup": 1.93},
}
# input height = width of the published figures (batch 1)
PUBLISHED_RESOLUTION = {"vgg16": 224, "mobilenetv2": 224, "efficientnet_b0": 224, "yolov4_tiny": 416}
PUBLISHED_COMPILE_OVERHEAD = {"dp": 0.35, "hybrid": 0.15}
PUBLISHED_HYBRID_GAIN_SHARE = 0.90


def for_model(name: str, input_shapes: dict | None = None) -> dict | None:
    """The published T4 figures for a model named `name` ("mobilenetv2", "mobilenetv2@224",
    "zoo:vgg16"), or None when there are none or the model runs at another resolution or batch:
    an "@RES" suffix must be the published resolution, and so must the spatial size of the
    model's 4-D image input when `input_shapes` ({input: shape}) is given."""
    base, _, res = str(name).removeprefix("zoo:").partition("@")
    pub = PUBLISHED_T4.get(base)
    if pub is None:
        return None
    want = PUBLISHED_RESOLUTION[base]
    if res:
        try:
            if int(res) != want:
                return None
        except ValueError:
            return None
    if input_shapes:
        images = [list(s) for s in input_shapes.values() if len(s) == 4]
        if len(images) != 1:
            return None
        n, _c, h, w = images[0]
        if (n, h, w) != (1, want, want):
            return None
    return pub
