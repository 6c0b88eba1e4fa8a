"""What tests/{integration,unit}/test_cli_hardening.py shares between its tiers and with other test
modules (the area is described there)."""

from pathlib import Path
import onnx
from onnx import TensorProto, helper
from engine.model import onnx_input, zoo
from tests.conftest import ROOT
from tests.support.cli import cli_env, one_line, run_cli  # noqa: F401 (run_cli, one_line: shared with the tests)


SMALL = "zoo:mobilenetv2@32"


def no_work_done(cache: Path) -> None:
    """Nothing was loaded, imported or built: the cache has no model, zoo file or result."""
    for kind in ("models", "zoo", "results", "kernels"):
        d = cache / kind
        assert not d.exists() or not any(d.iterdir()), f"work was done before the error: {list(d.iterdir())}"


def _save(model, path):
    onnx.save(model, path)
    return path


def _opset_model(tmp_path, v):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", v)]), tmp_path / f"opset{v}.onnx")

