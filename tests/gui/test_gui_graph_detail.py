"""The graph view's detail and legibility (issue 30, items 1, 10, 11, 12), offscreen on generated graphs
drawn straight into a GraphScene (no window, no TVM): an export carries full detail whatever the zoom;
a grown window labels the nodes it newly shows; op names fit their nodes; a badge leaves block names
readable; the heat legend changes with its scale; Find's highlight is an outline unlike any heat colour."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("pytestqt")

from engine.layout import graph as L  # noqa: E402
from engine.planner.plan import Plan  # noqa: E402
from tests.support.synthetic import Builder, residual  # noqa: E402


def _plan(g, size: int = 3, kinds: bool = True) -> Plan:
    """Groups of `size` consecutive ops; every other multi-op group a stitched kind (a badge)."""
    ids = [n.id for n in g.nodes]
    groups = [ids[k:k + size] for k in range(0, len(ids), size)]
    gk = [{"kind": "reduction_stitch" if gi % 2 == 0 and len(grp) > 1 else "single", "features": []}
          for gi, grp in enumerate(groups)] if kinds else []
    return Plan("test", groups, group_us=[10.0 * (gi + 1) for gi in range(len(groups))], group_kinds=gk)


def _view(qtbot, g, plan=None, size=(800, 500)):
    from gui.graph.scene import GraphScene
    from gui.graph.view import GraphView

    v = GraphView(GraphScene())
    qtbot.addWidget(v)
    v.resize(*size)
    v.show()
    groups = plan.groups if plan is not None else None
    v.scene().set_graph(g, L.layered(L.build_input(g, groups)), plan)
    v.set_scale(1.0)
    v.refresh_labels()
    return v


def _svg_texts(path) -> int:
    return len(re.findall(r"<text\b", path.read_text()))


def test_an_export_zoomed_out_carries_the_detail_of_one_at_100_percent(qapp, qtbot, tmp_path):
    g = residual(60)
    v = _view(qtbot, g, _plan(g))
    sc = v.scene()
    v.set_scale(1.0)
    sc.render_svg(str(tmp_path / "full.svg"))
    sc.render_png(str(tmp_path / "full.png"))
    v.set_scale(0.1)                      # zoomed far out: the view hides its text and grows its badges
    assert not sc.text_visible and sc.group_boxes.badge_scale > 1
    sc.render_svg(str(tmp_path / "small.svg"))
    sc.render_png(str(tmp_path / "small.png"))
    full = _svg_texts(tmp_path / "full.svg")
    assert full > 2 * len(g.nodes)        # every op's name and shape, and the badges
    assert _svg_texts(tmp_path / "small.svg") == full
    from PySide6 import QtGui

    a, b = QtGui.QImage(str(tmp_path / "full.png")), QtGui.QImage(str(tmp_path / "small.png"))
    assert a.size() == b.size() and a == b
    # the view's own level of detail is back after the export
    assert not sc.text_visible and sc.group_boxes.badge_scale > 1


def test_a_grown_view_labels_the_nodes_it_newly_shows(qapp, qtbot):
    g = residual(200)
    v = _view(qtbot, g, size=(700, 200))
    sc = v.scene()
    v.fit_width_top()                     # as a model opens: its whole width, scrolled to the top
    v.refresh_labels()
    few = len(sc._labelled)
    assert 0 < few < len(g.nodes) // 2
    v.resize(700, 900)                    # the window grows downwards: the view stays at the top, unscrolled
    qapp.processEvents()
    shown = v.mapToScene(v.viewport().rect()).boundingRect()
    inside = [nid for nid, it in sc.nodes.items() if shown.contains(it.sceneBoundingRect())]
    assert len(inside) > few
    assert all(nid in sc._labelled and sc.nodes[nid].childItems() for nid in inside)


def test_op_names_fit_inside_their_nodes(qapp, qtbot):
    b = Builder()
    x = b.add("conv2d", [])
    for op in ("relu", "add", "multiply", "sum"):
        x = b.add(op, [x])
    g = b.graph("long")
    # names far longer than the node's width estimate allows for in the bold title font
    for n, long in zip(g.nodes, ("fused_conv2d_add_multiply_subtract_divide_WWWWWWWW", "MMMMMMMMMMMMMM",
                                 "relu", "WWWWWWWWWWWWWWWWWWWWWWWWW", "x")):
        n.op = n.func = long
    v = _view(qtbot, g)
    sc = v.scene()
    assert sc._labelled == {n.id for n in g.nodes}
    for nid, it in sc.nodes.items():
        node = it.path().boundingRect()
        for t in it.childItems():
            r = t.mapRectToParent(t.boundingRect())
            assert node.left() <= r.left() and r.right() <= node.right(), (nid, t.text(), r, node)
    titles = [it.childItems()[0].text() for it in sc.nodes.values()]
    assert "relu" in titles and any(t.endswith("\u2026") for t in titles)   # elided where too long, else whole


def test_the_heat_legend_follows_its_scale_and_shows_its_whole_title(qapp, qtbot):
    from PySide6 import QtGui

    from gui.graph.legend import HeatLegend

    v = _view(qtbot, residual(40))
    leg = HeatLegend(v)
    title = "learned estimate (This machine: Intel(R) Xeon(R) Processor (2 cores))"
    leg.set_range(title, 10.0, 10000.0, False)
    lin_ticks, lin = leg.ticks(), leg.grab().toImage()
    leg.set_range(title, 10.0, 10000.0, True)
    log_ticks, log = leg.ticks(), leg.grab().toImage()
    assert lin_ticks[1] != log_ticks[1] and log_ticks[1][1] == "316.2 us"   # the middle: mean vs geometric mean
    # the drawing under the ramp differs, not only the title
    below = QtGui.QImage.copy
    assert below(lin, 0, 34, min(lin.width(), log.width()), 20) != below(log, 0, 34, min(lin.width(), log.width()), 20)
    f = QtGui.QFont(leg.font())
    f.setPointSizeF(8)
    assert QtGui.QFontMetrics(f).horizontalAdvance(leg.full_title()) + 16 <= leg.width()


def test_find_marks_matches_with_an_outline_unlike_any_heat_colour(qapp, qtbot):
    from PySide6 import QtCore

    from gui import style

    g = residual(40)
    plan = _plan(g, kinds=False)
    v = _view(qtbot, g, plan)
    sc = v.scene()
    sc.set_heat({"values": list(plan.group_us), "log": False, "source": "roofline"})
    nid = g.nodes[5].id
    fill = sc.nodes[nid].brush().color().rgba()
    assert sc.find(g.nodes[5].op) and nid in sc.found
    pen = sc.nodes[nid].pen()
    assert sc.nodes[nid].brush().color().rgba() == fill      # the heat fill stays
    assert pen.style() != QtCore.Qt.SolidLine                  # a dashed outline: no heat colour is drawn so
    c = pen.color()
    for k in range(101):
        r = style.ramp(k / 100)
        d = ((c.red() - r.red()) ** 2 + (c.green() - r.green()) ** 2 + (c.blue() - r.blue()) ** 2) ** 0.5
        assert d > 90, (k, c.name(), r.name())


def test_delta_colours_mean_the_same_in_both_panes(new_window, qtbot):
    from tests.support.gui_helpers import TIMEOUT_MS, open_graph, settle
    from tests.support.synthetic import chain

    win = new_window(size=(1400, 900), strategy="greedy")
    open_graph(qtbot, win, chain(30))
    win.set_right_strategy("none")
    win.set_side_by_side(True)
    settle(qtbot, win)
    qtbot.waitUntil(lambda: win.rview.scene().plan is win.doc.plans.get("none"), timeout=TIMEOUT_MS)
    win.diffs.delta_box.setChecked(True)
    left, right = win.view.scene(), win.rview.scene()
    from engine.report import plan_delta

    g, n = win.doc.plans["greedy"], win.doc.plans["none"]
    # one meaning in both panes: the right plan's (none's) time for the ops over the left plan's (greedy's)
    want_left = plan_delta.deltas(g, list(g.group_us), n, list(n.group_us))
    want_right = [1.0 / x for x in plan_delta.deltas(n, list(n.group_us), g, list(g.group_us))]
    assert left.heat["values"] == pytest.approx(want_left)
    assert right.heat["values"] == pytest.approx(want_right)
    # so a fused greedy group, slower op by op in none, is red in both panes (none slower)
    gi = next(gi for gi, grp in enumerate(g.groups) if len(grp) > 1 and want_left[gi] > 1.2)
    for m in g.groups[gi]:
        assert left.node_colours[m].red() > left.node_colours[m].blue()
    assert any(right.node_colours[m].red() > right.node_colours[m].blue() for m in g.groups[gi])
    assert win.view.delta_legend.title == win.rview.delta_legend.title
    assert win.view.delta_legend.other == win.rview.delta_legend.other == "none"


def test_a_long_status_text_stops_clear_of_the_layout_label(new_window, qtbot):
    from PySide6 import QtGui

    from tests.support.gui_helpers import open_graph

    win = new_window(size=(1400, 900))
    open_graph(qtbot, win, residual(40))
    win.status("a status message long enough to run into the layout label " * 6, 60000)
    qtbot.wait(50)
    bar, lab = win.statusBar(), win.activity_bar.layout_label
    assert lab.isVisible() and lab.text().startswith("layout:")
    img = bar.grab().toImage()
    text_x = lab.x() + lab.contentsRect().left()      # where the label's text starts
    bg = img.pixelColor(text_x - 6, bar.height() // 2)
    # the columns just before the label's text hold no status text: background, or the one-pixel rule
    ink = 0
    for x in range(text_x - 10, text_x - 1):
        for y in range(2, bar.height() - 2):
            c = img.pixelColor(x, y)
            if abs(c.lightness() - bg.lightness()) > 40:
                ink += 1
    assert ink <= bar.height(), ink
    assert lab.x() + lab.contentsRect().left() - 8 >= lab.x() + 2   # room between the clipped text and the label's


def test_badges_keep_clear_of_block_names(qapp, qtbot):
    from engine.model import scopes
    from gui.scope_view import ScopeView
    from tests.support.structure_blocks import paddle_like

    g = paddle_like(blocks=12)
    ids = [n.id for n in g.nodes]
    # two-op groups, each a stitched kind: a badge on every box, many boxes first in their block
    plan = Plan("test", [ids[k:k + 2] for k in range(0, len(ids), 2)], group_kinds=[
        {"kind": "reduction_stitch", "features": []} for _ in range(0, len(ids), 2)])
    tree = scopes.scope_tree(g, plan.groups)
    assert tree
    from gui.graph.scene import GraphScene
    from gui.graph.view import GraphView

    v = GraphView(GraphScene())
    qtbot.addWidget(v)
    v.resize(900, 700)
    v.show()
    sc = v.scene()
    sc.follow_scopes(ScopeView())
    sc.set_graph(g, L.layered(L.build_input(g, plan.groups, scopes=tree)), plan)
    assert sc.scope_boxes.boxes and sc.kind_badges
    for scale in (1.0, 0.6):
        v.set_scale(scale)
        names = [t.sceneBoundingRect() for it in sc.scope_boxes.boxes.values() for t in it.childItems()] \
            if scale == 1.0 else sc.scope_boxes.label_rects(sc.group_boxes.badge_scale)
        for gi, b in sc.kind_badges.items():
            br = b.sceneBoundingRect()
            assert not any(br.intersects(n) for n in names), (scale, gi)


def test_collapsed_groups_names_fit_their_nodes(qapp, qtbot):
    g = residual(40)
    for n in g.nodes:
        n.op = n.func = "fused_conv2d_add_multiply_WWWWWWWWWWWWWWWW"
    plan = _plan(g, size=4)
    v = _view(qtbot, g, plan)
    sc = v.scene()
    for gi in range(len(plan.groups)):
        it = sc.group_boxes.collapsed_node(gi, True)
        node = it.path().boundingRect()
        t = next(c for c in it.childItems() if isinstance(c, type(sc.texts[0])))
        r = t.mapRectToParent(t.boundingRect())
        assert node.left() <= r.left() and r.right() <= node.right(), (gi, t.text())
