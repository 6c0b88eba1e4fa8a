"""Collapsed groups and the selection live in the ViewState, and the panes and the Properties panel
only follow it: set the state and they redraw; click, double-click or use the commands and the state
changes. Each test has a fresh window on a small synthetic graph."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
from gui.view_state import Selected  # noqa: E402
from tests.gui_helpers import TIMEOUT_MS, open_graph  # noqa: E402
from tests.synthetic import branching  # noqa: E402


@pytest.fixture
def win(new_window, qtbot):
    """A fresh window on a small synthetic graph with greedy shown, laid out and idle."""
    w = new_window(size=(1200, 800), strategy="greedy")
    open_graph(qtbot, w, branching(40))
    qtbot.waitUntil(lambda: w.view.scene().plan is w.doc.plans.get("greedy"), timeout=TIMEOUT_MS)
    return w


def multi_groups(plan):
    return [gi for gi, g in enumerate(plan.groups) if len(g) > 1]


def test_setting_the_state_collapses_the_left_pane_and_a_toggle_keeps_it(win, qtbot):
    sc = win.view.scene()
    greedy = win.doc.plans["greedy"]
    gi = multi_groups(greedy)[0]
    members = greedy.groups[gi]
    win.state.collapsed = frozenset({frozenset(members)})         # nothing but the model is told
    assert sc.collapsed == {gi} and gi in sc.collapsed_items
    assert all(not sc.nodes[m].isVisible() for m in members) and gi not in sc.boxes

    win.set_strategy("none")                                        # a plan without that group
    qtbot.waitUntil(lambda: sc.plan is win.doc.plans["none"], timeout=TIMEOUT_MS)
    assert sc.collapsed == set() and all(sc.nodes[m].isVisible() for m in members)
    win.set_strategy("greedy")                                      # back: the group is collapsed again
    qtbot.waitUntil(lambda: sc.plan is greedy and not win.busy, timeout=TIMEOUT_MS)
    assert sc.collapsed == {gi}

    win.state.collapsed = frozenset()
    assert sc.collapsed == set() and all(sc.nodes[m].isVisible() for m in members) and gi in sc.boxes


def test_commands_change_the_state_and_the_compact_layout_follows(win, qtbot):
    greedy = win.doc.plans["greedy"]
    multi = multi_groups(greedy)
    win.collapse_group(multi[0])
    assert win.state.collapsed == {frozenset(greedy.groups[multi[0]])}
    assert win.state.selection == Selected(("collapsed", multi[0]), None, "left")
    qtbot.waitUntil(lambda: not win.busy and win.layouts.compact, timeout=TIMEOUT_MS)
    assert win.props.values()["group"].startswith(f"{multi[0]}:")
    assert not win.statusBar().currentMessage().startswith("laying out")   # no stage left standing
    win.collapse_all()
    assert win.state.collapsed_in(greedy) == set(multi) == win.view.scene().collapsed
    win.expand_all()
    assert win.state.collapsed == frozenset() and win.view.scene().collapsed == set()
    qtbot.waitUntil(lambda: not win.busy and not win.layouts.compact, timeout=TIMEOUT_MS)
    win.collapse_group(next(gi for gi, g in enumerate(greedy.groups) if len(g) == 1))
    assert win.state.collapsed == frozenset()      # a single-op group has nothing to collapse


def test_the_panes_and_properties_follow_the_selection(win, qtbot):
    left, right = win.view.scene(), win.rview.scene()
    win.set_right_strategy("none")
    win.set_side_by_side(True)
    qtbot.waitUntil(lambda: not win.busy and right.plan is win.doc.plans["none"], timeout=TIMEOUT_MS)
    nid = win.doc.graph.nodes[3].id
    win.state.select(("node", nid), ("node", nid), "right")
    assert left.selected == right.selected == ("node", nid)
    assert win.props.values()["id"] == nid and win.props.values()["group"].startswith(
        str(win.doc.plans["none"].group_of()[nid]))           # the right pane's plan describes it

    gi = multi_groups(win.doc.plans["greedy"])[0]
    win.selection.activate(win.view, ("group", gi))          # a click on a group in the left pane
    assert win.state.selection == Selected(("group", gi), None, "left")
    assert right.selected is None and win.props.values()["group"].startswith(f"{gi}:")

    win.set_strategy("dp")                                   # another plan: its group indices differ
    assert win.state.selection.left is None
    assert "Click an operator" in win.props.topLevelItem(0).text(0)

    win.select_node(nid)                                      # find / a member row: both panes
    assert left.selected == right.selected == ("node", nid)
    win.set_side_by_side(False)
    assert win.state.selection == Selected(("node", nid), None, "left") and right.selected is None

    with qtbot.waitSignal(win.model_loaded, timeout=TIMEOUT_MS):   # another model: nothing carries over
        win.open_graph(branching(24))
    assert win.state.selection == Selected() and win.state.collapsed == frozenset()


def test_a_scene_that_follows_a_state_refuses_to_be_selected_directly(win):
    with pytest.raises(RuntimeError):
        win.view.scene().select(("node", win.doc.graph.nodes[0].id))
