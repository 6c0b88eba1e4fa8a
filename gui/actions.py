"""The window's commands: its actions and their shortcuts, the toolbar, the menus, and the help
(shortcut list, About), built onto the window by the functions here when it is created: the window is the place the actions,
boxes and menus are added to. Each action calls one of the window's controllers (files, strategies,
selection, bench, ...) or sets one of its models (Workspace, ViewState); nothing here holds state of its own."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout.dot import dot_path

from . import action_table, plain
from .action_table import all_strategies
from .dialogs import ShortcutsDialog
from .find_box import FindBox

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


def _key(k: str):
    return getattr(QtGui.QKeySequence.StandardKey, k[4:]) if k.startswith("std:") else k


def _make(win, row: action_table.Action) -> QtGui.QAction:
    a = QtGui.QAction(row.text, win)
    keys = [QtGui.QKeySequence(_key(k)) for k in row.shortcuts]
    if len(keys) == 1:
        a.setShortcut(keys[0])
    elif keys:
        a.setShortcuts(keys)
    a.setCheckable(row.checkable)
    if row.tip:
        a.setStatusTip(row.tip)
        a.setToolTip(plain.tooltip(row.tip))
    if row.icon_text:
        a.setIconText(row.icon_text)
    if row.checkable:
        a.triggered.connect(lambda on=False, h=row.handler: h(win, on))
    else:
        a.triggered.connect(lambda _=False, h=row.handler: h(win))
    win.addAction(a)  # shortcuts work without the menu being open
    return a


def build_actions(win):
    """The window's actions, built from gui/action_table.py into `win.acts` (name -> QAction)."""
    win.action_rows = action_table.table(all_strategies(), STRATEGY_TIPS)
    win.acts = {row.name: _make(win, row) for row in win.action_rows}
    refresh(win)


def refresh(win, prefix: str = ""):
    """Apply the table's enabled_when and checked_when to the actions whose names start with `prefix`."""
    for row in win.action_rows:
        if not row.name.startswith(prefix):
            continue
        a = win.acts[row.name]
        if row.enabled_when is not None:
            a.setEnabled(bool(row.enabled_when(win)))
        if row.checked_when is not None:
            a.setChecked(bool(row.checked_when(win)))


def acts(win, *names: str) -> list:
    """The actions `names` (a name ending in ":" stands for every action of that family, in order)."""
    out = []
    for n in names:
        out += [a for k, a in win.acts.items() if k.startswith(n)] if n.endswith(":") else [win.acts[n]]
    return out


def build_toolbar(win):
    """The toolbar: strategy boxes, profile, device, cost, budget, Benchmark / Tune / Heat; then the find box
    (gui/find.py places it)."""
    tb = win.addToolBar("Main")
    tb.setObjectName("toolbar_main")
    tb.addAction(win.acts["open"])
    tb.addSeparator()
    tb.addWidget(QtWidgets.QLabel(" Strategy "))
    win.strategy_box = QtWidgets.QComboBox()
    win.strategy_box.setMinimumContentsLength(16)
    win.strategy_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
    win.strategy_box.setToolTip("Fusion strategy (Alt+1..6)")
    tb.addWidget(win.strategy_box)
    tb.addAction(win.acts["side"])
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
    win.model.events.devices.connect(lambda ev: fill_device_box(win, ev.value))   # before Benchmarks picks one
    win.model.events.device.connect(lambda ev: win.device_box.setCurrentIndex(
        max(0, win.device_box.findData(ev.value))))
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
    for a in acts(win, "bench", "tune", "heat"):
        tb.addAction(a)
    win.find_box = FindBox(win, win.finder, win.app.find)   # at the menu bar's right end, never in the overflow

def fill_device_box(win, devices: list[dict]):
    """The Device box: the devices found, on the remembered one where it is there."""
    box = win.device_box
    box.clear()
    for d in devices:
        label = d["name"] + ("" if d.get("reachable", True) is not False else " (unreachable)")
        box.addItem(label, d["name"])
        box.setItemData(box.count() - 1, plain.tooltip(d.get("description", "")), QtCore.Qt.ToolTipRole)
    box.setCurrentIndex(max(0, box.findData(win.settings.device)))


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
    """The menu bar (File, View, Strategy, Run, Help): the table's actions placed by name."""
    mb = win.menuBar()
    m = mb.addMenu("&File")
    m.addAction(win.acts["open"])
    win.recent_menu = m.addMenu("Open &Recent")
    win.prompts.recent_in(win.recent_menu)
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
    m.addAction(win.acts["shapes"])
    m.addSeparator()
    m.addActions(acts(win, "import", "import_ort"))
    m.addMenu("&Export").addActions(acts(win, "export_plan", "export_svg", "export_png", "export_csv"))
    m.addSeparator()
    m.addAction(win.acts["quit"])
    v = mb.addMenu("&View")
    for i, names in enumerate((("fit", "fit_all", "actual", "zoom_in", "zoom_out"), ("find", "find_next", "find_prev"),
                               ("collapse", "expand", "collapse_all", "expand_all", "kernel_code"),
                               ("side", "diff_next", "diff_prev", "heat", "log", "minimap"))):
        if i:
            v.addSeparator()
        v.addActions(acts(win, *names))
    hs = v.addMenu("Heat &Source")
    win.heat_source_group = QtGui.QActionGroup(win)
    for a in acts(win, "heat_source:"):
        win.heat_source_group.addAction(a)
        hs.addAction(a)
    v.addSeparator()
    for d in (win.dock_props, win.dock_diff, win.dock_latency, win.dock_rec, win.dock_cost):
        v.addAction(d.toggleViewAction())
    s = mb.addMenu("&Strategy")
    win.strategy_group = QtGui.QActionGroup(win)
    for a in acts(win, "strategy:"):
        win.strategy_group.addAction(a)
        s.addAction(a)
    mb.addMenu("&Run").addActions(acts(win, "bench", "bench_all", "kernel_report", "tune", "time_kernels", "cancel"))
    mb.addMenu("&Help").addActions(acts(win, "shortcuts", "about"))


def check_heat_source(win):
    """View > Heat Source follows the source in use (an ORT profile only while one is imported)."""
    refresh(win, "heat_source:")


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
