"""Fusion kinds beyond FuseOps in the app (offscreen): the badge and heavier outline of a stitched group
and the kinds legend, the kind in the Properties panel (groups and edges), the side-by-side list of
differing groups with Next / Previous difference (N / Shift+N), and kinds on an imported plan.

A generated graph of two EfficientNet blocks in miniature (tests/synthetic.se_net, 56 ops) on the `host`
profile: its DP plan stitches each squeeze-and-excitation block (global pool -> conv -> act -> conv ->
sigmoid -> scale) into one kernel; the greedy plan (FuseOps' rules) cannot. Opened as a generated graph
(no TVM planning in the background), in a fresh window per test.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtGui  # noqa: E402

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import TIMEOUT_MS, open_graph  # noqa: E402

PROFILE = "host"


def ready(w) -> bool:
    """Planned, laid out and drawn: nothing in flight, both shown panes built for their plans."""
    if w.doc is None or w.busy:
        return False
    panes = [(w.view, w.strategy)] + ([(w.rview, w.right_strategy)] if w.area.side_by_side else [])
    return all(v.scene().plan is w.doc.plans.get(s) and not v.scene().building for v, s in panes)


@pytest.fixture
def win(new_window, qtbot):
    """A fresh window (host profile, dp) on the generated SE graph: planned, laid out and idle."""
    w = new_window(profile=PROFILE, strategy="dp")
    open_graph(qtbot, w, synthetic.se_net())
    qtbot.waitUntil(lambda: ready(w), timeout=TIMEOUT_MS)
    assert w.doc.hw.name == PROFILE and w.strategy == "dp", w.last_error
    return w


def stitched(plan) -> list[int]:
    return [gi for gi, k in enumerate(plan.group_kinds) if k["kind"] == "reduction_stitch"]


def test_stitched_group_has_a_badge_a_heavier_outline_and_a_legend(win, qtbot):
    from engine.planner import kinds
    from gui import style
    from gui.graph.boxes import BOX_PEN_W, KIND_BOX_PEN_W

    sc, v = win.view.scene(), win.view
    plan = win.doc.plans["dp"]
    assert len(plan.group_kinds) == len(plan.groups)
    st = stitched(plan)
    assert st, "the host profile's DP plan stitches the SE blocks"
    assert set(sc.kind_badges) == {gi for gi, k in enumerate(plan.group_kinds) if k["kind"] in kinds.BEYOND}
    gi = st[0]
    badge = sc.kind_badges[gi]
    assert badge.isVisible() and badge.childItems()[0].text().startswith("S")
    assert badge.brush().color() == style.kind_colour("reduction_stitch")
    assert sc.boxes[gi].pen().widthF() == KIND_BOX_PEN_W
    fuseops = [g for g, k in enumerate(plan.group_kinds) if k["kind"] == "epilogue"]   # FuseOps' kind, if any
    assert all(g not in sc.kind_badges and sc.boxes[g].pen().widthF() == BOX_PEN_W for g in fuseops)
    # the legend names the kinds present, with how many groups have each
    assert v.kinds_legend.isVisible() and v.kinds_legend.counts["reduction_stitch"] == len(st)
    assert set(v.kinds_legend.counts) <= set(kinds.BEYOND)
    # on screen: the badge is drawn in its kind's colour, on the box's edge
    v.set_scale(2.0)
    v.centerOn(badge.scenePos())
    r = sc.boxes[gi].path().boundingRect()
    # on its top edge, or on its bottom edge where a block's name is above the box (issue 30, item 11)
    edge = r.top() if abs(badge.scenePos().y() - r.top()) < 1 else r.bottom()
    assert abs(badge.scenePos().y() - edge) < 1 and r.left() < badge.scenePos().x() <= r.right()
    p = v.mapFromScene(badge.mapToScene(QtCore.QPointF(-badge.path().boundingRect().width() + 3, 0)))
    img = v.viewport().grab().toImage()
    got, want = QtGui.QColor(img.pixel(p)), style.kind_colour("reduction_stitch")
    assert all(abs(a - b) <= 12 for a, b in zip(got.getRgb()[:3], want.getRgb()[:3])), got.name()
    # clicking the badge selects its group, and the tooltip names the kind
    with qtbot.waitSignal(v.activated, check_params_cb=lambda sel: sel == ("group", gi)):
        qtbot.mouseClick(v.viewport(), QtCore.Qt.LeftButton, pos=p)
    assert kinds.TITLES["reduction_stitch"] in sc.group_tooltip(gi)
    # the greedy plan (FuseOps' rules) has none: no badges, no legend
    win.set_strategy("greedy")
    qtbot.waitUntil(lambda: ready(win), timeout=TIMEOUT_MS)
    assert not sc.kind_badges and not v.kinds_legend.isVisible()
    # a collapsed stitched group keeps its badge
    win.set_strategy("dp")
    qtbot.waitUntil(lambda: ready(win), timeout=TIMEOUT_MS)
    win.collapse_group(gi)
    assert gi not in sc.kind_badges
    assert [c.childItems()[0].text() for c in sc.collapsed_items[gi].childItems() if c.childItems()] == ["S"]


def test_properties_name_the_kind_of_a_group_and_of_the_groups_of_an_edge(win, qtbot):
    import dataclasses

    from engine.planner import kinds

    sc = win.view.scene()
    plan = win.doc.plans["dp"]
    gi = stitched(plan)[0]
    win.selection.activate("left", ("group", gi))
    vals = win.props.values()
    assert vals["fusion kind"] == kinds.TITLES["reduction_stitch"]
    assert vals["beyond FuseOps"].startswith("yes") and "S" in vals["beyond FuseOps"]
    assert kinds.TITLES["reduction_stitch"] in vals["kind features"]
    assert kinds.TITLES["reduction_stitch"] in win.props.details.text()
    # an operator names its group's kind
    win.selection.activate("left", ("node", plan.groups[gi][0]))
    assert win.props.values()["group kind"].startswith(kinds.TITLES["reduction_stitch"])
    # an edge between groups: why it was not fused, and the kinds of the two groups
    e = plan.explanations[0]
    win.selection.activate("left", ("edge", (e["src"], e["dst"])))
    vals = win.props.values()
    assert vals["fused"].startswith("no") and vals["why not fused"] == e["detail"]
    g, t = plan.group_of(), kinds.TITLES
    assert vals["group kinds"] == (f"{t[plan.group_kinds[g[e['src']]]['kind']]} -> "
                                   f"{t[plan.group_kinds[g[e['dst']]]['kind']]}")
    # the kinds the fused kernel would be, where the planner records them
    ex = [dict(x, kinds=["anchor_chain", "reduction_stitch"]) if x is e else x for x in plan.explanations]
    win.props.show_edge(win.doc.graph, dataclasses.replace(plan, explanations=ex), e["src"], e["dst"])
    assert win.props.values()["kinds if fused"] == f"{t['anchor_chain']} [C]; {t['reduction_stitch']} [S]"
    assert t["anchor_chain"] in win.props.details.text()
    ex = [{k: v for k, v in x.items() if k != "kinds"} if x is e else x for x in plan.explanations]
    win.props.show_edge(win.doc.graph, dataclasses.replace(plan, explanations=ex), e["src"], e["dst"])
    assert "kinds if fused" not in win.props.values()


def test_next_difference_walks_the_groups_only_one_plan_has(win, qtbot):
    win.set_strategy("greedy")
    win.set_right_strategy("dp")
    win.set_side_by_side(True)
    qtbot.waitUntil(lambda: ready(win) and win.diffs.count() > 0, timeout=TIMEOUT_MS)
    assert win.dock_diff.isVisible() and win.diffs.current() == -1
    doc = win.doc
    want = doc.differences("greedy", "dp")
    only_l, only_r = doc.only_in("greedy", "dp")
    assert win.diffs.count() == len(want) == only_l + only_r and only_l and only_r
    assert [k for k in win.diffs.keys()] == [(("greedy", "dp")[s], gi) for s, gi in want]
    stitched_dp = set(stitched(doc.plans["dp"]))
    assert any(s == 1 and gi in stitched_dp for s, gi in want)   # every SE block differs
    assert any("[S]" in t for t in win.diffs.texts())
    # issue 30 (11): at 1400x900 every row's text is shown whole, wrapped at word boundaries (not elided
    # mid-word): each row is as tall as its text wrapped to the list's width
    from PySide6 import QtCore as _qc
    lst = win.diffs.list
    qtbot.wait(50)
    fm = lst.fontMetrics()
    for i in range(lst.count()):
        it = lst.item(i)
        rect = lst.visualItemRect(it)
        text_w = rect.width() - lst.iconSize().width() - 8
        need = fm.boundingRect(_qc.QRect(0, 0, max(text_w, 1), 10000), int(_qc.Qt.TextWordWrap), it.text()).height()
        assert lst.wordWrap() and rect.height() >= need, (it.text(), rect.height(), need)

    win.activateWindow()
    win.view.setFocus()
    qtbot.waitUntil(lambda: win.isActiveWindow())

    def press(key, mods=QtCore.Qt.NoModifier):
        with qtbot.waitSignal(win.diffs.chosen, timeout=5000):
            qtbot.keyClick(win.view, key, mods)

    seen = []
    for k in range(min(4, len(want))):
        press(QtCore.Qt.Key_N)
        side, gi = want[k]
        own, other = (win.view, win.rview) if side == 0 else (win.rview, win.view)
        assert win.diffs.current() == k
        assert own.scene().selected == ("group", gi)
        members = own.scene().plan.groups[gi]
        osel = other.scene().selected
        assert osel is not None and (osel[0] == "node" and osel[1] in members or
                                     set(other.scene().plan.groups[osel[1]]) & set(members))
        # centred in both views (they share positions): in view, at the middle of the view's height
        r = own.scene().item_rect(("group", gi))
        for v in (own, other):
            vis = v.mapToScene(v.viewport().rect()).boundingRect()
            assert vis.contains(r.center()), (v, vis, r)
            # (a group within 41 px of the view's height may sit off-centre by the scroll range's clamp)
            assert abs(vis.center().y() - r.center().y()) < 5 or r.height() > vis.height() - 41, (v, vis, r)
        assert win.props.values()["group"].startswith(f"{gi}:")
        seen.append((side, gi))
    assert seen == want[:len(seen)]
    # back with Shift+N, and around the end
    press(QtCore.Qt.Key_N, QtCore.Qt.ShiftModifier)
    assert win.diffs.current() == len(seen) - 2
    for _ in range(len(seen) - 1):
        press(QtCore.Qt.Key_N, QtCore.Qt.ShiftModifier)
    assert win.diffs.current() == len(want) - 1
    side, gi = want[-1]
    assert (win.view, win.rview)[side].scene().selected == ("group", gi)
    # a click on a row shows that difference; the Next button goes on from there
    item = win.diffs.list.item(2)
    win.diffs.list.scrollToItem(item)
    shown = []
    win.diffs.chosen.connect(shown.append)
    with qtbot.waitSignal(win.diffs.chosen, check_params_cb=lambda row: row == 2):
        qtbot.mouseClick(win.diffs.list.viewport(), QtCore.Qt.LeftButton,
                         pos=win.diffs.list.visualItemRect(item).center())
    assert shown == [2]   # shown once
    with qtbot.waitSignal(win.diffs.chosen, check_params_cb=lambda row: row == 3):
        qtbot.mouseClick(win.diffs.next_button, QtCore.Qt.LeftButton)
    side, gi = want[3]
    assert (win.view, win.rview)[side].scene().selected == ("group", gi)
    # the same strategy on both sides: nothing differs
    win.set_right_strategy("greedy")
    qtbot.waitUntil(lambda: ready(win) and win.diffs.count() == 0, timeout=TIMEOUT_MS)
    assert "same fused groups" in win.diffs.header.text()
    win.set_side_by_side(False)
    assert not win.dock_diff.isVisible()


def test_an_imported_plan_gets_its_kinds(win, qtbot, tmp_path):
    p = win.export_plan(tmp_path / "dp.plan.json", strategy="dp")
    data = json.loads(open(p).read())
    for g in data["groups"]:   # a plan file written before kinds existed
        g.pop("kind", None)
        g.pop("features", None)
    (tmp_path / "old.plan.json").write_text(json.dumps(data))
    with qtbot.waitSignal(win.plans_changed):
        win.import_plan(str(tmp_path / "old.plan.json"))
    custom = win.doc.plans["custom"]
    assert custom.group_kinds == win.doc.plans["dp"].group_kinds
    qtbot.waitUntil(lambda: ready(win), timeout=TIMEOUT_MS)
    assert win.strategy == "custom" and set(win.view.scene().kind_badges) >= set(stitched(custom))
