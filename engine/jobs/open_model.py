"""Open a model for the app: read the file, resolve its input shapes (or say which are needed), load
the operator graph.

Parsing a large ONNX file (protobuf) or importing it into TVM holds Python's global lock for seconds
(VGG-16: 4.7 s measured), which would freeze the window however much that work runs on another
thread. Such models are read in a child process (engine/util/child.py) and come back as plain data: the
graph without its TVM module, so planning with TVM's FuseOps re-imports the model in a child too
(engine/jobs/plan_tvm.py). Small models stay in-process, since a child costs ~2 s of start-up:
see `IN_PROCESS_MAX_BYTES`.
"""
from __future__ import annotations

import copy
from pathlib import Path

from engine.util.child import run_in_child

IN_PROCESS_MAX_BYTES = 20 << 20     # model files up to this size are read in-process
TIME_LIMIT_S = 1800


class NeedShapes:
    """The answer when the model has dynamic dims that cannot be guessed, or an If whose branch an
    input's value chooses, and nothing was given (or remembered): its inputs as (name, dims) pairs,
    and `values`, the inputs whose value must be given, for the app to ask about."""

    def __init__(self, spec: str, path: str, inputs: list, remembered: dict | None, values: list | None = None,
                 examples: dict | None = None):
        self.spec, self.path, self.inputs, self.remembered = spec, path, inputs, remembered
        self.values = values or []
        self.examples = examples or {}   # input -> its example shape (onnx_input.example_shapes), as `main.py` suggests


def open_model(spec: str, given: dict | None, remembered: dict | None, progress=None, cancel=None,
               block: int | None = None):
    """NeedShapes, or (graph, shapes): read in a child process when the file is big (`big_file`; the
    graph then comes back without its TVM module), else here. `block`: the channel layout to load
    (loader.load; the app's device decides it: loader.block_for_target). A set `cancel` stops the
    child and raises child.Cancelled."""
    if not big_file(spec):
        return read(spec, given, remembered, block=block)
    if progress:
        progress("reading model (separate process)", 0.05)
    return run_in_child(_read_job, {"spec": spec, "given": given, "remembered": remembered, "block": block},
                        cancel=cancel,
                        timeout_s=TIME_LIMIT_S, what="model reader")


def read(spec: str, given: dict | None, remembered: dict | None, strip: bool = False, block: int | None = None):
    """Read the file, resolve its input shapes (or say which are needed), load the operator graph.
    Returns NeedShapes, or (graph, shapes). `strip`: drop the TVM module so the graph can be pickled."""
    from engine.model import loader, onnx_input

    path, _ = loader.resolve_spec(spec)
    model = onnx_input.read(path)
    inputs = [(vi.name, onnx_input.input_dims(vi)) for vi in onnx_input.graph_inputs(model)]
    shapes = given or None
    values = onnx_input.inputs_choosing_branches(model)
    if not shapes and (onnx_input.needs_shapes(inputs) or values):
        if not remembered:
            return NeedShapes(spec, str(path), inputs, None, values, onnx_input.example_shapes(model, inputs)[0])
        shapes = remembered
    del model
    graph = loader.load(spec, shapes, block=block)
    if strip:
        graph = _stripped(graph)
    return graph, shapes or graph.input_shapes


def _read_job(job: dict, say):
    return read(job["spec"], job["given"], job["remembered"], strip=True, block=job.get("block"))


def _stripped(graph):
    """A copy of `graph` without its TVM module (which cannot be pickled)."""
    g = copy.copy(graph)
    g.mod_factory = None
    g._mod = None
    return g


def big_file(spec: str) -> bool:
    """Whether opening `spec` belongs in a child process: a large file, or a zoo model not built yet
    (writing VGG-16's 138 M random weights is heavy too)."""
    if spec.startswith("zoo:"):
        from engine.model import zoo
        from engine.util.cache_dir import cache_dir

        name, _, res = spec[4:].partition("@")
        e = zoo.MODELS.get(name)
        if e is None:
            return False  # the in-process load says what is wrong at once
        try:
            r = int(res) if res else e.default_resolution
        except ValueError:
            return False
        path = cache_dir("zoo") / f"{name}-{r}-v{zoo.ZOO_VERSION}.onnx"
        if not path.exists():  # not built yet: its size is about 4 bytes per parameter
            return e.published_params * 4 > IN_PROCESS_MAX_BYTES
    else:
        path = Path(spec)
    try:
        return path.stat().st_size > IN_PROCESS_MAX_BYTES
    except OSError:
        return False
