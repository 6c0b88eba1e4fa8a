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

