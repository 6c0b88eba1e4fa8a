"""The per-kernel table's rows and linters (engine/report/kernel_table.py), and the Kernels panel that shows
them: sortable, filterable, a click selects the kernel's group in the ViewState."""
from __future__ import annotations

import pytest
from tests.support.synthetic import Builder, chain

pytest.importorskip("pytestqt")


def test_kernels_panel_sorts_filters_and_selects(new_window, qtbot):
    from tests.support.gui_helpers import TIMEOUT_MS, open_graph, shot

    win = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, win, chain(40))
    qtbot.waitUntil(lambda: win.view.scene().plan is win.doc.plans.get("greedy"), timeout=TIMEOUT_MS)
    panel = win.kernels
    plan = win.doc.plans["greedy"]
    assert panel.model.rowCount() == 0          # behind another tab: not filled (a toggle stays quick)
    win.dock_kernels.raise_()                   # in front: it catches up
    qtbot.waitUntil(lambda: panel.model.rowCount() == plan.kernels, timeout=5000)
    assert panel.model.rowCount() == plan.kernels and "fused_" not in " ".join(r.name for r in panel.rows)
    # sorted by estimated time, largest first
    from gui.panels.kernels import COLUMNS
    panel.table.sortByColumn(COLUMNS.index("estimated us"), __import__("PySide6").QtCore.Qt.DescendingOrder)
    order = panel.visible_groups()
    est = [plan.group_us[gi] for gi in order]
    assert est == sorted(est, reverse=True)
    # filtered
    panel.filter_edit.setText("relu")
    shown = panel.visible_groups()
    assert 0 < len(shown) < len(order) and all("relu" in " ".join(win.doc.graph.by_id[m].op for m in plan.groups[gi])
                                              for gi in shown)
    panel.filter_edit.clear()
    # a click selects the group in the ViewState (the panes and Properties follow)
    gi = next(gi for gi in order if len(plan.groups[gi]) > 1)
    row = order.index(gi)
    idx = panel.proxy.index(row, 1)
    rect = panel.table.visualRect(idx)
    panel.table.scrollTo(idx)
    qtbot.waitUntil(lambda: panel.table.isVisible(), timeout=5000)
    rect = panel.table.visualRect(idx)
    from PySide6 import QtCore

    qtbot.mouseClick(panel.table.viewport(), QtCore.Qt.LeftButton, pos=rect.center())
    assert win.state.selection.left == ("group", gi)
    assert win.view.scene().selected == ("group", gi)
    # and the table follows a selection made elsewhere
    other = next(g2 for g2 in order if g2 != gi and len(plan.groups[g2]) > 1)
    win.state.select(("group", other))
    cur = panel.table.selectionModel().selectedRows()
    assert cur and cur[0].data(QtCore.Qt.UserRole + 1) == other
    shot(win, "kernels-panel.png")


def test_kernels_panel_is_legible_at_1400x900(new_window, qtbot):
    """Issue 30 (11): in the bottom dock at 1400x900 the measured time is in view without scrolling,
    every kind's name is whole (no "ancho..."), and the panel shows more than 6 rows."""
    from tests.support.gui_helpers import TIMEOUT_MS, open_graph
    from gui.panels.kernels import COLUMNS, KIND_COL
    from engine.planner.kinds import KINDS

    win = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, win, chain(40))
    qtbot.waitUntil(lambda: win.view.scene().plan is win.doc.plans.get("greedy"), timeout=TIMEOUT_MS)
    win.dock_kernels.raise_()
    panel = win.kernels
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0, timeout=5000)
    qtbot.wait(50)
    t = panel.table
    for name in ("kernel", "measured us", "share"):
        c = COLUMNS.index(name)
        assert t.columnViewportPosition(c) + t.columnWidth(c) <= t.viewport().width(), (name, t.viewport().width())
    fm = t.fontMetrics()
    assert t.columnWidth(KIND_COL) >= max(fm.horizontalAdvance(k) for k in KINDS)
    assert t.viewport().height() // t.rowHeight(0) >= 8, (t.viewport().height(), t.rowHeight(0))


def test_kernels_panel_row_menu_shows_the_groups_kernel_code(new_window, qtbot, monkeypatch):
    """Issue 30: a Kernels row's context menu has Show Kernel Code, which selects the row's group and
    opens the Kernel code view on it (the view's build itself is tested in tests/{gui,integration}/test_gui_kernel_code.py)."""
    from tests.support.gui_helpers import TIMEOUT_MS, open_graph

    win = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, win, chain(40))
    qtbot.waitUntil(lambda: win.view.scene().plan is win.doc.plans.get("greedy"), timeout=TIMEOUT_MS)
    win.dock_kernels.raise_()
    panel = win.kernels
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0, timeout=5000)
    plan = win.doc.plans["greedy"]
    shown = []
    monkeypatch.setattr(win.kernel_code, "show", lambda strategy, gi, pane="left", target=None:
                        shown.append((strategy, gi, pane)))
    row = next(i for i, gi in enumerate(panel.visible_groups()) if len(plan.groups[gi]) > 1)
    gi = panel.visible_groups()[row]
    menu = panel.row_menu(panel.proxy.index(row, 0))
    assert menu is not None and [a.text() for a in menu.actions()] == ["Show Kernel Code"]
    menu.actions()[0].trigger()
    assert shown == [("greedy", gi, "left")]
    assert win.state.selection.left == ("group", gi)
    assert panel.row_menu(panel.proxy.index(-1, -1)) is None     # no row under the cursor: no menu

