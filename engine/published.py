"""The published comparison we reproduce: DP vs greedy fusion on an NVIDIA T4 (latency in ms).

Also reported there: DP costs about +35% compile time over greedy on average; a hybrid (DP on
the top-20% critical path, greedy elsewhere) keeps about 90% of DP's gain at about +15%.
"""
PUBLISHED_T4 = {
    "vgg16": {"title": "VGG-16", "baseline": 42.3, "greedy": 28.7, "dp": 21.4, "speedup": 1.98},
    "mobilenetv2": {"title": "MobileNetV2", "baseline": 15.6, "greedy": 11.2, "dp": 8.9, "speedup": 1.75},
    "efficientnet_b0": {"title": "EfficientNet", "baseline": 38.9, "greedy": 25.4, "dp": 19.1, "speedup": 2.04},
    "yolov4_tiny": {"title": "YOLOv4-tiny", "baseline": 23.7, "greedy": 16.8, "dp": 12.3, "speedup": 1.93},
}
PUBLISHED_COMPILE_OVERHEAD = {"dp": 0.35, "hybrid": 0.15}
PUBLISHED_HYBRID_GAIN_SHARE = 0.90
