"""The main window: opens a model, shows its operator graph under a fusion strategy, compares two
strategies side by side, benchmarks them, and shows the latency and the recommendation.

Everything slow (loading, planning, layout, benchmarking, finding devices) runs off the UI thread
through `worker`; errors arrive as messages in the window's banner and status bar.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from engine import layout as L
from engine.errors import FuseLensError

from . import procs, style, worker
from .compare import GraphArea
from .dialogs import ShapesDialog, ShortcutsDialog, needs_shapes
from .document import FAST_STRATEGIES, Document, plan_strategies, write_results_csv
from .layout_worker import LayoutService, cache_key, dot_path
from .panels.latency import LatencyPanel
from .panels.properties import PropertiesPanel
from .panels.recommendation import RecommendationPanel
from .settings import Settings

STRATEGY_TIPS = {"none": "every operator its own kernel (baseline)", "tvm": "TVM Relax FuseOps, read back",
                 "greedy": "our replay of TVM's FuseOps rules", "dp": "cost-model dynamic programming",
                 "hybrid": "DP on the critical path, greedy elsewhere", "custom": "an imported plan"}


QUIET_TASKS = ("devices",)


NeedShapes = procs.NeedShapes


def cached_results(graph, plans: dict, target: str) -> dict:
    """Worker: results the runner already has for these plans on `target` (its cache), by strategy."""
    try:
        from engine import runner
    except ImportError:
        return {}
    fn = getattr(runner, "cached_result", None)
    out = {}
    for s, p in plans.items() if fn is not None else ():
        try:
            r = fn(graph, p, target)
        except Exception:  # noqa: BLE001 - a stale cache entry is not worth an error
            r = None
        if r is not None and not r.error:
            r.strategy = s
            out[s] = r
    return out


def _load_job(spec: str, given: dict | None, remembered: dict | None, profile: str, target: str, progress, cancel):
    """Worker: read the file, resolve shapes (or ask for them), load the graph, plan the fast strategies.
    Large models are read in a child process (see procs), so parsing them cannot freeze the window."""
    from engine import hardware

    progress("reading model", 0.02)
    if procs.big_file(spec):
        progress("reading model (separate process)", 0.05)
        r = procs.run("open_model", spec, given, remembered, strip=True, cancel=cancel)
    else:
        r = procs.open_model(spec, given, remembered)
    if isinstance(r, procs.NeedShapes) or cancel.is_set():
        return r if not cancel.is_set() else None
    graph, shapes = r
    progress("hardware profile", 0.8)
    hw = hardware.get(profile)
    plans, errors = plan_strategies(graph, hw, FAST_STRATEGIES, progress=lambda s, f: progress(s, 0.8 + 0.2 * f),
                                    cancel=cancel)
    return {"spec": spec, "shapes": shapes, "graph": graph, "hw": hw, "plans": plans,
            "errors": errors, "cached": cached_results(graph, plans, target)}


class MainWindow(QtWidgets.QMainWindow):
    model_loaded = QtCore.Signal(object)          # Document
    plans_changed = QtCore.Signal()
    layout_applied = QtCore.Signal(object)        # Layout
    results_changed = QtCore.Signal()
    error_shown = QtCore.Signal(str)
    busy_changed = QtCore.Signal(bool)

    def __init__(self, settings: Settings | None = None):
        super().__init__()
        self.settings = settings or Settings()
        self.doc: Document | None = None
        self.strategy = self.settings.strategy if self.settings.strategy in self._all_strategies() else "greedy"
        self.right_strategy = "dp" if self.strategy != "dp" else "greedy"
        self.layout_full: L.Layout | None = None   # the current strategy's layout of every op
        self.compact = False                        # the shown layout places collapsed groups as one node
        self.heat_on = False
        self.last_error = ""
        self.last_cancelled: list[str] = []
        self.last_toggle_ms = 0.0
        self._gen = 0
        self._tasks: dict[str, worker.Task] = {}
        self._pending_layout: dict = {}
        self._find_hits: list[str] = []
        self._find_pos = -1
        self.theme = style.Theme(style.is_dark(self))
        self.setWindowTitle("FuseLens")
        self.setAcceptDrops(True)
        self.resize(1400, 900)

        self.area = GraphArea(self.theme)
        self.setCentralWidget(self.area)
        self.view = self.area.left
        self.rview = self.area.right
        self.layouts = LayoutService(self, time_limit_s=self.settings.dot_time_limit_s)
        self.layouts.provisional.connect(self._on_layout_provisional)
        self.layouts.ready.connect(self._on_layout_ready)
        self.layouts.failed.connect(self._on_layout_failed)
        for v in (self.view, self.rview):
            v.activated.connect(lambda sel, v=v: self._on_activated(v, sel))
            v.double_clicked.connect(lambda sel, v=v: self._on_double_clicked(v, sel))
            v.minimap.setVisible(self.settings.minimap)

        self._build_docks()
        self._build_actions()
        self._build_toolbar()
        self._build_menus()
        self._build_statusbar()
        self.settings.restore_window(self)
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.styleHints().colorSchemeChanged.connect(self._on_scheme_changed)
        self._apply_theme_to_panels()
        QtCore.QTimer.singleShot(0, self._find_devices)

    @staticmethod
    def _all_strategies():
        from engine.planner import STRATEGIES

        return list(STRATEGIES) + ["custom"]

    # ================================================================ construction

    def _build_docks(self):
        self.props = PropertiesPanel()
        self.props.node_requested.connect(lambda nid: self.select_node(nid))
        self.latency = LatencyPanel()
        self.recpanel = RecommendationPanel()
        self.dock_props = self._dock("Properties", self.props.container(), QtCore.Qt.RightDockWidgetArea, "props")
        self.dock_latency = self._dock("Latency", self.latency, QtCore.Qt.BottomDockWidgetArea, "latency")
        self.dock_rec = self._dock("Recommendation", self.recpanel, QtCore.Qt.BottomDockWidgetArea, "rec")
        self.splitDockWidget(self.dock_latency, self.dock_rec, QtCore.Qt.Horizontal)
        self.resizeDocks([self.dock_props], [400], QtCore.Qt.Horizontal)
        self.resizeDocks([self.dock_latency], [320], QtCore.Qt.Vertical)
        self.resizeDocks([self.dock_latency, self.dock_rec], [760, 520], QtCore.Qt.Horizontal)

    def _dock(self, title, widget, area, name):
        d = QtWidgets.QDockWidget(title, self)
        d.setObjectName(f"dock_{name}")
        d.setWidget(widget)
        self.addDockWidget(area, d)
        return d

    def _act(self, text, slot, shortcut=None, checkable=False, tip=None):
        a = QtGui.QAction(text, self)
        if shortcut:
            if isinstance(shortcut, (list, tuple)):
                a.setShortcuts([QtGui.QKeySequence(s) for s in shortcut])
            else:
                a.setShortcut(QtGui.QKeySequence(shortcut))
        a.setCheckable(checkable)
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(slot)
        self.addAction(a)  # shortcuts work without the menu being open
        return a

    def _build_actions(self):
        A = self._act
        self.a_open = A("&Open...", lambda: self.open_dialog(), QtGui.QKeySequence.Open, tip="Open an ONNX model")
        self.a_shapes = A("Set &Input Shapes...", lambda: self.ask_shapes_again())
        self.a_import = A("&Import Plan...", lambda: self.import_plan(), "Ctrl+I",
                          tip="Load a plan JSON and show it as the 'custom' strategy")
        self.a_export_plan = A("Export &Plan as JSON...", lambda: self.export_plan(), "Ctrl+E")
        self.a_export_svg = A("Export Graph as &SVG...", lambda: self.export_graph(fmt="svg"))
        self.a_export_png = A("Export Graph as P&NG...", lambda: self.export_graph(fmt="png"))
        self.a_export_csv = A("Export &Results as CSV...", lambda: self.export_csv())
        self.a_quit = A("&Quit", self.close, QtGui.QKeySequence.Quit)
        self.a_fit = A("&Fit to Window", lambda: self._views_do("fit"), ["F", "Space"])
        self.a_fit_all = A("Whole &Graph", lambda: self._views_do("fit_all"), "Shift+F")
        self.a_actual = A("&Actual Size", lambda: self._views_do("actual_size"), "Ctrl+0")
        self.a_zoom_in = A("Zoom &In", lambda: self.view.zoom(1.25), [QtGui.QKeySequence.ZoomIn, "Ctrl+="])
        self.a_zoom_out = A("Zoom &Out", lambda: self.view.zoom(0.8), QtGui.QKeySequence.ZoomOut)
        self.a_side = A("&Side by Side", lambda on: self.set_side_by_side(on), "Ctrl+D", checkable=True,
                        tip="Compare two strategies in split panes with synchronised pan and zoom")
        self.a_heat = A("&Heat Overlay", lambda on: self.set_heat(on), "H", checkable=True,
                        tip="Colour groups by measured kernel time (or estimated cost)")
        self.a_log = A("&Log Scale", lambda on: self.set_heat_log(on), "L", checkable=True)
        self.a_log.setChecked(self.settings.heat_log)
        self.a_minimap = A("&Minimap", lambda on: self.set_minimap(on), "M", checkable=True)
        self.a_minimap.setChecked(self.settings.minimap)
        self.a_collapse = A("&Collapse Group", lambda: self.collapse_selected(), "C")
        self.a_expand = A("&Expand Group", lambda: self.expand_selected(), "E")
        self.a_collapse_all = A("Collapse &All Groups", lambda: self.collapse_all(), "Ctrl+Shift+C")
        self.a_expand_all = A("E&xpand All Groups", lambda: self.expand_all(), "Ctrl+Shift+E")
        self.a_find = A("&Find...", lambda: (self.find_edit.setFocus(), self.find_edit.selectAll()),
                        QtGui.QKeySequence.Find)
        self.a_find_next = A("Find &Next", lambda: self.find_step(+1), [QtGui.QKeySequence.FindNext, "F3"])
        self.a_find_prev = A("Find &Previous", lambda: self.find_step(-1), [QtGui.QKeySequence.FindPrevious,
                                                                          "Shift+F3"])
        self.a_bench = A("&Benchmark", lambda: self.benchmark(), "Ctrl+B",
                         tip="Build and time the shown strategies on the selected device")
        self.a_bench_all = A("Benchmark &All Strategies", lambda: self.benchmark(all_strategies=True), "Ctrl+Shift+B")
        self.a_cancel = A("&Cancel", lambda: self.cancel(), "Esc")
        self.a_shortcuts = A("&Keyboard Shortcuts", lambda: self.show_shortcuts(), QtGui.QKeySequence.HelpContents)
        self.a_about = A("&About FuseLens", lambda: self.show_about())
        self.a_strat = {}
        for k, s in enumerate(self._all_strategies()):
            self.a_strat[s] = A(f"Strategy: {s}", lambda _=False, s=s: self.set_strategy(s), f"Alt+{k + 1}",
                                tip=STRATEGY_TIPS.get(s))
        self.a_recent_keys = [A(f"Recent {i + 1}", lambda _=False, i=i: self.open_recent(i), f"Ctrl+{i + 1}")
                              for i in range(9)]

    def _build_toolbar(self):
        tb = self.addToolBar("Main")
        tb.setObjectName("toolbar_main")
        tb.addAction(self.a_open)
        tb.addSeparator()
        tb.addWidget(QtWidgets.QLabel(" Strategy "))
        self.strategy_box = QtWidgets.QComboBox()
        self.strategy_box.setMinimumContentsLength(16)
        self.strategy_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.strategy_box.setToolTip("Fusion strategy (Alt+1..6)")
        tb.addWidget(self.strategy_box)
        tb.addAction(self.a_side)
        self.right_box = QtWidgets.QComboBox()
        self.right_box.setMinimumContentsLength(16)
        self.right_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.right_box.setToolTip("Strategy in the right pane")
        self.right_box_action = tb.addWidget(self.right_box)
        self.right_box_action.setVisible(False)
        self._fill_strategy_boxes()
        self.strategy_box.activated.connect(lambda i: self.set_strategy(self.strategy_box.itemData(i)))
        self.right_box.activated.connect(lambda i: self.set_right_strategy(self.right_box.itemData(i)))
        tb.addSeparator()
        tb.addWidget(QtWidgets.QLabel(" Profile "))
        self.profile_box = QtWidgets.QComboBox()
        self.profile_box.setToolTip("Hardware profile for the cost model")
        from engine import hardware

        for n in hardware.names():
            title = "This machine" if n == "host" else hardware.get(n).title
            self.profile_box.addItem(title, n)
        i = self.profile_box.findData(self.settings.profile)
        self.profile_box.setCurrentIndex(max(0, i))
        self.profile_box.activated.connect(lambda i: self.set_profile(self.profile_box.itemData(i)))
        tb.addWidget(self.profile_box)
        tb.addWidget(QtWidgets.QLabel(" Device "))
        self.device_box = QtWidgets.QComboBox()
        self.device_box.setToolTip("Where Benchmark builds and runs (CPU, CUDA GPUs, configured RPC devices)")
        self.device_box.addItem("cpu", "cpu")
        self.device_box.activated.connect(lambda i: self._on_device(self.device_box.itemData(i)))
        tb.addWidget(self.device_box)
        tb.addWidget(QtWidgets.QLabel(" Budget "))
        self.budget = QtWidgets.QSpinBox()
        self.budget.setRange(0, 500)
        self.budget.setSuffix(" %")
        self.budget.setValue(int(self.settings.budget_pct))
        self.budget.setToolTip("Extra compile time you allow over greedy (for the recommendation)")
        self.budget.valueChanged.connect(self._on_budget)
        tb.addWidget(self.budget)
        tb.addSeparator()
        tb.addAction(self.a_bench)
        tb.addAction(self.a_heat)
        tb.addSeparator()
        self.find_edit = QtWidgets.QLineEdit()
        self.find_edit.setPlaceholderText("Find op (Ctrl+F)")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.setMaximumWidth(180)
        self.find_edit.textChanged.connect(self.find)
        self.find_edit.returnPressed.connect(lambda: self.find_step(-1 if QtWidgets.QApplication.keyboardModifiers()
                                                                    & QtCore.Qt.ShiftModifier else +1))
        tb.addWidget(self.find_edit)
        self.find_label = QtWidgets.QLabel("")
        tb.addWidget(self.find_label)
        prev_b = QtWidgets.QToolButton()
        prev_b.setArrowType(QtCore.Qt.UpArrow)
        prev_b.setToolTip("Previous match (Shift+F3)")
        prev_b.clicked.connect(lambda: self.find_step(-1))
        next_b = QtWidgets.QToolButton()
        next_b.setArrowType(QtCore.Qt.DownArrow)
        next_b.setToolTip("Next match (F3)")
        next_b.clicked.connect(lambda: self.find_step(+1))
        tb.addWidget(prev_b)
        tb.addWidget(next_b)

    def _fill_strategy_boxes(self):
        strategies = self.doc.strategies() if self.doc else list(self._all_strategies()[:-1])
        for box, cur in ((self.strategy_box, self.strategy), (self.right_box, self.right_strategy)):
            box.blockSignals(True)
            box.clear()
            for s in strategies:
                ready = self.doc is None or s in self.doc.plans
                err = self.doc is not None and s in self.doc.plan_errors
                label = s if ready else (f"{s} (failed)" if err else f"{s} (planning...)")
                box.addItem(label, s)
                box.setItemData(box.count() - 1, STRATEGY_TIPS.get(s, ""), QtCore.Qt.ToolTipRole)
            i = box.findData(cur)
            box.setCurrentIndex(max(0, i))
            box.blockSignals(False)

    def _build_menus(self):
        mb = self.menuBar()
        m = mb.addMenu("&File")
        m.addAction(self.a_open)
        self.recent_menu = m.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._fill_recent()
        sample = m.addMenu("Open &Sample")
        from engine import zoo

        for name, e in zoo.MODELS.items():
            a = sample.addAction(f"{e.title} ({e.default_resolution} px)")
            a.triggered.connect(lambda _=False, n=name: self.open_model(f"zoo:{n}"))
        sample.addSeparator()
        small = sample.addMenu("Small inputs (quick)")
        for name, e in zoo.MODELS.items():
            a = small.addAction(f"{e.title} (64 px)")
            a.triggered.connect(lambda _=False, n=name: self.open_model(f"zoo:{n}@64"))
        m.addAction(self.a_shapes)
        m.addSeparator()
        m.addAction(self.a_import)
        ex = m.addMenu("&Export")
        for a in (self.a_export_plan, self.a_export_svg, self.a_export_png, self.a_export_csv):
            ex.addAction(a)
        m.addSeparator()
        m.addAction(self.a_quit)
        v = mb.addMenu("&View")
        for a in (self.a_fit, self.a_fit_all, self.a_actual, self.a_zoom_in, self.a_zoom_out):
            v.addAction(a)
        v.addSeparator()
        for a in (self.a_find, self.a_find_next, self.a_find_prev):
            v.addAction(a)
        v.addSeparator()
        for a in (self.a_collapse, self.a_expand, self.a_collapse_all, self.a_expand_all):
            v.addAction(a)
        v.addSeparator()
        for a in (self.a_side, self.a_heat, self.a_log, self.a_minimap):
            v.addAction(a)
        v.addSeparator()
        for d in (self.dock_props, self.dock_latency, self.dock_rec):
            v.addAction(d.toggleViewAction())
        s = mb.addMenu("&Strategy")
        self.strategy_group = QtGui.QActionGroup(self)
        for st, a in self.a_strat.items():
            a.setCheckable(True)
            self.strategy_group.addAction(a)
            s.addAction(a)
        self.a_strat.get(self.strategy, self.a_strat["greedy"]).setChecked(True)
        r = mb.addMenu("&Run")
        for a in (self.a_bench, self.a_bench_all, self.a_cancel):
            r.addAction(a)
        h = mb.addMenu("&Help")
        h.addAction(self.a_shortcuts)
        h.addAction(self.a_about)

    def _build_statusbar(self):
        sb = self.statusBar()
        self.layout_label = QtWidgets.QLabel("")
        self.layout_label.setToolTip("How the graph was laid out")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        for wdg in (self.progress, self.cancel_button):  # showing them must not resize the window's contents
            pol = wdg.sizePolicy()
            pol.setRetainSizeWhenHidden(True)
            wdg.setSizePolicy(pol)
        sb.addPermanentWidget(self.layout_label)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        sb.showMessage("Ready")

    # ================================================================ messages and activity

    def show_error(self, msg: str, where: str = ""):
        text = f"{where}: {msg}" if where else msg
        self.last_error = text
        self.area.show_error(text)
        self.statusBar().showMessage(text.splitlines()[0][:200], 15000)
        self.error_shown.emit(text)

    def status(self, msg: str, ms: int = 6000):
        self.statusBar().showMessage(msg, ms)

    def _start(self, name: str, task: worker.Task, text: str):
        old = self._tasks.get(name)
        if old is not None and old.running:
            old.cancel()
        self._tasks[name] = task
        task.signals.progress.connect(lambda st, f, name=name: self._on_progress(name, st, f))
        task.signals.finished.connect(lambda name=name, task=task: self._finish(name, task))
        self._on_progress(name, text, -1)
        self.busy_changed.emit(True)

    def _finish(self, name: str, task: worker.Task):
        if self._tasks.get(name) is task:
            del self._tasks[name]
        self._refresh_busy()

    def _refresh_busy(self):
        visible = {k: t for k, t in self._tasks.items() if k not in QUIET_TASKS}
        busy = bool(visible) or bool(self._pending_layout and not self._pending_layout.get("quiet"))
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if not busy:
            self.busy_changed.emit(False)

    def is_busy(self) -> bool:
        return bool({k for k in self._tasks if k not in QUIET_TASKS}) or bool(self._pending_layout)

    def _on_progress(self, name: str, stage: str, fraction: float):
        if name in QUIET_TASKS:
            return
        if (name == "layout" and not self._pending_layout) or (name != "layout" and name not in self._tasks):
            return  # a late report from a task that was cancelled or has finished
        self.progress.show()
        self.cancel_button.show()
        if fraction is None or fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * min(1.0, fraction)))
        self.progress.setFormat(f"{stage[:40]}  %p%")
        self.statusBar().showMessage(stage)

    def cancel(self):
        """Cancel loading, planning, layout and benchmarks in flight."""
        named = [k for k, t in self._tasks.items() if k != "devices" and t.running]
        for k in named:
            self._tasks[k].cancel()
        if self._pending_layout:
            self.layouts.cancel()
            self._pending_layout = {}
        self._tasks = {k: t for k, t in self._tasks.items() if k == "devices"}
        self._refresh_busy()
        if named:
            self.last_cancelled = named
            self.status("Cancelled: " + ", ".join(named))

    # ================================================================ opening

    def open_dialog(self):
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open model", self.settings.last_dir,
                                                        "ONNX models (*.onnx);;All files (*)")
        if path:
            self.settings.last_dir = str(Path(path).parent)
            self.open_model(path)

    def _fill_recent(self):
        self.recent_menu.clear()
        items = self.settings.recent()
        for i, spec in enumerate(items):
            a = self.recent_menu.addAction(f"&{i + 1}  {spec}\tCtrl+{i + 1}")  # the window's action has the key
            a.triggered.connect(lambda _=False, s=spec: self.open_model(s))
        if not items:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def open_recent(self, i: int):
        items = self.settings.recent()
        if i < len(items):
            self.open_model(items[i])

    def open_model(self, spec: str, shapes: list[str] | dict | None = None):
        """Open `spec` (an .onnx path or zoo:NAME[@RES]); `shapes` as CLI strings NAME=D1,D2 or a dict."""
        from engine import onnx_input
        from engine.errors import FuseLensError

        spec = str(spec)
        if not spec.startswith("zoo:"):
            spec = os.path.abspath(os.path.expanduser(spec))
        try:
            given = shapes if isinstance(shapes, dict) else onnx_input.parse_shape_args(shapes or [])
        except FuseLensError as e:
            self.show_error(str(e), "Input shapes")
            return
        remembered = self.settings.shapes_for(spec) if not spec.startswith("zoo:") and not given else None
        self._gen += 1
        gen = self._gen
        self.area.hide_error()
        name = os.path.basename(spec) if not spec.startswith("zoo:") else spec
        self.area.show_placeholder(f"Opening {name} ...") if self.doc is None else None
        t = worker.submit(_load_job, spec, given or None, remembered, self._profile_name(), self.device(),
                          name="load", background=True,
                          on_done=lambda r, gen=gen: self._on_loaded(gen, r),
                          on_failed=lambda m, gen=gen: self._on_load_failed(gen, spec, m),
                          on_cancelled=lambda: self.status("Opening cancelled"))
        self._start("load", t, f"Opening {name}")

    def _on_load_failed(self, gen, spec, msg):
        if gen != self._gen:
            return
        if self.doc is None:
            self.area.show_placeholder("Could not open the model. Use File > Open (Ctrl+O) or File > Open Sample.")
        self.show_error(msg, "Could not open the model")

    def _on_loaded(self, gen, r):
        if gen != self._gen or r is None:
            return
        if isinstance(r, NeedShapes):
            shapes = self.ask_shapes(r.spec, r.inputs, r.remembered)
            if shapes is None:
                self.status("Opening cancelled: no input shapes given")
                if self.doc is None:
                    self.area.show_placeholder("No model loaded.")
                return
            self.settings.remember_shapes(r.path, shapes)
            self.open_model(r.spec, shapes)
            return
        if r["shapes"] and not r["spec"].startswith("zoo:"):
            self.settings.remember_shapes(r["spec"], r["shapes"])
        self.settings.add_recent(r["spec"])
        self._show_document(Document(spec=r["spec"], shapes=r["shapes"], graph=r["graph"], hw=r["hw"],
                                     plans=r["plans"], plan_errors=r["errors"]), cached=r["cached"])

    def open_graph(self, graph, spec: str | None = None):
        """Show an OpGraph that did not come from a file (a generated one): plans it off the UI thread."""
        self._gen += 1
        gen = self._gen
        profile, target = self._profile_name(), self.device()

        def job(progress, cancel):
            from engine import hardware

            hw = hardware.get(profile)
            plans, errors = plan_strategies(graph, hw, FAST_STRATEGIES, progress=progress, cancel=cancel)
            return {"spec": spec or f"generated:{graph.name}", "shapes": graph.input_shapes, "graph": graph,
                    "hw": hw, "plans": plans, "errors": errors, "cached": cached_results(graph, plans, target)}

        t = worker.submit(job, name="load", background=True, on_done=lambda r: gen == self._gen and self._show_document(
            Document(spec=r["spec"], shapes=r["shapes"], graph=r["graph"], hw=r["hw"], plans=r["plans"],
                     plan_errors=r["errors"]), plan_tvm=False, cached=r["cached"]),
            on_failed=lambda m: self.show_error(m, "Planning failed"))
        self._start("load", t, f"Planning {graph.name}")

    def _show_document(self, doc: Document, plan_tvm: bool = True, cached: dict | None = None):
        self.doc = doc
        target = self.device()
        for st, r in (cached or {}).items():
            doc.results[(target, st)] = r
        for s, m in doc.plan_errors.items():
            self.show_error(m, f"Planning with {s} failed")
        g = doc.graph
        self.setWindowTitle(f"{g.name} \u2014 FuseLens")
        self.layout_full = None
        self.compact = False
        self.view.scene().clear_graph()
        self.rview.scene().clear_graph()
        self.props.show_message(f"{g.name}: {len(g)} operators. Click an operator, a group or an edge.")
        if self.strategy not in doc.plans:
            self.strategy = "greedy" if self.strategy in ("tvm", "custom") or "greedy" in doc.plans else \
                next(iter(doc.plans), "greedy")
        self._fill_strategy_boxes()
        if plan_tvm:
            self._plan_tvm()
        else:
            doc.plan_errors.setdefault("tvm", "a generated graph has no TVM module to run FuseOps on")
            self._fill_strategy_boxes()
        self._request_layout(full=True)
        QtCore.QTimer.singleShot(0, self._update_panels)
        self.status(f"Loaded {g.name}: {len(g)} operators; planned {', '.join(doc.plans)}"
                    + ("; tvm planning in the background" if plan_tvm and "tvm" not in doc.plans else ""))
        self.model_loaded.emit(doc)

    def ask_shapes(self, spec, inputs, remembered) -> dict | None:
        dlg = ShapesDialog(os.path.basename(spec), inputs, remembered, self)
        self.shapes_dialog = dlg
        if dlg.exec() == QtWidgets.QDialog.Accepted:
            return dlg.shapes()
        return None

    def ask_shapes_again(self):
        if self.doc is None:
            return
        from engine import loader, onnx_input

        try:
            path, _ = loader.resolve_spec(self.doc.spec)
            model = onnx_input.read(path)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e))
            return
        inputs = [(vi.name, onnx_input.input_dims(vi)) for vi in onnx_input.graph_inputs(model)]
        shapes = self.ask_shapes(self.doc.spec, inputs, self.doc.shapes)
        if shapes:
            if not self.doc.spec.startswith("zoo:"):
                self.settings.remember_shapes(self.doc.spec, shapes)
            self.open_model(self.doc.spec, shapes)

    def _profile_name(self) -> str:
        return self.profile_box.currentData() or "t4"

    # ================================================================ planning

    def _plan_tvm(self):
        doc, gen = self.doc, self._gen

        target = self.device()

        def job(progress, cancel):
            progress("planning tvm (TVM FuseOps; re-imports the model)", -1)
            hw = doc.hw
            g = doc.graph
            if g.mod_factory is None and getattr(g, "_mod", None) is None:  # read in a child: plan in one
                try:
                    plans, errors = {"tvm": procs.run("plan_tvm", doc.spec, doc.shapes, hw.to_dict(),
                                                      cancel=cancel)}, {}
                except FuseLensError as e:
                    plans, errors = {}, {"tvm": str(e)}
            else:
                plans, errors = plan_strategies(g, hw, ["tvm"], cancel=cancel)
            return plans, errors, cached_results(g, plans, target), target, hw

        t = worker.submit(job, name="plan-tvm", background=True, on_done=lambda r: self._on_planned(gen, doc, r),
                          on_failed=lambda m: self.show_error(m, "Planning with tvm failed"))
        self._start("plan-tvm", t, "Planning with TVM FuseOps")

    def _on_planned(self, gen, doc, r):
        if gen != self._gen or doc is not self.doc:
            return
        plans, errors, cached, target, hw = r
        if hw is not doc.hw:
            return  # planned for a profile that has since changed; the re-plan covers tvm
        for st, res in cached.items():
            doc.results.setdefault((target, st), res)
        doc.plans.update(plans)
        doc.plan_errors.update(errors)
        for s, m in errors.items():
            self.show_error(m, f"Planning with {s} failed")
        self._fill_strategy_boxes()
        self._update_panels()
        self.plans_changed.emit()
        if self.strategy in plans and self.layout_full is not None:
            self.set_strategy(self.strategy, force=True)
        if self.area.side_by_side and self.right_strategy in plans:
            self.set_right_strategy(self.right_strategy)

    def set_profile(self, name: str):
        self.settings.profile = name
        i = self.profile_box.findData(name)
        if i >= 0 and i != self.profile_box.currentIndex():
            self.profile_box.setCurrentIndex(i)
        if self.doc is None:
            return
        doc, gen = self.doc, self._gen
        strategies = list(FAST_STRATEGIES)
        if "plan-tvm" in self._tasks:
            self._tasks["plan-tvm"].cancel()

        def job(progress, cancel):
            from engine import hardware

            progress(f"re-planning for {name}", 0.0)
            hw = hardware.get(name)
            return hw, plan_strategies(doc.graph, hw, strategies, progress=progress, cancel=cancel)

        def done(r):
            if gen != self._gen or doc is not self.doc:
                return
            hw, (plans, errors) = r
            doc.hw = hw
            custom = doc.plans.get("custom")
            doc.plans = plans
            if custom is not None:
                self._recost(custom)
                doc.plans["custom"] = custom
            doc.plan_errors = errors
            if not doc.spec.startswith("generated:"):
                self._plan_tvm()  # TVM's FuseOps for the new profile (in the background)
            self._fill_strategy_boxes()
            self.set_strategy(self.strategy, force=True)
            if self.area.side_by_side:
                self.set_right_strategy(self.right_strategy)
            self._update_panels()
            self.plans_changed.emit()
            self.status(f"Re-planned every strategy for {hw.title}")

        t = worker.submit(job, name="plan", background=True, on_done=done,
                          on_failed=lambda m: self.show_error(m, "Planning failed"))
        self._start("plan", t, f"Re-planning for {name}")

    def _recost(self, plan):
        from engine.planner.cost import CostModel
        from engine.planner.plan import count_kernels

        cm = CostModel(self.doc.graph, self.doc.hw)
        plan.estimated_us, plan.group_us = cm.plan_cost(plan.groups)
        plan.kernel_count = count_kernels(self.doc.graph, plan.groups)
        plan.hardware = self.doc.hw.name

    # ================================================================ layout

    def _layout_input(self, strategy: str, collapsed=()):
        plan = self.doc.plans[strategy]
        return L.build_input(self.doc.graph, plan.groups, collapsed=collapsed)

    def _request_layout(self, full: bool = True, only_if_better: bool = False):
        """Lay out the current strategy (full: every op; else with the collapsed groups as one node).
        only_if_better: after a toggle, move the nodes only if the strategy's own layout draws clearly
        cleaner group boxes than the current positions."""
        if self.doc is None or self.strategy not in self.doc.plans:
            return
        collapsed = () if full else sorted(self.view.scene().collapsed)
        graph, plan, strategy = self.doc.graph, self.doc.plans[self.strategy], self.strategy

        def make():
            inp = L.build_input(graph, plan.groups, collapsed=collapsed)
            return cache_key(graph.sha256, strategy + (f"-c{len(collapsed)}" if collapsed else ""), inp), inp

        cur = self.view.scene().layout
        keep = (cur, plan.groups, len(graph)) if only_if_better and cur is not None else None
        token = self.layouts.request(make, keep_unless_better=keep)
        self._pending_layout = {"token": token, "full": full, "strategy": strategy, "doc": self.doc,
                                "collapsed": set(collapsed), "t0": time.perf_counter(), "quiet": keep is not None}
        if keep is None:
            self._on_progress("layout", "laying out the graph" + (" (graphviz dot)" if dot_path() else " (built-in)"),
                              -1)

    def _on_layout_provisional(self, token, lay):
        p = self._pending_layout
        if not p or token != p["token"] or p["doc"] is not self.doc:
            return
        self._apply_layout(lay, p, provisional=True)

    def _on_layout_ready(self, token, lay):
        p = self._pending_layout
        if not p or token != p["token"] or p["doc"] is not self.doc:
            return
        self._pending_layout = {}
        if lay is None:  # the positions stay
            self._refresh_busy()
            return
        if lay is self.view.scene().layout:  # dot gave up: the built-in layout already shown stays
            self._refresh_busy()
            self._after_layout(lay, provisional=False)
            return
        self._apply_layout(lay, p, provisional=False)
        self._refresh_busy()

    def _on_layout_failed(self, token, msg):
        p = self._pending_layout
        if p and token == p["token"]:
            self._pending_layout = {}
            self._refresh_busy()
            self.show_error(msg, "Layout failed")

    def _apply_layout(self, lay: L.Layout, p: dict, provisional: bool):
        doc = self.doc
        sc = self.view.scene()
        if sc.building:  # the first render is still creating items: apply this once it is done
            self._deferred_layout = (lay, p, provisional)
            return
        plan = doc.plans.get(self.strategy) or doc.plans[p["strategy"]]
        first = sc.graph is not doc.graph
        if p["full"]:
            self.layout_full = lay
            self.compact = False
            if first:
                self._first_render(lay, plan, p, provisional)
                return

            def then():
                want = self.doc.plans.get(self.strategy, plan)
                if sc.plan is not want:
                    sc.set_plan(want, self._other_plan(left=True))
                for gi in list(sc.collapsed):
                    sc.expand([gi], reroute=False)
                    sc.collapse([gi], reroute=False)  # re-place collapsed nodes for the new positions
                if sc.collapsed:
                    sc._route_edges()
                self._sync_right()
                self._after_layout(lay, provisional)

            self._run_steps(sc.set_layout_steps(lay), then)
        else:
            self.compact = True
            self._run_steps(sc.set_layout_steps(lay), lambda: self._after_layout(lay, provisional))

    def _run_steps(self, steps, then, budget_s: float = 0.025):
        """Run a generator a slice at a time between event-loop turns, then call `then()`."""
        doc = self.doc

        def step():
            if doc is not self.doc:
                return
            t = time.perf_counter()
            try:
                while time.perf_counter() - t < budget_s:
                    next(steps)
            except StopIteration:
                then()
                deferred, self._deferred_layout = getattr(self, "_deferred_layout", None), None
                if deferred is not None:
                    self._apply_layout(*deferred)
                return
            QtCore.QTimer.singleShot(0, step)

        step()

    def _first_render(self, lay, plan, p, provisional):
        """Create the scene's items a few hundred at a time, letting the event loop run in between."""
        sc = self.view.scene()
        steps = sc.build(self.doc.graph, lay, plan)
        self.area.show_graph()
        self.view.fit()
        self._run_steps(steps, lambda: self._after_first_render(lay, provisional))

    def _after_first_render(self, lay, provisional):
        sc = self.view.scene()
        want = self.doc.plans.get(self.strategy)
        if want is not None and sc.plan is not want:
            sc.set_plan(want, self._other_plan(left=True))
        self.view.fit()
        self._sync_right()
        self._after_layout(lay, provisional)

    def _after_layout(self, lay: L.Layout, provisional: bool):
        self._apply_heat()
        QtCore.QTimer.singleShot(0, self.view.minimap.rebuild)
        if self.area.side_by_side:
            QtCore.QTimer.singleShot(0, self.rview.minimap.rebuild)
        how = ("graphviz dot" if lay.engine == "dot" else "built-in layered") + \
              (f", {lay.seconds:.2f} s" if lay.seconds else "")
        if lay.note.startswith("cached"):
            how += " (cached)"
        self.layout_label.setText(f"layout: {how}")
        self.layout_label.setToolTip(lay.note)
        if lay.engine != "dot" or provisional:
            self.status(f"Layout: {lay.note}", 15000)
        self.layout_applied.emit(lay)

    def _sync_right(self, first: bool = False):
        """Show the right pane's strategy at the left pane's positions (built in slices the first time)."""
        if not self.area.side_by_side or self.layout_full is None or self.doc is None:
            return
        rp = self.doc.plans.get(self.right_strategy)
        if rp is None:
            return
        rs = self.rview.scene()
        if rs.building:
            return  # the build in progress finishes with the current strategies
        if rs.graph is not self.doc.graph:
            self._run_steps(rs.build(self.doc.graph, self.layout_full, rp), self._finish_right)
            return
        if rs.layout is not self.layout_full:
            rs.set_layout(self.layout_full)
        self._finish_right()

    def _finish_right(self):
        rp = self.doc.plans.get(self.right_strategy)
        if rp is None or not self.area.side_by_side:
            return
        rs = self.rview.scene()
        rs.set_plan(rp, self.doc.plans.get(self.strategy))
        self.view.scene().set_plan(self.doc.plans[self.strategy], rp)
        self.rview.refresh_labels()
        self._apply_heat()
        self.rview.minimap.rebuild()
        self.area.set_summary(self.doc, self.strategy, self.right_strategy)
        QtCore.QTimer.singleShot(0, self.area.sync.now)

    def _other_plan(self, left: bool):
        if not self.area.side_by_side or self.doc is None:
            return None
        return self.doc.plans.get(self.right_strategy if left else self.strategy)

    # ================================================================ strategies

    def set_strategy(self, s: str, force: bool = False):
        if s not in self._all_strategies():
            return
        if self.doc is None:
            self.strategy = s
            self.settings.strategy = s
            return
        if s not in self.doc.plans:
            if s in self.doc.plan_errors:
                self.show_error(self.doc.plan_errors[s], f"No {s} plan")
            elif s == "custom":
                self.show_error("no plan imported yet: File > Import Plan", "custom")
            else:
                self.status(f"{s} is still planning; it shows as soon as it is ready")
                self.strategy = s
                self._fill_strategy_boxes()
            return
        if s == self.strategy and not force and self.view.scene().plan is self.doc.plans[s]:
            return
        t0 = time.perf_counter()
        self.strategy = s
        self.settings.strategy = s
        self.a_strat[s].setChecked(True)
        i = self.strategy_box.findData(s)
        self.strategy_box.setCurrentIndex(i)
        plan = self.doc.plans[s]
        sc = self.view.scene()
        if sc.building:
            return  # the first render applies the current strategy when it is done
        if sc.graph is not self.doc.graph:
            self._request_layout(full=True)  # nothing drawn yet: the layout will draw it
            return
        sc.set_plan(plan, self._other_plan(left=True))
        if self.area.side_by_side and self.rview.scene().graph is self.doc.graph and not self.rview.scene().building:
            self.rview.scene().set_plan(self.doc.plans[self.right_strategy], plan) \
                if self.right_strategy in self.doc.plans else None
            self.area.set_summary(self.doc, self.strategy, self.right_strategy)
        self._apply_heat()
        self._refresh_selection()
        self.last_toggle_ms = (time.perf_counter() - t0) * 1000
        QtCore.QTimer.singleShot(0, self.view.minimap.rebuild)
        self._update_panels(latency=False)
        # positions stay unless group boxes would swallow nodes of other groups and this strategy's
        # own layout does clearly better (decided off the UI thread)
        self._request_layout(full=True, only_if_better=not self.compact)
        self.status(f"{s}: {plan.kernels} kernels, {len(plan.groups)} groups, estimated "
                    f"{plan.estimated_us / 1000:.3f} ms on {self.doc.hw.title} (toggle {self.last_toggle_ms:.0f} ms)")

    def set_right_strategy(self, s: str):
        self.right_strategy = s
        i = self.right_box.findData(s)
        self.right_box.setCurrentIndex(max(0, i))
        if self.doc is None or not self.area.side_by_side:
            return
        if s not in self.doc.plans:
            self.status(f"{s} is still planning")
            return
        self._sync_right()

    def set_side_by_side(self, on: bool):
        self.a_side.setChecked(on)
        self.right_box_action.setVisible(on)
        self.area.set_side_by_side(on)
        if self.doc is None:
            return
        if on:
            if self.compact:
                self._request_layout(full=True)
            if self.right_strategy == self.strategy:
                self.right_strategy = next(s for s in ("dp", "greedy", "none") if s != self.strategy)
                self.right_box.setCurrentIndex(max(0, self.right_box.findData(self.right_strategy)))
            self._sync_right(first=True)
        else:
            self.view.scene().set_plan(self.doc.plans[self.strategy], None)
            self._apply_heat()

    # ================================================================ heat

    def set_heat(self, on: bool):
        self.heat_on = on
        self.a_heat.setChecked(on)
        self._apply_heat()
        self.view.minimap.rebuild()

    def set_heat_log(self, on: bool):
        self.settings.heat_log = on
        self.a_log.setChecked(on)
        self._apply_heat()
        self.view.minimap.rebuild()

    def heat_for(self, strategy: str) -> dict | None:
        if self.doc is None or strategy not in self.doc.plans:
            return None
        plan = self.doc.plans[strategy]
        r = self.doc.result(self.device(), strategy)
        ku = getattr(r, "kernel_us", None) if r is not None and not r.error else None
        if ku and len(ku) == len(plan.groups) and any(v for v in ku if v):
            return {"values": list(ku), "log": self.settings.heat_log, "source": "measured",
                    "title": f"measured kernel time ({r.target})"}
        return {"values": list(plan.group_us), "log": self.settings.heat_log, "source": "estimated",
                "title": f"estimated cost ({self.doc.hw.title})"}

    def _apply_heat(self):
        for v, s, on in ((self.view, self.strategy, True), (self.rview, self.right_strategy, self.area.side_by_side)):
            sc = v.scene()
            if sc.plan is None:
                v.legend.hide()
                continue
            heat = self.heat_for(s) if self.heat_on and on else None
            sc.set_heat(heat)
            rng = sc.heat_range()
            if heat is not None and rng is not None:
                v.legend.set_range(heat["title"], rng[0], rng[1], heat["log"])
                v.legend.show()
            else:
                v.legend.hide()

    def set_minimap(self, on: bool):
        self.settings.minimap = on
        for v in (self.view, self.rview):
            v.minimap.setVisible(on)
            if on:
                v.minimap.rebuild()

    # ================================================================ selection, collapse, find

    def _on_activated(self, view, sel):
        sc = view.scene()
        self.view.scene().select(sel)
        if self.area.side_by_side:
            self.rview.scene().select(sel if sel and sel[0] in ("node", "edge") else None)
        if view is self.rview:
            self.rview.scene().select(sel)
        self._show_props(sc, sel)

    def _show_props(self, sc, sel):
        doc = self.doc
        if doc is None or sc.plan is None or sel is None:
            self.props.show_message("Click an operator, a group or an edge between groups.")
            return
        kind, key = sel
        res = doc.result(self.device(), sc.plan.strategy if sc.plan.strategy in doc.plans else self.strategy)
        strategy = self.strategy if sc is self.view.scene() else self.right_strategy
        res = doc.result(self.device(), strategy)
        if kind == "node":
            self.props.show_node(doc.graph, key, sc.plan, res)
        elif kind in ("group", "collapsed"):
            self.props.show_group(doc.graph, sc.plan, key, res, collapsed=key in sc.collapsed)
        elif kind == "edge":
            self.props.show_edge(doc.graph, sc.plan, *key)
        self.dock_props.raise_()

    def _refresh_selection(self):
        sc = self.view.scene()
        sel = sc.selected
        if sel and sel[0] in ("group", "collapsed"):
            sel = None  # group indices belong to the previous plan
            sc.select(None)
        self._show_props(sc, sel)

    def _on_double_clicked(self, view, sel):
        if view is not self.view or sel is None:
            return
        kind, key = sel
        sc = self.view.scene()
        if kind == "collapsed":
            self.expand_group(key)
        elif kind == "node":
            self.collapse_group(sc.group_of[key])
        elif kind == "group":
            self.collapse_group(key)

    def select_node(self, nid: str):
        if self.doc is None or nid not in self.doc.graph.by_id:
            return
        sel = ("node", nid)
        self.view.scene().select(sel)
        self.view.reveal(sel)
        self._show_props(self.view.scene(), sel)

    def _selected_group(self) -> int | None:
        sc = self.view.scene()
        sel = sc.selected
        if not sel or sc.plan is None:
            return None
        kind, key = sel
        if kind == "node":
            return sc.group_of.get(key)
        if kind in ("group", "collapsed"):
            return key
        return None

    def collapse_group(self, gi: int):
        sc = self.view.scene()
        if sc.plan is None or len(sc.plan.groups[gi]) < 2:
            self.status("A single-op group has nothing to collapse")
            return
        sc.collapse([gi])
        sc.select(("collapsed", gi))
        self._show_props(sc, ("collapsed", gi))
        self._after_collapse()

    def expand_group(self, gi: int):
        sc = self.view.scene()
        sc.expand([gi])
        sc.select(("group", gi))
        self._after_collapse(expanded=True)

    def collapse_selected(self):
        gi = self._selected_group()
        if gi is None:
            self.status("Select an operator or a group first (click it)")
            return
        self.collapse_group(gi)

    def expand_selected(self):
        gi = self._selected_group()
        if gi is not None and gi in self.view.scene().collapsed:
            self.expand_group(gi)

    def collapse_all(self):
        sc = self.view.scene()
        if sc.plan is None:
            return
        sc.collapse_all()
        self._after_collapse()
        self.status(f"Collapsed {len(sc.collapsed)} groups")

    def expand_all(self):
        sc = self.view.scene()
        if sc.plan is None:
            return
        sc.expand_all()
        self._after_collapse(expanded=True)

    def _after_collapse(self, expanded: bool = False):
        sc = self.view.scene()
        self.view.minimap.rebuild()
        if self.area.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if sc.collapsed:
            self._request_layout(full=False)      # compact layout with collapsed groups as single nodes
        elif self.compact or expanded:
            self._request_layout(full=True)

    def find(self, text: str):
        sc = self.view.scene()
        self._find_hits = sc.find(text) if sc.graph is not None else []
        if self.area.side_by_side:
            self.rview.scene().find(text)
        self._find_pos = -1
        self.find_label.setText(f" {len(self._find_hits)} found " if text else "")
        if self._find_hits:
            self.find_step(+1)

    def find_step(self, d: int):
        if not self._find_hits:
            if self.find_edit.text():
                self.status(f"No op matches {self.find_edit.text()!r}")
            return
        self._find_pos = (self._find_pos + d) % len(self._find_hits)
        nid = self._find_hits[self._find_pos]
        self.find_label.setText(f" {self._find_pos + 1}/{len(self._find_hits)} ")
        self.select_node(nid)

    def _views_do(self, what: str):
        getattr(self.view, what)()
        if self.area.side_by_side:
            self.area.sync.now()

    # ================================================================ devices and benchmarks

    def device(self) -> str:
        return self.device_box.currentData() or "cpu"

    def _find_devices(self):
        def job():
            try:
                from engine import runner

                fn = getattr(runner, "devices", None)
            except ImportError:
                fn = None
            if fn is None:
                from engine import targets

                fn = targets.devices
            return fn()

        t = worker.submit(job, name="devices", background=True, on_done=self._on_devices,
                          on_failed=lambda m: self.status(f"Could not list devices: {m}"))
        self._tasks["devices"] = t
        t.signals.finished.connect(lambda: self._tasks.pop("devices", None))

    def _on_devices(self, devs):
        cur = self.settings.device
        self.device_box.clear()
        for d in devs:
            label = d["name"] + ("" if d.get("reachable", True) is not False else " (unreachable)")
            self.device_box.addItem(label, d["name"])
            self.device_box.setItemData(self.device_box.count() - 1, d.get("description", ""), QtCore.Qt.ToolTipRole)
        i = self.device_box.findData(cur)
        self.device_box.setCurrentIndex(max(0, i))
        self.devices = devs

    def _on_device(self, name: str):
        self.settings.device = name
        self._load_cached_results()
        self._update_panels()
        self._apply_heat()

    def _on_budget(self, v: int):
        self.settings.budget_pct = float(v)
        self._update_recommendation()

    def _load_cached_results(self):
        """Results the runner has cached for this model's plans on the current device (looked up off
        the UI thread: hashing thousands of groups takes a while)."""
        if self.doc is None:
            return
        doc, target = self.doc, self.device()
        plans = {s: p for s, p in doc.plans.items() if (target, s) not in doc.results}

        def done(found):
            if doc is not self.doc:
                return
            for s, r in found.items():
                doc.results.setdefault((target, s), r)
            if found:
                self._update_panels()
                self._apply_heat()
                self.results_changed.emit()

        worker.submit(cached_results, doc.graph, plans, target, name="cached-results", on_done=done, background=True)

    def benchmark(self, strategies: list[str] | None = None, all_strategies: bool = False, force: bool = False,
                  repeat: int | None = None):
        if self.doc is None:
            self.show_error("open a model first", "Benchmark")
            return
        try:
            from engine import runner
        except ImportError:
            self.show_error("the benchmark runner (engine/runner.py) is not available in this build", "Benchmark")
            return
        if strategies is None:
            strategies = [s for s in self.doc.strategies() if s in self.doc.plans] if all_strategies else \
                [self.strategy] + ([self.right_strategy] if self.area.side_by_side and
                                   self.right_strategy != self.strategy else [])
        strategies = [s for s in strategies if s in self.doc.plans]
        if not strategies:
            self.show_error("no plan ready to benchmark yet", "Benchmark")
            return
        doc, target, gen = self.doc, self.device(), self._gen
        plans = {s: doc.plans[s] for s in strategies}
        repeat = repeat or self.settings.repeat

        def job(progress, cancel):
            out = {}
            n = len(plans)
            for k, (s, p) in enumerate(plans.items()):
                if cancel.is_set():
                    break
                progress(f"{s}: starting", k / n)
                out[s] = runner.benchmark(doc.spec, doc.shapes, p, target=target, repeat=repeat,
                                          progress=lambda st, f, s=s, k=k: progress(f"{s}: {st}", (k + (f or 0)) / n),
                                          cancel=cancel, force=force)
            return out

        def done(results):
            if doc is not self.doc:
                return
            failed = []
            for s, r in results.items():
                r.strategy = s
                doc.results[(target, s)] = r
                if r.error:
                    failed.append(f"{s}: {r.error}")
                elif r.correct is False:
                    failed.append(f"{s}: outputs differ from the unfused build")
            if failed:
                self.show_error("; ".join(failed), "Benchmark")
            ok = [f"{s} {r.latency_ms['median']:.2f} ms" for s, r in results.items() if not r.error and r.latency_ms]
            self.status(f"Benchmark on {target}: " + (", ".join(ok) or "no result"), 15000)
            self._update_panels()
            self._apply_heat()
            self._show_props(self.view.scene(), self.view.scene().selected)
            self.results_changed.emit()

        t = worker.submit(job, name="bench", on_done=done,
                          on_failed=lambda m: self.show_error(m, "Benchmark failed"),
                          on_cancelled=lambda: self.status("Benchmark cancelled"))
        self._start("bench", t, f"Benchmarking {', '.join(strategies)} on {target}")
        self.dock_latency.raise_()

    # ================================================================ panels

    def _update_panels(self, latency: bool = True):
        if self.doc is None:
            return
        if latency:
            self.latency.update_data(self.doc.name, self.doc.strategies(), self.doc.plans,
                                     self.doc.results_for(self.device()), self.device(), self.doc.hw.title)
        self._update_recommendation()

    def _update_recommendation(self):
        if self.doc is None:
            return
        try:
            from engine import recommend
        except ImportError:
            self.recpanel.show_message("The recommendation (engine/recommend.py) is not available in this build.")
            return
        try:
            measured = {s: r for s, r in self.doc.results_for(self.device()).items() if not r.error}
            rec = recommend.recommend(self.doc.graph, self.doc.hw, float(self.budget.value()), measured or None)
        except Exception as e:  # noqa: BLE001 - shown in the panel
            self.recpanel.show_message(f"Recommendation failed: {e}")
            return
        self.recpanel.show_recommendation(rec, f"{self.doc.name} on {self.doc.hw.title}, budget "
                                               f"{self.budget.value()}%, measured on {self.device()}")

    # ================================================================ import / export

    def _save_path(self, title, filt, suffix, path):
        if path:
            return str(path)
        base = f"{self.doc.name.replace('@', '_')}-{self.strategy}{suffix}" if self.doc else f"fuselens{suffix}"
        p, _ = QtWidgets.QFileDialog.getSaveFileName(self, title, os.path.join(self.settings.last_dir, base), filt)
        if p:
            self.settings.last_dir = str(Path(p).parent)
        return p or None

    def export_plan(self, path=None, strategy: str | None = None):
        if self.doc is None:
            self.show_error("open a model first", "Export plan")
            return None
        strategy = strategy or self.strategy
        p = self._save_path("Export plan", "Plan JSON (*.json)", ".plan.json", path)
        if not p:
            return None
        from engine.planner import plan_json

        r = self.doc.result(self.device(), strategy)
        try:
            plan_json.save(p, self.doc.plans[strategy], self.doc.graph, self.doc.hw,
                           measured=r.to_dict() if r is not None and not r.error else None)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export plan")
            return None
        self.status(f"Wrote {p}")
        return p

    def import_plan(self, path=None):
        if self.doc is None:
            self.show_error("open the plan's model first", "Import plan")
            return None
        if not path:
            path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Import plan", self.settings.last_dir,
                                                            "Plan JSON (*.json);;All files (*)")
            if not path:
                return None
        from engine.errors import FuseLensError
        from engine.planner import plan_json

        try:
            plan = plan_json.load(path, self.doc.graph)
        except FuseLensError as e:
            self.show_error(str(e), "Import plan")
            return None
        except Exception as e:  # noqa: BLE001
            self.show_error(f"{type(e).__name__}: {e}", "Import plan")
            return None
        plan.notes = dict(plan.notes or {}, imported_from=str(path), imported_strategy=plan.strategy)
        plan.strategy = "custom"
        self._recost(plan)
        self.doc.plans["custom"] = plan
        self.doc.results = {k: v for k, v in self.doc.results.items() if k[1] != "custom"}
        self._fill_strategy_boxes()
        self.set_strategy("custom", force=True)
        self._update_panels()
        self.plans_changed.emit()
        self.status(f"Imported {os.path.basename(str(path))} as 'custom': {plan.kernels} kernels")
        return plan

    def export_graph(self, path=None, fmt: str = "png"):
        if self.doc is None or self.view.scene().graph is None:
            self.show_error("nothing to export yet", "Export graph")
            return None
        p = self._save_path(f"Export graph as {fmt.upper()}", f"{fmt.upper()} (*.{fmt})", f".{fmt}", path)
        if not p:
            return None
        try:
            if fmt == "svg":
                self.view.scene().render_svg(p, f"{self.doc.name} - {self.strategy}")
            else:
                self.view.scene().render_png(p)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export graph")
            return None
        self.status(f"Wrote {p}")
        return p

    def export_csv(self, path=None):
        if self.doc is None:
            self.show_error("open a model first", "Export results")
            return None
        p = self._save_path("Export results", "CSV (*.csv)", ".results.csv", path)
        if not p:
            return None
        try:
            n = write_results_csv(self.doc, p)
        except OSError as e:
            self.show_error(str(e), "Export results")
            return None
        self.status(f"Wrote {n} rows to {p}")
        return p

    # ================================================================ drag and drop, help, theme, close

    def dragEnterEvent(self, ev):  # noqa: N802
        if ev.mimeData().hasUrls() and any(u.isLocalFile() for u in ev.mimeData().urls()):
            ev.acceptProposedAction()

    def dropEvent(self, ev):  # noqa: N802
        for u in ev.mimeData().urls():
            if u.isLocalFile():
                self.open_dropped(u.toLocalFile())
                ev.acceptProposedAction()
                return

    def open_dropped(self, path: str):
        if path.lower().endswith(".json") and self.doc is not None:
            self.import_plan(path)
        else:
            self.open_model(path)

    def shortcut_rows(self) -> list[tuple[str, str]]:
        rows = []
        for a in self.actions():
            seqs = [s.toString(QtGui.QKeySequence.NativeText) for s in a.shortcuts() if not s.isEmpty()]
            if seqs and not a.text().startswith("Recent "):
                rows.append((a.text().replace("&", "").rstrip("."), ", ".join(seqs)))
        rows += [("Open recent file 1..9", "Ctrl+1 .. Ctrl+9"), ("Zoom", "mouse wheel"), ("Pan", "drag"),
                 ("Properties", "click an operator, group box or edge"),
                 ("Collapse / expand a group", "double-click it")]
        return rows

    def show_shortcuts(self):
        self.shortcuts_dialog = ShortcutsDialog(self.shortcut_rows(), self)
        self.shortcuts_dialog.show()

    def show_about(self):
        QtWidgets.QMessageBox.about(self, "About FuseLens",
                                    "<b>FuseLens</b><br>Compare operator-fusion strategies in Apache TVM: "
                                    "see the fused groups, why edges were not fused, and what each plan costs.<br>"
                                    f"Graph layout: {'graphviz dot' if dot_path() else 'built-in (dot not found)'}")

    def _on_scheme_changed(self, scheme=None):
        """The system switched between light and dark (QStyleHints.colorSchemeChanged)."""
        app = QtWidgets.QApplication.instance()
        dark = style.apply_scheme(app, scheme)
        self.theme = style.Theme(dark)
        for v in (self.view, self.rview):
            sc = v.scene()
            v.set_theme(self.theme)
            if sc.graph is not None and sc.layout is not None:
                g, lay, plan, other = sc.graph, sc.layout, sc.plan, sc.other_plan
                collapsed = set(sc.collapsed)
                sc.set_graph(g, self.layout_full or lay, plan)
                if plan is not None:
                    sc.set_plan(plan, other)
                    sc.collapse(collapsed)
                v.refresh_labels()
            v.minimap.rebuild()
        self._apply_heat()
        self._apply_theme_to_panels()

    def _apply_theme_to_panels(self):
        dark = self.theme.dark
        self.latency.set_theme(dark)
        self.recpanel.set_theme(dark)

    def closeEvent(self, ev):  # noqa: N802
        self.settings.save_window(self)
        self.settings.sync()
        for t in self._tasks.values():
            t.cancel()
        self.layouts.cancel()
        super().closeEvent(ev)
