"""Cost Model panel (pyqtgraph): how well the cost model predicts the shown plan's kernels. Each kernel
of the left pane's plan is a point, estimated (x) against measured on the selected device (y), log-log,
coloured by its fusion kind, with the line y = x (a perfect estimate: above it the model was optimistic);
a line of figures above it: Spearman's rank correlation, the 10th / 50th / 90th percentiles of
measured / estimated, how many kernels were timed, and which cost model was evaluated.

Nothing here is an estimate passed off as a measurement: the points exist only once "Time kernels"
has timed the plan's kernels (engine.planner.fidelity.of_plan, through the window's
FidelityController); until then the panel says what the plan's own figures are (which model estimated
them) and that nothing is measured yet. When the plan, the profile, the device or the cost changes,
a result of before is drawn faded and marked stale.

The panel follows the models (`follow`): the Workspace (open Document, its plans and fidelity results,
device, profile, cost), the ViewState (the strategy shown, the selection: the selected group's point is
ringed) and the controller's `running`. Clicking a point asks for its group (`group_requested`).
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from engine.planner.plan import provenance_of
from engine.report.result_rows import estimate_label

from .. import plain, style

# fusion kinds (engine/planner/kinds.py): FuseOps' own in greys and orange, the kinds beyond it in their badge colours
KIND_COLOURS = {"single": "#8c8c8c", "epilogue": "#e15759", **style.KIND_COLOURS}
KIND_ORDER = ("single", "epilogue", "prologue", "anchor_chain", "horizontal", "reduction_stitch")
COST_MODEL_TITLES = {"learned": "learned model", "roofline": "roofline"}


def us_text(v: float) -> str:
    """A tick's label: 0.5, 20, 300, 2k, 10k (us)."""
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def log_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """Ticks for a log axis from lo to hi (log10 of us): 1-2-5 steps (1-2-3-5-7 over less than a decade,
    decades only over more than three), labelled in us; pyqtgraph's own label every minor tick."""
    span = hi - lo
    mults = (1,) if span > 3 else (1, 2, 5) if span > 1 else (1, 2, 3, 5, 7)
    out = []
    for k in range(math.floor(lo) - 1, math.ceil(hi) + 1):
        for m in mults:
            v = m * 10.0 ** k
            if lo <= math.log10(v) <= hi:
                out.append((math.log10(v), us_text(v)))
    return out


def kind_title(kind: str) -> str:
    from engine.planner.kinds import TITLES

    return TITLES.get(kind, kind)


def figures_text(f: dict, target: str) -> str:
    """The fidelity figures as one line (rich text, every value from the result escaped)."""
    def num(v, fmt="{:.2f}"):
        return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)

    parts = [plain.rich("<b>Spearman {v}</b>", v=num(f.get('spearman'))),
             plain.rich("measured/estimated p10 {a} · p50 <b>{b}</b> · p90 {c}",
                        a=num(f.get("ratio_p10")), b=num(f.get("ratio_p50")), c=num(f.get("ratio_p90"))),
             plain.rich("{n} of {m} kernels timed on {target}", n=f.get('kernels', 0),
                        m=f.get('kernels_in_plan', f.get('kernels', 0)), target=target),
             plain.rich("estimates: {m}", m=f.get("cost_model_title") or f.get("cost_model") or "?")]
    text = plain.Rich(" &nbsp;·&nbsp; ").join(parts)
    if f.get("excluded_from_training"):
        text += plain.rich(" (trained without {x} and any kernel of the same structure)",
                           x=", ".join(map(str, f["excluded_from_training"])))
    if f.get("busy_left_out"):
        text += plain.rich("<br>{n} timings taken while the machine was busy were left out.", n=f['busy_left_out'])
    if f.get("not_timed"):
        text += plain.rich("<br>{n} kernels have no time (see the error, or time again).", n=f['not_timed'])
    if f.get("error"):
        text += plain.rich("<br><span style='color:#d62728'>timing error: {e}</span>", e=f['error'])
    return text


def benchmark_fidelity(doc, target: str, strategy: str) -> dict | None:
    """The plan's kernel times from its latest benchmark on `target` (runner.BenchResult.kernel_us, one a
    group) against the plan's own estimates, as a fidelity result (engine.planner.fidelity.of_plan's
    keys), or None when the benchmark timed none of them (or measured another plan)."""
    from engine.planner.calibrate import fidelity

    owner = doc.same_plans().get(strategy, strategy)   # the same plan benchmarked under another name: its kernels
    plan, r = doc.plans.get(strategy), doc.result(target, owner)
    if plan is None or r is None or getattr(r, "error", None):
        return None
    measured_plan = doc.measured_plans.get((target, owner))
    ku = list(getattr(r, "kernel_us", None) or [])
    if measured_plan is not None and measured_plan.groups != plan.groups or len(ku) != len(plan.groups) \
            or len(plan.group_us or []) != len(plan.groups):
        return None
    kinds = plan.group_kinds if len(plan.group_kinds or []) == len(plan.groups) else [{}] * len(plan.groups)
    rows = [{"group": gi, "nodes": list(g), "estimated_us": plan.group_us[gi], "measured_us": ku[gi],
             "uncertainty": None, "kind": kinds[gi].get("kind") or "single"}
            for gi, g in enumerate(plan.groups) if ku[gi] and plan.group_us[gi]]
    if not rows:
        return None
    f = fidelity([x["estimated_us"] for x in rows], [x["measured_us"] for x in rows])
    est = provenance_of(plan).estimate_kind
    return {"model": doc.name, "strategy": strategy, "target": target, "cost_model": est,
            "cost_model_title": f"the plan's {estimate_label(plan)}", "excluded_from_training": [],
            "kernels": len(rows), "kernels_in_plan": sum(1 for u in ku if u is not None) or len(rows),
            "not_timed": 0, "busy_left_out": 0, "spearman": f["spearman"], "ratio_p10": f["p10"],
            "ratio_p50": f["p50"], "ratio_p90": f["p90"], "rms_log": f["rms_log"], "error": None, "rows": rows,
            "source": "benchmark", "same_as": owner if owner != strategy else None}


class CostModelPanel(QtWidgets.QWidget):
    time_requested = QtCore.Signal()          # the "Time kernels" button
    group_requested = QtCore.Signal(int)      # a point clicked: its group's index in the shown plan

    def __init__(self, parent=None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        self.figures = QtWidgets.QLabel("No model loaded.")
        self.figures.setWordWrap(True)
        self.figures.setTextInteractionFlags(QtCore.Qt.TextSelectableByMouse)
        self.button = QtWidgets.QPushButton("Time kernels")
        self.button.setToolTip(plain.tooltip("Build and time every kernel of the shown plan on the selected device "
                                             "(in a worker process; cached after) and plot the cost model's "
                                             "estimate of each against its measured time"))
        self.button.clicked.connect(self.time_requested)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)   # the ticks are set for the range shown
        self.plot.hideButtons()
        self.plot.setLogMode(x=True, y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        for ax in ("left", "bottom"):
            self.plot.getAxis(ax).enableAutoSIPrefix(False)
        # the legend is a line of its own under the plot: inside the view box it would cover points
        self.legend = QtWidgets.QLabel("")
        self.legend.setWordWrap(True)
        self.legend_entries: list[str] = []   # what the legend names, in order
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.figures, 1)
        top.addWidget(self.button, 0, QtCore.Qt.AlignTop)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.legend)
        self.points: list[dict] = []       # what is drawn: {"x", "y", "kind", "group" (plan index or None)}
        self.stale = ""                    # why the result drawn is stale ("" when it is not, or none is)
        self.shown = None                  # the Fidelity drawn (document.Fidelity) or None
        self.ring = None                   # the ring drawn round the selected group's point, or None
        self._workspace = self._state = self._controller = None
        self.set_theme(False)

    # ---- following the models -------------------------------------------------------------------

    def follow(self, workspace, state, controller):
        """Redraw from the models from now on: the open Document (its plans and fidelity results), the
        device, profile and cost (workspace); the strategy shown and the selection (state); whether
        kernels are being timed (controller.events.running)."""
        from ..fidelity_controller import fidelity_cost

        self._workspace, self._state, self._controller = workspace, state, controller
        self._fidelity_cost = fidelity_cost
        workspace.events.document.connect(lambda ev: QtCore.QTimer.singleShot(0, self.redraw))
        for name in ("plans", "fidelity", "device", "profile", "cost"):
            workspace.events[name].connect(lambda ev: self.redraw())
        workspace.events.results.connect(lambda ev: self.redraw())   # a benchmark times the plan's kernels too
        state.events.strategy.connect(lambda ev: self.redraw())
        state.events.selection.connect(lambda ev: self._draw_ring())
        controller.events.running.connect(lambda ev: self._on_running(ev.value))

    def _on_running(self, strategy):
        self.button.setEnabled(strategy is None)
        self.button.setText("Timing..." if strategy else "Time kernels")
        self.redraw()

    def redraw(self):
        ws = self._workspace
        if ws is None:
            return
        doc, target = ws.doc, ws.device
        if doc is None:
            self._clear(plain.rich("No model loaded."))
            return
        strategy = self._state.strategy
        plan = doc.plans.get(strategy)
        found = doc.fidelity_for(target, strategy, self._fidelity_cost(ws.cost))
        running = self._controller.running if self._controller is not None else None
        if found is None:
            if plan is None:
                self._clear(plain.rich("No {s} plan yet.", s=strategy))
                return
            bench = benchmark_fidelity(doc, target, strategy)
            if bench is not None:   # Benchmark timed its kernels: those times against its estimates
                from ..document import Fidelity

                self.draw(Fidelity(plan, "benchmark", doc.hw.name, bench), target, plan=plan)
                plain.rich_label(self.figures, plain.rich(
                    "<b>{s}</b>: its kernels as Benchmark timed them (instrumented whole-model runs) against its "
                    "{est}. <i>Time kernels</i> times each alone, against a cost model trained without this "
                    "model{same}.<br>", s=strategy, est=estimate_label(plan),
                    same=f" (benchmarked as {bench['same_as']}: the same plan)" if bench["same_as"] else "")
                    + figures_text(bench, target))
                return
            n = sum(1 for u in (plan.group_us or []) if u)
            owner = doc.same_plans().get(strategy, strategy)
            r = doc.result(target, owner)
            timed = r is not None and not getattr(r, "error", None) and (getattr(r, "latency_ms", None) or {})
            what = ("the benchmark timed the whole model, not its kernels" if timed else "nothing measured yet")
            self._clear(plain.rich("<b>{s}</b>: {what}; its figures are the {est} ({n} kernels). ",
                                   s=strategy, what=what, est=estimate_label(plan), n=n)
                        + (plain.rich("Timing its kernels on {t}...", t=target) if running == strategy else
                           plain.rich("<i>Time kernels</i> builds and times them on {t} "
                                      "and plots the cost model's estimate of each against its time.", t=target)))
            return
        fid, why = found
        self.draw(fid, target, stale=why, plan=plan)

    # ---- drawing ---------------------------------------------------------------------------------

    def _clear(self, text: plain.Rich):
        self.plot.clear()
        for ax in ("left", "bottom"):
            self.plot.getAxis(ax).setTicks(None)
        self._set_legend([])
        self.points, self.stale, self.shown, self.ring = [], "", None, None
        plain.rich_label(self.figures, text)
        self.plot.setLabel("bottom", "estimated (us)")
        self.plot.setLabel("left", "measured (us)")

    def draw(self, fid, target: str, stale: str = "", plan=None):
        """Draw a fidelity result (document.Fidelity) measured on `target`; `stale`: why it no longer
        describes the plan shown (drawn faded); `plan`: the plan shown (points map to its groups)."""
        f = fid.result
        self.plot.clear()
        self.ring = None
        self.shown, self.stale = fid, stale
        group_of = plan.group_of() if plan is not None and not stale else {}
        pts = []
        for r in f.get("rows") or []:
            e, m = r.get("estimated_us"), r.get("measured_us")
            if not e or not m or e <= 0 or m <= 0:
                continue   # log axes: a kernel with no positive figure cannot be placed
            nodes = r.get("nodes") or []
            gi = group_of.get(nodes[0]) if nodes else None
            pts.append({"x": float(e), "y": float(m), "kind": r.get("kind") or "single", "group": gi,
                        "nodes": nodes})
        self.points = pts
        model = COST_MODEL_TITLES.get(f.get("cost_model"), f.get("cost_model") or "cost model")
        self.plot.setLabel("bottom", plain.esc(f"estimated by the {model} (us)", quote=False))
        self.plot.setLabel("left", plain.esc(f"measured on {target} (us)", quote=False))
        alpha = 70 if stale else 210
        kinds = [k for k in KIND_ORDER if any(p["kind"] == k for p in pts)] + \
            sorted({p["kind"] for p in pts} - set(KIND_ORDER))
        entries = []
        for k in kinds:
            sel = [p for p in pts if p["kind"] == k]
            c = QtGui.QColor(KIND_COLOURS.get(k, "#5a5a60"))
            c.setAlpha(alpha)
            name = f"{kind_title(k)} ({len(sel)})"
            item = pg.PlotDataItem([p["x"] for p in sel], [p["y"] for p in sel], pen=None, symbol="o", symbolSize=7,
                                   symbolBrush=pg.mkBrush(c), symbolPen=pg.mkPen(QtGui.QColor(0, 0, 0, alpha // 2)),
                                   name=name)
            self.plot.addItem(item)
            entries.append((KIND_COLOURS.get(k, "#5a5a60"), "\u25cf", name))
        if pts:
            entries.append(("#888", "- -", "y = x (exact)"))
        self._set_legend(entries)
        if pts:
            lo = min(min(p["x"] for p in pts), min(p["y"] for p in pts)) / 1.5
            hi = max(max(p["x"] for p in pts), max(p["y"] for p in pts)) * 1.5
            line = pg.PlotDataItem([lo, hi], [lo, hi], pen=pg.mkPen("#888", width=1, style=QtCore.Qt.DashLine),
                                   name="y = x (exact)")
            line.setZValue(-1)
            self.plot.addItem(line)
            self.plot.setXRange(math.log10(lo), math.log10(hi), padding=0)
            self.plot.setYRange(math.log10(lo), math.log10(hi), padding=0)
            ticks = log_ticks(math.log10(lo), math.log10(hi))
            for ax in ("left", "bottom"):
                self.plot.getAxis(ax).setTicks([ticks, []])
        strategy = getattr(fid.plan, "strategy", "") or ""
        head = plain.rich("<b>{s}</b>: ", s=strategy)
        if stale:
            head = plain.rich("<span style='color:#b36b00'><b>Stale</b> ({why}): Time kernels again.</span><br>",
                              why=stale) + head
        plain.rich_label(self.figures, head + (figures_text(f, target) if pts or f.get("error") else
                                               plain.rich("no kernel could be timed. ") + figures_text(f, target)))
        self._draw_ring()

    def _set_legend(self, entries):
        """The legend line: (colour, mark, name) per entry."""
        self.legend_entries = [name for _, _, name in entries]
        plain.rich_label(self.legend, plain.Rich(" &nbsp; ").join(
            plain.rich("<span style='color:{c}'>{mark}</span>&nbsp;{n}", c=c, mark=mark, n=n)
            for c, mark, n in entries))
        self.legend.setVisible(bool(entries))

    def _draw_ring(self):
        """A ring around the point of the group selected in the left pane."""
        if self.ring is not None:
            self.plot.removeItem(self.ring)
            self.ring = None
        sel = self._state.selection.left if self._state is not None else None
        if not sel or sel[0] not in ("group", "collapsed") or not self.points:
            return
        hit = [p for p in self.points if p["group"] == sel[1]]
        if not hit:
            return
        self.ring = pg.PlotDataItem([hit[0]["x"]], [hit[0]["y"]], pen=None, symbol="o", symbolSize=16,
                                     symbolBrush=None, symbolPen=pg.mkPen("#e0115f", width=2))
        self.plot.addItem(self.ring)

    def _clicked(self, ev):
        """A click on (near) a point asks for its group."""
        if not self.points or ev.button() != QtCore.Qt.LeftButton:
            return
        vb = self.plot.getPlotItem().vb
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        px = vb.mapViewToScene
        best, dist = None, 10.0 ** 2   # within 10 px
        for p in self.points:
            if p["group"] is None:
                continue
            q = px(QtCore.QPointF(math.log10(p["x"]), math.log10(p["y"])))
            d = (q.x() - ev.scenePos().x()) ** 2 + (q.y() - ev.scenePos().y()) ** 2
            if d < dist:
                best, dist = p, d
        if best is not None:
            self.group_requested.emit(best["group"])

    def set_theme(self, dark: bool):
        self.plot.setBackground("#1e1f22" if dark else "w")
        fg = "#dfe1e5" if dark else "#333"
        for ax in ("left", "bottom"):
            self.plot.getAxis(ax).setPen(fg)
            self.plot.getAxis(ax).setTextPen(fg)
