"""Collapse All and Whole Graph fit what is drawn: the scene, the scroll range, the minimap and the
view follow the compact layout, not the size the graph had expanded."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
from tests.support.gui_helpers import TIMEOUT_MS, open_graph, settle  # noqa: E402
from tests.support.synthetic import chain  # noqa: E402


def test_collapse_all_and_whole_graph_refit_scene_and_minimap(new_window, qtbot):
    win = new_window(size=(1200, 800), strategy="greedy")
    open_graph(qtbot, win, chain(90))
    qtbot.waitUntil(lambda: win.view.scene().plan is win.doc.plans.get("greedy"), timeout=TIMEOUT_MS)
    sc, view = win.view.scene(), win.view
    full_h = sc.sceneRect().height()
    win.view.minimap.rebuild_now()
    full_scale = win.view.minimap.xform[0]
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())   # at the bottom of the long graph
    with qtbot.waitSignal(win.layout_applied, timeout=TIMEOUT_MS):
        win.collapse_all()
    settle(qtbot, win)
    content = sc.content_rect()
    assert sc.collapsed and content.height() < full_h / 2
    # the scene spans what is drawn, so the scroll range and the minimap do too
    assert sc.sceneRect().height() < content.height() + 100
    win.view.minimap.rebuild_now()
    assert win.view.minimap.xform[0] > 1.5 * full_scale
    # the view was left below the compact graph: it is fitted again
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.intersects(content)
    win.zoom_views("fit_all")                     # Whole Graph: the compact graph fills the view
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(content) and shown.height() < 1.3 * content.height() + 60 or \
        shown.width() < 1.3 * content.width() + 60
