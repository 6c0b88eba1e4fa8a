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
from tests.synthetic import Builder, residual  # noqa: E402


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
