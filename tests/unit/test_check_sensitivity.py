"""An ill-conditioned model (dynamic quantization rounds borderline values to the next 8-bit step):
a build that misses the tolerance by no more than the model's own response to a one-ulp input change
passes as 'yes (ill-conditioned)', never plain 'yes'; anything larger is still NO."""
from __future__ import annotations

import numpy as np

from engine.measure import check


def test_an_error_within_the_models_own_sensitivity_passes_as_ill_conditioned():
    ref = [np.array([0.0, 1.0, 2.0], np.float32)]
    out = [np.array([0.0, 1.0, 2.05], np.float32)]
    c = check.compare(out, ref)
    assert not c.correct and abs(c.err - 0.05) < 1e-6
    assert check.within_sensitivity(c, 0.01) is c                 # the model moves less than the error: NO
    assert check.within_sensitivity(c, None) is c                 # not measured: NO
    ok = check.within_sensitivity(c, 0.08)
    assert ok.correct and ok.sensitivity == 0.08

    class R:  # a BenchResult's fields as check.text reads them
        correct, nan_matched, weak_check, sensitivity = True, 0, False, 0.08

    assert check.text(R) == "yes (ill-conditioned)"
    assert "ill-conditioned (dp)" in check.notes({"dp": type("B", (R,), {"error": None})})[0]


def test_a_nan_or_shape_mismatch_never_passes_by_sensitivity():
    c = check.compare([np.array([np.nan], np.float32)], [np.array([1.0], np.float32)])
    assert check.within_sensitivity(c, 1e9) is c and not c.correct
    c = check.compare([np.zeros(2, np.float32)], [np.zeros(3, np.float32)])
    assert check.within_sensitivity(c, 1e9) is c and not c.correct


def test_sensitivity_is_what_onnx_runtime_says_of_a_one_ulp_nudge(tmp_path):
    """A model that rounds x to whole numbers jumps by a whole step where x sits one ulp below a half: the
    nudge moves it across; a smooth model (x * 3) moves by about one ulp."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from engine.measure import ort_check
    from engine.model import loader

    def model(path, rounding):
        nodes = [h.make_node("Mul", ["x", "k"], ["m"])] + (
            [h.make_node("Round", ["m"], ["y"])] if rounding else [h.make_node("Identity", ["m"], ["y"])])
        k = 1.0 if rounding else 3.0
        g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [4])],
                         [h.make_tensor_value_info("y", T.FLOAT, [4])],
                         initializer=[numpy_helper.from_array(np.array(k, np.float32), "k")])
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)

    x = [np.array([np.nextafter(np.float32(1.5), np.float32(0)), 1.2, 2.7, -0.1], np.float32)]  # 1.5-: rounds to 1
    model(tmp_path / "r.onnx", True)
    model(tmp_path / "s.onnx", False)
    rough = ort_check.sensitivity(loader.load(str(tmp_path / "r.onnx"), use_cache=False), x)
    smooth = ort_check.sensitivity(loader.load(str(tmp_path / "s.onnx"), use_cache=False), x)
    assert abs(rough - 1.0) < 1e-5     # 1.4999999 -> 1.5 rounds (to even) a whole step up, to 2
    assert 0 < smooth < 1e-5
