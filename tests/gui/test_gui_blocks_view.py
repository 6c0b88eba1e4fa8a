"""Blocks and the view in the app (issue 30, items 2, 8, 9), offscreen on a generated Paddle-like graph
(its names carry no scopes: blocks from its structure): unticking Blocks lays the graph out again
without them; left to right; Find opens the collapsed block holding a match; the view keeps the
selection in place after a collapse; collapse to depth fits the graph; an imported plan with a
collapsed group gets its own compact layout (the group inside its block, no gap)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pytestqt")
from tests.support.gui_helpers import TIMEOUT_MS, open_graph, settle  # noqa: E402
from tests.support.structure_blocks import paddle_like  # noqa: E402


@pytest.fixture
def win(new_window, qtbot):
    w = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, w, paddle_like(blocks=12))
    qtbot.waitUntil(lambda: w.view.scene().plan is w.doc.plans.get("greedy") and bool(w.view.scene().scope_tree),
                    timeout=TIMEOUT_MS)
    settle(qtbot, w)
    return w


def _relaid(qtbot, w, action):
    with qtbot.waitSignal(w.layout_applied, timeout=TIMEOUT_MS):
        action()
    settle(qtbot, w)


def test_unticking_blocks_lays_out_again_and_left_to_right(win, qtbot):
    sc = win.view.scene()
    assert all(k.startswith("#") for k in sc.scope_tree) and sc.scope_boxes.boxes
    bar = win.area.scope_bar
    assert "structure" in bar.shown_box.toolTip()
    before = dict(sc.layout.pos)
    _relaid(qtbot, win, lambda: bar.shown_box.setChecked(False))
    assert not sc.scope_boxes.boxes and sc.layout.pos != before
    _relaid(qtbot, win, lambda: bar.lr_box.setChecked(True))
    assert sc.layout.direction == "LR" and sc.left_to_right
    g = win.doc.graph
    assert all(sc.nodes[n.id].x() > sc.nodes[i].x() for n in g.nodes for i in n.inputs)
    # edges leave a producer's right side
    (a, b), e = next(iter(sc.edges.items()))
    start = e.path().elementAt(0)
    assert abs(start.x - (sc.nodes[a].x() + sc.nodes[a].path().boundingRect().width() / 2)) < 4


def test_find_opens_the_collapsed_block_holding_a_match(win, qtbot):
    sc = win.view.scene()
    tree = sc.scope_tree
    key = next(k for k, s in tree.items() if s.parent is None and len(s.ops) > 4)
    _relaid(qtbot, win, lambda: win.scopes.toggle(key))
    assert key in sc.collapsed_scopes
    target = tree[key].ops[len(tree[key].ops) // 2]
    assert not sc.nodes[target].isVisible()
    _relaid(qtbot, win, lambda: win.find(target))
    assert key not in win.scope_view.collapsed and key not in sc.collapsed_scopes
    assert sc.nodes[target].isVisible()
    shown = win.view.mapToScene(win.view.viewport().rect()).boundingRect()
    assert shown.intersects(sc.nodes[target].sceneBoundingRect())
    assert win.state.selection.left == ("node", target)


def test_collapse_keeps_the_selection_in_place_and_collapse_to_depth_fits(win, qtbot):
    v, sc = win.view, win.view.scene()
    plan = sc.plan
    multi = sorted((gi for gi, g in enumerate(plan.groups) if len(g) > 1),
                   key=lambda gi: sc.boxes[gi].sceneBoundingRect().center().y())
    gi = multi[len(multi) // 2]        # a group half way down the graph
    win.selection.activate("left", ("group", gi))
    v.reveal(("group", gi))
    was = v.mapFromScene(sc.boxes[gi].sceneBoundingRect()).boundingRect().adjusted(-30, -30, 30, 30)
    _relaid(qtbot, win, win.collapse_all)
    it = sc.collapsed_items[gi]
    now = v.mapFromScene(it.sceneBoundingRect().center())
    assert was.contains(now), (was, now)     # the collapsed group is drawn where its box was on screen
    _relaid(qtbot, win, win.expand_all)
    win.area.scope_bar.depth.setValue(1)
    _relaid(qtbot, win, win.area.scope_bar.collapse_button.click)
    shown = v.mapToScene(v.viewport().rect()).boundingRect()
    content = sc.content_rect()
    assert shown.contains(content) or (content.width() * v.scale_factor() <= v.viewport().width() + 2
                                       and shown.top() <= content.top() + 1)


def test_an_imported_plan_with_a_collapsed_group_gets_its_own_compact_layout(win, qtbot, tmp_path):
    sc = win.view.scene()
    plan = win.doc.plans["greedy"]
    # a plan whose groups are numbered otherwise: the greedy groups reversed
    path = tmp_path / "plan.json"
    win.export_plan(str(path), "greedy")
    d = json.loads(path.read_text())
    d["groups"] = list(reversed(d["groups"]))
    d.pop("group_kinds", None)
    d.pop("group_us", None)
    path.write_text(json.dumps(d))
    gi = next(gi for gi, g in enumerate(plan.groups) if len(g) > 2)
    _relaid(qtbot, win, lambda: win.collapse_group(gi))
    win.import_plan(str(path))
    qtbot.waitUntil(lambda: win.strategy == "custom" or bool(win.last_error), timeout=TIMEOUT_MS)
    assert win.strategy == "custom", win.last_error
    qtbot.waitUntil(lambda: sc.plan is win.doc.plans.get("custom"), timeout=TIMEOUT_MS)
    settle(qtbot, win)
    qtbot.waitUntil(lambda: not win.busy and win.layouts.compact and bool(sc.layout.stands_for), timeout=20000)
    new = sc.plan
    ngi = next(k for k, g in enumerate(new.groups) if frozenset(g) == frozenset(plan.groups[gi]))
    assert ngi != gi and ngi in sc.collapsed_items
    assert sc.layout.stands_for_group(ngi, new.groups[ngi]), "the layout is not the imported plan's own"
    it = sc.collapsed_items[ngi]
    r = it.sceneBoundingRect()
    # inside its block, and no op of another group under it
    inner = [k for k, s in sc.scope_tree.items() if new.groups[ngi][0] in s.ops and k in sc.scope_boxes.boxes]
    if inner:
        assert sc.scope_boxes.boxes[inner[-1]].sceneBoundingRect().contains(r)
    for nid, node in sc.nodes.items():
        if node.isVisible():
            assert not r.intersects(node.sceneBoundingRect()), nid


def test_left_to_right_is_remembered(new_window, qtbot):
    w = new_window("lr.ini")
    assert not w.area.scope_bar.lr_box.isChecked() and w.layouts.direction == "TB"
    w.area.scope_bar.lr_box.setChecked(True)
    assert w.settings.left_to_right and w.layouts.direction == "LR"
    w.settings.sync()
    w2 = new_window("lr.ini")
    assert w2.area.scope_bar.lr_box.isChecked() and w2.layouts.direction == "LR"


def test_side_by_side_refits_a_view_the_user_has_not_moved(new_window, qtbot):
    from tests.support.gui_graph import wide

    w = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, w, wide())
    w.set_right_strategy("none")
    w.set_side_by_side(True)
    settle(qtbot, w)
    qtbot.waitUntil(lambda: w.rview.scene().plan is w.doc.plans.get("none"), timeout=TIMEOUT_MS)
    qtbot.wait(50)
    v = w.view
    r, vp, s = v.scene().sceneRect(), v.viewport().rect(), v.scale_factor()
    assert r.width() * s <= vp.width() + 1, (r.width() * s, vp.width())   # the graph's whole width in the pane
    bar = v.verticalScrollBar()
    assert bar.value() - bar.minimum() < 10                                 # from its top
