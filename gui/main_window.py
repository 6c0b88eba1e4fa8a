"""The main window: opens a model, shows its operator graph under a fusion strategy, compares two
strategies side by side, benchmarks them, and shows the latency, the recommendation, and how well the
cost model predicts the shown plan's kernels (the Cost Model panel).

The state is in one AppModel (app_model.py, napari's ViewerModel; no Qt): `model` (its Workspace: the
open document.Document with its plans and results, the devices and the selected one, the hardware
profile and the cost, the budget, the requests in flight), `state` (its ViewState: the strategies shown,
side by side, heat, the collapsed groups, the selection, the plan the left pane draws), its ScopeView,
LayoutModel, HeatModel and `messages` (the status line and the last error). Every model is an
EventedModel (evented.py): whatever changes one emits, and the window's boxes, panes, panels, settings
and public signals follow. The window composes one controller per job, each in its own module and given
the AppModel and the controllers it hands work to; controllers change models and emit events, views
subscribe (tests/gui/test_gui_structure.py checks that no controller reaches a view):

    activity           work in flight: progress and Cancel, `busy`, stale results dropped
    file_io            Files: open / recent / drop / input shapes; import and export (events.opened: the
                       window shows the Document; events.shapes_wanted: FilePrompts asks for them)
    file_prompts       FilePrompts (a view): the File menu's dialogs, Open Recent, exporting the graph
    planning           Planning: the fast strategies, TVM's FuseOps, re-planning for a profile or cost
    bench_controller   Benchmarks: the devices and Benchmark through engine.measure.runner (events.started:
                       the window raises the Latency dock; the Device box follows the Workspace)
    tune_controller    Tuning: MetaSchedule tuning of the shown plan's kernels (events.budget_wanted and
                       events.report: the window shows the Tune dialog and the report)
    kernel_reports     KernelReportController: Measure Kernels vs ONNX Runtime into the KernelReports store
    fidelity_controller  FidelityController: Time kernels, the cost model against the shown plan's timed kernels
    layout_controller  Layouts: asks for layouts and hands them to the panes (LayoutModel.events.arrived)
    pane_layouts       PaneLayouts (a view): applies them to the two panes a slice at a time
    scope_controller   Scopes: the model's blocks (ONNX scopes): collapse to depth, expand all, one at a time
    strategies         Strategies: the strategies shown and the side-by-side comparison
    differences        Differences: the groups only one plan has, next / previous difference, into the
                       DifferencesModel (the Differences panel and the summary line follow it)
    overlays           Overlays: heat overlay, latency-delta overlay (side by side) and minimap, into the
                       HeatModel (the panes draw it: GraphArea.follow_heat)
    selection          Selection: clicks and Collapse / Expand; KeepSelection: the selection kept
                       meaningful when plans change (subscribed before the panes)
    kernel_code_controller  KernelCodeController: the Kernel code of a group (a pane's context menu, K) into
                       its KernelCodeModel: TIR, LLVM IR, assembly or CUDA source, built in a child
                       (engine/jobs/kernel_code.py); kernel_code_view (a view) draws it and adds the menu
    ort_heat           OrtHeat: an imported ONNX Runtime profile as the heat overlay's source (View > Heat Source)
    find               Find: the find box's matches, outlined (ViewState.found) and selected one at a time
    find_box           FindBox (a view): the find box, built onto the window

`actions` builds the menus, toolbar and shortcuts from the table in action_table.py (`win.acts`).
Everything slow runs off the UI thread through `Activity.run`; errors arrive as Messages, shown in the
window's banner and status bar.
"""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import actions, style
from .actions import STRATEGY_TIPS, all_strategies  # noqa: F401 - STRATEGY_TIPS: public name
from .app_model import AppModel
from .activity import QUIET_TASKS, Activity  # noqa: F401 - QUIET_TASKS: public name
from .activity_bar import ActivityBar
from .bench_controller import Benchmarks
from .graph_area import GraphArea
from .dialogs import ReportDialog, TuneDialog
from .differences import Differences
from .document import Document
from .fidelity_controller import FidelityController
from .file_io import Files, NeedShapes  # noqa: F401 - NeedShapes: public name
from .file_prompts import FilePrompts
from .find import Find
from .layout_controller import Layouts
from .overlays import Overlays
from .pane_layouts import PaneLayouts
from .panels.cost_model import CostModelPanel
from .panels.differences import DifferencesPanel
from .panels.kernels import KernelsPanel
from .kernel_reports import KernelReportController, KernelReports
from . import kernel_code_view
from .kernel_code_controller import KernelCodeController
from .ort_heat import OrtHeat
from .panels.latency import LatencyPanel
from .panels.properties import PropertiesPanel
from .panels.recommendation import RecommendationPanel
from .planning import Planning, cached_results  # noqa: F401 - cached_results: public name
from .selection import KeepSelection, Selection
from .scope_controller import Scopes
from .settings import Settings
from .strategies import Strategies
from .tune_controller import Tuning
from .view_state import ViewState
from .workspace import Workspace


class MainWindow(QtWidgets.QMainWindow):
    """The composition: builds the views, docks, actions and status bar, holds the models and the
    controllers, and re-emits the models' changes as its public signals. Its public methods (open_model,
    set_strategy, benchmark, ...) hand over to the controllers."""

    model_loaded = QtCore.Signal(object)          # Document
    plans_changed = QtCore.Signal()
    layout_applied = QtCore.Signal(object)        # Layout
    results_changed = QtCore.Signal()
    error_shown = QtCore.Signal(str)
    busy_changed = QtCore.Signal(bool)

    def __init__(self, settings: Settings | None = None):
        super().__init__()
        self.settings = settings or Settings()
        self.app = AppModel(   # the app's state (napari's ViewerModel): what the controllers change, views follow
            Workspace(budget=self.settings.budget_pct, profile=self._saved_profile(),
                      cost=self.settings.cost),  # the open Document, devices, profile, cost, budget, requests
            ViewState(self.settings.strategy if self.settings.strategy in all_strategies() else "greedy",
                      heat_log=self.settings.heat_log))
        self.model, self.state, self.messages = self.app.workspace, self.app.view, self.app.messages
        self.theme = style.Theme(style.is_dark(self))
        self.setWindowTitle("FuseLens")
        self.setAcceptDrops(True)
        self.resize(1400, 900)

        app = self.app
        self.activity = Activity(app)               # work in flight, busy
        self.activity.events.busy.connect(lambda ev: self.busy_changed.emit(ev.value))
        self.activity_bar = ActivityBar(app, self.activity, self.statusBar())   # progress, Cancel, layout label
        self._follow_messages()
        self.messages.show("Ready", 0)
        self.tuning = Tuning(app, self.settings, self.activity)   # Tune, its report, the latency panel's hint
        self.tuning.events.budget_wanted.connect(self._ask_tune_budget)
        self.tuning.events.report.connect(self._show_tune_report)
        self.tune_dialog = self.tune_report = None   # the Tune dialog and the tuning report last shown
        self.fidelity = FidelityController(app, self.activity)   # Time kernels
        self.fidelity.events.timed.connect(lambda ev: self.dock_cost.raise_())
        self.kernel_reports = KernelReports()       # Measure Kernels vs ONNX Runtime: what it measured
        self.kernel_report = KernelReportController(app, self.kernel_reports, self.activity)
        self.planning = Planning(app, self.activity)   # planning, re-planning for a profile or cost
        self.keep_selection = KeepSelection(self.model, self.state)   # the selection kept meaningful as plans change
        self.area = GraphArea(self.theme)
        self.setCentralWidget(self.area)
        self.view = self.area.left
        self.rview = self.area.right
        self.area.follow(self.state, self.model)    # the panes draw the strategies, plans, selection, collapsed groups
        self.files = Files(app, self.settings, self.activity, self.planning)   # open, recent, shapes, import / export
        self.files.events.opened.connect(lambda ev: self.show_document(ev.doc, plan_tvm=ev.plan_tvm, cached=ev.cached))
        self.prompts = FilePrompts(self.files, self.settings, self.area, self.messages, self)   # its dialogs
        self.scope_view = app.scopes                # the model's blocks (ONNX scopes): shown, collapsed
        self.layouts = Layouts(app, self.activity, time_limit_s=self.settings.dot_time_limit_s)
        self.pane_layouts = PaneLayouts(app, self.area, self.activity)   # the panes apply the layouts
        self.area.layout_wanted.connect(lambda: self.layouts.request(full=True))
        self.layouts.events.applied.connect(lambda ev: self.layout_applied.emit(ev.layout))
        self.strategies = Strategies(app, self.layouts)   # the strategies shown, side by side
        self.scopes = Scopes(app, self.layouts)   # blocks: collapse to depth, expand all, one at a time
        self._wire_scopes()
        for pane, v in (("left", self.view), ("right", self.rview)):
            v.activated.connect(lambda sel, p=pane: self.selection.activate(p, sel))
            v.double_clicked.connect(lambda sel, p=pane: self.selection.double_click(p, sel))
            v.minimap.setVisible(self.settings.minimap)

        self._build_docks()
        self.differences = Differences(app)   # side by side: the differences, next / previous
        self.diffs.follow(self.model, app.differences)
        self.area.follow_differences(app.differences)
        self.diffs.chosen.connect(self.differences.choose)
        self.diffs.step_requested.connect(self.differences.step)
        self.differences.events.reveal.connect(lambda ev: self.area.reveal_difference(ev.pane, ev.sel))
        self.selection = Selection(app, self.layouts, self.differences)   # clicks, collapse / expand
        self.selection.events.described.connect(lambda ev: self.dock_props.raise_())
        self.selection.events.reveal.connect(lambda ev: self.view.reveal(ev.sel))
        self.finder = Find(app, self.selection, self.scopes)   # the find box's matches
        self.kernel_code = KernelCodeController(app, self.kernel_reports, self.activity)   # the Kernel code view
        kernel_code_view.attach(self, self.area, self.kernel_code)   # its window and the panes' context menu
        self.ort_heat = OrtHeat(app, self.activity)   # an imported ONNX Runtime profile as a heat source
        actions.build_actions(self)
        actions.build_toolbar(self)
        actions.build_menus(self)
        self.bench = Benchmarks(app, self.settings, self.activity, self.files, self.planning,
                                self.tuning)    # the devices and Benchmark
        self.bench.events.started.connect(lambda ev: self.dock_latency.raise_())
        self.settings.restore_window(self)
        self.dock_diff.setVisible(self.state.side_by_side)  # shown with side by side only
        qapp = QtWidgets.QApplication.instance()
        if qapp is not None:
            qapp.styleHints().colorSchemeChanged.connect(self.set_color_scheme)
        self._apply_theme_to_panels()
        self._subscribe()
        self.overlays = Overlays(app, self.layouts, self.settings)   # heat overlay and minimap (after the panels)
        self.area.follow_heat(app.heat)             # the panes draw what the HeatModel says
        self.area.plan_shown.connect(lambda s: self.overlays.apply())   # a pane shows another plan: its heat
        self.overlays.delta.events.on.connect(lambda ev: self.diffs.set_delta(ev.value))
        self.overlays.ort = self.ort_heat     # the heat source: FuseLens's figures or the imported ORT profile
        self.ort_heat.events.changed.connect(lambda ev: (self.overlays.apply(), actions.check_heat_source(self)))
        self.diffs.delta_requested.connect(lambda on: setattr(self.overlays.delta, "on", on))
        self.area.plan_shown.connect(lambda s: self.strategies.on_shown(s, self.area.redraw_t0))   # after the heat: layout, status line
        QtCore.QTimer.singleShot(0, self.bench.find_devices)

    # ================================================================ messages and work in flight

    def _wire_scopes(self):
        """The block bar and the left pane's blocks: drawn from the ScopeView, requests to Scopes and Layouts;
        the direction (left to right or top to bottom) as the settings remember it, and each change kept."""
        bar = self.area.scope_bar
        self.area.follow_scopes(self.state, self.scope_view)
        bar.depth_requested.connect(self.scopes.collapse_to_depth)
        bar.expand_requested.connect(self.scopes.expand_all)
        bar.direction_requested.connect(self.layouts.set_direction)
        self.view.scope_double_clicked.connect(self.scopes.toggle)
        self.scopes.remember(self.settings)
        bar.lr_box.blockSignals(True)
        bar.lr_box.setChecked(self.settings.left_to_right)
        bar.lr_box.blockSignals(False)
        bar.direction_requested.connect(lambda d: setattr(self.settings, "left_to_right", d == "LR"))

    def _follow_messages(self):
        """The status bar shows the Messages' status line; an error goes to the banner and the status bar."""
        def on_error(ev):
            if not ev.value:      # cleared: the banner hides
                self.area.hide_error()
                return
            self.area.show_error(ev.value)
            self.statusBar().showMessage(ev.value.splitlines()[0][:200], 15000)
            self.error_shown.emit(ev.value)

        self.messages.events.status.connect(lambda ev: self.statusBar().showMessage(ev.value, ev.ms))
        self.messages.events.error.connect(on_error)
        self.messages.events.placeholder.connect(lambda ev: self.area.show_placeholder(ev.value))

    def show_error(self, msg: str, where: str = ""):
        """Show an error (Messages.fail): the banner and the status bar."""
        self.messages.fail(msg, where)

    def status(self, msg: str, ms: int = 6000):
        """A status-line message (Messages.show)."""
        self.messages.show(msg, ms)

    @property
    def last_error(self) -> str:
        """The last error shown (Messages.error)."""
        return self.messages.error

    @property
    def busy(self) -> bool:
        """Whether anything is in flight (Activity.busy); tests and scripts wait for `not win.busy`."""
        return self.activity.busy

    def cancel(self):
        """Cancel loading, planning, layout, benchmarks and tuning in flight."""
        self.activity.cancel()

    # ================================================================ the model, and what follows it

    @property
    def doc(self) -> Document | None:
        """The open Document (None before the first model is open)."""
        return self.model.doc

    @property
    def strategy(self) -> str:
        """The left (or only) pane's strategy: `state.strategy`; change it with set_strategy."""
        return self.state.strategy

    @property
    def right_strategy(self) -> str:
        """The right pane's strategy, side by side: `state.right_strategy`."""
        return self.state.right_strategy

    def _subscribe(self):
        """The window's widgets, signals and settings follow the model: each change is handled here,
        whoever made it."""
        st = self.state.events
        st.strategy.connect(lambda ev: self._on_strategy_chosen(ev.value))
        st.right_strategy.connect(lambda ev: self.right_box.setCurrentIndex(max(0, self.right_box.findData(ev.value))))
        st.side_by_side.connect(lambda ev: self._on_side_by_side(ev.value))
        st.heat.connect(lambda ev: self.acts["heat"].setChecked(ev.value))
        st.heat_log.connect(lambda ev: self._on_heat_log(ev.value))
        self.model.events.plans.connect(self._on_plans)
        self.model.events.results.connect(self._on_results)
        self.model.events.budget.connect(lambda ev: setattr(self.settings, "budget_pct", ev.value))
        self.model.events.profile.connect(lambda ev: self._on_profile(ev.value))
        self.model.events.cost.connect(lambda ev: self._on_cost(ev.value))

    def _saved_profile(self) -> str:
        """The profile the settings remember, if it is still one engine.devices.hardware knows (else its first)."""
        from engine.devices import hardware

        names = hardware.names()
        return self.settings.profile if self.settings.profile in names else names[0]

    def _on_profile(self, name: str):
        self.settings.profile = name
        self.profile_box.setCurrentIndex(max(0, self.profile_box.findData(name)))

    def _on_cost(self, cost: str):
        self.settings.cost = cost
        self.cost_box.setCurrentIndex(max(0, self.cost_box.findData(cost)))

    def _on_strategy_chosen(self, s: str):
        self.settings.strategy = s
        if f"strategy:{s}" in self.acts:
            self.acts[f"strategy:{s}"].setChecked(True)
        self.strategy_box.setCurrentIndex(max(0, self.strategy_box.findData(s)))

    def _on_heat_log(self, on: bool):
        """The heat overlay's scale: persisted, and its menu entry checked."""
        self.settings.heat_log = on
        self.acts["log"].setChecked(on)

    def _on_side_by_side(self, on: bool):
        self.acts["side"].setChecked(on)
        self.right_box_action.setVisible(on)
        self.dock_diff.setVisible(on)

    def _on_plans(self, ev):
        actions.fill_strategy_boxes(self)
        self.strategies.name_boxes((self.strategy_box, self.right_box))   # "dp (measured)": what decided each plan
        self.plans_changed.emit()

    def _on_results(self, ev):
        self.results_changed.emit()

    def _build_docks(self):
        self.props = PropertiesPanel()
        self.props.follow(self.model, self.state)
        self.props.follow_reports(self.kernel_reports)
        self.props.node_requested.connect(lambda nid: self.select_node(nid))
        self.latency = LatencyPanel()
        self.latency.follow(self.model, self.tuning)
        self.recpanel = RecommendationPanel()
        self.recpanel.follow(self.model)
        self.diffs = DifferencesPanel()
        self.costpanel = CostModelPanel()
        self.costpanel.follow(self.model, self.state, self.fidelity)
        self.costpanel.time_requested.connect(lambda: self.time_kernels())
        self.costpanel.group_requested.connect(self._show_group)
        self.kernels = KernelsPanel()
        self.kernels.follow(self.model, self.state, self.kernel_reports)
        self.kernels.group_requested.connect(self._show_group)
        self.kernels.code_requested.connect(self._show_kernel_code)
        self.dock_props = self._dock("Properties", self.props.container(), QtCore.Qt.RightDockWidgetArea, "props")
        self.dock_latency = self._dock("Latency", self.latency, QtCore.Qt.BottomDockWidgetArea, "latency")
        self.dock_rec = self._dock("Recommendation", self.recpanel, QtCore.Qt.BottomDockWidgetArea, "rec")
        self.dock_diff = self._dock("Differences", self.diffs, QtCore.Qt.RightDockWidgetArea, "diff")
        self.dock_cost = self._dock("Cost Model", self.costpanel, QtCore.Qt.BottomDockWidgetArea, "cost")
        self.dock_kernels = self._dock("Kernels", self.kernels, QtCore.Qt.BottomDockWidgetArea, "kernels")
        self.dock_kernels.visibilityChanged.connect(self.kernels.set_shown)   # filled only when seen
        self.splitDockWidget(self.dock_props, self.dock_diff, QtCore.Qt.Vertical)
        self.splitDockWidget(self.dock_latency, self.dock_rec, QtCore.Qt.Horizontal)
        self.tabifyDockWidget(self.dock_rec, self.dock_cost)   # beside the recommendation, one tab each
        self.tabifyDockWidget(self.dock_cost, self.dock_kernels)
        self.dock_rec.raise_()
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

    def show_document(self, doc: Document, plan_tvm: bool = True, cached: dict | None = None):
        """Show a newly loaded Document (plan_tvm: also plan TVM's FuseOps for it; cached: results
        found in the runner's cache, by strategy, on the selected device)."""
        for s, m in doc.plan_errors.items():
            self.show_error(m, f"Planning with {s} failed")
        doc.add_results(self.device(), cached or {}, doc.plans)   # before the views follow it
        if not plan_tvm:
            doc.note_plan_error("tvm", "a generated graph has no TVM module to run FuseOps on")
        self.model.set_document(doc)
        g = doc.graph
        self.setWindowTitle(f"{g.name} \u2014 FuseLens")
        self.layouts.reset()
        self.view.scene().clear_graph()
        self.rview.scene().clear_graph()
        if self.strategy not in doc.plans:
            self.state.strategy = "greedy" if self.strategy in ("tvm", "custom") or "greedy" in doc.plans else \
                next(iter(doc.plans), "greedy")
        actions.fill_strategy_boxes(self)
        self.strategies.name_boxes((self.strategy_box, self.right_box))
        if plan_tvm:
            self.planning.plan_tvm()
        self.layouts.request(full=True)
        if self.model.cost == "measured":
            self.replan("Planning by measured kernel times")  # the open planned by the cost model
        self.status(f"Loaded {g.name}: {len(g)} operators in {g.layout}; planned {', '.join(doc.plans)}"
                    + ("; tvm planning in the background" if plan_tvm and "tvm" not in doc.plans else ""))
        self.model_loaded.emit(doc)

    # ================================================================ commands: each hands over to a controller

    def set_heat(self, on: bool):
        self.state.heat = on

    def set_heat_log(self, on: bool):
        self.state.heat_log = on

    def set_minimap(self, on: bool):
        self.overlays.set_minimap(on)

    def set_strategy(self, s: str):
        """Show strategy `s` in the left pane (ViewState.strategy; the panes follow it)."""
        self.strategies.set_strategy(s)

    def set_right_strategy(self, s: str):
        """Show strategy `s` in the right pane (side by side)."""
        self.strategies.set_right_strategy(s)

    def set_side_by_side(self, on: bool):
        self.strategies.set_side_by_side(on)

    def open_model(self, spec: str, shapes: list[str] | dict | None = None):
        """Open `spec` (an .onnx path or zoo:NAME[@RES]); `shapes` as CLI strings NAME=D1,D2 or a dict."""
        self.files.open_model(spec, shapes)

    def open_graph(self, graph, spec: str | None = None):
        """Show an OpGraph that did not come from a file (a generated one)."""
        self.files.open_graph(graph, spec)

    def open_recent(self, i: int):
        self.files.open_recent(i)

    def import_plan(self, path=None):
        """Load a plan JSON as the "custom" strategy (without a path: ask for one)."""
        return self.prompts.import_plan(path)

    def import_ort_profile(self, path=None):
        """Import an ONNX Runtime profile as a heat source (OrtHeat.import_file; without a path: ask for one)."""
        if path is None and self.model.doc is not None:
            path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Import ONNX Runtime profile", "",
                                                            "ONNX Runtime profile (*.json);;All files (*)")
            if not path:
                return
        self.ort_heat.import_file(path)

    def export_plan(self, path=None, strategy: str | None = None):
        return self.prompts.export_plan(path, strategy)

    def export_graph(self, path=None, fmt: str = "png"):
        return self.prompts.export_graph(path, fmt)

    def export_csv(self, path=None):
        return self.prompts.export_csv(path)

    def dragEnterEvent(self, ev):  # noqa: N802
        if ev.mimeData().hasUrls() and any(u.isLocalFile() for u in ev.mimeData().urls()):
            ev.acceptProposedAction()

    def dropEvent(self, ev):  # noqa: N802
        for u in ev.mimeData().urls():
            if u.isLocalFile():
                self.files.open_dropped(u.toLocalFile())
                ev.acceptProposedAction()
                return

    def set_profile(self, name: str):
        """Plan for the hardware profile `name` (Workspace.profile; Planning re-plans the open model)."""
        self.model.set_profile(name)

    def set_cost(self, cost: str):
        """What every strategy is priced by and dp, hybrid and optimal decide by: "roofline", "learned"
        or "measured" ("model": learned) (Workspace.cost; Planning re-plans)."""
        self.model.set_cost(cost)

    def replan(self, text: str = "Re-planning"):
        """Re-plan every strategy for the selected profile, cost and device."""
        self.planning.replan(text)

    def device(self) -> str:
        """The selected device (Workspace.device)."""
        return self.model.device

    def benchmark(self, strategies: list[str] | None = None, all_strategies: bool = False, force: bool = False,
                  repeat: int | None = None):
        """Build and time `strategies` (default: the shown ones; all_strategies: every plan) on the device."""
        self.bench.benchmark(strategies, all_strategies, force, repeat)

    def tune(self, trials: int | None = None, minutes: float | None = None):
        """Tune the shown strategy's kernels on the selected device (without a budget: ask for one)."""
        self.tuning.tune(trials, minutes)

    def _ask_tune_budget(self, ev):
        """Tune without a budget: the Tune dialog asks for one (trials or minutes), then Tuning runs."""
        dlg = self.tune_dialog = TuneDialog(ev.model, ev.strategy, ev.target, ev.budget, ev.records, self)
        if dlg.exec() != QtWidgets.QDialog.Accepted:
            return
        kind, n = dlg.budget()
        self.settings.tune_budget = (kind, n)
        self.tuning.tune(*((n, None) if kind == "trials" else (None, n)))

    def _show_tune_report(self, ev):
        self.tune_report = ReportDialog(ev.title, ev.text, self)
        self.tune_report.show()

    def time_kernels(self, strategy: str | None = None):
        """Time the shown strategy's kernels on the selected device and show the cost model against them
        (the Cost Model panel)."""
        self.fidelity.time_kernels(strategy)

    def _show_group(self, gi: int):
        """Select group `gi` of the left pane's plan and bring it into view (a point of the Cost Model panel)."""
        plan = self.view.scene().plan
        if self.doc is None or plan is None or plan is not self.doc.plans.get(self.strategy) or gi >= len(plan.groups):
            return
        sel = ("collapsed", gi) if gi in self.state.collapsed_in(plan) else \
            ("node", plan.groups[gi][0]) if len(plan.groups[gi]) == 1 else ("group", gi)
        self.selection.activate("left", sel)
        self.view.reveal(sel, fit=True)

    def _show_kernel_code(self, gi: int):
        """The Kernels panel's "Show Kernel Code" on a row: select its group, then open its code."""
        self._show_group(gi)
        self.kernel_code.show_selected()

    def select_node(self, nid: str):
        """Select operator `nid` in the left pane, reveal it and show its properties."""
        self.selection.select_node(nid)

    def collapse_group(self, gi: int):
        self.selection.collapse_group(gi)

    def expand_group(self, gi: int):
        self.selection.expand_group(gi)

    def collapse_all(self):
        self.selection.collapse_all()

    def expand_all(self):
        self.selection.expand_all()

    def find(self, text: str):
        """Select the first operator whose name or type matches `text` (the find box)."""
        self.finder.find(text)

    def find_step(self, d: int):
        """The next (d=+1) or previous (d=-1) match."""
        self.finder.step(d)

    # ================================================================ views, help, theme, close

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(what, keys) for the Help > Keyboard Shortcuts list."""
        return actions.shortcut_rows(self)

    def show_shortcuts(self):
        actions.show_shortcuts(self)

    def show_about(self):
        actions.show_about(self)

    def zoom_views(self, what: str):
        """"fit", "fit_all" or "actual_size" in the left pane (and the right one follows, side by side)."""
        getattr(self.view, what)()
        if self.state.side_by_side:
            self.area.sync.now()

    def set_color_scheme(self, scheme=None):
        """Light or dark: follows the system's QStyleHints.colorSchemeChanged (None: the system's now)."""
        app = QtWidgets.QApplication.instance()
        dark = style.apply_scheme(app, scheme)
        self.theme = style.Theme(dark)
        for v in (self.view, self.rview):
            sc = v.scene()
            v.set_theme(self.theme)
            if sc.graph is not None and sc.layout is not None:
                g, lay, plan, other = sc.graph, sc.layout, sc.plan, sc.other_plan
                sc.set_graph(g, self.layouts.full or lay, plan)
                if plan is not None:
                    sc.set_plan(plan, other)   # collapses what ViewState.collapsed says
                v.refresh_labels()
            v.minimap.rebuild()
        self.overlays.apply()
        self._apply_theme_to_panels()

    def _apply_theme_to_panels(self):
        dark = self.theme.dark
        self.latency.set_theme(dark)
        self.recpanel.set_theme(dark)
        self.costpanel.set_theme(dark)

    def closeEvent(self, ev):  # noqa: N802
        self.settings.save_window(self)
        self.settings.sync()
        self.activity.close()
        self.layouts.cancel()
        super().closeEvent(ev)
