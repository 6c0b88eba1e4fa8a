"""The Cost Model panel, offscreen on small generated graphs: before anything is timed it says what the
plan's figures are and that nothing is measured; "Time kernels" runs engine.planner.fidelity.of_plan for
the shown plan off the UI thread (progress and Cancel in the status bar), and the panel then plots each
kernel's estimate against its time, log-log, by kind, with y = x and the fidelity figures; it follows the
models (another strategy, another cost: stale or cleared) and a point clicked selects its group.

of_plan times kernels in a worker process (seconds to minutes), so most tests stand a function in for it
that checks its arguments against the real signature and answers at once with figures made from the
plan (`fake_result`); one test runs the real function on a generated graph, which has no model file to
build kernels from: it answers (quickly, timing nothing) with an error, which the panel shows."""
from __future__ import annotations

import threading

import pytest
from PySide6 import QtCore  # noqa: E402
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import SHOTS, open_graph, settle  # noqa: E402
from tests.support.gui_cost import choose, learned_model, replanned  # noqa: E402, F401 - fixture
from tests.support.gui_cost_model import FakeOfPlan, RATIOS, fake_result, time_kernels, win  # noqa: F401

pytest.importorskip("pytestqt")


def test_the_panel_shows_the_cost_model_against_timed_kernels(win, qtbot, monkeypatch):
    import math

    import pyqtgraph as pg

    fake = FakeOfPlan(monkeypatch)
    panel, plan = win.costpanel, win.doc.plans["dp"]
    assert win.dock_cost.windowTitle() == "Cost Model" and panel.isVisible()
    # nothing timed yet: no point, and the text says the plan's figures are estimates
    assert panel.points == [] and panel.shown is None
    text = panel.figures.text()
    assert "nothing measured yet" in text and "learned estimate" in text and "Spearman" not in text, text
    time_kernels(qtbot, win)
    assert fake.errors == [] and len(fake.calls) == 1, fake.errors
    a = fake.calls[0].arguments
    s = a["setup"]                  # the window's Setup, on the plan's profile (engine/planner/setup.py)
    assert a["graph"] is win.doc.graph and a["plan"] is plan and s.hardware is win.doc.hw
    assert s.spec == "cpu" and s.cost == "model"          # the learned model (where one serves)
    assert callable(a["progress"]) and isinstance(a["cancel"], threading.Event)
    f = fake_result(win.doc.graph, plan)
    got = win.doc.fidelity_for("cpu", "dp", "model")
    assert got is not None and got[1] == "" and got[0].result["rows"] == f["rows"]
    # the points: one per kernel, at (estimated, measured), each on its group
    assert len(panel.points) == len(f["rows"]) > 3
    assert sorted((p["x"], p["y"]) for p in panel.points) == sorted((r["estimated_us"], r["measured_us"])
                                                                   for r in f["rows"])
    gof = plan.group_of()
    assert all(p["group"] == gof[p["nodes"][0]] for p in panel.points)
    pi = panel.plot.getPlotItem()
    assert pi.ctrl.logXCheck.isChecked() and pi.ctrl.logYCheck.isChecked()          # log-log
    items = [it for it in pi.items if isinstance(it, pg.PlotDataItem)]
    line = next(it for it in items if it.name() == "y = x (exact)")
    xs, ys = line.getOriginalDataset()
    assert list(xs) == list(ys)
    kinds = {r["kind"] for r in f["rows"]}
    from engine.planner.kinds import TITLES

    names = [it.name() for it in items if it is not line]
    assert sorted(names) == sorted(f"{TITLES[k]} ({sum(r['kind'] == k for r in f['rows'])})" for k in kinds)
    brushes = {it.name(): it.opts["symbolBrush"].color().name() for it in items if it is not line}
    if len(kinds) > 1:
        assert len(set(brushes.values())) == len(kinds)            # coloured by kind
    assert panel.legend_entries == [n for k in ("single", "epilogue", "prologue", "anchor_chain", "horizontal",
                                                  "reduction_stitch") for n in names if n.startswith(TITLES[k] + " (")] \
        + ["y = x (exact)"]
    assert panel.legend.isVisible() and all(n in panel.legend.text() for n in names)
    # the figures line
    text = panel.figures.text()
    assert f"Spearman {f['spearman']:.2f}" in text and f"p50 <b>{f['ratio_p50']:.2f}</b>" in text, text
    assert f"p10 {f['ratio_p10']:.2f}" in text and f"p90 {f['ratio_p90']:.2f}" in text
    assert f"{f['kernels']} of {f['kernels_in_plan']} kernels timed on cpu" in text
    assert "learned (test: 42 kernels; test-cpu)" in text and "trained without" in text
    assert "Stale" not in text
    assert panel.plot.getAxis("bottom").labelText == "estimated by the learned model (us)"
    assert panel.plot.getAxis("left").labelText == "measured on cpu (us)"
    assert math.isclose(f["ratio_p50"], sorted(RATIOS)[len(RATIOS) // 2], rel_tol=0.5)
    msg = win.statusBar().currentMessage()
    assert msg.startswith(f"Timed {f['kernels']} of {f['kernels_in_plan']} kernels of dp on cpu: Spearman"), msg
    # a point clicked selects its group in the graph
    vb = pi.vb

    def at(q):
        return panel.plot.mapFromScene(vb.mapViewToScene(QtCore.QPointF(math.log10(q["x"]), math.log10(q["y"]))))

    def alone(q):      # how far (px) the nearest point of another group lies: a click must name one group
        a = at(q)
        return min(((a.x() - at(o).x()) ** 2 + (a.y() - at(o).y()) ** 2 for o in panel.points
                    if o["group"] != q["group"]), default=1e9)

    p = max(panel.points, key=alone)
    assert alone(p) > 10 ** 2, "no point stands alone enough to be clicked"

    def where():
        return at(p)

    # the axes settle their widths as they paint, which moves the points: click once they stay put, as a user does
    view_pos, waited = where(), 0
    while waited < 2000:
        qtbot.wait(50)
        waited += 50
        now = where()
        if now == view_pos and waited >= 200:
            break
        view_pos = now
    qtbot.mouseClick(panel.plot.viewport(), QtCore.Qt.LeftButton, pos=view_pos)
    qtbot.waitUntil(lambda: win.state.selection.left == ("group", p["group"]), timeout=5000)
    assert panel.ring is not None


def test_progress_cancel_and_the_panel_follows_the_models(win, qtbot, monkeypatch):
    fake = FakeOfPlan(monkeypatch, wait=True)
    panel = win.costpanel
    qtbot.mouseClick(panel.button, QtCore.Qt.LeftButton)
    assert fake.started.wait(30)
    # off the UI thread, with progress and Cancel in the status bar; the button waits
    qtbot.waitUntil(lambda: "timing 3 of 12 kernels" in win.statusBar().currentMessage(), timeout=10_000)
    assert "fidelity" in win.activity.running and win.activity_bar.progress.isVisible()
    assert win.activity_bar.cancel_button.isVisible() and win.busy
    assert not panel.button.isEnabled() and "Timing its kernels on cpu" in panel.figures.text()
    # Benchmark and Tune wait for it (times taken beside it are not comparable)
    win.benchmark()
    assert "kernels are being timed" in win.last_error
    win.cancel()
    qtbot.waitUntil(lambda: win.fidelity.running is None, timeout=30_000)
    settle(qtbot, win)
    assert panel.button.isEnabled() and win.doc.fidelity == {} and panel.points == []
    # now to the end
    fake.release.set()
    time_kernels(qtbot, win)
    n = len(panel.points)
    assert n > 3 and "Stale" not in panel.figures.text()
    # another strategy shown: its own (nothing timed), and back: the result again
    win.set_strategy("greedy")
    settle(qtbot, win)
    assert panel.points == [] and "nothing measured yet" in panel.figures.text()
    win.set_strategy("dp")
    settle(qtbot, win)
    assert len(panel.points) == n and "Stale" not in panel.figures.text()
    # another cost: the result of the learned model is stale for the roofline (drawn faded, said so)
    replanned(qtbot, win, lambda: choose(win.cost_box, "roofline"))
    assert len(panel.points) == n and panel.stale
    assert "Stale" in panel.figures.text() and "Time kernels again" in panel.figures.text()
    # timed again: the roofline evaluated, not stale
    time_kernels(qtbot, win)
    assert fake.calls[-1].arguments["setup"].cost == "roofline" and not panel.stale
    assert "roofline on profile host" in panel.figures.text()
    assert panel.plot.getAxis("bottom").labelText == "estimated by the roofline (us)"
    # another model opened: cleared
    open_graph(qtbot, win, synthetic.chain(10))
    qtbot.waitUntil(lambda: panel.points == [], timeout=5000)
    assert "nothing measured yet" in panel.figures.text()


def test_the_real_of_plan_is_called_and_its_error_shown(win, qtbot):
    """The job calls engine.planner.fidelity.of_plan itself. A generated graph has no model file, so the
    timing worker cannot build its kernels: an answer with an error and no kernel timed (quick), shown as
    such, never as figures."""
    with qtbot.waitSignal(win.error_shown, timeout=120_000) as sig:
        qtbot.mouseClick(win.costpanel.button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: win.fidelity.running is None, timeout=120_000)
    settle(qtbot, win)
    assert sig.args[0].startswith("Timing dp's kernels"), sig.args[0]
    fid, why = win.doc.fidelity_for("cpu", "dp", "model")
    f = fid.result
    assert f["kernels"] == 0 and f["error"] and f["kernels_in_plan"] > 0
    assert set(f) >= {"spearman", "ratio_p10", "ratio_p50", "ratio_p90", "kernels", "cost_model", "rows"}
    panel = win.costpanel
    assert panel.points == [] and "timing error" in panel.figures.text()
    assert "Spearman n/a" in panel.figures.text()

