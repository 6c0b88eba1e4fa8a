"""The desktop app, driven for real (offscreen): open a model, toggle every strategy, side by side,
collapse, find, properties, heat, export and import a plan, errors in the window, benchmark a small
model through the runner, settings, and screenshots of the main states.

Every test has a fresh window of its own (conftest's `new_window`: own settings file, private cache) on the
smallest graph that exercises what it checks: mostly a generated one (tests/synthetic.residual, opened with
`open_graph`: no TVM module, so no benchmarking and no "tvm" plan), small ONNX models built in code
(tests/models.py) where a test needs a model file or TVM, and a zoo model only where the point is a
real-size model. Tests wait on the window's public signals and its `busy` property.

Screenshots go to $FUSELENS_SCREENSHOTS, else <tmp>/fuselens-screenshots.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from engine.layout import graph as L  # noqa: E402
from engine.planner import STRATEGIES  # noqa: E402
from tests import synthetic  # noqa: E402
from tests.gui_helpers import TIMEOUT_MS, make_settings, open_graph, open_model, settle, shot  # noqa: E402

MODEL = "zoo:mobilenetv2@64"   # only where the point is a real-size model (the responsiveness test)
PROFILE = "t4"                 # the profile these tests are written for (the cpu device's own is the host's)


# ---------------------------------------------------------------------------------------------- fixtures

def generated():
    """The graph most tests open: 60 ops in ResNet-like blocks (tests/synthetic.residual): fused groups of up
    to four ops fed from outside, forks and joins, groups of different costs (the heat overlay), greedy and
    dp plans that share groups and differ in others, and more ops than the recommendation's threshold
    (engine.report.recommend.MIN_OPS)."""
    return synthetic.residual(56)


@pytest.fixture
def win(new_window, qtbot):
    """A fresh window (t4, greedy) on the generated graph: planned, laid out and idle."""
    w = new_window(profile=PROFILE, strategy="greedy")
    open_graph(qtbot, w, generated())
    return w


@pytest.fixture
def cnn_model(tmp_path):
    """tests/models.small_cnn_onnx as a file: a model with a TVM module (the "tvm" plan) whose greedy and dp
    plans share fused groups and differ in others."""
    import onnx

    from tests.models import small_cnn_onnx

    p = tmp_path / "small_cnn.onnx"
    onnx.save(small_cnn_onnx(), p)
    return p


def on_screen_colour(view, scene_point) -> QtGui.QColor:
    img = view.viewport().grab().toImage()
    p = view.mapFromScene(scene_point)
    return QtGui.QColor(img.pixel(p.x(), p.y()))


def node_probe(scene, nid) -> QtCore.QPointF:
    """A point inside a node, clear of its text."""
    it = scene.nodes[nid]
    w, h = scene.layout.sizes[nid]
    return QtCore.QPointF(it.pos().x() - w / 2 + 4, it.pos().y())


def close(a: QtGui.QColor, b: QtGui.QColor, tol=6) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def in_view(view, point) -> bool:
    """Whether the scene point is within what the view shows."""
    return view.mapToScene(view.viewport().rect()).boundingRect().contains(point)


# ---------------------------------------------------------------------------------------------- tests

def test_opens_model_and_draws_every_operator(new_window, qtbot, tiny_model, tmp_path):
    """A model file (tests/models.tiny_onnx: 7 ops), opened as a user does: drawn, planned with TVM too, and
    remembered in the recent list."""
    from engine.layout import dot as layout_dot

    win = new_window(profile=PROFILE, strategy="greedy")
    open_model(qtbot, win, tiny_model)
    g = win.doc.graph
    sc = win.view.scene()
    assert g.name in win.windowTitle() and "tvm" in win.doc.plans, win.doc.plan_errors
    assert len(sc.nodes) == len(g.nodes) and all(it.isVisible() for it in sc.nodes.values())
    assert len(sc.edges) == sum(len(dict.fromkeys(n.inputs)) for n in g.nodes)
    # data flows downwards: every edge's consumer sits below its producer
    assert all(sc.nodes[b].pos().y() > sc.nodes[a].pos().y() for a, b in sc.edges)
    # a node shows its op name and output shape
    n = g.nodes[0]
    texts = [t.text() for t in sc.nodes[n.id].childItems()]
    assert texts == [n.op, L.shape_text(n.shape)]
    label = win.activity_bar.layout_label.text()
    assert ("graphviz dot" in label) if layout_dot.dot_path() else ("built-in" in label)
    assert win.area.stack.currentIndex() == 1 and not win.area.banner.isVisible()
    assert win.settings.recent()[0] == str(tiny_model)
    win.settings.sync()
    assert make_settings(tmp_path / "settings.ini").recent()[0] == str(tiny_model)   # persisted
    shot(win, "01-opened-greedy.png")


def check_boxes(sc, plan) -> list[int]:
    """One rounded box per fused group, around its members; returns the fused groups' indices."""
    multi = [gi for gi, m in enumerate(plan.groups) if len(m) > 1]
    assert sorted(sc.boxes) == multi
    for gi in multi:
        box = sc.boxes[gi].sceneBoundingRect()
        assert all(box.contains(sc.nodes[m].sceneBoundingRect()) for m in plan.groups[gi])
    return multi


def test_every_strategy_recolours_and_reboxes_in_place(new_window, qtbot, cnn_model):
    """Every strategy, TVM's FuseOps included: a model file with a TVM module (tests/models.small_cnn_onnx)."""
    from gui import style

    win = new_window(profile=PROFILE, strategy="greedy")
    open_model(qtbot, win, cnn_model)
    sc = win.view.scene()
    g = win.doc.graph
    toggles, colours, relaid = {}, {}, []

    def positions():
        return {nid: (it.pos().x(), it.pos().y()) for nid, it in sc.nodes.items()}

    for s in STRATEGIES:
        assert s in win.doc.plans, win.doc.plan_errors
        settle(qtbot, win)
        before, old_layout = positions(), sc.layout
        applied = []

        def on_applied(lay, applied=applied):
            applied.append(lay)

        win.layout_applied.connect(on_applied)
        try:
            win.set_strategy(s)
            toggles[s] = win.strategies.last_toggle_ms
            plan = win.doc.plans[s]
            assert sc.plan is plan and win.strategy_box.currentData() == s
            # at once, in place: every node of a group in the group's stable colour
            for gi, members in enumerate(plan.groups):
                cols = {sc.nodes[m].brush().color().rgb() for m in members}
                assert len(cols) == 1  # every node of a group shares its colour
                want = (style.group_colour(members) if len(members) > 1 else
                        sc.theme.grey if g.by_id[members[0]].kind == "call_tir" else sc.theme.grey_small)
                assert cols == {want.rgb()}
            check_boxes(sc, plan)
            colours[s] = {nid: c.rgb() for nid, c in sc.node_colours.items()}
            # the toggle may ask for a relayout (off the UI thread); wait until it is decided and applied
            settle(qtbot, win)
        finally:
            win.layout_applied.disconnect(on_applied)
        after = positions()
        if not applied:  # the relayout kept the positions (or none was needed)
            assert after == before
        else:  # new positions only where the old ones could not stay and the new boxes are clearly cleaner
            lay = applied[-1]
            relaid.append(s)
            assert sc.layout is lay and after == {nid: tuple(lay.pos[nid]) for nid in sc.nodes}
            assert L.needs_relayout(old_layout, plan.groups, len(g))
            assert 2 * L.dirty_groups(lay, plan.groups) <= L.dirty_groups(old_layout, plan.groups)
        multi = check_boxes(sc, plan)  # at the final positions too
        # what is on screen: a fused node is drawn in its group's colour
        gi = multi[len(multi) // 2] if multi else 0
        nid = plan.groups[gi][0]
        win.view.reveal(("node", nid))
        assert close(on_screen_colour(win.view, node_probe(sc, nid)), sc.node_colours[nid])
        shot(win, f"02-strategy-{s}.png")
    # the stable colour: a group two strategies share is drawn in the same colour under both
    fused = {s: {frozenset(x) for x in win.doc.plans[s].groups if len(x) > 1} for s in ("greedy", "dp")}
    common = fused["greedy"] & fused["dp"]
    assert common, "the model must have fused groups that greedy and dp share, or this checks nothing"
    assert fused["greedy"] != fused["dp"], "greedy and dp must differ somewhere, or this checks little"
    for grp in common:
        assert len({colours["greedy"][m] for m in grp} | {colours["dp"][m] for m in grp}) == 1, sorted(grp)
    assert len(common) == 1 or len({colours["dp"][next(iter(grp))] for grp in common}) > 1  # not one colour for all
    print("toggle ms:", {k: round(v, 1) for k, v in toggles.items()}, "relaid out:", relaid)
    assert max(toggles.values()) < 300  # goal 100 ms; a shared 2-core CI machine gets some slack
    win.set_strategy("none")
    assert sc.boxes == {} and len({it.brush().color().rgb() for it in sc.nodes.values()}) <= 2  # all grey


def test_side_by_side_synchronised_with_differences(win, qtbot):
    win.set_right_strategy("dp")
    win.set_side_by_side(True)
    settle(qtbot, win)
    assert win.area.side_by_side and win.rview.isVisible()
    ls, rs = win.view.scene(), win.rview.scene()
    assert ls.plan is win.doc.plans["greedy"] and rs.plan is win.doc.plans["dp"]
    only_l, only_r = win.doc.only_in("greedy", "dp")
    assert len(ls.only_here) == only_l and len(rs.only_here) == only_r and only_l and only_r
    for gi in rs.only_here:  # highlighted: a thick dashed box
        assert rs.boxes[gi].pen().style() == QtCore.Qt.DashLine
    dp = win.doc.plans["dp"]
    text = win.area.summary.text()
    assert f"{dp.kernels} kernels" in text and f"{win.doc.plans['greedy'].kernels} kernels" in text
    # same positions on both sides, synchronised zoom and pan
    assert all(ls.nodes[n].pos() == rs.nodes[n].pos() for n in ls.nodes)
    g = win.doc.graph
    win.view.set_scale(0.6)
    win.view.centerOn(ls.nodes[g.nodes[len(g.nodes) * 2 // 3].id].pos())

    def centre_y(v):
        return v.mapToScene(v.viewport().rect().center()).y()

    qtbot.waitUntil(lambda: abs(win.rview.scale_factor() - 0.6) < 1e-6
                    and abs(centre_y(win.view) - centre_y(win.rview)) < 3, timeout=5000)
    gi = sorted(rs.only_here)[0]
    win.view.reveal(("node", dp.groups[gi][0]))
    shot(win, "03-side-by-side-greedy-dp.png")
    win.set_side_by_side(False)
    settle(qtbot, win)
    assert not win.rview.isVisible() and ls.only_here == set()


def test_collapse_and_expand_a_group(win, qtbot):
    sc = win.view.scene()
    plan = sc.plan
    full = {nid: it.pos() for nid, it in sc.nodes.items()}   # the positions of the full layout
    fed = [i for i, m in enumerate(plan.groups) if any(a not in m for b in m for a in win.doc.graph.by_id[b].inputs)]
    gi = max(fed, key=lambda i: len(plan.groups[i]))
    members = plan.groups[gi]
    assert len(members) > 2
    with qtbot.waitSignal(win.layout_applied, timeout=TIMEOUT_MS):   # then the compact relayout
        win.collapse_group(gi)
        # at once: the members hidden, one collapsed node in their place
        assert gi in sc.collapsed and all(not sc.nodes[m].isVisible() for m in members)
        item = sc.collapsed_items[gi]
        label = item.childItems()[0].text()
        kind = (sc.kind_of(gi) or {}).get("kind")
        assert label == f"{L.group_name(win.doc.graph, members, kind)}, {len(members)} ops" and "fused_" not in label
        assert win.props.values()["state"] == "collapsed"
        # edges into the group now end at the collapsed node
        outside_in = [(a, b) for (a, b) in sc.edges if b in members and a not in members]
        assert outside_in and all(sc.edges[e].isVisible() for e in outside_in)
    settle(qtbot, win)
    assert not set(members) & set(sc.layout.pos)   # the group is one node of the layout
    win.view.reveal(("collapsed", gi))
    shot(win, "04-collapsed-group.png")
    win.expand_group(gi)
    settle(qtbot, win)
    assert gi not in sc.collapsed and all(sc.nodes[m].isVisible() for m in members) and gi in sc.boxes
    win.collapse_all()
    multi = [i for i, m in enumerate(plan.groups) if len(m) > 1]
    assert sc.collapsed == set(multi) and sc.boxes == {}
    settle(qtbot, win)
    win.view.fit()
    shot(win, "05-collapse-all.png")
    win.expand_all()
    settle(qtbot, win)
    assert sc.collapsed == set() and sorted(sc.boxes) == multi
    # the full layout again: every op placed where it was before anything was collapsed
    assert set(sc.layout.pos) >= set(sc.nodes) and {nid: it.pos() for nid, it in sc.nodes.items()} == full


def test_find_next_and_previous(win):
    g = win.doc.graph
    want = [n.id for n in g.nodes if "conv2d" in n.op.lower() or "conv2d" in n.func.lower()
            or "conv2d" in (n.onnx_name or "").lower()]
    win.find_edit.setText("conv2d")
    assert win.finder.hits == want and len(want) > 3
    assert win.view.scene().selected == ("node", want[0]) and win.props.values()["operator"] == "conv2d"
    win.find_step(+1)
    assert win.view.scene().selected == ("node", want[1]) and win.find_label.text().strip() == f"2/{len(want)}"
    win.find_step(-1)
    win.find_step(-1)
    assert win.view.scene().selected == ("node", want[-1])  # wraps around
    r = win.view.mapToScene(win.view.viewport().rect()).boundingRect()
    assert r.contains(win.view.scene().nodes[want[-1]].pos())  # the view moved to it
    shot(win, "06-find-conv2d.png")
    win.find_edit.setText("no-such-op")
    assert win.finder.hits == [] and win.find_label.text().strip() == "0 found"
    win.find_edit.clear()


def test_properties_of_a_node_a_group_and_an_edge(win, qtbot):
    sc, view, g, plan = win.view.scene(), win.view, win.doc.graph, win.doc.plans["greedy"]
    gi = next(i for i, m in enumerate(plan.groups) if len(m) > 2)
    nid = plan.groups[gi][1]
    n = g.by_id[nid]
    view.reveal(("node", nid))
    qtbot.waitUntil(lambda: in_view(view, sc.nodes[nid].pos()), timeout=5000)
    qtbot.mouseClick(view.viewport(), QtCore.Qt.LeftButton, pos=view.mapFromScene(sc.nodes[nid].pos()))
    v = win.props.values()
    assert v["operator"] == n.op and v["pattern kind"] == n.pattern and v["id"] == nid
    assert v["output shape"].startswith(L.shape_text(n.shape)) and "FLOPs" in v and "bytes read" in v
    assert v["group"].startswith(f"{gi}:") and v["measured kernel time"] == "not yet measured"
    est = f"{plan.notes['estimate']} estimate"          # the row names the model that estimated it
    assert v[est].startswith(f"{plan.group_us[gi]:.2f}")
    # a group: click inside its box, beside its nodes
    box = sc.boxes[gi].sceneBoundingRect()
    qtbot.mouseClick(view.viewport(), QtCore.Qt.LeftButton, pos=view.mapFromScene(QtCore.QPointF(box.left() + 4,
                                                                                                box.center().y())))
    v = win.props.values()
    assert v["group"] == f"{gi}: {L.group_name(g, plan.groups[gi])}" and v["operators"] == str(len(plan.groups[gi]))
    assert win.props.topLevelItem(win.props.topLevelItemCount() - 1).childCount() == len(plan.groups[gi])
    # an edge between groups: the planner's explanation
    e = next(x for x in plan.explanations if x.get("detail"))
    item = sc.edges[(e["src"], e["dst"])]
    mid = item.path().pointAtPercent(0.5)
    view.reveal(("node", e["dst"]))
    view.centerOn(mid)
    qtbot.waitUntil(lambda: in_view(view, mid), timeout=5000)
    qtbot.mouseClick(view.viewport(), QtCore.Qt.LeftButton, pos=view.mapFromScene(mid))
    v = win.props.values()
    assert v.get("why not fused") == e["detail"], v
    assert v["reason"] == e["reason"] and v["fused"].startswith("no")
    shot(win, "07-edge-explanation.png")


def test_heat_overlay_with_legend_linear_and_log(win, qtbot):
    from gui import style

    win.set_strategy("dp")
    settle(qtbot, win)
    sc, plan = win.view.scene(), win.doc.plans["dp"]
    win.set_heat(True)
    assert win.view.legend.isVisible() and win.view.legend.title.startswith(f"{plan.notes['estimate']} estimate")
    lo, hi = min(v for v in plan.group_us if v > 0), max(plan.group_us)
    assert (win.view.legend.lo, win.view.legend.hi) == (lo, hi)
    hottest = max(range(len(plan.groups)), key=lambda i: plan.group_us[i])
    nid = plan.groups[hottest][0]
    assert sc.node_colours[nid].rgb() == style.ramp(1.0).rgb()
    win.view.reveal(("node", nid))
    qtbot.waitUntil(lambda: in_view(win.view, node_probe(sc, nid)), timeout=5000)
    assert close(on_screen_colour(win.view, node_probe(sc, nid)), style.ramp(1.0))
    shot(win, "08-heat-linear.png")
    between = sorted((i for i in range(len(plan.groups)) if lo < plan.group_us[i] < hi), key=lambda i: plan.group_us[i])
    mid = between[len(between) // 2]   # neither end of the scale: its colour depends on the scale
    lin = sc.node_colours[plan.groups[mid][0]].rgb()
    win.set_heat_log(True)
    assert win.view.legend.log and sc.node_colours[plan.groups[mid][0]].rgb() != lin
    shot(win, "09-heat-log.png")
    win.set_heat_log(False)
    win.set_heat(False)
    assert not win.view.legend.isVisible()
    assert sc.node_colours[nid].rgb() == style.group_colour(plan.groups[hottest]).rgb() or len(plan.groups[hottest]) == 1


def test_export_plan_and_import_it_back(win, qtbot, tmp_path):
    win.set_strategy("dp")
    settle(qtbot, win)
    dp = win.doc.plans["dp"]
    p = win.export_plan(tmp_path / "dp.plan.json")
    d = json.loads(Path(p).read_text())
    assert d["schema"] == "fuselens-plan/1" and d["strategy"] == "dp" and len(d["groups"]) == len(dp.groups)
    win.set_strategy("greedy")
    plan = win.import_plan(p)
    assert plan is not None and win.strategy == "custom" and win.strategy_box.currentData() == "custom"
    assert {frozenset(x) for x in plan.groups} == {frozenset(x) for x in dp.groups}
    assert plan.notes["imported_strategy"] == "dp" and plan.kernels == dp.kernels
    sc = win.view.scene()
    assert sc.plan is plan and sorted(sc.boxes) == [i for i, m in enumerate(plan.groups) if len(m) > 1]
    assert "custom" in [r["strategy"] for r in win.latency.rows]
    settle(qtbot, win)
    shot(win, "10-imported-custom.png")
    # the graph and the results
    svg = win.export_graph(tmp_path / "g.svg", fmt="svg")
    png = win.export_graph(tmp_path / "g.png", fmt="png")
    csv = win.export_csv(tmp_path / "r.csv")
    assert "<svg" in Path(svg).read_text()[:2000] and Path(png).stat().st_size > 10_000
    rows = Path(csv).read_text().splitlines()
    assert rows[0].startswith("model,strategy,target") and any(",custom," in r for r in rows)
    assert QtGui.QImage(png).width() > 50


def test_errors_show_in_the_window(win, qtbot, tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"this is not a protobuf at all \x00\x01\x02" * 10)
    before = win.doc
    with qtbot.waitSignal(win.error_shown, timeout=TIMEOUT_MS):
        win.open_model(str(bad))
    settle(qtbot, win)
    assert win.area.banner.isVisible()
    assert "not a valid ONNX file" in win.area.banner_text.text() and "broken.onnx" in win.area.banner_text.text()
    assert win.doc is before and win.view.scene().graph is before.graph  # the open model stays
    shot(win, "11-error-bad-file.png")
    win.area.hide_error()
    # a plan of another model
    other = tmp_path / "other.plan.json"
    d = json.loads(Path(win.export_plan(tmp_path / "x.json", strategy="greedy")).read_text())
    d["model"]["sha256"] = "0" * 64
    other.write_text(json.dumps(d))
    assert win.import_plan(other) is None
    assert win.area.banner.isVisible() and "this plan is for model" in win.area.banner_text.text()
    win.area.hide_error()
    with qtbot.waitSignal(win.error_shown, timeout=30_000):
        win.open_model("zoo:no_such_model")
    assert win.area.banner.isVisible() and "no built-in model" in win.area.banner_text.text()
    win.area.hide_error()
    settle(qtbot, win)


def test_dynamic_dims_dialog_prefilled_and_remembered(new_window, qtbot, tmp_path, monkeypatch):
    import onnx

    from gui import dialogs
    from tests.models import tiny_onnx

    path = tmp_path / "dyn.onnx"
    onnx.save(tiny_onnx(hw="side"), path)
    seen = []

    def fake_exec(self):
        seen.append({k: e.text() for k, e in self.edits.items()})
        self.edits["x"].setText("1,3,16,16")
        self.findChild(QtWidgets.QDialogButtonBox).button(QtWidgets.QDialogButtonBox.Ok).click()   # as a user
        return self.result()

    monkeypatch.setattr(dialogs.ShapesDialog, "exec", fake_exec)
    win = new_window()
    open_model(qtbot, win, path)
    assert seen == [{"x": "1,3,224,224"}]  # batch 1, 3 channels, image sides 224
    assert win.doc.shapes == {"x": [1, 3, 16, 16]} and win.doc.graph.input_shapes == {"x": [1, 3, 16, 16]}
    assert win.settings.shapes_for(str(path)) == {"x": [1, 3, 16, 16]}
    # reopening uses the remembered answer without asking
    before = win.doc
    open_model(qtbot, win, path)
    assert win.doc is not before and len(seen) == 1 and win.doc.shapes == {"x": [1, 3, 16, 16]}


def test_shortcuts_listed_in_help_and_settings_persist(win, qtbot, tmp_path):
    """(The recent list's persistence: test_opens_model_and_draws_every_operator, which opens a file.)"""
    rows = dict(win.shortcut_rows())
    for action, key in [("Open", "Ctrl+O"), ("Find", "Ctrl+F"), ("Benchmark", "Ctrl+B"), ("Fit to Window", "F"),
                        ("Collapse Group", "C"), ("Side by Side", "Ctrl+D"), ("Heat Overlay", "H")]:
        assert key in rows[action].split(", ")[0] or key in rows[action], (action, rows.get(action))
    win.show_shortcuts()
    assert win.shortcuts_dialog.table.rowCount() == len(win.shortcut_rows())
    win.shortcuts_dialog.close()
    win.profile_box.setCurrentIndex(win.profile_box.findData("a100"))
    with qtbot.waitSignal(win.plans_changed, timeout=TIMEOUT_MS):   # re-planned for the profile
        win.set_profile("a100")
    qtbot.waitUntil(lambda: win.doc.hw.name == "a100" and not win.busy, timeout=TIMEOUT_MS)
    win.budget.setValue(25)
    s = make_settings(tmp_path / "settings.ini")
    win.settings.save_window(win)
    win.settings.sync()
    s.qs.sync()
    assert s.profile == "a100" and s.budget_pct == 25.0
    assert s.qs.value("window/geometry") is not None
    assert "budget 25%" in win.recpanel.verdict.text() and win.recpanel.rec.verdict == "hybrid"
    win.budget.setValue(40)
    assert win.recpanel.rec.verdict == "dp" and win.recpanel.highlighted[-1] == "dp"
    with qtbot.waitSignal(win.plans_changed, timeout=TIMEOUT_MS):
        win.set_profile("t4")
    qtbot.waitUntil(lambda: win.doc.hw.name == "t4" and not win.busy, timeout=TIMEOUT_MS)
    shot(win, "12-recommendation.png")


def test_keyboard_zoom_fit_and_drop(win, qtbot, tmp_path):
    v = win.view
    v.setFocus()
    v.set_scale(1.0)
    win.acts["zoom_in"].trigger()
    assert abs(v.scale_factor() - 1.25) < 1e-6
    win.acts["actual"].trigger()
    assert abs(v.scale_factor() - 1.0) < 1e-6
    win.acts["fit"].trigger()
    assert v.scale_factor() <= 1.0
    # dropping a plan file imports it
    p = win.export_plan(tmp_path / "drop.plan.json", strategy="hybrid")
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(p)])
    ev = QtGui.QDropEvent(QtCore.QPointF(200, 200), QtCore.Qt.CopyAction, mime, QtCore.Qt.LeftButton,
                          QtCore.Qt.NoModifier)
    win.dropEvent(ev)
    assert win.strategy == "custom" and win.doc.plans["custom"].notes["imported_strategy"] == "hybrid"
    settle(qtbot, win)


def test_dark_scheme_follows_the_system(win, qtbot, qapp):
    # the offscreen platform has no system scheme to switch: deliver the signal's argument directly
    win.set_color_scheme(QtCore.Qt.ColorScheme.Dark)
    assert win.theme.dark and qapp.palette().color(QtGui.QPalette.Window).lightness() < 80
    win.set_strategy("dp")
    settle(qtbot, win)
    assert win.view.backgroundBrush().color().lightness() < 80
    shot(win, "13-dark-scheme.png")
    win.set_color_scheme(QtCore.Qt.ColorScheme.Light)
    assert not win.theme.dark and win.view.backgroundBrush().color().lightness() > 200


def test_ui_stays_responsive_while_opening_and_toggling(new_window, qtbot):
    """The worst UI-thread stall while a (cached) model opens, lays out and is toggled.

    A real-size model on purpose (zoo:mobilenetv2@64, hundreds of ops): the stalls this guards against
    (drawing, laying out and recolouring a large graph on the UI thread) do not show on a small one. It is
    read into the test's private cache first, as a model opened before is, which is what this measures."""
    from engine.model import loader
    from gui.diagnostics import StallMeter

    loader.load(MODEL)
    w = new_window()
    # the window is up and has listed its devices before a model is opened, as in the app
    qtbot.waitUntil(lambda: w.model.devices is not None and w.windowHandle().isExposed(), timeout=TIMEOUT_MS)
    meter = StallMeter()
    meter.start("open")
    with qtbot.waitSignal(w.model_loaded, timeout=TIMEOUT_MS):
        w.open_model(MODEL)
    settle(qtbot, w, 240_000)
    for s in ("greedy", "dp", "hybrid", "none", "greedy"):
        meter.mark(f"toggle {s}")
        w.set_strategy(s)
        settle(qtbot, w, 30_000)
    meter.mark("side by side")
    w.set_side_by_side(True)
    qtbot.waitUntil(lambda: not w.busy and not w.rview.scene().building, timeout=30_000)
    worst = meter.stop()
    print(f"worst UI stall {worst:.0f} ms during {meter.worst_at!r}; gaps over 100 ms: {meter.over(100)}")
    # The goal is 100 ms (scripts/bench_gui.py --zoo measures it); a test on a shared 2-core machine can
    # only guard against real freezes, such as parsing a large model on a thread (seconds).
    assert worst < 1000


def test_layout_falls_back_without_dot(new_window, qtbot, monkeypatch):
    monkeypatch.setenv("FUSELENS_NO_DOT", "1")   # (the test's cache is its own: no cached dot layout either)
    w = new_window()
    open_graph(qtbot, w, generated())
    assert "built-in" in w.activity_bar.layout_label.text() and "dot not found" in w.activity_bar.layout_label.toolTip()
    assert "dot not found" in w.statusBar().currentMessage()
    sc = w.view.scene()
    assert all(sc.nodes[b].pos().y() > sc.nodes[a].pos().y() for a, b in sc.edges)
    shot(w, "14-builtin-layout.png")


def test_benchmark_a_small_model_through_the_runner(new_window, qtbot, tiny_model):
    """A model file (the runner builds it with TVM): the smallest, tests/models.tiny_onnx."""
    pytest.importorskip("engine.measure.runner")
    w = new_window()
    open_model(qtbot, w, tiny_model)
    w.set_strategy("greedy")
    w.set_right_strategy("dp")
    w.set_side_by_side(True)
    settle(qtbot, w)
    with qtbot.waitSignal(w.results_changed, timeout=300_000):
        w.benchmark(repeat=3)
        assert w.activity_bar.progress.isVisible() and w.activity_bar.cancel_button.isVisible()
    settle(qtbot, w, 300_000)
    res = w.doc.results_for("cpu")
    assert set(res) == {"greedy", "dp"}, w.last_error
    for s, r in res.items():
        assert r.error is None and r.correct is True and r.latency_ms["median"] > 0
    rows = {r["strategy"]: r for r in w.latency.rows}
    assert rows["greedy"]["median"] == res["greedy"].latency_ms["median"]
    assert rows["none"]["median"] is None
    from gui.panels.latency import COLUMNS

    table = {w.latency.table.item(i, 0).text(): w.latency.table.item(i, COLUMNS.index("source")).text()
             for i in range(w.latency.table.rowCount())}
    assert table["none"] == "not yet measured" and table["greedy"] in ("measured", "cached")
    assert [s for s, _ in w.latency.series["measured"]] == ["greedy", "dp"]
    # kernel times reach the properties panel and the heat overlay
    sc = w.view.scene()
    gi = next(i for i, m in enumerate(sc.plan.groups) if len(m) > 1)
    w.selection.activate("left", ("group", gi))
    assert w.props.values()["measured kernel time"].endswith("us (on cpu)")
    w.set_heat(True)
    assert "measured" in w.view.legend.title
    rec = w.recpanel.rec
    assert rec is not None and rec.measured_verdict in ("greedy", "dp")
    assert "Measured verdict" in w.recpanel.measured.text()
    shot(w, "15-benchmarked-tiny.png")
    w.set_heat(False)
    # cancel: a forced re-run stopped at once adds nothing and leaves no progress showing
    n = len(w.doc.results)
    w.benchmark(strategies=["none"], force=True)
    w.cancel()
    settle(qtbot, w, 30_000)
    assert len(w.doc.results) == n and w.activity.last_cancelled == ["bench"] and not w.activity_bar.progress.isVisible()


def test_large_models_are_read_and_tvm_planned_in_a_child_process(new_window, qtbot, tmp_path, monkeypatch):
    """Parsing a big ONNX file holds Python's lock for seconds: such files are read in a child process
    (forced here with a zero size limit) and planned with TVM there too."""
    import onnx

    from engine.jobs import open_model as open_job
    from tests.models import tiny_onnx

    monkeypatch.setattr(open_job, "IN_PROCESS_MAX_BYTES", 0)
    p = tmp_path / "big.onnx"
    onnx.save(tiny_onnx(), p)
    w = new_window()
    open_model(qtbot, w, p)   # until TVM's plan is in too
    g = w.doc.graph
    from engine.model import loader

    assert g.layout == w.files.layout_for(w.device())   # the device's channel layout (7 ops in NCHW, 9 blocked)
    assert len(g) == len(loader.load(str(p), block=g.block)) and g.mod_factory is None and w.view.scene().graph is g  # the graph came back as data
    assert "tvm" in w.doc.plans, w.doc.plan_errors
    assert {frozenset(x) for x in w.doc.plans["tvm"].groups} == {frozenset(x) for x in w.doc.plans["greedy"].groups}


def test_a_figure_timed_on_a_busy_machine_is_measured_again(new_window, qtbot, tiny_model):
    """A result labelled busy (engine/util/machine_load.py) is not answered from the cache by the next
    Benchmark: the user asked to re-run it on a quieter machine."""
    pytest.importorskip("engine.measure.runner")
    w = new_window()
    open_model(qtbot, w, tiny_model)
    w.set_strategy("greedy")
    settle(qtbot, w)
    with qtbot.waitSignal(w.results_changed, timeout=300_000):
        w.benchmark(strategies=["greedy"], repeat=3)
    settle(qtbot, w, 300_000)
    first = w.doc.result("cpu", "greedy")
    assert first is not None and first.error is None, w.last_error
    with qtbot.waitSignal(w.results_changed, timeout=300_000):
        w.benchmark(strategies=["greedy"], repeat=3)     # a quiet figure: the cache answers
    settle(qtbot, w, 300_000)
    again = w.doc.result("cpu", "greedy")
    if first.busy_share is None or first.busy_share <= 0.25:
        assert again.cached is True
    again.busy_share = 0.9                               # as if timed while other processes ran
    with qtbot.waitSignal(w.results_changed, timeout=300_000):
        w.benchmark(strategies=["greedy"], repeat=3)
    settle(qtbot, w, 300_000)
    fresh = w.doc.result("cpu", "greedy")
    assert fresh is not again and fresh.cached is False and fresh.error is None
