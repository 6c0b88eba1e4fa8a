"""Latency panel (pyqtgraph): per strategy, measured median latency with min-max whiskers, the plan's
estimate (named by the model that made it: "roofline estimate", "learned estimate"; a cost-deciding
strategy's name says what it decided by, "dp (learned)"), and the published T4 GPU figures as a reference
series on an axis of their own (right: another device, not comparable with this one's milliseconds);
beside it, compile time as two labelled series, planning and build, with the kernel count; and, in a tab
of its own, a table of the numbers (planning times over 1 s in seconds).

Every measured figure says whose schedules its kernels ran with (under the strategy's name and in the
table's schedule column): "rules" (ours), "tuned n/n" or "mixed k/n" (k kernels from the tuning
records). A tuned or mixed bar is hatched, and the same plan measured with the rules only, where the
app has that figure, stands beside it as a light bar, so tuned and rule-based figures never mix.
The note above the chart says when figures were timed on a busy machine (engine/util/machine_load.py)."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from engine.util import machine_load
from engine.measure.runs import comparison_base, not_same_run
from engine.report.text import duration

from .. import plain, style
from engine.report.result_rows import ESTIMATE_TITLES, cost_tag, estimate_source, latency_row, strategy_label
from . import follow_results

PUBLISHED_KEY = {"none": "baseline", "greedy": "greedy", "dp": "dp"}
COLUMNS = ["strategy", "decided by", "median ms", "min ms", "max ms", "estimated ms", "estimate", "published T4 GPU ms",
           "planning", "build s", "kernels", "correct", "source", "schedule", "rules-only ms"]
PLANNING_COLOUR = "#c7cbd1"   # the compile chart's planning bars (build bars: the strategy's colour)
TICK_PT, MIN_TICK_PT = 9.0, 6.5   # the x labels' font: as large as fits a strategy's slot
NOT_MEASURED = ("not yet measured", "not measured", "none yet")   # the in-plot label, longest that fits first


SERIES_TITLES = {**ESTIMATE_TITLES, "measured": "measured kernel times (while planning)"}


def estimates_title(plans) -> str:
    """The name of the estimate series for these plans: "learned estimate", "roofline estimate",
    "measured kernel times (while planning)", or "estimate: learned, roofline" when the plans were
    priced by different models."""
    kinds = list(dict.fromkeys(estimate_source(p) for p in plans if p is not None))
    if len(kinds) == 1:
        return SERIES_TITLES[kinds[0]]
    return "estimate: " + ", ".join(kinds) if kinds else "estimate"


strategy_title = strategy_label   # "dp (learned)": document.strategy_label, the name everywhere


def published_for(model_name: str, input_shapes: dict | None = None) -> dict | None:
    """The published T4 figures beside this model, or None: only for the same model at the published
    resolution and batch (engine.measure.published.for_model), so mobilenetv2@32 shows none."""
    from engine.measure import published

    return published.for_model(model_name, input_shapes)


def published_elsewhere(model_name: str) -> int | None:
    """The published resolution of a model that has published figures (at another input size), else None."""
    from engine.measure import published

    base = str(model_name).removeprefix("zoo:").partition("@")[0]
    return published.PUBLISHED_RESOLUTION.get(base) if base in published.PUBLISHED_T4 else None


def _font(points: float) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPointSizeF(points)
    return f


class _Sample(pg.ItemSample):
    """A legend entry's sample, 14 px square (pyqtgraph's are 20): the legend's rows stay low."""
    SIZE = 14

    def __init__(self, item):
        super().__init__(item)
        self.setFixedWidth(self.SIZE)
        self.setFixedHeight(self.SIZE)

    def boundingRect(self):
        return QtCore.QRectF(0, 0, self.SIZE, self.SIZE)

    def paint(self, p, *args):
        p.scale(self.SIZE / 20, self.SIZE / 20)
        brushes = self.item.opts.get("brushes") if isinstance(self.item, pg.BarGraphItem) else None
        if not brushes:
            super().paint(p, *args)
            return
        # bars of several colours (one a strategy): the swatch shows them side by side, not pyqtgraph's grey
        colours = list(dict.fromkeys(pg.mkBrush(b).color().name() for b in brushes))[:6]
        w = 18 / len(colours)
        p.setPen(QtCore.Qt.NoPen)
        for k, c in enumerate(colours):
            p.setBrush(pg.mkBrush(c))
            p.drawRect(QtCore.QRectF(2 + k * w, 2, w, 18))
        p.setPen(pg.mkPen(self.item.opts.get("pen") or "#333"))
        p.setBrush(QtCore.Qt.NoBrush)
        p.drawRect(QtCore.QRectF(2, 2, 18, 18))


class FlowLegend(pg.GraphicsWidget):
    """The latency plot's legend: a swatch and a name for each named item (PlotItem.addItem / removeItem
    call addItem / removeItem, as on pyqtgraph's LegendItem; `items` holds (swatch, LabelItem) pairs as
    there), flowed like words into rows no wider than the room it is given (flow), so a long name takes
    only its own width. Compact: 14 px swatches, names without the text's 4 px margin."""
    PAD, GAP, SEP = 2, 5, 14    # around the entries; swatch to name; between two entries in a row

    def __init__(self, label_size: str = "8pt"):
        super().__init__()
        self.label_size = label_size
        self.items: list[tuple[_Sample, pg.LabelItem]] = []
        self.room = float("inf")

    def addItem(self, item, name):
        sample, label = _Sample(item), pg.LabelItem(plain.esc(name, quote=False), justify="left",
                                                 size=self.label_size)
        sample.setParentItem(self)
        label.setParentItem(self)
        label.item.document().setDocumentMargin(1)
        label.updateMin()
        self.items.append((sample, label))
        self.flow(self.room)

    def removeItem(self, item):
        """Remove the entry of a plot item (or of a name)."""
        for entry in self.items:
            if entry[0].item is item or entry[1].text == item:
                self.items.remove(entry)
                self._drop(entry)
                break
        self.flow(self.room)

    def clear(self):
        for entry in self.items:
            self._drop(entry)
        self.items = []
        self.flow(self.room)

    @staticmethod
    def _drop(entry):
        for it in entry:
            it.setParentItem(None)
            if it.scene() is not None:
                it.scene().removeItem(it)

    def flow(self, room: float):
        """Place the entries in rows no wider than room (at least one entry a row) and fit the legend to them."""
        self.room = room
        pref = QtCore.Qt.SizeHint.PreferredSize
        rh = max((max(s.height(), lab.effectiveSizeHint(pref).height()) for s, lab in self.items), default=0.0)
        x = y = right = float(self.PAD)
        for s, lab in self.items:
            size = lab.effectiveSizeHint(pref)
            lab.resize(size)
            w = s.width() + self.GAP + size.width()
            if x > self.PAD and x + w + self.PAD > room:
                x, y = float(self.PAD), y + rh
            s.setPos(x, y + (rh - s.height()) / 2)
            lab.setPos(x + s.width() + self.GAP, y + (rh - size.height()) / 2)
            right = max(right, x + w)
            x += w + self.SEP
        self.resize(QtCore.QSizeF(right + self.PAD, y + rh + self.PAD) if self.items else QtCore.QSizeF(0, 0))


class LatencyPanel(QtWidgets.QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        self.plot = pg.PlotWidget()
        self.cplot = pg.PlotWidget()
        for p, title, unit in ((self.plot, "Latency", "ms"), (self.cplot, "Compile time (number: kernels)", "s")):
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.hideButtons()
            p.setTitle(plain.esc(title), size="9pt")
            p.setLabel("left", plain.esc(unit))
            p.showGrid(y=True, alpha=0.25)
            p.disableAutoRange()  # ranges are set explicitly; auto-ranging on every addItem is slow
            p.getAxis("left").enableAutoSIPrefix(False)
        # each plot's legend has a row of its own between the title and the bars (the plot's unused top-axis
        # row), as tall as the legend and as wide as the plot: outside the view box, it never covers a bar.
        self.legend, self.legend_row = self._legend_row(self.plot)
        self.clegend, self.clegend_row = self._legend_row(self.cplot)
        # the published T4 GPU figures: a view box of their own, on the right axis (another device's ms)
        pi = self.plot.getPlotItem()
        self.pub_view = pg.ViewBox(enableMenu=False)
        self.pub_view.setMouseEnabled(x=False, y=False)
        pi.scene().addItem(self.pub_view)
        pi.getAxis("right").linkToView(self.pub_view)
        pi.getAxis("right").enableAutoSIPrefix(False)
        self.pub_view.setXLink(pi)
        pi.vb.sigResized.connect(self._fit_pub_view)
        pi.vb.sigResized.connect(lambda *_: (self._fit_marks(), self._fit_ticks()))
        self.cplot.getPlotItem().vb.sigResized.connect(lambda *_: self._fit_ticks())
        self.tick_labels: list[list[str]] = []   # the latency plot's x labels, a list of lines per strategy
        self.marks: list[pg.TextItem] = []    # "not yet measured" over a strategy without a figure
        self.note = plain.label("not yet measured")
        self.note.setWordWrap(True)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(QtGui.QFontMetrics(self.table.font()).height() + 6)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeToContents)
        plots = QtWidgets.QSplitter(QtCore.Qt.Horizontal)
        plots.addWidget(self.plot)
        plots.addWidget(self.cplot)
        plots.setStretchFactor(0, 3)
        plots.setStretchFactor(1, 2)
        # the charts and the table in tabs: each gets the panel's whole height (the table all its rows)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(plots, "Charts")
        self.tabs.addTab(self.table, "Table")
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.note)
        lay.addWidget(self.tabs, 1)
        self.rows: list[dict] = []
        self.series: dict[str, list] = {}
        self.busy_note: str | None = None   # the line the note carries when results were timed on a busy machine
        self.apart_note: str | None = None  # ... and when some were sampled in another run (not compared)
        self.set_theme(False)

    def follow(self, workspace, tuning):
        """Redraw from the model from now on: the open Document's plans and its results on the selected
        device (workspace), and the line `tuning.hints[device]` says about new tuning records."""
        self._workspace, self._tuning = workspace, tuning
        follow_results(workspace, self.redraw)
        tuning.events.hints.connect(lambda ev: self.redraw())

    def redraw(self):
        doc, target = self._workspace.doc, self._workspace.device
        if doc is None:
            return
        self.update_data(doc.name, doc.strategies(), doc.plans, doc.results_for(target), target, doc.hw.title,
                         rules=doc.rules_for(target), hint=self._tuning.hints.get(target, ""),
                         input_shapes=doc.graph.input_shapes, same=doc.same_plans())

    def set_theme(self, dark: bool):
        for p in (self.plot, self.cplot):
            p.setBackground("#1e1f22" if dark else "w")
            fg = "#dfe1e5" if dark else "#333"
            for ax in ("left", "bottom", "right"):
                p.getAxis(ax).setPen(fg)
                p.getAxis(ax).setTextPen(fg)

    def update_data(self, model_name: str, strategies: list[str], plans: dict, results: dict, target: str,
                    profile_title: str, rules: dict | None = None, hint: str = "",
                    input_shapes: dict | None = None, same: dict | None = None):
        """plans: strategy -> Plan; results: strategy -> BenchResult (on `target`); rules: strategy ->
        the same plan's rules-only BenchResult (shown beside a tuned or mixed result); hint: a line
        after the note (e.g. that tuning records changed since these figures); input_shapes: the
        model's ({input: shape}): published figures appear only at their own resolution and batch; same:
        strategy -> the strategy whose plan it is (engine/planner/same_plan.py): no figure of its own, its
        slot says "same plan as X". An imported plan has no planning time (it was not planned here)."""
        rules = rules or {}
        same = same or {}
        self.plot.clear()
        self.cplot.clear()
        self.pub_view.clear()
        self.legend.clear()
        self.clegend.clear()
        self.marks = []
        pub = published_for(model_name, input_shapes)
        pub_res = published_elsewhere(model_name)
        rows = []
        for s in strategies:   # the figures and labels of each (engine/report/result_rows.py)
            rows.append(latency_row(s, plans.get(s), results.get(s), same.get(s), rules.get(s),
                                    pub.get(PUBLISHED_KEY[s]) if pub and s in PUBLISHED_KEY else None))
        self.rows = rows
        paired = [(i, row) for i, row in enumerate(rows) if row["rules_median"] is not None]
        pubr = [(i, row) for i, row in enumerate(rows) if row["published"] is not None]
        # bar slots per strategy: measured [, rules only], estimate [, published (right axis)]
        slots = 2 + bool(paired) + bool(pubr)
        w = 0.8 / slots
        xs = [(k - (slots - 1) / 2) * w for k in range(slots)]
        x_meas, x_rules = xs[0], (xs[1] if paired else None)
        x_est = xs[1 + bool(paired)]
        x_pub = xs[-1] if pubr else None
        measured = [(i, row) for i, row in enumerate(rows) if row["median"] is not None]
        est = [(i, row) for i, row in enumerate(rows) if row["estimated"] is not None]
        self.series = {"measured": [(rows[i]["strategy"], r["median"]) for i, r in measured],
                       "rules": [(rows[i]["strategy"], r["rules_median"]) for i, r in paired],
                       "estimated": [(rows[i]["strategy"], r["estimated"]) for i, r in est],
                       "published": [(rows[i]["strategy"], r["published"]) for i, r in pubr]}
        if measured:
            brushes = [pg.mkBrush(style.STRATEGY_COLOURS.get(rows[i]["strategy"], "#888")) for i, _ in measured]
            bars = pg.BarGraphItem(x=[i + x_meas for i, _ in measured], height=[r["median"] for _, r in measured],
                                   width=w, brushes=brushes, pen=pg.mkPen("#333", width=0.8),
                                   name=f"measured ({target})")
            self.plot.addItem(bars)
            tuned = [(i, r) for i, r in measured if r["schedule_kind"] != "rules"]
            if tuned:  # hatched: these kernels ran (partly) with tuned schedules
                self.plot.addItem(pg.BarGraphItem(
                    x=[i + x_meas for i, _ in tuned], height=[r["median"] for _, r in tuned], width=w,
                    brush=QtGui.QBrush(QtGui.QColor(255, 255, 255, 200), QtCore.Qt.BDiagPattern),
                    pen=pg.mkPen("#333", width=0.8)))   # explained in the note and under the names
            self._whiskers([i + x_meas for i, _ in measured], [(r["median"], r["min"], r["max"]) for _, r in measured],
                           w)
        if paired:
            self.plot.addItem(pg.BarGraphItem(
                x=[i + x_rules for i, _ in paired], height=[r["rules_median"] for _, r in paired], width=w,
                brushes=[pg.mkBrush(QtGui.QColor(style.STRATEGY_COLOURS.get(r["strategy"], "#888")).lighter(160))
                         for _, r in paired],
                pen=pg.mkPen("#555", width=0.8), name="measured, rules only"))
            self._whiskers([i + x_rules for i, _ in paired],
                           [(r["rules_median"], r["rules_min"], r["rules_max"]) for _, r in paired], w)
        if est:
            self.plot.addItem(pg.BarGraphItem(x=[i + x_est for i, _ in est], height=[r["estimated"] for _, r in est],
                                              width=w, brush=pg.mkBrush(150, 150, 150, 60),
                                              pen=pg.mkPen("#777", width=1, style=QtCore.Qt.DashLine),
                                              name=f"{estimates_title(plans.get(s) for s in strategies)} "
                                                   f"({profile_title})"))
        pi = self.plot.getPlotItem()
        if pubr:   # another device: its own axis on the right, its own range
            pb = pg.BarGraphItem(x=[i + x_pub for i, _ in pubr], height=[r["published"] for _, r in pubr],
                                 width=w, brush=pg.mkBrush(style.STRATEGY_COLOURS["published"]),
                                 pen=pg.mkPen("#333", width=0.8))
            self.pub_view.addItem(pb)
            self.legend.addItem(pb, "published T4 GPU (right axis)")
            pi.showAxis("right")
            pi.setLabel("right", "T4 GPU ms")
            self.pub_view.setYRange(0, max(r["published"] for _, r in pubr) * 1.08, padding=0)
        else:
            pi.hideAxis("right")
        ymax = max([r["max"] or 0 for r in rows] + [r["rules_max"] or 0 for r in rows] +
                   [r["estimated"] or 0 for r in rows] + [1e-3])
        for i, row in enumerate(rows):
            if row["median"] is None:
                label = ("benchmark failed" if row["error"] else f"same plan as {row['same_as']}" if row["same_as"]
                         else NOT_MEASURED[0])
                t = pg.TextItem(label, color="#d62728" if row["error"] else "#999", anchor=(0, 0.5), angle=90)
                t.full = label
                t.texts = (label, f"= {row['same_as']}") if row["same_as"] and not row["error"] else None
                font = t.textItem.font()
                font.setPointSizeF(max(6.0, font.pointSizeF() - 1.5))
                t.setFont(font)
                t.setPos(i + x_meas, ymax * 0.02)
                self.plot.addItem(t)
                self.marks.append(t)
        ax = self.plot.getAxis("bottom")
        # under each measured strategy: whose schedules its kernels ran with
        # and, under a cost-deciding strategy, what it decided by: "dp / (learned) / rules"
        labels = [[s] + ([f"({r['cost']})"] if r["cost"] else []) + ([r["schedule"]] if r["schedule"] else [])
                  for s, r in zip(strategies, rows)]
        ax.setTicks([[(i, "\n".join(lab)) for i, lab in enumerate(labels)]])
        self.tick_labels = labels
        self.plot.setXRange(-0.5, len(strategies) - 0.5, padding=0)
        self.plot.setYRange(0, ymax * 1.08, padding=0)   # the legend is above the view box: no room needed for it
        self._draw_compile(strategies, rows, ax)
        self._fit_legend()
        self._fit_pub_view()
        self._fit_marks()
        self._fit_ticks()
        n = len(measured)
        tuned_n = sum(r["schedule_kind"] != "rules" for _, r in measured)
        busy = machine_load.busy_line({s: results[s] for s in strategies if results.get(s) is not None
                                       and s not in same}, "figures")
        self.busy_note = busy[0].upper() + busy[1:] + "." if busy else None
        shown = {s: results[s] for s in strategies if results.get(s) is not None and s not in same}
        apart = not_same_run(shown)   # figures of another run than the base's: no verdict between them
        self.apart_note = (f"Not compared with {comparison_base(shown)} (not the same run): {', '.join(apart)}; "
                           "benchmark them together to compare. " if apart else None)
        plain.plain_label(self.note,
            (f"Measured on {target}: {n} of {len(strategies)} strategies. " if n else
             f"Not yet measured on {target}: press Benchmark (Ctrl+B). ")
            + (f"Same plan, measured once: {', '.join(f'{s} = {o}' for s, o in same.items() if s in strategies)}. "
               if any(s in strategies for s in same) else "")
            + (f"{self.busy_note} " if self.busy_note else "")
            + (self.apart_note or "")
            + ("Hatched: kernels with tuned schedules (under the name: tuned/built kernels); light bars: the "
               "same plan measured with the rules only. " if tuned_n else "")
            + f"Grey dashed bars: each plan's {estimates_title(plans.get(s) for s in strategies)}"
            + (" (in brackets under dp, hybrid and optimal: what they decided by)." if any(
                cost_tag(plans.get(s)) for s in strategies if plans.get(s) is not None) else ".")
            + (f" Brown: published T4 figures ({pub_res} px input), on the right axis: a GPU, another device." if pub
               else f" No published T4 figures: they are for {pub_res} px input at batch 1." if pub_res else "")
            + (f"\n{hint}" if hint else ""))
        self._fill_table()

    def _draw_compile(self, strategies: list[str], rows: list[dict], ax):
        """The compile chart: planning and build time as two labelled series side by side (build once
        measured), the kernel count over each strategy."""
        plan_r = [(i, r) for i, r in enumerate(rows) if r["planning_s"] is not None]
        build_r = [(i, r) for i, r in enumerate(rows) if r["build_s"] is not None]
        w = 0.38
        if plan_r:
            self.cplot.addItem(pg.BarGraphItem(
                x=[i - w / 2 for i, _ in plan_r], height=[r["planning_s"] for _, r in plan_r], width=w,
                brush=pg.mkBrush(PLANNING_COLOUR), pen=pg.mkPen("#555", width=0.8), name="planning"))
        if build_r:
            self.cplot.addItem(pg.BarGraphItem(
                x=[i + w / 2 for i, _ in build_r], height=[r["build_s"] for _, r in build_r], width=w,
                brushes=[pg.mkBrush(style.STRATEGY_COLOURS.get(r["strategy"], "#888")) for _, r in build_r],
                pen=pg.mkPen("#333", width=0.8), name="build (measured)"))
        tops = {i: max(r["planning_s"] or 0, r["build_s"] or 0) for i, r in enumerate(rows)}
        cmax = max(tops.values(), default=0) or 1e-3
        for i, r in enumerate(rows):
            if r["kernels"] is not None and (r["planning_s"] is not None or r["build_s"] is not None):
                t = pg.TextItem(f"{r['kernels']}", color="#777", anchor=(0.5, 1))
                t.setPos(i, tops[i] + cmax * 0.02)
                self.cplot.addItem(t)
        self.cplot.setYRange(0, cmax * 1.2, padding=0)
        self.cplot.getAxis("bottom").setTicks([[(i, s) for i, s in enumerate(strategies)]])
        self.cplot.setXRange(-0.5, len(strategies) - 0.5, padding=0)

    def _legend_row(self, plot) -> tuple[FlowLegend, pg.GraphicsWidget]:
        """A FlowLegend in a row of its own above `plot`'s view box (the cell of its hidden top axis); items
        added to the plot with a name join it."""
        legend, row = FlowLegend("8pt"), pg.GraphicsWidget()
        row.setMinimumWidth(0)
        row.setFixedHeight(0)
        legend.setParentItem(row)
        pi = plot.getPlotItem()
        pi.layout.removeItem(pi.getAxis("top"))   # hidden, never shown: its cell takes the legend
        pi.layout.addItem(row, 1, 0, 1, 3)
        pi.legend = legend            # items added with a name join the legend (PlotItem.addItem)
        row.geometryChanged.connect(lambda: self._fit_legend(legend, row))
        return legend, row

    def _fit_legend(self, legend=None, row=None):
        """A legend's entries flowed in rows as wide as its plot, the legend centred in its row and the row
        as tall as the legend (none without entries); again whenever the row resizes. Both plots' without
        arguments."""
        if legend is None:
            self._fit_legend(self.legend, self.legend_row)
            self._fit_legend(self.clegend, self.clegend_row)
            return
        avail = row.size().width()
        legend.flow(avail)
        legend.setPos(max(0.0, (avail - legend.width()) / 2), 0)
        h = float(legend.height()) if legend.items else 0.0
        if row.maximumHeight() != h:
            row.setFixedHeight(h)

    def _fit_pub_view(self, *_):
        """The published figures' view box over the latency plot's, x linked."""
        vb = self.plot.getPlotItem().vb
        self.pub_view.setGeometry(vb.sceneBoundingRect())
        self.pub_view.linkedViewChanged(vb, self.pub_view.XAxis)

    def _fit_ticks(self):
        """Both plots' x labels in the largest font (TICK_PT down to MIN_TICK_PT) whose widest line fits a
        strategy's slot, so that pyqtgraph drops none for overlapping its neighbour; the two axes as tall
        as the latency plot's lines (their baselines level)."""
        labels = self.tick_labels
        if not labels:
            return

        def fit(plot, lines):
            slot = plot.getPlotItem().vb.width() / len(labels) - 6
            size = TICK_PT
            while size > MIN_TICK_PT and max(QtGui.QFontMetricsF(_font(size)).horizontalAdvance(x)
                                             for lab in lines for x in lab) > slot:
                size -= 0.5
            return _font(size)

        ax, cax = self.plot.getAxis("bottom"), self.cplot.getAxis("bottom")
        font = fit(self.plot, labels)
        for a, f in ((ax, font), (cax, fit(self.cplot, [lab[:1] for lab in labels]))):
            if a.style.get("tickFont") is None or a.style["tickFont"].pointSizeF() != f.pointSizeF():
                a.setStyle(tickFont=f)
        lines = max(len(lab) for lab in labels)
        h = lines * QtGui.QFontMetrics(font).lineSpacing() + 12 if lines > 1 else None
        for a in (ax, cax):
            if a.fixedHeight != h:
                a.setHeight(h)

    def _fit_marks(self):
        """Each "not yet measured" label (rotated, over the empty slot) in the longest wording that fits
        the view box's height, so none is cut off at any panel size (hidden when even the shortest does not)."""
        vb = self.plot.getPlotItem().vb
        room = vb.sceneBoundingRect().height() * 0.9
        for t in self.marks:
            texts = getattr(t, "texts", None) or ((t.full,) if t.full != NOT_MEASURED[0] else NOT_MEASURED)
            fm = QtGui.QFontMetricsF(t.textItem.font())
            fit = next((x for x in texts if fm.horizontalAdvance(x) + 8 <= room), None)
            t.setVisible(fit is not None)
            if fit is not None and t.textItem.toPlainText() != fit:
                t.setText(fit)

    def _whiskers(self, xs, meds, w):
        """min-max whiskers over bars at xs; meds: (median, min, max) each."""
        import numpy as np

        x = np.array(xs, dtype=float)
        y = np.array([m for m, _, _ in meds], dtype=float)
        top = np.array([(hi if hi is not None else m) - m for m, _, hi in meds], dtype=float)
        bot = np.array([m - (lo if lo is not None else m) for m, lo, _ in meds], dtype=float)
        self.plot.addItem(pg.ErrorBarItem(x=x, y=y, top=top, bottom=bot, beam=w * 0.5,
                                          pen=pg.mkPen("#d62728", width=1.5)))

    def _fill_table(self):
        self.table.setRowCount(len(self.rows))

        def f(v, fmt="{:.3f}"):
            return "" if v is None else fmt.format(v)

        for r, row in enumerate(self.rows):
            src = ("error: " + row["error"]) if row["error"] else ("cached" if row["cached"] else
                                                                  "measured" if row["median"] is not None
                                                                  else f"same plan as {row['same_as']}"
                                                                  if row["same_as"] else "not yet measured")
            planning = "imported" if row["imported"] else "" if row["planning_s"] is None else \
                duration(row["planning_s"] * 1000)
            vals = [row["strategy"], row["cost"], f(row["median"]), f(row["min"]), f(row["max"]), f(row["estimated"]),
                    row["estimate"] or "", f(row["published"], "{:.1f}"), planning, f(row["build_s"], "{:.1f}"),
                    f(row["kernels"], "{}"), "" if row["correct"] is None else ("yes" if row["correct"] else "NO"), src,
                    row["schedule"] or "", f(row["rules_median"])]
            for c, v in enumerate(vals):
                it = QtWidgets.QTableWidgetItem(v)
                if c == COLUMNS.index("source") and len(v) > 40:
                    it.setToolTip(plain.tooltip(v))
                elif c == COLUMNS.index("rules-only ms") and v:
                    it.setToolTip(plain.tooltip("the same plan measured with the rules' schedules only"))
                self.table.setItem(r, c, it)
