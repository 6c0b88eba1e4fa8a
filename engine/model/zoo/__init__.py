"""The built-in model zoo: five reference CNNs written in code as ONNX (opset 17).

Weights are deterministic random numbers (see onnx_builder), which is all a fusion study needs:
graphs, shapes and parameter counts match the published models, numbers do not.

    build(name, resolution=None) -> onnx.ModelProto   # fresh model, default resolution if None
    path(name, resolution=None)  -> pathlib.Path      # built once, cached as .onnx on disk

Cache folder: $FUSELENS_CACHE_DIR, else $XDG_CACHE_HOME/fuselens, else ~/.cache/fuselens;
files are zoo/NAME-RES-vZOO_VERSION.onnx (with NAME-RES-vZOO_VERSION.onnx.check.json, its size and
hash: a damaged file is rebuilt).  Bump ZOO_VERSION whenever an architecture or the
weight generation changes, so stale files are not reused.

An unknown model name raises UnknownModelError, which is both a KeyError and the engine's
user-facing ModelError (a FuseLensError), with a message listing the valid names; a resolution
outside a model's range (MIN_RESOLUTION..MAX_RESOLUTION, a multiple of `resolution_step`) raises
BadResolutionError, a ModelError and a ValueError, with a message giving the range.
This package imports neither Qt nor TVM.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from engine.util.cache_dir import cache_dir, verified_file, write_verified
from engine.util.errors import ModelError

from . import efficientnet_b0, mobilenetv2, resnet50, vgg16, yolov4_tiny

ZOO_VERSION = 1


@dataclass(frozen=True)
class ZooEntry:
    name: str
    title: str
    default_resolution: int
    published_params: float
    reference: str
    builder: Callable[[int], onnx.ModelProto]
    resolution_step: int = 1  # the resolution must be a multiple of this

    def valid_resolutions(self) -> str:
        step = f"a multiple of {self.resolution_step} " if self.resolution_step > 1 else "an integer "
        return f"{step}from {_lowest(self)} to {MAX_RESOLUTION}"


# Five stride-2 stages take a side to 1/32: below 32 the last maps would be empty. Above 4096 even
# the input (48 M floats) and the first feature maps outgrow what a fusion study needs.
MIN_RESOLUTION, MAX_RESOLUTION = 32, 4096


def _lowest(e: "ZooEntry") -> int:
    return -(-MIN_RESOLUTION // e.resolution_step) * e.resolution_step


MODELS: dict[str, ZooEntry] = {e.name: e for e in [
    ZooEntry("vgg16", "VGG-16", 224, 138.37e6,
             "Simonyan & Zisserman, Very Deep Convolutional Networks, arXiv:1409.1556 (config D); "
             "with BatchNorm as torchvision vgg16_bn (138,365,992 params)", vgg16.build),
    ZooEntry("resnet50", "ResNet-50", 224, 25.56e6,
             "He et al., Deep Residual Learning for Image Recognition, arXiv:1512.03385; "
             "torchvision resnet50 v1.5 (25,557,032 params)", resnet50.build),
    ZooEntry("mobilenetv2", "MobileNetV2", 224, 3.50e6,
             "Sandler et al., MobileNetV2: Inverted Residuals and Linear Bottlenecks, arXiv:1801.04381; "
             "torchvision mobilenet_v2 (3,504,872 params)", mobilenetv2.build),
    ZooEntry("efficientnet_b0", "EfficientNet-B0", 224, 5.29e6,
             "Tan & Le, EfficientNet: Rethinking Model Scaling for CNNs, arXiv:1905.11946; "
             "torchvision efficientnet_b0 (5,288,548 params)", efficientnet_b0.build),
    ZooEntry("yolov4_tiny", "YOLOv4-tiny", 416, 6.06e6,
             "Bochkovskiy et al., YOLOv4, arXiv:2004.10934; darknet cfg/yolov4-tiny.cfg "
             "(AlexeyAB/darknet, 6,056,606 params)", yolov4_tiny.build,
             resolution_step=32),  # the upsampled stride-32 map must match the stride-16 one
]}


class UnknownModelError(ModelError, KeyError):
    __str__ = Exception.__str__  # not KeyError's repr-quoting


def entry(name: str) -> ZooEntry:
    try:
        return MODELS[name]
    except KeyError:
        raise UnknownModelError(f"zoo:{name}", f"unknown zoo model; valid names: {', '.join(MODELS)}") from None


class BadResolutionError(ModelError, ValueError):
    pass


def check_resolution(name: str, res: int | str | None = None) -> int:
    """The resolution to build `name` at (its default for None), or BadResolutionError saying the valid range."""
    e = entry(name)
    if res is None:
        return e.default_resolution
    src = f"zoo:{name}@{res}"
    try:
        r = int(res)
    except (TypeError, ValueError):
        raise BadResolutionError(src, f"resolution {res!r} is not an integer; {e.title} takes "
                                 f"{e.valid_resolutions()} (default {e.default_resolution})") from None
    if r < _lowest(e) or r > MAX_RESOLUTION or r % e.resolution_step:
        why = "out of range" if r < _lowest(e) or r > MAX_RESOLUTION else f"not divisible by {e.resolution_step}"
        raise BadResolutionError(src, f"resolution {r} is {why}; {e.title} takes "
                                 f"{e.valid_resolutions()} (default {e.default_resolution})")
    return r


def build(name: str, resolution: int | None = None) -> onnx.ModelProto:
    e = entry(name)
    return e.builder(check_resolution(name, resolution))


def path(name: str, resolution: int | None = None) -> Path:
    """The model as a cached .onnx file, building and writing it (atomically) on first use. The
    cached file is checked on every use (cache_dir.verified_file: its size, and its hash when it
    was touched): one that was truncated or changed is a miss, deleted and built again."""
    e = entry(name)
    res = check_resolution(name, resolution)
    p = cache_dir("zoo") / f"{name}-{res}-v{ZOO_VERSION}.onnx"
    if verified_file(p) is None:
        write_verified(p, e.builder(res).SerializeToString())
    return p


def count_params(model: onnx.ModelProto) -> int:
    """Learnable parameters, counted as PyTorch's model.parameters() would.

    Rule: the element count of every floating-point initializer of rank >= 1, except
    non-learnable buffers: BatchNormalization running mean/var (inputs 3 and 4) and Resize
    roi/scales.  Integer initializers (shapes, split sizes) and rank-0 scalars (Clip bounds)
    are not counted.  (VGG-16 where R // 32 != 7 adds its small constant pooling
    matrices, 14 * (R // 32) numbers.)
    """
    buffers = {t for n in model.graph.node for t in
               (n.input[3:5] if n.op_type == "BatchNormalization" else n.input[1:] if n.op_type == "Resize" else [])}
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if t.name not in buffers and len(t.dims) >= 1 and t.data_type in _FLOATS)


_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def count_nodes(model: onnx.ModelProto) -> int:
    return len(model.graph.node)


__all__ = ["ZOO_VERSION", "ZooEntry", "MODELS", "UnknownModelError", "BadResolutionError", "MIN_RESOLUTION",
           "MAX_RESOLUTION", "entry", "check_resolution", "build", "path", "count_params", "count_nodes"]
