"""The desktop app, driven for real (offscreen): open a model, toggle every strategy, side by side,
collapse, find, properties, heat, export and import a plan, errors in the window, benchmark a small
model through the runner, settings, and screenshots of the main states.

Every test has a fresh window of its own (conftest's `new_window`: own settings file, private cache) on the
smallest graph that exercises what it checks: mostly a generated one (tests/synthetic.residual, opened with
`open_graph`: no TVM module, so no benchmarking and no "tvm" plan), small ONNX models built in code
(tests/models.py) where a test needs a model file or TVM, and a zoo model only where the point is a
real-size model. Tests wait on the window's public signals and its `busy` property.

Screenshots go to $FUSELENS_SCREENSHOTS, else <tmp>/fuselens-screenshots."""
from __future__ import annotations

import json
from pathlib import Path
import pytest
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from engine.layout import graph as L  # noqa: E402
from tests.support.gui_helpers import TIMEOUT_MS, make_settings, open_graph, open_model, settle, shot  # noqa: E402
from tests.support.gui import close, node_probe, on_screen_colour, win  # noqa: F401

pytest.importorskip("pytestqt")


def in_view(view, point) -> bool:
    """Whether the scene point is within what the view shows."""
    return view.mapToScene(view.viewport().rect()).boundingRect().contains(point)


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



def test_recent_menu_shows_a_path_with_an_ampersand_and_a_tab_as_it_is(win, monkeypatch):
    """A recent file's path is data: its & is no mnemonic (Qt would drop it), its tab no shortcut column;
    choosing the entry opens the path unchanged."""
    path = "/tmp/a&b\tc.onnx"
    monkeypatch.setattr(win.prompts.files, "recent", lambda: [path])
    opened = []
    monkeypatch.setattr(win.prompts.files, "open_model", opened.append)
    win.prompts.fill_recent()
    a = win.prompts.recent_menu.actions()[0]
    assert a.text() == "&1  /tmp/a&&b c.onnx\tCtrl+1"
    a.trigger()
    assert opened == [path]
