"""The model's blocks in the app, on the zoo's MobileNetV2: its ONNX name scopes drawn as nested boxes
that the fused groups sit inside, a breadcrumb of the selection's blocks, "collapse to depth N" (each
block one node, the scene and layout compact) and "expand all"; a double-click on a block collapses it."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
from tests.support.gui_helpers import TIMEOUT_MS, open_model, settle, shot  # noqa: E402


def _inside(outer, inner, tol=0.5):
    return (outer.left() - tol <= inner.left() and outer.top() - tol <= inner.top()
            and inner.right() <= outer.right() + tol and inner.bottom() <= outer.bottom() + tol)


def test_mobilenet_blocks_breadcrumb_collapse_to_depth_and_expand_all(new_window, qtbot):
    win = new_window(size=(1400, 900), strategy="greedy")
    open_model(qtbot, win, "zoo:mobilenetv2@32")
    sc = win.view.scene()
    qtbot.waitUntil(lambda: sc.plan is win.doc.plans.get("greedy") and bool(sc.scope_tree), timeout=TIMEOUT_MS)
    tree = sc.scope_tree
    boxes = sc.scope_boxes.boxes
    assert set(boxes) == set(tree) and any(s.label == "features.0" for s in tree.values())
    # nested: a block's box holds its inner blocks' boxes and the boxes of the fused groups inside it
    for k, s in tree.items():
        r = boxes[k].sceneBoundingRect()
        for c in s.children:
            assert _inside(r, boxes[c].sceneBoundingRect())
    inner = {m: k for k in tree for m in tree[k].ops}     # outer first: the innermost block wins
    for gi, box in sc.boxes.items():
        k = inner.get(sc.plan.groups[gi][0])
        if k is not None:
            assert _inside(boxes[k].sceneBoundingRect(), box.sceneBoundingRect())
    # the breadcrumb follows the selection
    n = next(n for n in win.doc.graph.nodes if n.onnx_name and n.onnx_name.startswith("features.0"))
    win.select_node(n.id)
    text = win.area.scope_bar.crumbs.text()
    assert "features</a>" in text and "features.0</a>" in text
    shot(win, "blocks-overview.png")
    # collapse to depth 2: every block at depth 2 is one node; the layout and the scene shrink
    full_h = sc.content_rect().height()
    with qtbot.waitSignal(win.layout_applied, timeout=TIMEOUT_MS):
        win.area.scope_bar.depth.setValue(2)
        win.area.scope_bar.collapse_button.click()
    settle(qtbot, win)
    want = {k for k, s in tree.items() if s.depth == 2 or (s.depth < 2 and not s.children)}
    assert sc.collapsed_scopes == want and win.scope_view.collapsed == frozenset(want)
    hidden = {m for k in want for m in tree[k].ops}
    assert all(not sc.nodes[m].isVisible() for m in hidden)
    assert all(f"s{sc.scope_index[k]}" in sc.layout.pos for k in want)
    assert sc.content_rect().height() < full_h / 3
    assert sc.sceneRect().height() < sc.content_rect().height() + 100
    # an edge into a collapsed block ends at its node
    e = next((a, b) for (a, b) in sc.edges if b in hidden and a not in hidden)
    assert sc.edges[e].isVisible()
    shot(win, "blocks-depth2.png")
    # double-click on a collapsed block expands it (through the ScopeView)
    key = sorted(want, key=lambda k: -len(tree[k].ops))[0]
    item = sc.collapsed_scope_items[key]
    win.view.centerOn(item)
    from PySide6 import QtCore

    pos = win.view.mapFromScene(item.sceneBoundingRect().center())
    with qtbot.waitSignal(win.layout_applied, timeout=TIMEOUT_MS):
        qtbot.mouseDClick(win.view.viewport(), QtCore.Qt.LeftButton, pos=pos)
    assert key not in win.scope_view.collapsed and key not in sc.collapsed_scopes
    assert all(sc.nodes[m].isVisible() for m in tree[key].ops if m not in {x for k in want - {key} for x in tree[k].ops})
    settle(qtbot, win)
    # expand all: the full layout again
    with qtbot.waitSignal(win.layout_applied, timeout=TIMEOUT_MS):
        win.area.scope_bar.expand_button.click()
    settle(qtbot, win)
    assert not sc.collapsed_scopes and all(it.isVisible() for it in sc.nodes.values())
    assert set(sc.layout.pos) >= set(sc.nodes)
    # blocks off: no boxes
    win.area.scope_bar.shown_box.setChecked(False)
    assert not win.scope_view.shown and not sc.scope_boxes.boxes
