"""The main window: opens a model, shows its operator graph under a fusion strategy, compares two
strategies side by side, benchmarks them, and shows the latency and the recommendation.

`MainWindow` composes one class per job, each in its own module:

    actions            menus, toolbar, shortcuts, help
    activity           tasks in flight, progress and Cancel, status and error messages
    file_io            open / recent / drag and drop / input shapes; import and export
    planning           planning strategies off the UI thread
    bench_controller   devices and Benchmark through engine.runner
    tune_controller    Tune: MetaSchedule tuning of the shown plan's kernels through engine.tuning
    layout_controller  layout requests and applying them to the two views
    strategies         switching strategies and the side-by-side comparison
    differences        side by side: the summary, the groups only one plan has, next / previous difference
    overlays           heat overlay and minimap
    selection          selection, properties, collapse / expand
    find               the find box

Everything slow (loading, planning, layout, benchmarking, tuning, finding devices) runs off the UI thread
through `worker`; errors arrive as messages in the window's banner and status bar.
"""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from engine import layout as L

from . import style, worker
from .actions import STRATEGY_TIPS, Actions, all_strategies  # noqa: F401 - STRATEGY_TIPS: public name
from .activity import QUIET_TASKS, Activity  # noqa: F401 - QUIET_TASKS: public name
from .bench_controller import Benchmarks
from .compare import GraphArea
from .differences import Differences
from .document import Document
from .file_io import NeedShapes, FileIO  # noqa: F401 - NeedShapes: public name
from .find import Find
from .layout_controller import Layouts
from .layout_worker import LayoutService
from .overlays import Overlays
from .panels.differences import DifferencesPanel
from .panels.latency import LatencyPanel
from .panels.properties import PropertiesPanel
from .panels.recommendation import RecommendationPanel
from .planning import Planning, cached_results  # noqa: F401 - cached_results: public name
from .selection import Selection
from .settings import Settings
from .strategies import Strategies
from .tune_controller import Tuning


class MainWindow(Actions, Activity, FileIO, Planning, Benchmarks, Tuning, Layouts, Strategies, Differences,
                 Overlays, Selection, Find, QtWidgets.QMainWindow):
    """The composition: builds the views, docks, actions and status bar, and ties a loaded Document
    to them; each base class above does one job over the state kept here."""

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
        self.strategy = self.settings.strategy if self.settings.strategy in all_strategies() else "greedy"
        self.right_strategy = "dp" if self.strategy != "dp" else "greedy"
        self.layout_full: L.Layout | None = None   # the current strategy's layout of every op
        self.compact = False                        # the shown layout places collapsed groups as one node
        self.heat_on = False
        self.last_error = ""
        self.last_cancelled: list[str] = []
        self.last_toggle_ms = 0.0
        self._gen = 0
        self._tasks: dict[str, worker.Task] = {}
        self._pending_layout: dict = {}            # the layout asked for and not yet applied (layout_controller)
        self._deferred_layout = None                # a layout that arrived while the first render was running
        self._applying = 0                          # layouts being applied a slice at a time (layout_controller)
        self._find_hits: list[str] = []
        self.tune_hint: dict[str, str] = {}         # target -> a line for the latency panel after tuning
        self.last_tune_report = None
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
        self.dock_diff.setVisible(self.area.side_by_side)  # shown with side by side only
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.styleHints().colorSchemeChanged.connect(self._on_scheme_changed)
        self._apply_theme_to_panels()
        QtCore.QTimer.singleShot(0, self._find_devices)

    def _build_docks(self):
        self.props = PropertiesPanel()
        self.props.node_requested.connect(lambda nid: self.select_node(nid))
        self.latency = LatencyPanel()
        self.recpanel = RecommendationPanel()
        self.diffs = DifferencesPanel()
        self.diffs.chosen.connect(self._show_difference)
        self.dock_props = self._dock("Properties", self.props.container(), QtCore.Qt.RightDockWidgetArea, "props")
        self.dock_latency = self._dock("Latency", self.latency, QtCore.Qt.BottomDockWidgetArea, "latency")
        self.dock_rec = self._dock("Recommendation", self.recpanel, QtCore.Qt.BottomDockWidgetArea, "rec")
        self.dock_diff = self._dock("Differences", self.diffs, QtCore.Qt.RightDockWidgetArea, "diff")
        self.splitDockWidget(self.dock_props, self.dock_diff, QtCore.Qt.Vertical)
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

    # ================================================================ a document arrives

    def _show_document(self, doc: Document, plan_tvm: bool = True, cached: dict | None = None):
        self.doc = doc
        target = self.device()
        for st, r in (cached or {}).items():
            doc.results[(target, st)] = r
            doc.set_rules_result(target, st, doc.plans.get(st), r)
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
        if not plan_tvm:
            doc.plan_errors.setdefault("tvm", "a generated graph has no TVM module to run FuseOps on")
        self._fill_strategy_boxes()
        if plan_tvm:
            self._plan_tvm()
        self._request_layout(full=True)
        if self._cost_name() == "measured":
            self.replan("Planning by measured kernel times")  # the open planned by the cost model
        QtCore.QTimer.singleShot(0, self._update_panels)
        self.status(f"Loaded {g.name}: {len(g)} operators; planned {', '.join(doc.plans)}"
                    + ("; tvm planning in the background" if plan_tvm and "tvm" not in doc.plans else ""))
        self.model_loaded.emit(doc)

    # ================================================================ views, panels, theme, close

    def _views_do(self, what: str):
        getattr(self.view, what)()
        if self.area.side_by_side:
            self.area.sync.now()

    def _on_budget(self, v: int):
        self.settings.budget_pct = float(v)
        self._update_recommendation()

    def _update_panels(self, latency: bool = True):
        if self.doc is None:
            return
        if latency:
            target = self.device()
            self.latency.update_data(self.doc.name, self.doc.strategies(), self.doc.plans,
                                     self.doc.results_for(target), target, self.doc.hw.title,
                                     rules=self.doc.rules_for(target), hint=self.tune_hint.get(target, ""),
                                     input_shapes=self.doc.graph.input_shapes)
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
            # every result, errored or not correct ones too: the engine leaves those out and says why
            measured = self.doc.results_for(self.device())
            rec = recommend.recommend(self.doc.graph, self.doc.hw, float(self.budget.value()), measured or None)
        except Exception as e:  # noqa: BLE001 - shown in the panel
            self.recpanel.show_message(f"Recommendation failed: {e}")
            return
        self.recpanel.show_recommendation(rec, f"{self.doc.name} on {self.doc.hw.title}, budget "
                                               f"{self.budget.value()}%, measured on {self.device()}",
                                          measured=list(measured))

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
