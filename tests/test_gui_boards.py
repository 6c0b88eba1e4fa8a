"""The app's cost-model profile follows the selected device: a fresh window on the CPU plans with the
host profile; picking a board (an RPC device tied to `rpi4b`) re-plans with the Pi's profile; back on
the CPU, the host's again."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")

from tests.test_gui import env, make_window, settle  # noqa: E402,F401 - env: a fixture
from tests.test_gui_measured import choose  # noqa: E402

BOARD = "rpc://127.0.0.1:1/lab?device=rpi4b"   # nothing listens there: listed, unreachable


@pytest.fixture
def win(qapp, env, tmp_path, tiny_model):  # noqa: F811
    old = os.environ.get("FUSELENS_RPC")
    os.environ["FUSELENS_RPC"] = BOARD
    w = make_window(qapp, tmp_path / "settings.ini")
    w.open_model(str(tiny_model))
    settle(w)
    yield w
    from gui import worker

    w.close()
    worker.wait_all(60000)
    if old is None:
        os.environ.pop("FUSELENS_RPC", None)
    else:
        os.environ["FUSELENS_RPC"] = old


def test_profile_follows_the_device(qtbot, win):
    assert win.settings.profile == "host" and win.doc.hw.name == "host"
    qtbot.waitUntil(lambda: win.device_box.findData(BOARD) >= 0, timeout=60000)
    with qtbot.waitSignal(win.plans_changed, timeout=120000):
        choose(win.device_box, BOARD)
    qtbot.waitUntil(lambda: win.doc.hw.name == "rpi4b", timeout=120000)
    assert win.profile_box.currentData() == "rpi4b" and win.settings.profile == "rpi4b"
    assert win.doc.plans["dp"].hardware == win.doc.plans["greedy"].hardware == "rpi4b"
    with qtbot.waitSignal(win.plans_changed, timeout=120000):
        choose(win.device_box, "cpu")
    qtbot.waitUntil(lambda: win.doc.hw.name == "host", timeout=120000)
    assert win.profile_box.currentData() == "host"
