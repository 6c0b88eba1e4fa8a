"""The latency-delta overlay side by side: each group coloured by how much faster or slower the other
plan runs its operators (engine/report/plan_delta.py), with a legend, switched from the Differences panel."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")


def test_side_by_side_delta_overlay_colours_and_legend(new_window, qtbot):
    from gui.graph.legend import delta_colour
    from tests.support.gui_helpers import TIMEOUT_MS, open_graph, settle, shot
    from tests.support.synthetic import chain

    win = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, win, chain(30))
    win.set_right_strategy("none")
    win.set_side_by_side(True)
    settle(qtbot, win)
    qtbot.waitUntil(lambda: win.rview.scene().plan is win.doc.plans.get("none"), timeout=TIMEOUT_MS)
    greedy, none = win.doc.plans["greedy"], win.doc.plans["none"]
    sc = win.view.scene()
    assert not win.view.delta_legend.isVisible()
    win.diffs.delta_box.setChecked(True)        # the user ticks the box: the overlay's state, then the panes
    assert win.overlays.delta.on
    assert win.view.delta_legend.isVisible() and win.rview.delta_legend.isVisible()
    # one meaning in both panes (issue 30, item 12): both legends speak of the right plan against the left
    assert win.view.delta_legend.other == win.rview.delta_legend.other == "none"
    where = none.group_of()
    multi = [gi for gi, g in enumerate(greedy.groups) if len(g) > 1]
    assert multi
    for gi in multi:
        members = greedy.groups[gi]
        ratio = sum(none.group_us[where[m]] for m in members) / greedy.group_us[gi]
        assert sc.node_colours[members[0]].rgb() == delta_colour(ratio).rgb()
    # the unfused plan is slower for fused groups: red (in both panes)
    assert any(sc.node_colours[greedy.groups[gi][0]].red() > sc.node_colours[greedy.groups[gi][0]].blue()
               for gi in multi)
    shot(win, "delta-overlay.png")
    win.overlays.delta.on = False                 # the state changes: the box and the panes follow
    assert not win.diffs.delta_box.isChecked() and not win.view.delta_legend.isVisible()
    assert sc.heat is None

