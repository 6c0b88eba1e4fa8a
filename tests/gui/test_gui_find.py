"""Find and the single-key shortcuts (issue 21): at the app's default 1400x900, at 1920x1080 and with
a larger font, the find box is whole and visible (not squeezed to "Fi..." nor in the toolbar's overflow),
Ctrl+F focuses it, and the letters typed then go into it, not to "n" (next difference) or "c" (collapse)."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtWidgets  # noqa: E402

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import open_graph, shot  # noqa: E402


def _whole_and_visible(w, widget) -> bool:
    QtWidgets.QApplication.processEvents()
    top_left = widget.mapTo(w, QtCore.QPoint(0, 0))
    inside = w.rect().contains(QtCore.QRect(top_left, widget.size()))
    return widget.isVisible() and inside and widget.visibleRegion().boundingRect() == widget.rect()


@pytest.mark.parametrize("size,point_size", [((1400, 900), None), ((1920, 1080), None), ((1400, 900), 14)])
def test_ctrl_f_focuses_a_whole_find_box_and_typing_goes_into_it(new_window, qtbot, size, point_size):
    w = new_window(profile="t4", strategy="greedy", size=size)
    if point_size:   # a desktop's larger font: the toolbar outgrows the window
        f = w.font()
        f.setPointSize(point_size)
        w.setFont(f)
    open_graph(qtbot, w, synthetic.residual(56))
    w.set_side_by_side(True)   # so "n" has a difference to go to
    assert _whole_and_visible(w, w.find_edit) and w.find_edit.width() >= 150, \
        (w.find_edit.isVisible(), w.find_edit.width(), w.find_edit.visibleRegion().boundingRect())
    fired = []
    for key, a in (("n", w.acts["diff_next"]), ("c", w.acts["collapse"]), ("f", w.acts["fit"]), ("h", w.acts["heat"])):
        a.triggered.connect(lambda *_, key=key: fired.append(key))
    w.view.setFocus()
    qtbot.keyClick(w.view, QtCore.Qt.Key_N)
    assert fired == ["n"]          # the shortcut works where no text field has the focus
    fired.clear()
    qtbot.keyClick(w.view, QtCore.Qt.Key_F, QtCore.Qt.ControlModifier)
    assert QtWidgets.QApplication.focusWidget() is w.find_edit
    typed_into = QtWidgets.QApplication.focusWidget()   # where a user's keys go
    qtbot.keyClicks(typed_into, "conv")
    qtbot.keyClicks(typed_into, "nchf")
    assert w.find_edit.text() == "convnchf" and fired == [], fired
    w.find_edit.setText("conv2d")
    assert w.finder.hits and w.find_label.text().strip() == f"1/{len(w.finder.hits)}"
    shot(w, f"find-{size[0]}x{size[1]}{'-font' + str(point_size) if point_size else ''}.png")
