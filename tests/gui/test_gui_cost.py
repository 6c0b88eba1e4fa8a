"""The app's Cost selector (roofline estimate, learned estimate, measured on device) and the labels of
every estimated figure, offscreen on small generated graphs.

No learned model ships in every checkout and a test's private cache has none, so `learned_model` puts a
fixed one in (engine.planner.learned.for_target): it predicts LEARNED_SCALE x the roofline, so a
learned figure is told from a roofline one by its value as well as by the plan's notes. Nothing here
times a kernel (tests/{gui,integration}/test_gui_measured.py does, on the tiny model file)."""
from __future__ import annotations

import pytest

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, reshow, settle  # noqa: E402
from engine.planner.setup import Setup
from tests.support.gui_cost import LEARNED_SCALE, choose, learned_model, replanned  # noqa: F401

pytest.importorskip("pytestqt")


COSTED = ("dp", "hybrid", "optimal")


def learned_us(graph, hw, groups) -> float:
    """What the fake model predicts for a plan: LEARNED_SCALE x the learned model's roofline feature
    (per timing thread, no launch overhead: features.Featurizer.roofline_us) of each kernel."""
    from engine.planner import features
    from engine.planner.cost import CostModel

    cm = CostModel(graph, hw)
    fz = features.Featurizer(cm)
    idx = [[cm.index[m] for m in g] for g in groups]
    return sum(LEARNED_SCALE * fz.roofline_us(g) for g in idx if not all(cm.glue[i] for i in g))


@pytest.fixture
def no_learned_model(monkeypatch):
    from engine.planner import cost_source, learned

    monkeypatch.setattr(learned, "for_target", lambda *a, **k: None)
    cost_source.clear()
    yield
    cost_source.clear()


def latency_ticks(win) -> list[str]:
    return ["\n".join(lab) for lab in win.latency.tick_labels]   # the latency axis's labels, as drawn


def assert_labelled(win, qtbot, word: str):
    """Every place that shows an estimate names `word` ("learned" | "roofline") as its model."""
    label = f"{word} estimate"
    plan = win.doc.plans["dp"]
    reshow(win, "dp")
    msg = win.statusBar().currentMessage()
    assert msg.startswith(f"dp ({word}): ") and f"{label} {plan.estimated_us / 1000:.3f} ms" in msg, msg
    gi = next(i for i, g in enumerate(plan.groups) if len(g) > 1)
    win.selection.activate("left", ("group", gi))
    v = win.props.values()
    assert v[label] == f"{plan.group_us[gi]:.2f} us ({plan.hardware})", v
    other = "roofline estimate" if word == "learned" else "learned estimate"
    assert other not in v and "estimated cost" not in v
    win.set_heat(True)
    assert win.view.legend.isVisible() and win.view.legend.title.startswith(label), win.view.legend.title
    win.set_heat(False)
    legend = [lab.text for _, lab in win.latency.legend.items]
    assert f"{label} ({win.doc.hw.title})" in legend, legend
    ticks = latency_ticks(win)
    assert f"dp\n({word})" in ticks and "greedy" in ticks and "none" in ticks, ticks   # what dp decided by
    assert win.latency.plot.getAxis("bottom").fixedHeight is not None                   # room for two lines
    assert f"Grey dashed bars: each plan's {label} (in brackets under dp" in win.latency.note.text()
    rows = {r["strategy"]: r for r in win.latency.rows}
    assert rows["greedy"]["estimate"] == label and rows["dp"]["estimate"] == label
    assert rows["dp"]["title"] == f"dp ({word})" and rows["greedy"]["title"] == "greedy"
    table = win.latency.table
    col = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())].index("estimate")
    assert {table.item(r, col).text() for r in range(table.rowCount())} - {""} == {label}   # "": no tvm plan
    win.set_side_by_side(True)
    win.set_right_strategy("greedy")
    settle(qtbot, win)
    assert win.area.summary.text().count(label) == 2, win.area.summary.text()
    win.set_side_by_side(False)
    settle(qtbot, win)


def test_the_estimator_of_each_cost():
    from gui.document import estimator

    assert [estimator(c) for c in ("roofline", "learned", "measured")] == ["roofline", "learned", "learned"]


def test_replan_job_passes_the_cost_to_every_strategy(monkeypatch, learned_model):
    """learned / roofline: every strategy priced by it; measured: dp, hybrid and optimal by "measured", the
    others by the learned estimate (no kernel is timed here: "measured" is planned as "learned")."""
    from dataclasses import replace

    import engine.planner as planner
    from engine.planner import profiles, setup
    from gui.document import FAST_STRATEGIES
    from gui.planning import replan_job

    real, calls = planner.make_plan, []

    def make_plan(graph, strategy, s, **kw):
        calls.append((strategy, s.cost, s.spec))
        return real(graph, strategy, replace(s, cost="learned" if s.cost == "measured" else s.cost))

    monkeypatch.setattr(planner, "make_plan", make_plan)
    g = synthetic.chain(8)
    for cost, want in (("learned", {s: "learned" for s in FAST_STRATEGIES}),
                       ("roofline", {s: "roofline" for s in FAST_STRATEGIES}),
                       ("measured", {s: "measured" if s in COSTED else "learned" for s in FAST_STRATEGIES})):
        calls.clear()
        hw, (plans, errors), err = replan_job(g, setup.resolve("cpu", "host", cost), list(FAST_STRATEGIES),
                                              lambda *a: None, None)
        assert not errors and not err and hw.name == "host"
        assert {s: c for s, c, _ in calls} == want, cost
        assert {t for _, _, t in calls} == {"cpu"}
        est = "roofline" if cost == "roofline" else "learned"
        assert {p.notes["estimate"] for p in plans.values()} == {est}, cost
    assert profiles.get("host").name == "host"


def test_a_plan_made_elsewhere_is_priced_like_the_others(learned_model):
    """TVM's plan (made in a child) and an imported one get the same estimator's figures as the rest."""
    from engine.planner import make_plan, profiles
    from gui.planning import price

    g, hw = synthetic.chain(8), profiles.get("host")
    roof = make_plan(g, "greedy", Setup(hw, cost="roofline"))
    p = price(roof, g, Setup(hw, cost="learned"))
    assert roof.notes["estimate"] == "roofline" and p is not roof              # a copy: the original stays
    assert p.notes["estimate"] == "learned" and p.notes["cost"] == "learned"
    assert p.estimated_us == pytest.approx(learned_us(g, hw, p.groups))
    assert p.notes["roofline_us"] == pytest.approx(roof.estimated_us)
    back = price(p, g, Setup(hw, cost="roofline"))
    assert back.notes["estimate"] == "roofline" and "group_source" not in back.notes and "roofline_us" not in back.notes
    assert back.estimated_us == pytest.approx(roof.estimated_us)
    # a profile the learned model does not describe (a GPU's, for the CPU): the roofline, and why
    t4 = price(roof, g, Setup(profiles.get("t4"), cost="learned"))
    assert t4.notes["estimate"] == "roofline" and "does not describe target cpu" in t4.notes["cost_note"]


def test_estimate_labels():
    from types import SimpleNamespace as NS

    from gui.document import cost_tag, estimate_label, estimate_source, group_estimate

    roof = NS(strategy="dp", group_us=[2.0, 0.0], notes={"estimate": "roofline", "cost": "roofline"})
    learned = NS(strategy="greedy", group_us=[2.0, 3.0, 0.0],
                 notes={"estimate": "learned", "cost": "learned", "group_source": ["measured", "learned", "learned"]})
    timed = NS(strategy="dp", group_us=[2.0, 0.0],
               notes={"estimate": "learned", "cost": "measured", "group_source": ["measured", "learned"]})
    assert [estimate_source(p) for p in (roof, learned, timed)] == ["roofline", "learned", "measured"]
    assert estimate_label(roof) == "roofline estimate" and estimate_label(timed) == "measured"
    assert estimate_label(learned) == "learned estimate (1 of 2 kernels measured)"
    assert estimate_source(NS(group_us=[1.0], notes=None)) == "roofline"        # an old plan: the roofline's
    assert group_estimate(learned, 0) == ("measured", 2.0) and group_estimate(learned, 1) == ("learned estimate", 3.0)
    assert group_estimate(roof, 0) == ("roofline estimate", 2.0) and group_estimate(roof, 5) is None
    assert cost_tag(roof) == "roofline" and cost_tag(learned) == "" and cost_tag(timed) == "measured"


def test_cost_box_offers_three_costs_and_each_replans(new_window, qtbot, tmp_path, learned_model):
    win = new_window(strategy="dp")
    assert win.model.profile == "host" and win.model.cost == "learned"          # the default
    box = win.cost_box
    assert [box.itemText(i) for i in range(box.count())] == ["roofline estimate", "learned estimate",
                                                             "measured on device"]
    assert [box.itemData(i) for i in range(box.count())] == ["roofline", "learned", "measured"]
    assert box.currentData() == "learned"
    open_graph(qtbot, win, synthetic.residual(24))
    plans = win.doc.plans
    for s, p in plans.items():     # every strategy priced by the learned model, the costed ones decided by it
        assert p.notes["estimate"] == "learned" and p.notes["cost"] == "learned", s
        assert p.estimated_us == pytest.approx(learned_us(win.doc.graph, win.doc.hw, p.groups)), s
        assert learned_model.title in p.notes["cost_note"]
    assert_labelled(win, qtbot, "learned")
    # the roofline: every strategy re-planned by it
    replanned(qtbot, win, lambda: choose(box, "roofline"))
    assert win.last_error == "", win.last_error
    msg = win.statusBar().currentMessage()
    assert msg == f"Re-planned every strategy for {win.doc.hw.title} on cpu, priced by the roofline estimate", msg
    for s, p in win.doc.plans.items():
        assert p.notes["estimate"] == "roofline" and p.notes["cost"] == "roofline", s
        assert "roofline_us" not in p.notes and "group_source" not in p.notes
    assert make_settings(tmp_path / "settings.ini").cost == "roofline"          # persisted
    assert box.currentText() == "roofline estimate"
    assert_labelled(win, qtbot, "roofline")
    # and back
    replanned(qtbot, win, lambda: choose(box, "learned"))
    assert {p.notes["estimate"] for p in win.doc.plans.values()} == {"learned"}
    assert make_settings(tmp_path / "settings.ini").cost == "learned"


def test_measured_decides_costed_strategies_by_measured_times(new_window, qtbot, monkeypatch, learned_model):
    """The app asks make_plan for "measured" for dp, hybrid and optimal only (off the UI thread); make_plan
    is stood in for here, so that nothing is timed: it marks the plans measured."""
    from dataclasses import replace

    import engine.planner as planner

    real, asked = planner.make_plan, []

    def make_plan(graph, strategy, s, progress=None, cancel=None, **kw):
        cost = s.cost
        asked.append((strategy, cost))
        p = real(graph, strategy, replace(s, cost="learned" if cost == "measured" else cost))
        if cost == "measured":
            p.notes.update(cost="measured", measure={"target": s.spec, "unique_kernels": 3},
                           measured_group_us=[None] * len(p.groups))
        return p

    monkeypatch.setattr(planner, "make_plan", make_plan)
    win = new_window(strategy="dp")
    open_graph(qtbot, win, synthetic.chain(12))
    asked.clear()
    replanned(qtbot, win, lambda: choose(win.cost_box, "measured"))
    assert sorted(s for s, c in asked if c == "measured") == sorted(COSTED)
    assert {c for s, c in asked if s not in COSTED} == {"learned"}
    for s in COSTED:
        assert win.doc.plans[s].notes["cost"] == "measured", s
    assert win.doc.plans["greedy"].notes["cost"] == "learned"
    assert "decided by measured kernel times" in win.statusBar().currentMessage()
    win.set_strategy("dp")
    assert "dp\n(measured)" in latency_ticks(win)


def test_a_saved_model_cost_means_learned(new_window, qtbot, learned_model):
    win = new_window(cost="model")          # what older versions saved
    assert win.settings.cost == "learned" and win.model.cost == "learned"
    assert win.cost_box.currentData() == "learned"
    win2 = new_window("other.ini", cost="guess")
    assert win2.model.cost == "learned"
    open_graph(qtbot, win, synthetic.chain(6))
    assert win.doc.plans["greedy"].notes["estimate"] == "learned"


def test_no_learned_model_is_a_roofline_estimate_and_says_so(new_window, qtbot, no_learned_model):
    """Learned chosen where no learned model serves the device and profile: the figures are the roofline's
    and every label says so, and the re-plan's status line says why."""
    win = new_window(strategy="dp")
    open_graph(qtbot, win, synthetic.residual(24))
    for s, p in win.doc.plans.items():
        assert p.notes["estimate"] == "roofline" and "roofline" in p.notes["cost_note"], s
    assert_labelled(win, qtbot, "roofline")
    replanned(qtbot, win, lambda: win.replan())
    msg = win.statusBar().currentMessage()
    assert "priced by the roofline estimate (roofline on profile host" in msg, msg


def test_an_imported_plan_is_priced_by_the_learned_model(new_window, qtbot, tmp_path, learned_model):
    win = new_window(strategy="greedy")
    open_graph(qtbot, win, synthetic.chain(12))
    path = win.export_plan(str(tmp_path / "greedy.json"), "greedy")
    assert path
    with qtbot.waitSignal(win.plans_changed, timeout=60_000):
        plan = win.import_plan(str(path))
    qtbot.waitUntil(lambda: win.doc.plans["custom"].notes.get("estimate") == "learned", timeout=60_000)
    settle(qtbot, win)
    custom, greedy = win.doc.plans["custom"], win.doc.plans["greedy"]
    assert custom.groups == plan.groups and custom.estimated_us == pytest.approx(greedy.estimated_us)
    assert win.strategy == "custom" and win.view.scene().plan is custom
    assert "learned estimate" in win.statusBar().currentMessage()

