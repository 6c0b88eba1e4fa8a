"""Can the model run at all? ONNX Runtime runs it once on the benchmark's inputs, in the benchmark
worker, before anything is built: a model it rejects (an operator or type it does not accept, a
malformed graph) or that fails on those inputs (an out-of-range Gather index, an integer division
by zero) is the model's fault, and the benchmark ends in one line that says so (ModelError, exit 2)
instead of an internal error or a crash of the reference.

    payload = run_worker(job_fn, job, src, ...)   # in the caller: run_in_child, which raises
                                                  # ModelError for a payload's "model_error" and for a
                                                  # worker that died or hung while ONNX Runtime ran
    bad = problem(graph, inputs, job)             # in the worker (job_fn): None, or what is wrong

Set FUSELENS_WORKER_FAULT=ort-segv to crash the worker where ONNX Runtime runs (for the tests).
"""
from __future__ import annotations

import os

from engine.util.errors import ModelError

STAGE = "checking the model with ONNX Runtime"
MARKER = "ort_marker"   # the job's key: a file that exists while ONNX Runtime runs in the worker
INPUTS = "the benchmark's inputs (floats N(0,1), integers 0 or 1)"


def onnxruntime_outputs(graph, inputs, threads: int | None = None) -> list:
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


def ort_feed(sess, graph, inputs) -> dict:
    """The session's feed: by name where the session's inputs are the graph's, else in order."""
    names = [i.name for i in sess.get_inputs()]
    given = list(graph.input_shapes)
    if sorted(names) == sorted(given):
        return dict(zip(given, inputs))
    return dict(zip(names, inputs))


def problem(graph, inputs, job: dict | None = None) -> str | None:
    """None when ONNX Runtime loads the model's frozen ONNX and runs it on `inputs`; else one line.
    While it runs, the file job[MARKER] exists: a worker that dies then died in ONNX Runtime."""
    from engine.model.loader import frozen_path

    try:
        path = frozen_path(graph)   # a cache that cannot hold it: its own line, not ONNX Runtime's crash
    except ModelError as e:
        return e.problem
    marker = (job or {}).get(MARKER)
    if marker:
        open(marker, "wb").close()
    bad = _problem(path, graph, inputs)
    if marker:
        os.unlink(marker)
    return bad


def _problem(path, graph, inputs) -> str | None:
    import onnxruntime as ort

    from engine.util.cpus import usable_cores


    ort.set_default_logger_severity(4)   # its own error lines on fd 2 would be a second line on the terminal
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = usable_cores()
    try:
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - InvalidGraph, NotImplemented, Fail: the model's
        return f"ONNX Runtime rejects the model: {clean(e)}"
    if os.environ.get("FUSELENS_WORKER_FAULT") == "ort-segv":   # fault injection for the tests
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        sess.run(None, ort_feed(sess, graph, inputs))
    except Exception as e:  # noqa: BLE001 - Fail, InvalidArgument, RuntimeException
        return f"ONNX Runtime cannot run the model on {INPUTS}: {clean(e)}"
    return None


def clean(e: Exception, limit: int = 300) -> str:
    """ONNX Runtime's message in one line (engine/model/onnx_input.ort_message: the one cleaner)."""
    from engine.model.onnx_input import ort_message

    return ort_message(e, limit)


def run_worker(job_fn, job, src: str, *, progress=None, **kw) -> dict:
    """run_in_child(job_fn, job, ...) for a benchmark worker that checks the model with `problem`
    first (reporting STAGE) and returns {"model_error": line} for a bad model. Raises ModelError
    for that, and for a worker that died or hung while ONNX Runtime ran; another failure of the
    worker is the payload {"error": message}. Cancelled passes through."""
    import tempfile

    from engine.util.child import ChildFailed, WorkerFault, run_in_child

    with tempfile.TemporaryDirectory(prefix="fuselens-ort-") as d:
        marker = os.path.join(d, "running")
        try:
            payload = run_in_child(job_fn, {**job, MARKER: marker}, progress=progress, **kw)
        except WorkerFault:   # stopped, stuck, or a limit of the system: the command's one line (exit 2)
            raise
        except ChildFailed as e:
            if not os.path.exists(marker):
                return {"error": str(e)}
            raise ModelError(src, f"ONNX Runtime crashed or hung running the model ({e})") from None
    if payload.get("model_error"):
        from engine.util import faults

        fault = faults.resource_fault(payload["model_error"])   # ONNX Runtime could not start its threads:
        if fault:                                               # the system's limit, not the model's fault
            raise WorkerFault(fault)
        raise ModelError(src, payload["model_error"])
    return payload


def sensitivity(graph, inputs) -> float | None:
    """How far the model's outputs move when every float value in it moves by about one ulp, as ONNX
    Runtime computes it: the model is run as it is and with its float inputs nudged up by one ulp
    (numpy.nextafter) and every float value a node makes scaled by 1 + 2^-23 (the rounding a build that
    adds in another order differs by). The largest absolute change over finite outputs; None where
    ONNX Runtime cannot run it (engine/measure/check.within_sensitivity)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from engine.model.loader import frozen_path


    inputs = [np.asarray(v) for v in inputs]
    nudged = [np.nextafter(v, np.inf).astype(v.dtype) if v.dtype.kind == "f" else v for v in inputs]
    try:
        model = onnx.load(str(frozen_path(graph)))
        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.intra_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # the nudges stay where put
        plain = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        shaken = ort.InferenceSession(_nudged_model(model).SerializeToString(), so, providers=["CPUExecutionProvider"])
        a = plain.run(None, ort_feed(plain, graph, inputs))
        b = shaken.run(None, ort_feed(shaken, graph, nudged))
    except Exception:  # noqa: BLE001 - no measure of it: the check stays as it was
        return None
    diffs = [np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)) for x, y in zip(a, b)]
    finite = [d[np.isfinite(d)] for d in diffs]
    return max((float(d.max()) for d in finite if d.size), default=None)


def _nudged_model(model):
    """`model` with every float32 value a node makes multiplied by 1 + 2^-23 (a Mul after the node)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in [*inferred.graph.value_info, *inferred.graph.output]}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    g.initializer.append(numpy_helper.from_array(np.array(1 + 2.0 ** -23, np.float32), "fuselens_nudge"))
    nodes = []
    for k, n in enumerate(g.node):
        nodes.append(n)
        for j, o in enumerate(n.output):
            if o and types.get(o) == onnx.TensorProto.FLOAT:
                raw = f"{o}__fuselens_raw{k}"
                n.output[j] = raw
                nodes.append(helper.make_node("Mul", [raw, "fuselens_nudge"], [o]))
    del g.node[:]
    g.node.extend(nodes)
    return m
