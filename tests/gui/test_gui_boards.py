"""The app's cost-model profile follows the selected device: a fresh window on the CPU plans with the
host profile; picking a board (an RPC device tied to `rpi4b`) re-plans with the Pi's profile; back on
the CPU, the host's again. (Planning only: a small generated graph will do.)"""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import open_graph  # noqa: E402
from tests.support.gui_measured import choose  # noqa: E402

BOARD = "rpc://127.0.0.1:1/lab?device=rpi4b"   # nothing listens there: listed, unreachable


@pytest.fixture
def win(new_window, qtbot, monkeypatch):
    monkeypatch.setenv("FUSELENS_RPC", BOARD)
    w = new_window()
    open_graph(qtbot, w, synthetic.chain(12))
    return w


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
