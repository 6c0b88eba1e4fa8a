import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def pytest_collection_modifyitems(config, items):
    """The tier of a test is its folder: tests/unit (fast, headless: `make test-fast`), tests/gui (the
    app, offscreen), tests/integration (whole-model builds, benchmarks, tuning, boards, CLI processes
    that build, fuzzing with processes). Integration tests are also marked `slow`, so
    -m "not slow" keeps meaning what it did."""
    for item in items:
        if Path(str(item.fspath)).parent.name == "integration":
            item.add_marker(pytest.mark.slow)


def onnx_light(name: str) -> Path:
    """Real-world architectures that ship with the onnx package (weights as ConstantOfShape)."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


@pytest.fixture
def tiny_model(tmp_path):
    """conv -> relu -> add(relu, conv) -> split -> mul, with a dynamic batch dim."""
    from tests.support.models import tiny_onnx

    p = tmp_path / "tiny.onnx"
    import onnx

    onnx.save(tiny_onnx(), p)
    return p


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """Every cache (models, results, kernels, tuning records) in a private folder; spawned workers
    and CLI subprocesses inherit it through the environment."""
    from engine.model import loader

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader.clear_memo()
    yield tmp_path / "cache"
    loader.clear_memo()


@pytest.fixture
def new_window(qapp, qtbot, tmp_path, private_cache):
    """A factory of fresh main windows for the app's tests (tests/gui_helpers.py drives them):
    new_window(settings file name, size, **settings to preset: profile, strategy, cost, ...) makes one as
    gui.app.run does, with its own settings file in the test's folder (tmp_path) and the test's private
    caches. All are closed, and their workers waited for, at the end of the test."""
    from PySide6 import QtCore

    from engine.layout import cache as layout_cache
    from gui import app, style, tasks
    from gui.main_window import MainWindow
    from gui.settings import Settings

    layout_cache.forget_in_memory()
    made = []

    def make(name: str = "settings.ini", size=(1400, 900), **preset):
        style.apply_scheme(qapp)
        app.prepare()  # what gui.app.run does before showing the window
        settings = Settings(QtCore.QSettings(str(tmp_path / name), QtCore.QSettings.IniFormat))
        for k, v in preset.items():
            setattr(settings, k, v)
        w = MainWindow(settings)
        qtbot.addWidget(w)
        w.resize(*size)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()
    tasks.wait_all(60000)
    layout_cache.forget_in_memory()


@pytest.fixture
def run_cli(tmp_path):
    """tests/support/cli.py's run_cli (`main.py ARGS` in a child: a clean environment, stdin from
    /dev/null, a timeout that fails the test) with this test's own cache folder unless `cache=` says."""
    from tests.support import cli

    def run(*args, cache=None, **kw):
        return cli.run_cli(*args, cache=tmp_path / "cache" if cache is None else cache, **kw)

    return run
