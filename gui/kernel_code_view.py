"""The Kernel code window (issue 30): what the compiler made of a fused group, drawn from the
KernelCodeModel (gui/kernel_code_controller.py fills it; this module only draws it and hands requests back).

Opened from a group (right-click it: "Show Kernel Code", or select it and View > Show Kernel Code, K;
while it is open, selecting another group or op shows that group's kernel), a window shows that group's
kernel: the schedule rule that made it, its vector width, the measured time and its share of the peak
(when a benchmark, the kernel report or the kernel-timing cache has one), and in tabs the loop nest, the
scheduled TIR (TVMScript), and the LLVM IR and assembly for the CPU, or the CUDA source for a GPU target
(built, not run: no GPU is needed). Side by side, it shows next to it the other strategy's kernels over
the same ops (a box picks one when there are several). Copy copies the tab shown; Export writes every
section of the kernels shown to a text file.

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
MAX_CHARS = 8 << 20       # a code view holds at most this much (LLVM IR of a huge kernel is cut)


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
    """The window: the target, one pane (two side by side), Copy, Export and Close. It draws `code` (a
    KernelCodeModel) and hands the target box and closing to `controller` (a KernelCodeController)."""

    def __init__(self, code, controller, parent=None):
        super().__init__(parent)
        self.code, self.controller = code, controller
        self.setWindowTitle(code.title)
        self.setObjectName("kernel_code_dialog")
        lay = QtWidgets.QVBoxLayout(self)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(plain.label("Target"))
        self.target_box = QtWidgets.QComboBox()
        for spec, title in TARGETS:
            self.target_box.addItem(title, spec)
        self.target_box.activated.connect(lambda i: controller.set_target(self.target_box.itemData(i)))
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
        self.finished.connect(lambda _: controller.closed())
        ev = code.events
        ev.title.connect(lambda e: self.setWindowTitle(e.value))
        ev.state.connect(lambda e: plain.plain_label(self.state_label, e.value))
        ev.target.connect(lambda e: self.set_target(e.value))
        ev.left.connect(lambda e: self._side(self.left, e.value))
        ev.right.connect(lambda e: self._show_right(e.value))
        ev.open.connect(lambda e: self._open(e.value))
        ev.raised.connect(lambda e: self.raise_())
        self.set_target(code.target)
        plain.plain_label(self.state_label, code.state)
        self._side(self.left, code.left)
        self._show_right(code.right)

    def closeEvent(self, ev):  # noqa: N802 - Close, Escape and the title bar's close: no longer followed
        self.controller.closed()
        super().closeEvent(ev)

    def _open(self, on: bool):
        if on and not self.isVisible():
            self.show()
        elif not on and self.isVisible():
            self.hide()

    @staticmethod
    def _side(pane, side):
        if side is None:
            pane.set_codes("", [], [])
        else:
            pane.set_codes(side.heading, list(side.codes), list(side.titles))

    def _show_right(self, side):
        if side is None:
            self.right.hide()
            self.right.codes = []
            return
        self._side(self.right, side)
        if not self.right.isVisible():
            self.right.show()
            half = max(1, self.split.width() // 2)
            self.split.setSizes([half, half])   # the two strategies' kernels side by side, equally wide

    def set_target(self, spec: str):
        i = self.target_box.findData(spec)
        if i < 0:
            self.target_box.addItem(spec, spec)
            i = self.target_box.count() - 1
        self.target_box.setCurrentIndex(i)

    def target(self) -> str:
        return self.target_box.currentData()

    def set_state(self, text: str):
        self.code.state = text

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




# ---- wiring: a pane's context menu, the window made when first opened ---------------------------------

def context_menu(view, pane: str, pos, controller) -> QtWidgets.QMenu:
    """A pane's context menu at `pos`: "Show Kernel Code" of the group under the cursor (disabled where
    none is)."""
    target = controller.group_of(pane, view.hit(pos))
    menu = QtWidgets.QMenu(view)
    a = menu.addAction("Show Kernel Code")
    a.setEnabled(target is not None)
    if target is not None:
        a.triggered.connect(lambda: controller.show(*target, pane=pane))
    menu.popup(view.viewport().mapToGlobal(pos))
    return menu


def attach(window, area, controller):
    """Give the panes of `area` the context menu, and make `window.kernel_code_dialog` (a
    KernelCodeDialog drawing controller.code) the first time the model opens; `window.kernel_code_menu`
    keeps the last menu alive while it is open."""
    window.kernel_code_dialog = None
    window.kernel_code_menu = None

    def menu(v, pane, pos):
        window.kernel_code_menu = context_menu(v, pane, pos, controller)

    for pane, v in (("left", area.left), ("right", area.right)):
        v.setContextMenuPolicy(QtCore.Qt.CustomContextMenu)
        v.customContextMenuRequested.connect(lambda pos, v=v, pane=pane: menu(v, pane, pos))

    def opened(ev):
        if ev.value and window.kernel_code_dialog is None:
            dlg = window.kernel_code_dialog = KernelCodeDialog(controller.code, controller, window)
            dlg.show()
            dlg.raise_()

    controller.code.events.open.connect(opened)
