"""A strategy whose groups the current positions cannot hold (offscreen): the toggle recolours at once,
asks for a relayout off the UI thread, and the window stays busy (`busy`) until the new positions
are applied; then every group box holds only its own nodes.

A generated graph (tests/synthetic.branching: three parallel branches per block) with a plan
imported as JSON that fuses the two outer branches' first convolutions horizontally: at the
positions laid out for the other plans the middle branch's convolution sits between them, inside
their box, so the positions cannot stay.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pytestqt")

from engine.layout import graph as L  # noqa: E402
from tests.support import synthetic  # noqa: E402

TIMEOUT_MS = 120_000


@pytest.fixture
def win(new_window, qtbot):
    """A fresh window (its own settings and caches) on the generated graph, planned, laid out and idle."""
    w = new_window(strategy="none", size=(1200, 800))
    with qtbot.waitSignal(w.model_loaded, timeout=TIMEOUT_MS):
        w.open_graph(synthetic.branching(40))
    qtbot.waitUntil(lambda: not w.busy and w.view.scene().plan is w.doc.plans.get("none"), timeout=TIMEOUT_MS)
    return w


def test_a_toggle_the_positions_cannot_hold_relays_out_and_is_busy_until_applied(win, qtbot, tmp_path):
    sc = win.view.scene()
    g = win.doc.graph
    old = sc.layout
    assert old is not None and win.strategy == "none"
    # the first block's three branches start with a convolution reading the block's input
    first = [n.id for n in g.nodes if n.op == "conv2d" and n.inputs == [g.nodes[0].id]]
    assert len(first) == 3
    left, mid, right = sorted(first, key=lambda nid: old.pos[nid][0])
    assert old.pos[left][1] == old.pos[mid][1] == old.pos[right][1]  # one row: `mid` between the others

    path = win.export_plan(tmp_path / "none.plan.json", strategy="none")
    d = json.loads(open(path).read())
    kept = [grp for grp in d["groups"] if grp["nodes"] not in ([left], [right])]
    # horizontal fusion of the two outer branches' first convolutions
    d["groups"] = [dict(grp, id=i) for i, grp in enumerate(kept)] + [{"id": len(kept), "nodes": [left, right]}]
    custom = tmp_path / "outer.plan.json"
    custom.write_text(json.dumps(d))

    groups = [grp["nodes"] for grp in d["groups"]]
    assert L.needs_relayout(old, groups, len(g)) and L.dirty_groups(old, groups) >= 1  # the precondition

    applied = []
    win.layout_applied.connect(applied.append)
    plan = win.import_plan(str(custom))
    assert plan is not None and win.strategy == "custom", win.last_error
    gi = next(i for i, m in enumerate(plan.groups) if sorted(m) == sorted([left, right]))
    # at once: recoloured and boxed in place, a relayout asked for and still pending
    assert sc.plan is plan and gi in sc.boxes
    assert win.busy
    qtbot.waitUntil(lambda: not win.busy, timeout=TIMEOUT_MS)
    assert applied, "the relayout was not applied"
    lay = applied[-1]
    assert sc.layout is lay and lay is not old
    assert {nid: (it.pos().x(), it.pos().y()) for nid, it in sc.nodes.items()} == \
        {nid: tuple(lay.pos[nid]) for nid in sc.nodes}
    assert L.boxes_clean(lay, plan.groups)
    box = sc.boxes[gi].sceneBoundingRect()
    assert box.contains(sc.nodes[left].sceneBoundingRect()) and box.contains(sc.nodes[right].sceneBoundingRect())
    assert not box.contains(sc.nodes[mid].sceneBoundingRect().center())
