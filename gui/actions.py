"""The window's commands: its actions and their shortcuts, the toolbar, the menus, and the help
(shortcut list, About). Each action calls a MainWindow method; nothing here holds state of its own."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .dialogs import ShortcutsDialog
from .layout_worker import dot_path

STRATEGY_TIPS = {"none": "every operator its own kernel (baseline)", "tvm": "TVM Relax FuseOps, read back",
                 "greedy": "our replay of TVM's FuseOps rules", "dp": "cost-model dynamic programming",
                 "hybrid": "DP on the critical path, greedy elsewhere",
                 "optimal": "a 0/1 program over the DP's candidate kernels (bounds the DP)", "custom": "an imported plan"}


def all_strategies() -> list[str]:
    """The planner's strategies and 'custom' (an imported plan)."""
    from engine.planner import STRATEGIES

    return list(STRATEGIES) + ["custom"]


class Actions:
    """MainWindow's actions, toolbar and menus."""

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
        self.a_diff_next = A("Next &Difference", lambda: self.diff_step(+1), "N",
                             tip="Side by side: select and centre the next group only one plan has")
        self.a_diff_prev = A("Previous Di&fference", lambda: self.diff_step(-1), "Shift+N",
                             tip="Side by side: select and centre the previous group only one plan has")
        self.a_bench = A("&Benchmark", lambda: self.benchmark(), "Ctrl+B",
                         tip="Build and time the shown strategies on the selected device")
        self.a_bench_all = A("Benchmark &All Strategies", lambda: self.benchmark(all_strategies=True), "Ctrl+Shift+B")
        self.a_tune = A("&Tune Kernels...", lambda: self.tune(), "Ctrl+T",
                        tip="Tune the shown strategy's kernels with MetaSchedule on the selected device "
                            "(a budget of trials or minutes); the next Benchmark uses what it finds")
        self.a_tune.setIconText("Tune...")
        self.a_cancel = A("&Cancel", lambda: self.cancel(), "Esc")
        self.a_shortcuts = A("&Keyboard Shortcuts", lambda: self.show_shortcuts(), QtGui.QKeySequence.HelpContents)
        self.a_about = A("&About FuseLens", lambda: self.show_about())
        self.a_strat = {}
        for k, s in enumerate(all_strategies()):
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
        # an RPC device's name is long: show enough of it to tell devices apart (the tooltip has the rest)
        self.device_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToContents)
        self.device_box.setMinimumContentsLength(12)
        self.device_box.activated.connect(lambda i: self._on_device(self.device_box.itemData(i)))
        tb.addWidget(self.device_box)
        tb.addWidget(QtWidgets.QLabel(" Cost "))
        self.cost_box = QtWidgets.QComboBox()
        self.cost_box.setToolTip("How dp, hybrid and optimal decide: by the cost model's estimate, or by kernel "
                                 "times measured on the selected device (built and timed once per model, cached)")
        self.cost_box.addItem("model estimate", "model")
        self.cost_box.addItem("measured on device", "measured")
        self.cost_box.setCurrentIndex(max(0, self.cost_box.findData(self.settings.cost)))
        self.cost_box.activated.connect(lambda i: self.set_cost(self.cost_box.itemData(i)))
        tb.addWidget(self.cost_box)
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
        tb.addAction(self.a_tune)
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
        strategies = self.doc.strategies() if self.doc else list(all_strategies()[:-1])
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
        for a in (self.a_side, self.a_diff_next, self.a_diff_prev, self.a_heat, self.a_log, self.a_minimap):
            v.addAction(a)
        v.addSeparator()
        for d in (self.dock_props, self.dock_diff, self.dock_latency, self.dock_rec):
            v.addAction(d.toggleViewAction())
        s = mb.addMenu("&Strategy")
        self.strategy_group = QtGui.QActionGroup(self)
        for st, a in self.a_strat.items():
            a.setCheckable(True)
            self.strategy_group.addAction(a)
            s.addAction(a)
        self.a_strat.get(self.strategy, self.a_strat["greedy"]).setChecked(True)
        r = mb.addMenu("&Run")
        for a in (self.a_bench, self.a_bench_all, self.a_tune, self.a_cancel):
            r.addAction(a)
        h = mb.addMenu("&Help")
        h.addAction(self.a_shortcuts)
        h.addAction(self.a_about)

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
