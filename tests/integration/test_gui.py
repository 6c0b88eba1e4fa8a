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

import pytest
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from engine.layout import graph as L  # noqa: E402
from engine.planner import STRATEGIES  # noqa: E402
from tests.support.gui_helpers import TIMEOUT_MS, make_settings, open_graph, open_model, settle, shot  # noqa: E402
from tests.support.gui import PROFILE, close, generated, node_probe, on_screen_colour, win  # noqa: F401

pytest.importorskip("pytestqt")


MODEL = "zoo:mobilenetv2@64"   # only where the point is a real-size model (the responsiveness test)


@pytest.fixture
def cnn_model(tmp_path):
    """tests/models.small_cnn_onnx as a file: a model with a TVM module (the "tvm" plan) whose greedy and dp
    plans share fused groups and differ in others."""
    import onnx

    from tests.support.models import small_cnn_onnx

    p = tmp_path / "small_cnn.onnx"
    onnx.save(small_cnn_onnx(), p)
    return p


def check_boxes(sc, plan) -> list[int]:
    """One rounded box per fused group, around its members; returns the fused groups' indices."""
    multi = [gi for gi, m in enumerate(plan.groups) if len(m) > 1]
    assert sorted(sc.boxes) == multi
    for gi in multi:
        box = sc.boxes[gi].sceneBoundingRect()
        assert all(box.contains(sc.nodes[m].sceneBoundingRect()) for m in plan.groups[gi])
    return multi


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


def test_dynamic_dims_dialog_prefilled_and_remembered(new_window, qtbot, tmp_path, monkeypatch):
    import onnx

    from gui import dialogs
    from tests.support.models import tiny_onnx

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
    from tests.support.models import tiny_onnx

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

