"""Issue 30, the command line (items 13, 14): a mistyped command or option says what was meant; the
dynamic-dims hint is one readable sentence, with the example dims the app's dialog offers.

In-process (main.main), no model is loaded or built: fast."""

import pytest


def _dynamic_model(path, dims, conv=True):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"o{k}" for k in range(len(dims))])
    if conv:
        w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.zeros(108, np.float32))
        g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "c", [x], [y], [w])
    else:
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "c", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return onnx.load(path)


@pytest.mark.parametrize("dims, conv, want", [
    ([1, 3, None, None], True, "--input-shape x=1,3,224,224 (224 for dims 2 and 3 of x is only an example: "
                               "give the sizes you use)"),
    (["N", "C", "H", "W"], True, "--input-shape x=1,3,224,224 (224 for H and W is only an example: give the sizes "
                                 "you use)"),
    (["batch", "seq", "hidden"], False, "--input-shape x=1,128,1 (128 for seq and 1 for hidden are only examples: "
                                        "give the sizes you use)"),
])
def test_the_dims_hint_is_one_sentence_with_the_dialogs_dims(dims, conv, want, tmp_path, qtbot):
    from engine.jobs.open_model import NeedShapes, read
    from engine.model import onnx_input
    from engine.util.errors import ModelError
    from gui.dialogs import ShapesDialog

    path = tmp_path / "m.onnx"
    m = _dynamic_model(path, [d if d is not None else "" for d in dims], conv)
    with pytest.raises(ModelError) as e:
        onnx_input.resolve_shapes(m, {}, "m.onnx")
    assert str(e.value).endswith(want), str(e.value)
    r = read(str(path), None, None)          # what the app gets before it asks
    assert isinstance(r, NeedShapes)
    dlg = ShapesDialog("m.onnx", r.inputs, None, examples=r.examples)
    qtbot.addWidget(dlg)
    suggested = want.split("x=", 1)[1].split(" ", 1)[0]
    assert dlg.edits["x"].text() == suggested, (dlg.edits["x"].text(), suggested)

