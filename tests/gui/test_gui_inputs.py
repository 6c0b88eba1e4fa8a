"""The app's input dialog beyond dynamic dims: an input whose value chooses an If's branch gets a
value field (the CLI's --input-value), and declared fixed dims can be overridden
(--override-fixed-dims), both end to end through opening the model."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from tests.support.gui_helpers import open_model

pytest.importorskip("pytestqt")
from PySide6 import QtWidgets  # noqa: E402


def _branchy(path):
    """y = (x * 2 if sr == 16000 else relu(x)) + x, with x fixed at [1, 8]."""
    then = h.make_graph([h.make_node("Mul", ["x", "c2"], ["t"])], "then", [], [h.make_tensor_value_info("t", T.FLOAT, [1, 8])],
                        initializer=[numpy_helper.from_array(np.array(2, np.float32), "c2")])
    other = h.make_graph([h.make_node("Relu", ["x"], ["e"])], "else", [], [h.make_tensor_value_info("e", T.FLOAT, [1, 8])])
    nodes = [h.make_node("Equal", ["sr", "k"], ["cond"]),
             h.make_node("If", ["cond"], ["y0"], name="resample", then_branch=then, else_branch=other),
             h.make_node("Add", ["y0", "x"], ["y"], name="add")]
    g = h.make_graph(nodes, "vad", [h.make_tensor_value_info("x", T.FLOAT, [1, 8]),
                                    h.make_tensor_value_info("sr", T.INT64, [])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 8])],
                     initializer=[numpy_helper.from_array(np.array(16000, np.int64), "k")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def _answer(monkeypatch, fill):
    from gui import dialogs

    seen = []

    def fake_exec(self):
        seen.append(self)
        fill(self)
        self.findChild(QtWidgets.QDialogButtonBox).button(QtWidgets.QDialogButtonBox.Ok).click()   # as a user
        return self.result()

    monkeypatch.setattr(dialogs.ShapesDialog, "exec", fake_exec)
    return seen


def test_an_input_that_chooses_a_branch_is_asked_for_its_value(new_window, qtbot, tmp_path, monkeypatch):
    path = tmp_path / "vad.onnx"
    _branchy(path)
    seen = _answer(monkeypatch, lambda d: d.edits["sr"].setText("16000"))
    win = new_window()
    open_model(qtbot, win, path)
    (dlg,) = seen
    assert dlg.value_inputs == ["sr"] and list(dlg.edits) == ["x", "sr"]
    assert win.doc.shapes == {"x": [1, 8], "sr": {"value": [16000]}}
    assert win.doc.graph.input_values == {"sr": [16000]}
    assert any("kept the then branch" in n for n in win.doc.graph.import_notes)
    assert win.settings.shapes_for(str(path)) == {"x": [1, 8], "sr": {"value": [16000]}}


def test_a_bad_value_keeps_the_dialog_open_with_one_line(qtbot):
    from gui.dialogs import ShapesDialog

    dlg = ShapesDialog("<b>m</b>.onnx", [("x", [1, 8]), ("sr", [])], values=["sr"])
    qtbot.addWidget(dlg)
    dlg.edits["sr"].setText("sixteen")
    assert dlg.shapes() is None and dlg.error.text() == "sr: a value, or values separated by commas"


def test_fixed_dims_are_overridden_only_when_asked(qtbot):
    from gui.dialogs import ShapesDialog

    dlg = ShapesDialog("face.onnx", [("input", [10, 3, 32, 32])])
    qtbot.addWidget(dlg)
    assert dlg.override.isVisibleTo(dlg)
    dlg.edits["input"].setText("1,3,480,640")
    assert dlg.shapes() is None and "fixed to 10 in the file (tick Override" in dlg.error.text()
    dlg.override.setChecked(True)
    assert dlg.shapes() == {"input": {"dims": [1, 3, 480, 640], "override": True}}
