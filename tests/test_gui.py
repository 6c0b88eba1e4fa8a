"""The desktop app, driven for real (offscreen): open a zoo model, toggle every strategy, side by side,
collapse, find, properties, heat, export and import a plan, errors in the window, benchmark a small
model through the runner, settings, and screenshots of the main states.

Screenshots go to $FUSELENS_SCREENSHOTS, else <tmp>/fuselens-screenshots (printed at the end).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from engine import layout as L  # noqa: E402
from engine.planner import STRATEGIES  # noqa: E402

MODEL = "zoo:mobilenetv2@64"
SHOTS = Path(os.environ.get("FUSELENS_SCREENSHOTS") or Path(tempfile.gettempdir()) / "fuselens-screenshots")


# ---------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A private cache (models, layouts, results) and private settings for this module."""
    d = tmp_path_factory.mktemp("gui")
    old = os.environ.get("FUSELENS_CACHE_DIR")
    os.environ["FUSELENS_CACHE_DIR"] = str(d / "cache")
    from engine import layout_cache, loader

    loader._memo.clear()
    layout_cache.forget_in_memory()
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield d
    if old is None:
        os.environ.pop("FUSELENS_CACHE_DIR", None)
    else:
        os.environ["FUSELENS_CACHE_DIR"] = old
    loader._memo.clear()
    print(f"\nscreenshots in {SHOTS}")


def make_settings(path):
    from gui.settings import Settings

    return Settings(QtCore.QSettings(str(path), QtCore.QSettings.IniFormat))


def make_window(qapp, settings_path):
    from gui import app, style
    from gui.main_window import MainWindow

    style.apply_scheme(qapp)
    app.prepare()  # what gui.app.run does before showing the window
    w = MainWindow(make_settings(settings_path))
    w.resize(1400, 900)
    w.show()
    return w


def wait(cond, timeout=60.0):
    app = QtWidgets.QApplication.instance()
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        app.processEvents(QtCore.QEventLoop.AllEvents, 20)
        if cond():
            return True
        time.sleep(0.005)
    return cond()


def settle(w, timeout=180.0):
    assert wait(lambda: not w.busy, timeout), f"still busy: {w.activity.running}"
    for _ in range(3):
        QtWidgets.QApplication.instance().processEvents()


def shot(w, name):
    for _ in range(3):
        QtWidgets.QApplication.instance().processEvents()
    w.grab().save(str(SHOTS / name))


@pytest.fixture(scope="module")
def win(qapp, env):
    w = make_window(qapp, env / "settings.ini")
    w.set_profile("t4")   # the profile these tests are written for (the cpu device's own is the host's)
    w.set_strategy("greedy")
    w.open_model(MODEL)
    assert wait(lambda: w.view.scene().graph is not None, 180), w.last_error
    settle(w)
    assert wait(lambda: "tvm" in w.doc.plans or "tvm" in w.doc.plan_errors, 180)
    settle(w)
    yield w
    from gui import worker

    w.close()
    worker.wait_all(60000)


@pytest.fixture
def fresh(qapp, env, tmp_path):
    """A window of its own (its own settings), with no model open."""
    w = make_window(qapp, tmp_path / "settings.ini")
    yield w
    from gui import worker

    w.close()
    worker.wait_all(60000)


@pytest.fixture
def small(fresh, tiny_model):
    """A window of its own on the small synthetic graph of tests/models.py, opened, laid out and idle."""
    fresh.open_model(str(tiny_model))
    assert wait(lambda: fresh.doc is not None and not fresh.busy, 180), fresh.last_error
    return fresh


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


# ---------------------------------------------------------------------------------------------- tests

def test_opens_model_and_draws_every_operator(win):
    from engine import layout_dot

    g = win.doc.graph
    sc = win.view.scene()
    assert "mobilenetv2@64" in win.windowTitle()
    assert len(sc.nodes) == len(g.nodes) and all(it.isVisible() for it in sc.nodes.values())
    assert len(sc.edges) == sum(len(dict.fromkeys(n.inputs)) for n in g.nodes)
    # data flows downwards: every edge's consumer sits below its producer
    assert all(sc.nodes[b].pos().y() > sc.nodes[a].pos().y() for a, b in sc.edges)
    # a node shows its op name and output shape
    n = g.nodes[0]
    texts = [t.text() for t in sc.nodes[n.id].childItems()]
    assert texts == [n.op, L.shape_text(n.shape)]
    label = win.activity.layout_label.text()
    assert ("graphviz dot" in label) if layout_dot.dot_path() else ("built-in" in label)
    assert win.area.stack.currentIndex() == 1 and not win.area.banner.isVisible()
    assert win.settings.recent()[0] == MODEL
    shot(win, "01-opened-greedy.png")


def check_boxes(sc, plan) -> list[int]:
    """One rounded box per fused group, around its members; returns the fused groups' indices."""
    multi = [gi for gi, m in enumerate(plan.groups) if len(m) > 1]
    assert sorted(sc.boxes) == multi
    for gi in multi:
        box = sc.boxes[gi].sceneBoundingRect()
        assert all(box.contains(sc.nodes[m].sceneBoundingRect()) for m in plan.groups[gi])
    return multi


def test_every_strategy_recolours_and_reboxes_in_place(win, qtbot):
    from gui import style

    sc = win.view.scene()
    g = win.doc.graph
    toggles, colours, relaid = {}, {}, []

    def positions():
        return {nid: (it.pos().x(), it.pos().y()) for nid, it in sc.nodes.items()}

    for s in STRATEGIES:
        assert s in win.doc.plans, win.doc.plan_errors
        settle(win)
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
            qtbot.waitUntil(lambda: not win.busy, timeout=180_000)
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
        settle(win)
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
    win.set_strategy("greedy")
    settle(win)


def test_side_by_side_synchronised_with_differences(win):
    win.set_strategy("greedy")
    win.set_right_strategy("dp")
    win.set_side_by_side(True)
    settle(win)
    assert win.area.side_by_side and win.rview.isVisible()
    ls, rs = win.view.scene(), win.rview.scene()
    assert ls.plan is win.doc.plans["greedy"] and rs.plan is win.doc.plans["dp"]
    only_l, only_r = win.doc.only_in("greedy", "dp")
    assert len(ls.only_here) == only_l and len(rs.only_here) == only_r
    for gi in rs.only_here:  # highlighted: a thick dashed box
        assert rs.boxes[gi].pen().style() == QtCore.Qt.DashLine
    dp = win.doc.plans["dp"]
    text = win.area.summary.text()
    assert f"{dp.kernels} kernels" in text and f"{win.doc.plans['greedy'].kernels} kernels" in text
    # same positions on both sides, synchronised zoom and pan
    assert all(ls.nodes[n].pos() == rs.nodes[n].pos() for n in ls.nodes)
    win.view.set_scale(0.6)
    win.view.centerOn(ls.nodes[win.doc.graph.nodes[40].id].pos())
    wait(lambda: False, 0.2)
    assert abs(win.rview.scale_factor() - 0.6) < 1e-6
    cl = win.view.mapToScene(win.view.viewport().rect().center())
    cr = win.rview.mapToScene(win.rview.viewport().rect().center())
    assert abs(cl.y() - cr.y()) < 3
    if rs.only_here:
        gi = sorted(rs.only_here)[0]
        win.view.reveal(("node", dp.groups[gi][0]))
        wait(lambda: False, 0.2)
    shot(win, "03-side-by-side-greedy-dp.png")
    win.set_side_by_side(False)
    settle(win)
    assert not win.rview.isVisible() and ls.only_here == set()


def test_collapse_and_expand_a_group(win):
    win.set_strategy("greedy")
    settle(win)
    sc = win.view.scene()
    plan = sc.plan
    fed = [i for i, m in enumerate(plan.groups) if any(a not in m for b in m for a in win.doc.graph.by_id[b].inputs)]
    gi = max(fed, key=lambda i: len(plan.groups[i]))
    members = plan.groups[gi]
    win.collapse_group(gi)
    assert gi in sc.collapsed and all(not sc.nodes[m].isVisible() for m in members)
    item = sc.collapsed_items[gi]
    label = item.childItems()[0].text()
    assert label == f"{L.group_name(win.doc.graph, members)}, {len(members)} ops" and label.startswith("fused_")
    assert win.props.values()["state"] == "collapsed"
    # edges into the group now end at the collapsed node
    outside_in = [(a, b) for (a, b) in sc.edges if b in members and a not in members]
    assert outside_in and all(sc.edges[e].isVisible() for e in outside_in)
    settle(win)  # the compact relayout
    win.view.reveal(("collapsed", gi))
    shot(win, "04-collapsed-group.png")
    win.expand_group(gi)
    settle(win)
    assert gi not in sc.collapsed and all(sc.nodes[m].isVisible() for m in members) and gi in sc.boxes
    win.collapse_all()
    multi = [i for i, m in enumerate(plan.groups) if len(m) > 1]
    assert sc.collapsed == set(multi) and sc.boxes == {}
    settle(win)
    win.view.fit()
    shot(win, "05-collapse-all.png")
    win.expand_all()
    settle(win)
    assert sc.collapsed == set() and sorted(sc.boxes) == multi and not win.layouts.compact


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
    win.set_strategy("greedy")
    settle(win)
    sc, view, g, plan = win.view.scene(), win.view, win.doc.graph, win.doc.plans["greedy"]
    gi = next(i for i, m in enumerate(plan.groups) if len(m) > 2)
    nid = plan.groups[gi][1]
    n = g.by_id[nid]
    view.reveal(("node", nid))
    wait(lambda: False, 0.1)
    qtbot.mouseClick(view.viewport(), QtCore.Qt.LeftButton, pos=view.mapFromScene(sc.nodes[nid].pos()))
    v = win.props.values()
    assert v["operator"] == n.op and v["pattern kind"] == n.pattern and v["id"] == nid
    assert v["output shape"].startswith(L.shape_text(n.shape)) and "FLOPs" in v and "bytes read" in v
    assert v["group"].startswith(f"{gi}:") and v["measured kernel time"] == "not yet measured"
    assert v["estimated cost"].startswith(f"{plan.group_us[gi]:.2f}")
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
    wait(lambda: False, 0.1)
    qtbot.mouseClick(view.viewport(), QtCore.Qt.LeftButton, pos=view.mapFromScene(mid))
    v = win.props.values()
    assert v.get("why not fused") == e["detail"], v
    assert v["reason"] == e["reason"] and v["fused"].startswith("no")
    shot(win, "07-edge-explanation.png")


def test_heat_overlay_with_legend_linear_and_log(win):
    from gui import style

    win.set_strategy("dp")
    settle(win)
    sc, plan = win.view.scene(), win.doc.plans["dp"]
    win.set_heat(True)
    assert win.view.legend.isVisible() and "estimated" in win.view.legend.title
    lo, hi = min(v for v in plan.group_us if v > 0), max(plan.group_us)
    assert (win.view.legend.lo, win.view.legend.hi) == (lo, hi)
    hottest = max(range(len(plan.groups)), key=lambda i: plan.group_us[i])
    nid = plan.groups[hottest][0]
    assert sc.node_colours[nid].rgb() == style.ramp(1.0).rgb()
    win.view.reveal(("node", nid))
    wait(lambda: False, 0.1)
    assert close(on_screen_colour(win.view, node_probe(sc, nid)), style.ramp(1.0))
    shot(win, "08-heat-linear.png")
    mid = sorted(range(len(plan.groups)), key=lambda i: plan.group_us[i])[len(plan.groups) // 2]
    lin = sc.node_colours[plan.groups[mid][0]].rgb()
    win.set_heat_log(True)
    assert win.view.legend.log and sc.node_colours[plan.groups[mid][0]].rgb() != lin
    shot(win, "09-heat-log.png")
    win.set_heat_log(False)
    win.set_heat(False)
    assert not win.view.legend.isVisible()
    assert sc.node_colours[nid].rgb() == style.group_colour(plan.groups[hottest]).rgb() or len(plan.groups[hottest]) == 1


def test_export_plan_and_import_it_back(win, tmp_path):
    win.set_strategy("dp")
    settle(win)
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
    settle(win)
    shot(win, "10-imported-custom.png")
    # the graph and the results
    svg = win.export_graph(tmp_path / "g.svg", fmt="svg")
    png = win.export_graph(tmp_path / "g.png", fmt="png")
    csv = win.export_csv(tmp_path / "r.csv")
    assert "<svg" in Path(svg).read_text()[:2000] and Path(png).stat().st_size > 10_000
    rows = Path(csv).read_text().splitlines()
    assert rows[0].startswith("model,strategy,target") and any(",custom," in r for r in rows)
    assert QtGui.QImage(png).width() > 50


def test_errors_show_in_the_window(small, tmp_path):
    win = small
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"this is not a protobuf at all \x00\x01\x02" * 10)
    before = win.doc
    win.open_model(str(bad))
    assert wait(lambda: win.area.banner.isVisible(), 180)
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
    win.open_model("zoo:no_such_model")
    assert wait(lambda: win.area.banner.isVisible(), 30) and "no built-in model" in win.area.banner_text.text()
    win.area.hide_error()


def test_dynamic_dims_dialog_prefilled_and_remembered(fresh, tmp_path, monkeypatch):
    import onnx

    from gui import dialogs
    from tests.models import tiny_onnx

    path = tmp_path / "dyn.onnx"
    onnx.save(tiny_onnx(hw="side"), path)
    seen = []

    def fake_exec(self):
        seen.append({k: e.text() for k, e in self.edits.items()})
        self.edits["x"].setText("1,3,16,16")
        self._ok()
        return QtWidgets.QDialog.Accepted

    monkeypatch.setattr(dialogs.ShapesDialog, "exec", fake_exec)
    win = fresh
    win.open_model(str(path))
    assert wait(lambda: win.doc is not None and not win.busy, 120), win.last_error
    assert seen == [{"x": "1,3,224,224"}]  # batch 1, 3 channels, image sides 224
    assert win.doc.shapes == {"x": [1, 3, 16, 16]} and win.doc.graph.nodes[0].shape == [1, 8, 16, 16]
    assert win.settings.shapes_for(str(path)) == {"x": [1, 3, 16, 16]}
    settle(win)
    # reopening uses the remembered answer without asking
    before = win.doc
    win.open_model(str(path))
    assert wait(lambda: win.doc is not before and not win.busy, 180), win.last_error
    assert len(seen) == 1 and win.doc.shapes == {"x": [1, 3, 16, 16]}


def test_shortcuts_listed_in_help_and_settings_persist(win, env):
    rows = dict(win.shortcut_rows())
    for action, key in [("Open", "Ctrl+O"), ("Find", "Ctrl+F"), ("Benchmark", "Ctrl+B"), ("Fit to Window", "F"),
                        ("Collapse Group", "C"), ("Side by Side", "Ctrl+D"), ("Heat Overlay", "H")]:
        assert key in rows[action].split(", ")[0] or key in rows[action], (action, rows.get(action))
    win.show_shortcuts()
    assert win.shortcuts_dialog.table.rowCount() == len(win.shortcut_rows())
    win.shortcuts_dialog.close()
    win.profile_box.setCurrentIndex(win.profile_box.findData("a100"))
    win.set_profile("a100")
    assert wait(lambda: win.doc.hw.name == "a100", 180)
    win.budget.setValue(25)
    s = make_settings(env / "settings.ini")
    win.settings.save_window(win)
    win.settings.sync()
    s.qs.sync()
    assert s.profile == "a100" and s.budget_pct == 25.0 and s.recent()[0] == MODEL
    assert s.qs.value("window/geometry") is not None
    assert "budget 25%" in win.recpanel.verdict.text() and win.recpanel.rec.verdict == "hybrid"
    win.budget.setValue(40)
    assert win.recpanel.rec.verdict == "dp" and win.recpanel.highlighted[-1] == "dp"
    win.set_profile("t4")
    assert wait(lambda: win.doc.hw.name == "t4", 180)
    settle(win)
    shot(win, "12-recommendation.png")


def test_keyboard_zoom_fit_and_drop(win):
    v = win.view
    v.setFocus()
    v.set_scale(1.0)
    win.a_zoom_in.trigger()
    assert abs(v.scale_factor() - 1.25) < 1e-6
    win.a_actual.trigger()
    assert abs(v.scale_factor() - 1.0) < 1e-6
    win.a_fit.trigger()
    assert v.scale_factor() <= 1.0
    # dropping a plan file imports it
    p = win.export_plan(Path(tempfile.mkdtemp()) / "drop.plan.json", strategy="hybrid")
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(p)])
    ev = QtGui.QDropEvent(QtCore.QPointF(200, 200), QtCore.Qt.CopyAction, mime, QtCore.Qt.LeftButton,
                          QtCore.Qt.NoModifier)
    win.dropEvent(ev)
    assert win.strategy == "custom" and win.doc.plans["custom"].notes["imported_strategy"] == "hybrid"
    settle(win)


def test_dark_scheme_follows_the_system(small, qapp):
    win = small
    # the offscreen platform has no system scheme to switch: deliver the signal's argument directly
    win.set_color_scheme(QtCore.Qt.ColorScheme.Dark)
    assert win.theme.dark and qapp.palette().color(QtGui.QPalette.Window).lightness() < 80
    win.set_strategy("greedy")
    settle(win)
    assert win.view.backgroundBrush().color().lightness() < 80
    shot(win, "13-dark-scheme.png")
    win.set_color_scheme(QtCore.Qt.ColorScheme.Light)
    assert not win.theme.dark and win.view.backgroundBrush().color().lightness() > 200


def test_ui_stays_responsive_while_opening_and_toggling(qapp, env):
    """The worst UI-thread stall while a (cached) model opens, lays out and is toggled."""
    from gui.diagnostics import StallMeter

    w = make_window(qapp, env / "settings2.ini")
    wait(lambda: w.model.devices is not None, 180)
    wait(lambda: False, 0.5)  # the window is up and painted before a model is opened, as in the app
    meter = StallMeter()
    meter.start("open")
    w.open_model(MODEL)
    assert wait(lambda: w.view.scene().graph is not None and not w.busy, 240)
    for s in ("greedy", "dp", "hybrid", "none", "greedy"):
        meter.mark(f"toggle {s}")
        w.set_strategy(s)
        wait(lambda: not w.busy, 30)
    meter.mark("side by side")
    w.set_side_by_side(True)
    wait(lambda: not w.rview.scene().building, 30)
    wait(lambda: False, 0.3)
    worst = meter.stop()
    print(f"worst UI stall {worst:.0f} ms during {meter.worst_at!r}; gaps over 100 ms: {meter.over(100)}")
    w.close()
    # The goal is 100 ms (scripts/bench_gui.py --zoo measures it); a test on a shared 2-core machine can
    # only guard against real freezes, such as parsing a large model on a thread (seconds).
    assert worst < 1000


def test_layout_falls_back_without_dot(qapp, env, monkeypatch):
    import shutil

    from engine import layout_cache

    monkeypatch.setenv("FUSELENS_NO_DOT", "1")
    layout_cache.forget_in_memory()
    shutil.rmtree(env / "cache" / "layouts", ignore_errors=True)  # no cached dot layout to fall back on
    w = make_window(qapp, env / "settings3.ini")
    w.open_model(MODEL)
    assert wait(lambda: w.view.scene().graph is not None and not w.busy, 240)
    assert "built-in" in w.activity.layout_label.text() and "dot not found" in w.activity.layout_label.toolTip()
    assert "dot not found" in w.statusBar().currentMessage()
    sc = w.view.scene()
    assert all(sc.nodes[b].pos().y() > sc.nodes[a].pos().y() for a, b in sc.edges)
    shot(w, "14-builtin-layout.png")
    w.close()
    layout_cache.forget_in_memory()


@pytest.fixture(scope="module")
def tiny_win(qapp, env, tmp_path_factory):
    import onnx

    from tests.models import tiny_onnx

    p = tmp_path_factory.mktemp("tiny") / "tiny.onnx"
    onnx.save(tiny_onnx(), p)
    w = make_window(qapp, env / "settings4.ini")
    w.open_model(str(p))
    assert wait(lambda: w.view.scene().graph is not None and not w.busy, 120), w.last_error
    yield w
    from gui import worker

    w.close()
    worker.wait_all(60000)


def test_benchmark_a_small_model_through_the_runner(tiny_win):
    pytest.importorskip("engine.runner")
    w = tiny_win
    w.set_strategy("greedy")
    w.set_right_strategy("dp")
    w.set_side_by_side(True)
    done = []
    w.results_changed.connect(lambda: done.append(1))
    w.benchmark(repeat=3)
    assert w.activity.progress.isVisible() and w.activity.cancel_button.isVisible()
    assert wait(lambda: done, 300), w.last_error
    res = w.doc.results_for("cpu")
    assert set(res) == {"greedy", "dp"}, w.last_error
    for s, r in res.items():
        assert r.error is None and r.correct is True and r.latency_ms["median"] > 0
    rows = {r["strategy"]: r for r in w.latency.rows}
    assert rows["greedy"]["median"] == res["greedy"].latency_ms["median"]
    assert rows["none"]["median"] is None
    table = {w.latency.table.item(i, 0).text(): w.latency.table.item(i, 9).text()
             for i in range(w.latency.table.rowCount())}
    assert table["none"] == "not yet measured" and table["greedy"] in ("measured", "cached")
    assert [s for s, _ in w.latency.series["measured"]] == ["greedy", "dp"]
    # kernel times reach the properties panel and the heat overlay
    sc = w.view.scene()
    gi = next(i for i, m in enumerate(sc.plan.groups) if len(m) > 1)
    w.selection.activate(w.view, ("group", gi))
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
    assert wait(lambda: not w.busy, 30)
    assert len(w.doc.results) == n and w.activity.last_cancelled == ["bench"] and not w.activity.progress.isVisible()


def test_large_models_are_read_and_tvm_planned_in_a_child_process(qapp, env, tmp_path, monkeypatch):
    """Parsing a big ONNX file holds Python's lock for seconds: such files are read in a child process
    (forced here with a zero size limit) and planned with TVM there too."""
    import onnx

    from engine.jobs import open_model
    from tests.models import tiny_onnx

    monkeypatch.setattr(open_model, "IN_PROCESS_MAX_BYTES", 0)
    p = tmp_path / "big.onnx"
    onnx.save(tiny_onnx(), p)
    w = make_window(qapp, env / "settings5.ini")
    w.open_model(str(p))
    assert wait(lambda: w.doc is not None and not w.busy, 180), w.last_error
    g = w.doc.graph
    assert len(g) == 7 and g.mod_factory is None and w.view.scene().graph is g  # the graph came back as data
    assert wait(lambda: "tvm" in w.doc.plans or "tvm" in w.doc.plan_errors, 180)
    assert "tvm" in w.doc.plans, w.doc.plan_errors
    assert {frozenset(x) for x in w.doc.plans["tvm"].groups} == {frozenset(x) for x in w.doc.plans["greedy"].groups}
    w.close()
