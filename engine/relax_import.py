"""ONNX -> prepared Relax module: TVM's ONNX frontend, then the passes that give every op a TIR
function and a pattern kind (DecomposeOpsForInference, LegalizeOps, AnnotateTIROpPattern,
FoldConstant, DeadCodeElimination).

It also records, for every Relax variable the importer emitted, the ONNX node it came from.
"""
from __future__ import annotations

import contextlib
import io
import warnings

import onnx

from .errors import ModelError


def supported_ops() -> set[str]:
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    return set(_get_convert_map()) | {"If", "Constant"}


def check_ops(model: onnx.ModelProto, src: str) -> None:
    """Name the first op (and its node) that TVM's ONNX frontend cannot import."""
    ok = supported_ops()
    for i, n in enumerate(model.graph.node):
        if n.op_type not in ok or (n.domain not in ("", "ai.onnx")):
            where = f"node {n.name!r}" if n.name else f"node #{i}"
            dom = f" (domain {n.domain})" if n.domain not in ("", "ai.onnx") else ""
            raise ModelError(src, f"operator {n.op_type}{dom} at {where} is not supported by TVM's ONNX importer")


@contextlib.contextmanager
def quiet_native_stderr():
    """Silence what TVM's C++ side prints on fd 2 (e.g. BlockBuilder warnings after a failed import),
    so a failure reaches the user as our one line only. Set FUSELENS_DEBUG=1 to keep it."""
    import os
    import sys
    import tempfile

    import threading

    # fd 2 is the whole process's: only the main thread (the command line) may borrow it; an app
    # importing in a worker thread keeps its terminal output.
    if os.environ.get("FUSELENS_DEBUG") or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _quiet_stdout():
    """The frontend prints on failure; swallow it on the main thread only (sys.stdout is global)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        return contextlib.redirect_stdout(io.StringIO())
    return contextlib.nullcontext()


def to_relax(model: onnx.ModelProto, src: str):
    """Import and prepare. Returns (module, {relax var name: ONNX node name})."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import onnx_frontend as fe

    check_ops(model, src)
    provenance: dict[str, str] = {}
    current = {"name": None}
    orig_convert, orig_emit = fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit

    def convert(self, op_name, inputs, attrs, opset):
        current["name"] = attrs.get("tvm_custom", {}).get("name") or op_name
        sym = orig_convert(self, op_name, inputs, attrs, opset)
        # Bind the result now, so its variable (and so its provenance) exists; the frontend would
        # otherwise nest it into the next op's call and bind it later under a fresh name.
        if isinstance(sym, relax.Call):
            sym = self.bb.emit(sym)
        return sym

    def emit(self, expr, name_hint=""):
        var = orig_emit(self, expr, name_hint)
        if current["name"]:
            provenance.setdefault(var.name, current["name"])
        return var

    orig_emit_output = relax.BlockBuilder.emit_output

    def emit_output(self, output, name_hint=""):
        var = orig_emit_output(self, output, name_hint)
        if isinstance(output, relax.Var) and output.name in provenance:
            provenance.setdefault(var.name, provenance[output.name])
        return var

    fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit = convert, emit
    relax.BlockBuilder.emit_output = emit_output
    failure = None
    try:
        with warnings.catch_warnings(), _quiet_stdout(), quiet_native_stderr():
            warnings.simplefilter("ignore")
            try:
                mod = fe.from_onnx(model, keep_params_in_input=False)
            except Exception as e:  # noqa: BLE001 - any importer failure is the user's one line
                node = f" (at ONNX node {current['name']!r})" if current["name"] else ""
                failure = f"TVM's ONNX importer failed{node}: {_short(e)}"
            if failure is None:
                try:
                    mod = prepare(mod)
                except Exception as e:  # noqa: BLE001
                    failure = f"TVM could not lower the model: {_short(e)}"
            import gc

            gc.collect()  # the failed importer's BlockBuilder warns on destruction: let it, quietly
    finally:
        fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit = orig_convert, orig_emit
        relax.BlockBuilder.emit_output = orig_emit_output
    if failure:
        raise ModelError(src, failure)
    return mod, provenance


def prepare(mod):
    from tvm import relax, transform

    from .fold_constants import fold_constant_calls

    mod = transform.Sequential([
        relax.transform.CanonicalizeBindings(),  # drops the var-to-var aliases our early binding adds
        relax.transform.DecomposeOpsForInference(),
        # BatchNorm decomposes to `t = (y, mean, var); y0 = t[0]`; the Opaque tuple would keep every
        # conv+BN group from its activation (ResNet-50: 159 FuseOps groups instead of 57).
        relax.transform.CanonicalizeBindings(),
        relax.transform.DeadCodeElimination(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
    ])(mod)
    mod = fold_constant_calls(mod)  # the same result as FoldConstant, in one build instead of hundreds
    return transform.Sequential([
        relax.transform.FoldConstant(),
        relax.transform.DeadCodeElimination(),
    ])(mod)


def _short(e: Exception) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    # TVM errors end with the useful line; Python ones start with it.
    msg = lines[-1] if lines and "Traceback" in lines[0] else (lines[0] if lines else type(e).__name__)
    return msg[:300]
