"""Build a Relax module for a target and run it; reference outputs from ONNX Runtime.

Targets: "cpu" (LLVM for this host), "cuda" / "cuda:N" (build works without a GPU; running needs one).
"""
from __future__ import annotations

import numpy as np

from engine.devices.device_session import flatten
from engine.util.errors import TargetError


def tvm_target(name: str = "cpu"):
    """The TVM target for "cpu" (this host: mcpu, mtriple, vector width, num-cores), "cuda[:sm_XX]" or a
    board's profile name ("rpi4b": engine/devices/boards.py). An unknown name raises TargetError."""
    from engine.devices.tvm_target import make_target

    return make_target("cpu" if name.partition(":")[0] == "llvm" else name)


def build(mod, target: str = "cpu"):
    """relax.build for `target` (tvm_target: host mcpu/mtriple/num-cores on CPU), the one build
    function. It does not schedule: engine.schedules.schedule(mod, target) first for timed code.
    The generic pipeline lowers without fusing again (CUDA's default pipeline would run
    FuseOps/FuseTIR over an applied plan)."""
    from tvm import relax

    return relax.build(mod, target=tvm_target(target), relax_pipeline=relax.get_pipeline("default_build"))


def run(exe, inputs: list[np.ndarray], device: str = "cpu") -> list[np.ndarray]:
    import tvm
    from tvm import relax

    dev = tvm.cpu() if device == "cpu" else tvm.cuda(int(device.partition(":")[2] or 0))
    if not dev.exist:
        raise TargetError(f"device {device} is not there")
    vm = relax.VirtualMachine(exe, dev)
    out = vm["main"](*[tvm.runtime.tensor(x, dev) for x in inputs])
    return flatten(out)


def random_inputs(graph, seed: int = 0) -> list[np.ndarray]:
    """Deterministic inputs: N(0,1) floats; small non-negative integers (valid ids/indices) otherwise."""
    rng = np.random.default_rng(seed)
    out = []
    for name, shape in graph.input_shapes.items():
        dt = graph.input_dtypes.get(name, "float32")
        out.append(rng.standard_normal(shape).astype(dt) if dt.startswith(("float", "bfloat"))
                   else rng.integers(0, 2, size=shape).astype(dt))
    return out


def onnxruntime_outputs(graph, inputs: list[np.ndarray], threads: int | None = None) -> list[np.ndarray]:
    """ONNX Runtime's outputs for `inputs` (in graph.input_shapes' order). It loads the model's frozen
    ONNX from the cache entry (loader.frozen_path: content-addressed, fixed shapes), never
    graph.source, which may have been renamed or replaced since the model was opened."""
    import onnxruntime as ort

    from engine.model.loader import frozen_path

    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(frozen_path(graph)), so, providers=["CPUExecutionProvider"])
    return sess.run(None, ort_feed(sess, graph, inputs))


def ort_feed(sess, graph, inputs: list[np.ndarray]) -> dict:
    """The session's feed: by name where the session's inputs are the graph's, else in order."""
    names = [i.name for i in sess.get_inputs()]
    given = list(graph.input_shapes)
    if sorted(names) == sorted(given):
        return dict(zip(given, inputs))
    return dict(zip(names, inputs))
