"""Collapsed groups and the selection live in the ViewState, and the panes and the Properties panel
only follow it: set the state and they redraw; click, double-click or use the commands and the state
changes. Each test has a fresh window on a small synthetic graph."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
from gui.view_state import Selected  # noqa: E402
from tests.support.gui_helpers import TIMEOUT_MS, open_graph  # noqa: E402
from tests.support.synthetic import branching  # noqa: E402


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
    win.selection.activate("left", ("group", gi))          # a click on a group in the left pane
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


def boxed(sc) -> set[int]:
    """The fused groups the pane draws a box round."""
    return set(sc.boxes)


def test_the_panes_follow_the_strategies_with_nothing_but_the_state_told(win, qtbot):
    """The panes subscribe to the ViewState (GraphArea.follow): an assignment alone redraws them, with
    no call on the window or a controller."""
    left, right = win.view.scene(), win.rview.scene()
    greedy, none = win.doc.plans["greedy"], win.doc.plans["none"]
    assert boxed(left) == set(multi_groups(greedy)) != set()
    win.state.strategy = "none"
    assert left.plan is none and boxed(left) == set()          # single-op kernels: no group boxes
    assert win.strategy_box.currentData() == "none" and f"{none.kernels} kernels" in \
        win.statusBar().currentMessage()                      # the box and the status line follow too
    with qtbot.waitSignal(win.area.plan_shown, timeout=TIMEOUT_MS) as shown:
        win.state.strategy = "greedy"
    assert shown.args == ["greedy"]
    assert left.plan is greedy and boxed(left) == set(multi_groups(greedy))
    win.state.right_strategy = "none"
    win.state.side_by_side = True                             # the right pane shows, at the left's positions
    qtbot.waitUntil(lambda: not win.busy and right.plan is none, timeout=TIMEOUT_MS)
    assert not win.area.right_pane.isHidden() and right.other_plan is greedy and left.other_plan is none
    win.state.right_strategy = "dp"
    qtbot.waitUntil(lambda: right.plan is win.doc.plans["dp"], timeout=TIMEOUT_MS)
    assert left.other_plan is win.doc.plans["dp"]
    win.state.side_by_side = False
    assert win.area.right_pane.isHidden() and left.other_plan is None


def test_a_plan_that_changes_in_the_document_is_redrawn_where_it_is_shown(win, qtbot):
    """A re-plan only tells the Document (Document.add_plans emits events.plans): the pane showing
    that strategy redraws with the new plan's groups, one not shown is left alone."""
    import copy

    left = win.view.scene()
    greedy, none = win.doc.plans["greedy"], win.doc.plans["none"]
    assert multi_groups(greedy) and not multi_groups(none)
    with qtbot.assertNotEmitted(left.plan_changed):
        win.doc.add_plans({"dp": copy.copy(none)})              # not shown: nothing redraws
    assert left.plan is greedy
    replanned = copy.copy(none)
    replanned.strategy = "greedy"
    win.doc.add_plans({"greedy": replanned})
    assert left.plan is replanned and boxed(left) == set()
    assert win.statusBar().currentMessage().startswith("greedy: ")
