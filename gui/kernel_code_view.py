"""The Kernel code view (issue 30): what the compiler made of a fused group.

Opened from a group (right-click it: "Show Kernel Code", or select it and View > Show Kernel Code, K;
while it is open, selecting another group or op shows that group's kernel), a window shows that group's kernel: the schedule rule that made it, its vector width, the measured time
and its share of the peak (when a benchmark, the kernel report or the kernel-timing cache has one), and
in tabs the loop nest, the scheduled TIR (TVMScript), and the LLVM IR and assembly for the CPU, or the
CUDA source for a GPU target (built, not run: no GPU is needed). Side by side, it shows next to it the
other strategy's kernels over the same ops (a box picks one when there are several). Copy copies the
tab shown; Export writes every section of the kernels shown to a text file.

The code is built by engine/jobs/kernel_code.py in a child process (TVM's FuseTIR, the schedule rules
and LLVM's or NVRTC's code generation), started off the UI thread through the window's Activity (task
"kernel_code", Cancel stops it); the measured figures are looked up on that thread too (no Qt there).
Every text shown is data from the model (op and node names): labels take it through gui/plain.py, and
the code views are QPlainTextEdit, which never reads markup.
"""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from . import plain

TARGETS = (("cpu", "CPU (this machine): LLVM IR, assembly"),
           ("cuda:sm_75", "CUDA sm_75 (built, not run)"),
           ("cuda:sm_80", "CUDA sm_80 (built, not run)"))
TABS = (("loops", "Loop nest"), ("tir", "TIR"), ("llvm", "LLVM IR"), ("asm", "Assembly"), ("cuda", "CUDA"))
MAX_OTHERS = 6            # side by side: at most this many of the other plan's kernels are built
MAX_CHARS = 8 << 20       # a code view holds at most this much (LLVM IR of a huge kernel is cut)
FOLLOW_MS = 400           # the window follows the selection this long after the last click


def _launches(graph, group) -> bool:   # engine.report.kernel_code.launches, imported when used
    from engine.report.kernel_code import launches

    return launches(graph, group)


# ---- the worker (no Qt) ------------------------------------------------------------------------------

def build_codes(spec, shapes, block, sha, requests, target, lookups, progress=None, cancel=None) -> list:
    """Worker: the KernelCode (or an error line) of each request, built in a child process
    (engine/jobs/kernel_code.py), each with its measured time where `lookups` has the figures to look
    in: {"graph", "plan", "setup", "bench", "figure"} per request (None: not measured; "setup": the
    device's Setup, Workspace.setup_of). `target`: the Target the code is built for."""
    from engine.jobs.kernel_code import kernel_code
    from engine.report.kernel_code import measured

    codes = kernel_code(spec, shapes, block, sha, requests, target, progress=progress, cancel=cancel)
    for kc, req, lk in zip(codes, requests, lookups):
        if isinstance(kc, str) or lk is None:
            continue
        try:
            kc.measured = measured(lk["graph"], lk["plan"], req["group"], lk["setup"],
                                   bench=lk.get("bench"), figure=lk.get("figure"))
        except Exception:  # noqa: BLE001 - a figure that cannot be read is no figure
            kc.measured = None
    return codes


# ---- the views ---------------------------------------------------------------------------------------

def _mono() -> QtGui.QFont:
    return QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.FixedFont)


class KernelPane(QtWidgets.QWidget):
    """One side: a strategy's kernel(s) for the group, its facts and its code in tabs."""

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.heading = plain.label("")
        f = self.heading.font()
        f.setBold(True)
        self.heading.setFont(f)
        self.heading.setWordWrap(True)
        lay.addWidget(self.heading)
        self.picker = QtWidgets.QComboBox()
        self.picker.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.picker.setMinimumContentsLength(30)
        self.picker.currentIndexChanged.connect(self._picked)
        self.picker.hide()
        lay.addWidget(self.picker)
        form = QtWidgets.QFormLayout()
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.AllNonFixedFieldsGrow)
        self.facts = {}
        for key, title in (("ops", "Ops"), ("rule", "Schedule rule"), ("vector", "Vector width"),
                           ("measured", "Measured"), ("target", "Built for"), ("func", "PrimFunc")):
            w = plain.label("")
            w.setWordWrap(True)
            w.setTextInteractionFlags(QtCore.Qt.TextSelectableByMouse)
            w.setSizePolicy(QtWidgets.QSizePolicy.Ignored, QtWidgets.QSizePolicy.Preferred)   # never widens the pane
            self.facts[key] = w
            form.addRow(title, w)
        lay.addLayout(form)
        self.tabs = QtWidgets.QTabWidget()
        self.views = {}
        for key, title in TABS:
            v = QtWidgets.QPlainTextEdit()
            v.setReadOnly(True)
            v.setLineWrapMode(QtWidgets.QPlainTextEdit.NoWrap)
            v.setFont(_mono())
            self.views[key] = v
            self.tabs.addTab(v, title)
        self.tabs.setCurrentIndex(1)   # the TIR
        lay.addWidget(self.tabs, 1)
        self.codes: list = []
        self.titles: list[str] = []

    def set_codes(self, heading: str, codes: list, titles: list[str]):
        """Show `codes` (KernelCode, or an error line), the picker listing `titles` when there are several."""
        plain.plain_label(self.heading, heading)
        self.codes, self.titles = list(codes), list(titles)
        self.picker.blockSignals(True)
        self.picker.clear()
        for t in titles:
            self.picker.addItem(t)
        self.picker.blockSignals(False)
        self.picker.setVisible(len(codes) > 1)
        self._picked(0)

    def _picked(self, i: int):
        kc = self.codes[i] if 0 <= i < len(self.codes) else None
        if kc is None or isinstance(kc, str):
            for k, w in self.facts.items():
                plain.plain_label(w, (kc or "") if k == "rule" else "")
            for v in self.views.values():
                v.setPlainText("")
            return
        plain.plain_label(self.facts["ops"], f"{kc.name} ({kc.kind or 'single'}): {' + '.join(kc.op_words)}")
        plain.plain_label(self.facts["rule"], (kc.rule or "none") + (f" ({kc.rule_note})" if kc.rule_note else ""))
        plain.plain_label(self.facts["vector"], kc.vector_text())
        plain.plain_label(self.facts["measured"], kc.measured_text())
        plain.plain_label(self.facts["target"], f"{kc.target_text}" + ("; built, not run" if kc.is_gpu else "")
                          + (f"; build error: {kc.error}" if kc.error else ""))
        # a function's name is one long word: shown whole up to the pane's width, all of it in the tooltip
        plain.plain_label(self.facts["func"], kc.func if len(kc.func) <= 64 else kc.func[:61] + "...")
        self.facts["func"].setToolTip(plain.tooltip(kc.func))
        for key, v in self.views.items():
            text = kc.section(key)
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS] + f"\n... cut at {MAX_CHARS} characters (Export writes it all)"
            v.setPlainText(text)
        have = set(kc.available())
        for k, (key, _) in enumerate(TABS):
            self.tabs.setTabVisible(k, key in have)
        if not self.tabs.isTabVisible(self.tabs.currentIndex()):
            self.tabs.setCurrentIndex(1)

    @property
    def code(self):
        i = self.picker.currentIndex() if len(self.codes) > 1 else 0
        kc = self.codes[i] if 0 <= i < len(self.codes) else None
        return None if isinstance(kc, str) else kc

    def current_section(self) -> str:
        return TABS[self.tabs.currentIndex()][0]

    def current_text(self) -> str:
        kc = self.code
        return kc.section(self.current_section()) if kc is not None else ""

    def all_text(self) -> str:
        """Every section of every kernel of this side."""
        out = []
        for kc in self.codes:
            if isinstance(kc, str):
                out.append(f"(not built: {kc})\n")
            else:
                out.append(kc.text(kc.available()))
        return "\n".join(out)


class KernelCodeDialog(QtWidgets.QDialog):
    """The window: the target, one pane (two side by side), Copy, Export and Close."""

    target_changed = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Kernel Code")
        self.setObjectName("kernel_code_dialog")
        lay = QtWidgets.QVBoxLayout(self)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(plain.label("Target"))
        self.target_box = QtWidgets.QComboBox()
        for spec, title in TARGETS:
            self.target_box.addItem(title, spec)
        self.target_box.activated.connect(lambda i: self.target_changed.emit(self.target_box.itemData(i)))
        top.addWidget(self.target_box)
        top.addStretch(1)
        self.state_label = plain.label("")
        top.addWidget(self.state_label)
        lay.addLayout(top)
        self.split = QtWidgets.QSplitter(QtCore.Qt.Horizontal)
        self.left, self.right = KernelPane(), KernelPane()
        self.split.addWidget(self.left)
        self.split.addWidget(self.right)
        self.right.hide()
        lay.addWidget(self.split, 1)
        bottom = QtWidgets.QHBoxLayout()
        self.copy_button = QtWidgets.QPushButton("Copy")
        self.copy_button.setToolTip("Copy the tab shown (the left kernel's)")
        self.copy_button.clicked.connect(self.copy)
        self.export_button = QtWidgets.QPushButton("Export...")
        self.export_button.setToolTip("Write every section of the kernels shown to a text file")
        self.export_button.clicked.connect(lambda: self.export())
        close = QtWidgets.QPushButton("Close")
        close.clicked.connect(self.close)
        bottom.addWidget(self.copy_button)
        bottom.addWidget(self.export_button)
        bottom.addStretch(1)
        bottom.addWidget(close)
        lay.addLayout(bottom)
        self.resize(1200, 760)

    def set_target(self, spec: str):
        i = self.target_box.findData(spec)
        if i < 0:
            self.target_box.addItem(spec, spec)
            i = self.target_box.count() - 1
        self.target_box.setCurrentIndex(i)

    def target(self) -> str:
        return self.target_box.currentData()

    def set_state(self, text: str):
        plain.plain_label(self.state_label, text)

    def copy(self) -> str:
        pane = self.right if self.right.isVisible() and self.right.hasFocus() else self.left
        text = pane.current_text()
        QtWidgets.QApplication.clipboard().setText(text)
        return text

    def text(self) -> str:
        parts = [self.left.all_text()]
        if self.right.isVisible() and self.right.codes:
            parts += ["", "#" * 100, "# side by side: the other strategy's kernels over the same ops", "#" * 100, "",
                      self.right.all_text()]
        return "\n".join(parts)

    def export(self, path=None) -> str | None:
        """Write `text()` to `path` (without one: ask for it); the path written, or None."""
        if path is None:
            kc = self.left.code
            name = f"{kc.func or 'kernel'}.txt" if kc is not None else "kernel.txt"
            path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export kernel code", name,
                                                            "Text (*.txt);;All files (*)")
            if not path:
                return None
        from engine.util import outpath
        from engine.util.errors import FuseLensError

        try:
            outpath.check_file(path, "export file")
            outpath.write(path, self.text())
        except (FuseLensError, OSError) as e:
            self.set_state(f"Export failed: {e}")
            return None
        self.set_state(f"Wrote {path}")
        return str(path)


# ---- the controller ----------------------------------------------------------------------------------

class KernelCodeController:
    """Opens the Kernel code view for a group: from a pane's context menu, or for the selection (the
    window's "Show Kernel Code"). Given the models (the Workspace, the ViewState), the GraphArea (its
    panes get the context menu), the KernelReports store (measured figures), the Activity it runs
    through, the dialog's parent and where messages go."""

    def __init__(self, app, area, kernel_reports, activity, parent):
        model, state = app.workspace, app.view
        self.model, self.state, self.area, self.reports = model, state, area, kernel_reports
        self.activity, self.parent, self.status, self.show_error = activity, parent, app.messages.show, app.messages.fail
        self.dialog: KernelCodeDialog | None = None
        self.shown: tuple | None = None      # (strategy, group index) shown
        self.codes: list = []                # the last answer: [KernelCode | str]
        for pane, v in (("left", area.left), ("right", area.right)):
            v.setContextMenuPolicy(QtCore.Qt.CustomContextMenu)
            v.customContextMenuRequested.connect(lambda pos, v=v, pane=pane: self._context_menu(v, pane, pos))
        model.events.document.connect(lambda ev: self._closed_document())
        # while the window is open, selecting another group shows that one (after a pause: clicks in a row
        # build only the last)
        self._follow = QtCore.QTimer()
        self._follow.setSingleShot(True)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self._follow_selection)
        state.events.selection.connect(lambda ev: self._follow.start() if self.dialog is not None
                                       and self.dialog.isVisible() else None)

    # -- which group --
    def _strategy_of(self, pane: str) -> str:
        return self.state.right_strategy if pane == "right" else self.state.strategy

    def group_of(self, pane: str, item) -> tuple[str, int] | None:
        """(strategy, group index) of a pane's item ("group", gi) | ("collapsed", gi) | ("node", id)."""
        doc = self.model.doc
        if doc is None or not item:
            return None
        s = self._strategy_of(pane)
        plan = doc.plans.get(s)
        if plan is None:
            return None
        kind, val = item
        if kind in ("group", "collapsed") and isinstance(val, int) and 0 <= val < len(plan.groups):
            return s, val
        if kind == "node":
            gi = plan.group_of().get(val)
            return (s, gi) if gi is not None else None
        return None

    def _context_menu(self, view, pane: str, pos):
        target = self.group_of(pane, view.hit(pos))
        menu = QtWidgets.QMenu(view)
        a = menu.addAction("Show Kernel Code")
        a.setEnabled(target is not None)
        if target is not None:
            a.triggered.connect(lambda: self.show(*target, pane=pane))
        menu.popup(view.viewport().mapToGlobal(pos))
        self._menu = menu   # kept alive while it is open (and for tests)

    def _follow_selection(self):
        if self.dialog is None or not self.dialog.isVisible():
            return
        sel = self.state.selection
        hit = self.group_of(sel.pane, sel.shown)
        if hit is not None and hit != self.shown and self.model.doc is not None \
                and _launches(self.model.doc.graph, self.model.doc.plans[hit[0]].groups[hit[1]]):
            self.show(*hit, pane=sel.pane)

    def show_selected(self):
        """The window's action: the selected group (or the group of the selected op)."""
        sel = self.state.selection
        hit = self.group_of(sel.pane, sel.shown)
        if hit is None:
            self.show_error("select a group or an operator first (or right-click one)", "Kernel code")
            return
        self.show(*hit, pane=sel.pane)

    # -- building --
    def _default_target(self) -> str:
        try:
            t = self.model.setup.target
        except Exception:  # noqa: BLE001 - a device the engine cannot resolve: the CPU
            return "cpu"
        return t.build_for if t.is_gpu and ":sm_" in t.build_for else "cuda:sm_75" if t.is_gpu else \
            t.build_for if t.build_for != "cpu" else "cpu"

    def ensure_dialog(self) -> KernelCodeDialog:
        if self.dialog is None:
            self.dialog = KernelCodeDialog(self.parent)
            self.dialog.set_target(self._default_target())
            self.dialog.target_changed.connect(lambda spec: self._rebuild())
        return self.dialog

    def _rebuild(self):
        if self.shown is not None:
            self.show(*self.shown)

    def show(self, strategy: str, gi: int, pane: str = "left", target: str | None = None):
        """Build and show the code of group `gi` of `strategy`'s plan (side by side, with the other
        strategy's kernels over the same ops) for `target` (default: the view's target box)."""
        from engine.report import kernel_code as K
        from engine.report.group_names import group_title

        doc = self.model.doc
        if doc is None or strategy not in doc.plans:
            self.show_error("open a model first" if doc is None else f"no {strategy} plan yet", "Kernel code")
            return
        if str(doc.spec).startswith("generated:"):
            self.show_error("a generated graph has no TVM module: there is no kernel code to show", "Kernel code")
            return
        plan = doc.plans[strategy]
        if not (0 <= gi < len(plan.groups)) or not K.launches(doc.graph, plan.groups[gi]):
            self.show_error(f"group {gi} of {strategy} launches no kernel", "Kernel code")
            return
        dlg = self.ensure_dialog()
        if target:
            dlg.set_target(target)
        target = dlg.target()
        self.shown = (strategy, gi)
        kinds = plan.group_kinds if len(plan.group_kinds) == len(plan.groups) else []

        def req(s, p, k):
            kd = p.group_kinds[k]["kind"] if len(p.group_kinds) == len(p.groups) else None
            return {"strategy": s, "groups": p.groups, "group": k, "kind": kd}

        requests = [req(strategy, plan, gi)]
        other_s = None
        if self.state.side_by_side:
            other_s = self.state.strategy if pane == "right" else self.state.right_strategy
            other = doc.plans.get(other_s)
            if other is not None and other_s != strategy:
                for k in K.overlapping(doc.graph, plan, other, gi)[:MAX_OTHERS]:
                    requests.append(req(other_s, other, k))
            else:
                other_s = None
        from engine.devices import targets
        from engine.util.errors import FuseLensError

        try:
            built_for = targets.parse(target)   # the window's target box: the words become a Target here
        except FuseLensError as e:
            self.show_error(str(e), "Kernel code")
            return
        device = self.model.device
        lookups = []
        try:
            setup = self.model.setup_of(doc)
        except Exception:  # noqa: BLE001 - a device the engine cannot resolve: no measured figures
            setup = None
        same_kind = setup is not None and setup.target.is_gpu == built_for.is_gpu
        for r in requests:
            p = doc.plans[r["strategy"]]
            rep = self.reports.get(doc, device, r["strategy"]) if self.reports is not None else None
            fig = rep.by_group().get(r["group"]) if rep is not None and not rep.error else None
            lookups.append({"graph": doc.graph, "plan": p, "setup": setup,
                            "bench": doc.result(device, r["strategy"]), "figure": fig} if same_kind else None)
        title = group_title(doc.graph, plan.groups[gi], kinds[gi]["kind"] if kinds else None)
        dlg.setWindowTitle(f"Kernel Code \u2014 {strategy} group {gi}: {title}")
        dlg.set_state(f"Building {len(requests)} kernel{'s' if len(requests) > 1 else ''} for {target}...")
        dlg.show()
        dlg.raise_()
        req_token = self.model.request("kernel_code")

        def done(codes):
            self.codes = codes
            self._fill(strategy, gi, other_s, requests, codes, target)

        def failed(msg):
            dlg.set_state(f"Failed: {msg.splitlines()[0][:300] if msg else ''}")
            self.show_error(msg, "Building the kernel code failed")

        self.activity.run("kernel_code", f"Building {strategy}'s kernel {gi} for {target}", build_codes, doc.spec,
                          doc.shapes, getattr(doc.graph, "block", None), doc.graph.sha256,
                          requests, built_for, lookups, request=req_token, on_done=done, on_failed=failed,
                          on_cancelled=lambda: dlg.set_state("Cancelled"))

    def _fill(self, strategy, gi, other_s, requests, codes, target):
        from engine.report.group_names import group_title

        dlg = self.ensure_dialog()
        doc = self.model.doc
        mine = codes[:1]
        dlg.left.set_codes(f"{strategy}: group {gi}", mine, [self._title(mine[0], doc, requests[0])])
        others = codes[1:]
        if other_s is not None and others:
            titles = [self._title(c, doc, r) for c, r in zip(others, requests[1:])]
            dlg.right.set_codes(f"{other_s}: {len(others)} kernel{'s' if len(others) > 1 else ''} over the same ops",
                                others, titles)
            if not dlg.right.isVisible():
                dlg.right.show()
                half = max(1, dlg.split.width() // 2)
                dlg.split.setSizes([half, half])   # the two strategies' kernels side by side, equally wide
        else:
            dlg.right.hide()
            dlg.right.codes = []
        kc = mine[0]
        if isinstance(kc, str):
            dlg.set_state(f"Not built: {kc}")
        else:
            dlg.set_state(f"Built for {target} in {kc.seconds:.1f} s" + ("; not run" if kc.is_gpu else ""))
        self.status(f"Kernel code of {strategy}'s group {gi}: {group_title(doc.graph, doc.plans[strategy].groups[gi])}"
                    if doc is not None and strategy in doc.plans and gi < len(doc.plans[strategy].groups) else
                    "Kernel code shown")

    @staticmethod
    def _title(kc, doc, r) -> str:
        if isinstance(kc, str):
            return f"group {r['group']}: not built"
        return f"group {kc.group}: {kc.name}"

    def _closed_document(self):
        self.shown, self.codes = None, []
        if self.dialog is not None:
            self.dialog.hide()

