"""Issue 30, the command line (items 13, 14): a mistyped command or option says what was meant; the
dynamic-dims hint is one readable sentence, with the example dims the app's dialog offers.

In-process (main.main), no model is loaded or built: fast."""
import pytest

import cli.commands.gui
import main
from cli import USAGE


@pytest.fixture
def gui_opened(monkeypatch):
    """cli/commands/gui.py's run replaced: a test fails, instead of opening the app, where it would have."""
    calls = []
    monkeypatch.setattr(cli.commands.gui, "run", lambda a: calls.append(a.model) or 99)
    monkeypatch.setenv("DISPLAY", ":99")
    return calls


def _err(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


@pytest.mark.parametrize("argv, want", [
    (["benc", "zoo:mobilenetv2@32"], "error: unknown command 'benc'; did you mean 'bench'?"),
    (["plna", "zoo:mobilenetv2@32"], "error: unknown command 'plna'; did you mean 'plan'?"),
    (["inspekt"], "error: unknown command 'inspekt'; did you mean 'inspect'?"),
])
def test_a_mistyped_command_says_which_was_meant(argv, want, gui_opened, capsys):
    assert main.main(argv) == USAGE
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith(want), err
    assert not gui_opened


def test_a_word_that_is_no_command_and_no_file_does_not_open_the_app(gui_opened, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main.main(["frobnicate"]) == USAGE
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith("error: unknown command 'frobnicate'"), err
    assert "did you mean" not in err[0] and "bench" in err[0]   # the commands are listed instead
    assert not gui_opened


def test_a_model_argument_still_opens_the_app(gui_opened, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "frobnicate").write_bytes(b"")    # an existing file, even without a suffix, is a model
    for arg in ("frobnicate", "zoo:mobilenetv2", "missing.onnx", "some/dir/model"):
        assert main.main([arg]) == 99
    assert gui_opened == ["frobnicate", "zoo:mobilenetv2", "missing.onnx", "some/dir/model"]


@pytest.mark.parametrize("argv, suggestion, helps", [
    (["plan", "zoo:mobilenetv2@32", "--explian"], "did you mean --explain?", "main.py plan --help"),
    (["bench", "zoo:mobilenetv2@32", "--kernals"], "did you mean --kernels?", "main.py bench --help"),
    (["zoo", "export", "vgg16", "o.onnx", "--resolutoin", "32"], "did you mean --resolution?",
     "main.py zoo export --help"),
])
def test_a_mistyped_option_points_to_its_commands_help(argv, suggestion, helps, capsys):
    with pytest.raises(SystemExit) as e:
        main.main(argv)
    assert e.value.code == USAGE
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith("error: unrecognized arguments: "), err
    assert suggestion in err[0] and err[0].endswith(f"(see {helps})"), err


# ---- 13. the dynamic-dims hint: one sentence, the app's dialog's dims ---------------------------------------

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
