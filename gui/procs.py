"""Engine work that must not share the app's process: parsing a large ONNX file (protobuf) or importing
it into TVM holds Python's global lock for seconds (VGG-16: 4.7 s measured), which would freeze the
window however much that work runs on another thread. Such jobs run in a spawned child process;
the calling (worker) thread waits for it, can cancel it, and gets back plain data.

Small models stay in-process (a child costs ~2 s of start-up): see `IN_PROCESS_MAX_BYTES`.
"""
from __future__ import annotations

import multiprocessing as mp
import queue as _queue
import time

from engine.errors import FuseLensError

IN_PROCESS_MAX_BYTES = 20 << 20     # model files up to this size are read in-process


class NeedShapes:
    def __init__(self, spec: str, path: str, inputs: list, remembered: dict | None):
        self.spec, self.path, self.inputs, self.remembered = spec, path, inputs, remembered


def open_model(spec: str, given: dict | None, remembered: dict | None, strip: bool = False):
    """Read the file, resolve its input shapes (or say which are needed), load the operator graph.
    Returns NeedShapes, or (graph, shapes). `strip`: drop the TVM module so the graph can be pickled."""
    from engine import loader, onnx_input

    from .dialogs import needs_shapes

    path, _ = loader.resolve_spec(spec)
    model = onnx_input.read(path)
    inputs = [(vi.name, onnx_input.input_dims(vi)) for vi in onnx_input.graph_inputs(model)]
    shapes = given or None
    if not shapes and needs_shapes(inputs):
        if not remembered:
            return NeedShapes(spec, str(path), inputs, None)
        shapes = remembered
    del model
    graph = loader.load(spec, shapes)
    if strip:
        graph = _stripped(graph)
    return graph, shapes or graph.input_shapes


def _stripped(graph):
    import copy

    g = copy.copy(graph)
    g.mod_factory = None
    g._mod = None
    return g


def plan_tvm(spec: str, shapes: dict, hw_dict: dict):
    """Plan with TVM's own FuseOps (re-imports the model into Relax)."""
    from engine import hardware, loader
    from engine.planner import make_plan

    graph = loader.load(spec, shapes)
    return make_plan(graph, "tvm", hardware.from_dict(hw_dict))


JOBS = {"open_model": open_model, "plan_tvm": plan_tvm}


def _child(q, name: str, args: tuple, kwargs: dict):
    import signal

    # Ctrl+C in the terminal reaches the whole process group: the app handles it and stops this process
    # (gui/app.py). Started from a worker thread, the child cannot inherit an ignored SIGINT
    # (engine/subproc.py), so it ignores it here, as its first step.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        q.put(("ok", JOBS[name](*args, **kwargs)))
    except FuseLensError as e:
        q.put(("error", str(e)))
    except BaseException as e:  # noqa: BLE001 - reported to the caller as one line
        msg = str(e).strip().splitlines()
        q.put(("error", f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]))


def run(name: str, *args, cancel=None, timeout_s: float = 1800, **kwargs):
    """Run JOBS[name] in a spawned process; raise FuseLensError for its failure, InterruptedError on cancel."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(q, name, args, kwargs), daemon=True)
    proc.start()
    t0 = time.monotonic()
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise InterruptedError(f"{name} cancelled")
            if time.monotonic() - t0 > timeout_s:
                raise FuseLensError(f"{name} took longer than {timeout_s:.0f} s and was stopped")
            try:
                kind, payload = q.get(timeout=0.1)
            except _queue.Empty:
                if not proc.is_alive():
                    try:
                        kind, payload = q.get(timeout=0.5)
                    except _queue.Empty:
                        raise FuseLensError(f"the {name} process died (exit code {proc.exitcode})") from None
                else:
                    continue
            if kind == "ok":
                return payload
            raise FuseLensError(payload)
    finally:
        from engine.subproc import stop

        stop(proc)


def big_file(spec: str) -> bool:
    """Whether opening `spec` belongs in a child process: a large file, or a zoo model not built yet
    (writing VGG-16's 138 M random weights is heavy too)."""
    from pathlib import Path

    if spec.startswith("zoo:"):
        from engine import zoo
        from engine.cache_dir import cache_dir

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
