"""The window's commands: its actions and their shortcuts, the toolbar, the menus, and the help
(shortcut list, About), built onto the window by the functions here when it is created: the window is the place the actions,
boxes and menus are added to. Each action calls one of the window's controllers (files, strategies,
selection, bench, ...) or sets one of its models (Workspace, ViewState); nothing here holds state of its own."""
from __future__ import annotations

import functools

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout.dot import dot_path

from . import plain
from .dialogs import ShortcutsDialog

def _tips() -> dict[str, str]:
    """Each strategy's one line from the planner's table (engine/planner/registry.py), and custom's."""
    from engine.planner.registry import TABLE

    return {**{n: s.about for n, s in TABLE.items()}, "custom": "an imported plan"}


STRATEGY_TIPS = _tips()

COSTS = ("roofline", "learned", "measured")          # Workspace.COSTS, in the Cost box's order
COST_LABELS = {"roofline": "roofline estimate", "learned": "learned estimate", "measured": "measured on device"}
COST_TIPS = {
    "roofline": "The profile's roofline: launch overhead plus max(compute, memory) time per kernel",
    "learned": "The learned cost model's prediction of each kernel's time on the selected device "
               "(the roofline where no learned model serves that device and profile)",
    "measured": "The learned model, with the kernels whose choice is close timed on the selected device "
                "(slow the first time, cached after)",
}


def all_strategies() -> list[str]:
    """The planner's strategies and 'custom' (an imported plan)."""
    from engine.planner import STRATEGIES

    return list(STRATEGIES) + ["custom"]


def _act(win, text, slot, shortcut=None, checkable=False, tip=None):
    a = QtGui.QAction(text, win)
    if shortcut:
        if isinstance(shortcut, (list, tuple)):
            a.setShortcuts([QtGui.QKeySequence(s) for s in shortcut])
        else:
            a.setShortcut(QtGui.QKeySequence(shortcut))
    a.setCheckable(checkable)
    if tip:
        a.setStatusTip(tip)
        a.setToolTip(plain.tooltip(tip))
    a.triggered.connect(slot)
    win.addAction(a)  # shortcuts work without the menu being open
    return a

def build_actions(win):
    """The window's actions (a_*), each calling a controller of the window or setting one of its models."""
    A = functools.partial(_act, win)
    win.a_open = A("&Open...", lambda: win.files.open_dialog(), QtGui.QKeySequence.Open,
                    tip="Open an ONNX model")
    win.a_shapes = A("Set &Input Shapes...", lambda: win.files.ask_shapes_again())
    win.a_import = A("&Import Plan...", lambda: win.files.import_plan(), "Ctrl+I",
                      tip="Load a plan JSON and show it as the 'custom' strategy")
    win.a_import_ort = A("Import ONNX &Runtime Profile...", lambda: win.ort_heat.import_dialog(),
                          tip="Colour groups by an ONNX Runtime profile (SessionOptions.enable_profiling JSON) "
                              "beside FuseLens's own heat overlay (View > Heat Source)")
    win.a_export_plan = A("Export &Plan as JSON...", lambda: win.files.export_plan(), "Ctrl+E")
    win.a_export_svg = A("Export Graph as &SVG...", lambda: win.files.export_graph(fmt="svg"))
    win.a_export_png = A("Export Graph as P&NG...", lambda: win.files.export_graph(fmt="png"))
    win.a_export_csv = A("Export &Results as CSV...", lambda: win.files.export_csv())
    win.a_quit = A("&Quit", win.close, QtGui.QKeySequence.Quit)
    win.a_fit = A("&Fit to Window", lambda: win.zoom_views("fit"), ["F", "Space"])
    win.a_fit_all = A("Whole &Graph", lambda: win.zoom_views("fit_all"), "Shift+F")
    win.a_actual = A("&Actual Size", lambda: win.zoom_views("actual_size"), "Ctrl+0")
    win.a_zoom_in = A("Zoom &In", lambda: win.area.left.zoom(1.25), [QtGui.QKeySequence.ZoomIn, "Ctrl+="])
    win.a_zoom_out = A("Zoom &Out", lambda: win.area.left.zoom(0.8), QtGui.QKeySequence.ZoomOut)
    win.a_side = A("&Side by Side", lambda on: win.strategies.set_side_by_side(on), "Ctrl+D", checkable=True,
                    tip="Compare two strategies in split panes with synchronised pan and zoom")
    win.a_heat = A("&Heat Overlay", lambda on: setattr(win.state, "heat", on), "H", checkable=True,
                    tip="Colour groups by measured kernel time (or estimated cost)")
    win.a_log = A("&Log Scale", lambda on: setattr(win.state, "heat_log", on), "L", checkable=True)
    win.a_log.setChecked(win.state.heat_log)
    win.a_minimap = A("&Minimap", lambda on: win.overlays.set_minimap(on), "M", checkable=True)
    win.a_minimap.setChecked(win.settings.minimap)
    win.a_kernel_code = A("Show &Kernel Code", lambda: win.kernel_code.show_selected(), "K",
                           tip="The selected group's kernel: the schedule rule, vector width, loop nest, TIR, LLVM IR "
                               "and assembly (or CUDA source), and its measured time (also: right-click a group)")
    win.a_heat_source = {}
    for src, title in (("fuselens", "FuseLens (measured or estimated)"), ("ort", "ONNX Runtime Profile")):
        win.a_heat_source[src] = A(title, lambda _=False, src=src: setattr(win.ort_heat, "source", src), checkable=True)
    win.a_heat_source["fuselens"].setChecked(True)
    win.a_heat_source["ort"].setEnabled(False)   # until a profile is imported
    win.a_collapse = A("&Collapse Group", lambda: win.selection.collapse_selected(), "C")
    win.a_expand = A("&Expand Group", lambda: win.selection.expand_selected(), "E")
    win.a_collapse_all = A("Collapse &All Groups", lambda: win.selection.collapse_all(), "Ctrl+Shift+C")
    win.a_expand_all = A("E&xpand All Groups", lambda: win.selection.expand_all(), "Ctrl+Shift+E")
    win.a_find = A("&Find...", lambda: win.finder.focus(), QtGui.QKeySequence.Find)
    win.a_find_next = A("Find &Next", lambda: win.finder.step(+1), [QtGui.QKeySequence.FindNext, "F3"])
    win.a_find_prev = A("Find &Previous", lambda: win.finder.step(-1), [QtGui.QKeySequence.FindPrevious,
                                                                      "Shift+F3"])
    win.a_diff_next = A("Next &Difference", lambda: win.differences.step(+1), "N",
                         tip="Side by side: select and centre the next group only one plan has")
    win.a_diff_prev = A("Previous Di&fference", lambda: win.differences.step(-1), "Shift+N",
                         tip="Side by side: select and centre the previous group only one plan has")
    win.a_bench = A("&Benchmark", lambda: win.bench.benchmark(), "Ctrl+B",
                     tip="Build and time the shown strategies on the selected device")
    win.a_bench_all = A("Benchmark &All Strategies", lambda: win.bench.benchmark(all_strategies=True), "Ctrl+Shift+B")
    win.a_kernel_report = A("Measure Kernels vs &ONNX Runtime", lambda: win.kernel_report.measure(),
                            tip="Time every kernel of the shown plan beside ONNX Runtime's per-node profile: "
                                "FLOP/s and bytes/s as shares of the profile's peaks, the bound, ORT's time "
                                "(Properties, Kernels)")
    win.a_tune = A("&Tune Kernels...", lambda: win.tuning.tune(), "Ctrl+T",
                    tip="Tune the shown strategy's kernels with MetaSchedule on the selected device "
                        "(a budget of trials or minutes); the next Benchmark uses what it finds")
    win.a_tune.setIconText("Tune...")
    win.a_time_kernels = A("Time &Kernels (Cost Model)", lambda: win.fidelity.time_kernels(),
                            tip="Build and time every kernel of the shown plan on the selected device and plot the "
                                "cost model's estimate of each against its time (the Cost Model panel)")
    win.a_cancel = A("&Cancel", lambda: win.activity.cancel(), "Esc")
    win.a_shortcuts = A("&Keyboard Shortcuts", lambda: show_shortcuts(win), QtGui.QKeySequence.HelpContents)
    win.a_about = A("&About FuseLens", lambda: show_about(win))
    win.a_strat = {}
    for k, s in enumerate(all_strategies()):
        win.a_strat[s] = A(f"Strategy: {s}", lambda _=False, s=s: win.strategies.set_strategy(s), f"Alt+{k + 1}",
                            tip=STRATEGY_TIPS.get(s))
    win.a_recent_keys = [A(f"Recent {i + 1}", lambda _=False, i=i: win.files.open_recent(i), f"Ctrl+{i + 1}")
                          for i in range(9)]

def build_toolbar(win):
    """The toolbar: strategy boxes, profile, device, cost, budget, Benchmark / Tune / Heat; then the find box
    (gui/find.py places it)."""
    tb = win.addToolBar("Main")
    tb.setObjectName("toolbar_main")
    tb.addAction(win.a_open)
    tb.addSeparator()
    tb.addWidget(QtWidgets.QLabel(" Strategy "))
    win.strategy_box = QtWidgets.QComboBox()
    win.strategy_box.setMinimumContentsLength(16)
    win.strategy_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
    win.strategy_box.setToolTip("Fusion strategy (Alt+1..6)")
    tb.addWidget(win.strategy_box)
    tb.addAction(win.a_side)
    win.right_box = QtWidgets.QComboBox()
    win.right_box.setMinimumContentsLength(16)
    win.right_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
    win.right_box.setToolTip("Strategy in the right pane")
    win.right_box_action = tb.addWidget(win.right_box)
    win.right_box_action.setVisible(False)
    fill_strategy_boxes(win)
    win.strategy_box.activated.connect(lambda i: win.strategies.set_strategy(win.strategy_box.itemData(i)))
    win.right_box.activated.connect(lambda i: win.strategies.set_right_strategy(win.right_box.itemData(i)))
    tb.addSeparator()
    tb.addWidget(QtWidgets.QLabel(" Profile "))
    win.profile_box = QtWidgets.QComboBox()
    win.profile_box.setToolTip("Hardware profile for the cost model")
    from engine.devices import hardware

    for n in hardware.names():
        title = "This machine" if n == "host" else hardware.get(n).title
        win.profile_box.addItem(title, n)
    win.profile_box.setCurrentIndex(max(0, win.profile_box.findData(win.model.profile)))
    win.profile_box.activated.connect(lambda i: win.model.set_profile(win.profile_box.itemData(i)))
    tb.addWidget(win.profile_box)
    tb.addWidget(QtWidgets.QLabel(" Device "))
    win.device_box = QtWidgets.QComboBox()
    win.device_box.setToolTip("Where Benchmark builds and runs (CPU, CUDA GPUs, configured RPC devices)")
    win.device_box.addItem("cpu", "cpu")
    # an RPC device's name is long: show enough of it to tell devices apart (the tooltip has the rest)
    win.device_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToContents)
    win.device_box.setMinimumContentsLength(12)
    win.device_box.activated.connect(lambda i: win.bench.choose_device(win.device_box.itemData(i)))
    tb.addWidget(win.device_box)
    tb.addWidget(QtWidgets.QLabel(" Cost "))
    win.cost_box = QtWidgets.QComboBox()
    win.cost_box.setToolTip("What every strategy is priced by, and dp, hybrid and optimal decide by: the "
                             "profile's roofline, the learned model's estimate of the selected device's kernel "
                             "times (the roofline where no learned model serves that device and profile), or the "
                             "learned model with the close calls measured on the selected device (built and "
                             "timed once per model, cached)")
    for cost in COSTS:
        win.cost_box.addItem(COST_LABELS[cost], cost)
        win.cost_box.setItemData(win.cost_box.count() - 1, plain.tooltip(COST_TIPS[cost]), QtCore.Qt.ToolTipRole)
    win.cost_box.setCurrentIndex(max(0, win.cost_box.findData(win.model.cost)))
    win.cost_box.activated.connect(lambda i: win.model.set_cost(win.cost_box.itemData(i)))
    tb.addWidget(win.cost_box)
    tb.addWidget(QtWidgets.QLabel(" Budget "))
    win.budget = QtWidgets.QSpinBox()
    win.budget.setRange(0, 500)
    win.budget.setSuffix(" %")
    win.budget.setValue(int(win.model.budget))
    win.budget.setToolTip("Extra compile time you allow over greedy (for the recommendation)")
    win.budget.valueChanged.connect(lambda v: win.model.set_budget(float(v)))
    tb.addWidget(win.budget)
    tb.addSeparator()
    tb.addAction(win.a_bench)
    tb.addAction(win.a_tune)
    tb.addAction(win.a_heat)
    win.finder.build(win)  # the find box: at the menu bar's right end, never in the toolbar's overflow

def fill_strategy_boxes(win):
    """The strategy boxes: every strategy of the open Document, marked while planning or failed."""
    doc, st = win.model.doc, win.state
    strategies = doc.strategies() if doc else list(all_strategies()[:-1])
    for box, cur in ((win.strategy_box, st.strategy), (win.right_box, st.right_strategy)):
        box.blockSignals(True)
        box.clear()
        for s in strategies:
            ready = doc is None or s in doc.plans
            err = doc is not None and s in doc.plan_errors
            label = s if ready else (f"{s} (failed)" if err else f"{s} (planning...)")
            box.addItem(label, s)
            box.setItemData(box.count() - 1, plain.tooltip(STRATEGY_TIPS.get(s, "")), QtCore.Qt.ToolTipRole)
        i = box.findData(cur)
        box.setCurrentIndex(max(0, i))
        box.blockSignals(False)

def build_menus(win):
    """The menu bar (File, View, Strategy, Run, Help)."""
    mb = win.menuBar()
    m = mb.addMenu("&File")
    m.addAction(win.a_open)
    win.recent_menu = m.addMenu("Open &Recent")
    win.files.recent_in(win.recent_menu)
    sample = m.addMenu("Open &Sample")
    from engine.model import zoo

    for name, e in zoo.MODELS.items():
        a = sample.addAction(f"{e.title} ({e.default_resolution} px)")
        a.triggered.connect(lambda _=False, n=name: win.files.open_model(f"zoo:{n}"))
    sample.addSeparator()
    small = sample.addMenu("Small inputs (quick)")
    for name, e in zoo.MODELS.items():
        a = small.addAction(f"{e.title} (64 px)")
        a.triggered.connect(lambda _=False, n=name: win.files.open_model(f"zoo:{n}@64"))
    m.addAction(win.a_shapes)
    m.addSeparator()
    m.addAction(win.a_import)
    m.addAction(win.a_import_ort)
    ex = m.addMenu("&Export")
    for a in (win.a_export_plan, win.a_export_svg, win.a_export_png, win.a_export_csv):
        ex.addAction(a)
    m.addSeparator()
    m.addAction(win.a_quit)
    v = mb.addMenu("&View")
    for a in (win.a_fit, win.a_fit_all, win.a_actual, win.a_zoom_in, win.a_zoom_out):
        v.addAction(a)
    v.addSeparator()
    for a in (win.a_find, win.a_find_next, win.a_find_prev):
        v.addAction(a)
    v.addSeparator()
    for a in (win.a_collapse, win.a_expand, win.a_collapse_all, win.a_expand_all, win.a_kernel_code):
        v.addAction(a)
    v.addSeparator()
    for a in (win.a_side, win.a_diff_next, win.a_diff_prev, win.a_heat, win.a_log, win.a_minimap):
        v.addAction(a)
    hs = v.addMenu("Heat &Source")
    win.heat_source_group = QtGui.QActionGroup(win)
    for a in win.a_heat_source.values():
        win.heat_source_group.addAction(a)
        hs.addAction(a)
    v.addSeparator()
    for d in (win.dock_props, win.dock_diff, win.dock_latency, win.dock_rec, win.dock_cost):
        v.addAction(d.toggleViewAction())
    s = mb.addMenu("&Strategy")
    win.strategy_group = QtGui.QActionGroup(win)
    for st, a in win.a_strat.items():
        a.setCheckable(True)
        win.strategy_group.addAction(a)
        s.addAction(a)
    win.a_strat.get(win.state.strategy, win.a_strat["greedy"]).setChecked(True)
    r = mb.addMenu("&Run")
    for a in (win.a_bench, win.a_bench_all, win.a_kernel_report, win.a_tune, win.a_time_kernels, win.a_cancel):
        r.addAction(a)
    h = mb.addMenu("&Help")
    h.addAction(win.a_shortcuts)
    h.addAction(win.a_about)

def check_heat_source(win):
    """View > Heat Source follows the source in use (an ORT profile only while one is imported)."""
    src = win.ort_heat.source
    for k, a in win.a_heat_source.items():
        a.setChecked(k == src)
    win.a_heat_source["ort"].setEnabled(win.ort_heat.profile is not None)

def shortcut_rows(win) -> list[tuple[str, str]]:
    """(what, keys) for every action with a shortcut, and the mouse gestures."""
    rows = []
    for a in win.actions():
        seqs = [s.toString(QtGui.QKeySequence.NativeText) for s in a.shortcuts() if not s.isEmpty()]
        if seqs and not a.text().startswith("Recent "):
            rows.append((a.text().replace("&", "").rstrip("."), ", ".join(seqs)))
    rows += [("Open recent file 1..9", "Ctrl+1 .. Ctrl+9"), ("Zoom", "mouse wheel"), ("Pan", "drag"),
             ("Properties", "click an operator, group box or edge"),
             ("Collapse / expand a group", "double-click it")]
    return rows

def show_shortcuts(win):
    win.shortcuts_dialog = ShortcutsDialog(shortcut_rows(win), win)
    win.shortcuts_dialog.show()

def show_about(win):
    QtWidgets.QMessageBox.about(win, "About FuseLens",
                                plain.rich("<b>FuseLens</b><br>Compare operator-fusion strategies in Apache TVM: "
                                           "see the fused groups, why edges were not fused, and what each plan "
                                           "costs.<br>Graph layout: {how}",
                                           how='graphviz dot' if dot_path() else 'built-in (dot not found)'))
