"""The Kernels panel: a row per kernel of the shown plan (engine/report/kernel_table.py: its name, ops, kind,
estimated and measured time, share of the total, and the linters' flags; then its efficiency: FLOP/s
and bytes/s as shares of the profile's peaks, the bound, ONNX Runtime's time for the same ONNX nodes
and ours / ORT's, from the kernel report (Run > Measure Kernels vs ONNX Runtime, gui/kernel_reports.py)
or, for the shares, from the benchmark's kernel times; the header says which), sortable by any column and
filtered by text or by "flagged only". It follows the models: the open Document's plans and results,
the device (workspace), the strategy shown and the selection (state). Clicking a row asks for its
group (`group_requested`); the window selects it in the ViewState, and the row follows the selection."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.report.kernel_table import LINTS, SLOW_FACTOR, kernel_rows

from .. import plain

# what a reader looks for first comes first: at 1400x900 the panel is a tab about 520 px wide, and the
# measured time must be in view without scrolling (the efficiency columns follow to the right)
COLUMNS = ("#", "kernel", "measured us", "share", "estimated us", "kind", "ops", "flags",
           "FLOP/s of peak", "bytes/s of BW", "bound", "ORT us", "ours/ORT")
_NUMERIC = {0, 2, 3, 4, 6, 8, 9, 11, 12}
NAME_COL, KIND_COL, FLAGS_COL = 1, 5, 7
NAME_WIDTH = 190          # the kernel name column at most (its tooltip has the whole name)


GROUP_ROLE = int(QtCore.Qt.UserRole) + 1     # the row's group index
SORT_ROLE = int(QtCore.Qt.UserRole) + 2      # what a column sorts by: its number, or its text in lower case
_DISPLAY, _ALIGN, _FORE, _TIP = (int(r) for r in (QtCore.Qt.DisplayRole, QtCore.Qt.TextAlignmentRole,
                                                 QtCore.Qt.ForegroundRole, QtCore.Qt.ToolTipRole))


class KernelModel(QtCore.QAbstractTableModel):
    """The rows (engine.report.kernel_table.KernelRow) as a table, each cell made when it is drawn (a plan of
    thousands of kernels fills in milliseconds)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list = []
        self._cells: dict[int, list] = {}

    def set_rows(self, rows):
        self.beginResetModel()
        self.rows = list(rows)
        self._cells: dict[int, list] = {}
        self.endResetModel()

    def rowCount(self, parent=QtCore.QModelIndex()):  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QtCore.QModelIndex()):  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.DisplayRole):  # noqa: N802
        if orientation == QtCore.Qt.Horizontal and role == QtCore.Qt.DisplayRole:
            return COLUMNS[section]
        return None

    def cells(self, row: int) -> list:
        """[(text shown, what it sorts by)] of a row's columns, made once."""
        out = self._cells.get(row)
        if out is None:
            r = self.rows[row]
            raw = [(str(r.group), r.group), (r.name, None), (_us(r.measured_us), r.measured_us),
                   (f"{100 * r.share:.1f} %", r.share), (_us(r.estimated_us), r.estimated_us),
                   (r.kind, None), (str(len(r.ops)), len(r.ops)), (r.flags, None),
                   (_pct(r.flops_share), r.flops_share), (_pct(r.bytes_share), r.bytes_share), (r.bound, None),
                   (_us(r.ort_us), r.ort_us), ("" if r.ort_ratio is None else f"{r.ort_ratio:.2f}x", r.ort_ratio)]
            out = self._cells[row] = [(t, (float(n) if n is not None else -1.0) if c in _NUMERIC else t.lower())
                                      for c, (t, n) in enumerate(raw)]
        return out

    def sort(self, column, order=QtCore.Qt.AscendingOrder):
        """Sort the rows by a column's numbers or text, in Python (one key per row, not a call per comparison)."""
        if not 0 <= column < len(COLUMNS) or not self.rows:
            return
        self.layoutAboutToBeChanged.emit()
        keys = [self.cells(i)[column][1] for i in range(len(self.rows))]
        idx = sorted(range(len(self.rows)), key=keys.__getitem__, reverse=order == QtCore.Qt.DescendingOrder)
        cells = self._cells
        self.rows = [self.rows[i] for i in idx]
        self._cells = {k: cells[i] for k, i in enumerate(idx) if i in cells}
        self.layoutChanged.emit()

    def data(self, index, role=_DISPLAY):
        role = int(role)
        if role == _DISPLAY:
            return self.cells(index.row())[index.column()][0]
        if role == SORT_ROLE:
            return self.cells(index.row())[index.column()][1]
        r, c = self.rows[index.row()], index.column()
        if role == GROUP_ROLE:
            return r.group
        if role == _ALIGN and c in _NUMERIC:
            return int(QtCore.Qt.AlignRight | QtCore.Qt.AlignVCenter)
        if role == _FORE and c == FLAGS_COL and r.lints:
            return QtGui.QBrush(QtGui.QColor("#c0392b"))
        if role == _TIP:
            if c == FLAGS_COL and r.lints:
                return plain.tooltip("\n".join(_LINT_TIPS[k] for k in r.lints))
            if c == NAME_COL:
                return plain.tooltip(f"group {r.group}: {', '.join(f'{o} {n}' for o, n in zip(r.ops, r.op_names))}")
            if c > FLAGS_COL and r.eff_source:
                return plain.tooltip(_eff_tip(r))
        return None


class _Filter(QtCore.QSortFilterProxyModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.text = ""
        self.flagged_only = False

    def sort(self, column, order=QtCore.Qt.AscendingOrder):
        """The rows are sorted where they are kept (KernelModel.sort); this model only filters them."""
        self.sourceModel().sort(column, order)

    def filterAcceptsRow(self, row, parent):  # noqa: N802
        r = self.sourceModel().rows[row]
        if self.flagged_only and not r.lints:
            return False
        if not self.text:
            return True
        hay = " ".join([r.name, r.kind, r.flags, *r.op_names, *r.ops]).lower()
        return self.text in hay


class KernelsPanel(QtWidgets.QWidget):
    group_requested = QtCore.Signal(int)   # a row was clicked: its group index in the shown plan
    code_requested = QtCore.Signal(int)    # "Show Kernel Code" on a row's context menu: its group index

    def __init__(self, parent=None):
        super().__init__(parent)
        self._workspace = self._state = self._reports = None
        self.rows = []
        self._dirty = True
        self._sized = False
        self._shown = True      # set_shown follows the dock; a panel on its own is shown when visible
        self.header = QtWidgets.QLabel()
        self.header.setWordWrap(True)
        self.filter_edit = QtWidgets.QLineEdit()
        self.filter_edit.setPlaceholderText("Filter kernels (name, kind, op, flag)")
        self.filter_edit.setClearButtonEnabled(True)
        self.flagged = QtWidgets.QCheckBox("Flagged only")
        self.flagged.setToolTip(plain.tooltip("Only kernels a linter flags: " + "; ".join(LINTS.values())
                                              + f" (slower: measured at least {SLOW_FACTOR:g}x the estimate)"))
        self.model = KernelModel(self)
        self.proxy = _Filter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QtWidgets.QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        # rows as tall as the text needs: the default (about 30 px) shows 6 rows in the bottom dock at 900 px
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.verticalHeader().setMinimumSectionSize(self.table.fontMetrics().height() + 4)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.ElideRight)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.Interactive)
        hh.setStretchLastSection(True)
        self.table.clicked.connect(self._on_click)
        self.table.setContextMenuPolicy(QtCore.Qt.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._on_menu)
        self.filter_edit.textChanged.connect(self._on_filter)
        self.flagged.toggled.connect(self._on_flagged)
        bar = QtWidgets.QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(self.flagged)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        lay.addWidget(self.header)
        lay.addLayout(bar)
        lay.addWidget(self.table, 1)
        plain.plain_label(self.header, "Open a model: a row per kernel of the shown plan.")

    def follow(self, workspace, state, reports=None):
        """Redraw from the models from now on; `reports`: the kernel reports (gui/kernel_reports.py)."""
        self._workspace, self._state, self._reports = workspace, state, reports
        if reports is not None:
            reports.events.reports.connect(lambda ev: self.redraw())
        workspace.events.document.connect(lambda ev: QtCore.QTimer.singleShot(0, self.redraw))
        for name in ("plans", "results", "device"):
            workspace.events[name].connect(lambda ev: self.redraw())
        state.events.strategy.connect(lambda ev: self.redraw())
        state.events.selection.connect(lambda ev: self._show_selection())

    # ---- contents ---------------------------------------------------------------------------------

    def set_shown(self, on: bool):
        """Whether the panel can be seen (its dock's visibilityChanged: a dock behind another tab is not);
        coming into view, it catches up."""
        self._shown = bool(on)
        if on and self._dirty:
            self.redraw()

    def redraw(self):
        """Fill the table from the models; while the panel cannot be seen, only note that it is out of
        date: a toggle on a large graph must not wait for thousands of rows nobody looks at."""
        if not self._shown or not self.isVisible():
            self._dirty = True
            return
        self._dirty = False
        ws, st = self._workspace, self._state
        doc = ws.doc if ws is not None else None
        plan = doc.plans.get(st.strategy) if doc is not None else None
        hh = self.table.horizontalHeader()
        sort_col, sort_order = (hh.sortIndicatorSection(), hh.sortIndicatorOrder()) if self.rows else \
            (0, QtCore.Qt.AscendingOrder)   # the first time: in graph order
        self.rows = []
        if plan is None:
            self.model.set_rows([])
            plain.plain_label(self.header, "Open a model: a row per kernel of the shown plan." if doc is None
                              else f"{st.strategy}: planning...")
            return
        result = doc.result(ws.device, st.strategy)
        report = self._reports.get(doc, ws.device, st.strategy) if self._reports is not None else None
        self.rows = kernel_rows(doc.graph, plan, result, doc.plans.get("greedy"), report=report,
                                peaks=None if report is not None else _peaks(ws))
        measured = any(r.measured_us is not None for r in self.rows)
        flagged = sum(bool(r.lints) for r in self.rows)
        plain.rich_label(self.header, plain.rich(
            "<b>{s}</b>: {n} kernels, {flagged} flagged; share of the {total}; ", s=st.strategy, n=len(self.rows),
            flagged=flagged,
            total=(f"measured total on {ws.device}" if measured and all(r.measured_us is not None for r in self.rows)
                   else "estimated total" + ("" if measured else " (Benchmark to measure each kernel)")))
            + _eff_header(report, measured))
        self.model.set_rows(self.rows)
        self.table.sortByColumn(sort_col if 0 <= sort_col < len(COLUMNS) else 0, sort_order)
        if not self._sized:     # column widths once, from the first rows (measuring thousands is slow)
            self._sized = True
            self.table.resizeColumnsToContents()
            self.table.setColumnWidth(NAME_COL, min(self.table.columnWidth(NAME_COL), NAME_WIDTH))  # numbers in view
            fm = self.table.fontMetrics()       # every kind's name whole, whichever rows came first
            widest = max(fm.horizontalAdvance(k) for k in _KIND_NAMES) + 16
            self.table.setColumnWidth(KIND_COL, max(self.table.columnWidth(KIND_COL), widest))
        self._show_selection()

    def visible_groups(self) -> list[int]:
        """The group of each row as shown now (sorted and filtered), top to bottom."""
        return [self.proxy.index(i, 0).data(GROUP_ROLE) for i in range(self.proxy.rowCount())]

    # ---- what the user does -------------------------------------------------------------------------

    def _on_filter(self, text: str):
        self.proxy.text = text.strip().lower()
        self.proxy.invalidate()

    def _on_flagged(self, on: bool):
        self.proxy.flagged_only = on
        self.proxy.invalidate()

    def _on_click(self, index):
        gi = index.data(GROUP_ROLE)
        if gi is not None:
            self.group_requested.emit(int(gi))

    def row_menu(self, index) -> QtWidgets.QMenu | None:
        """The context menu of a row: Show Kernel Code (its group's TIR, LLVM IR, assembly or CUDA)."""
        gi = index.data(GROUP_ROLE) if index.isValid() else None
        if gi is None:
            return None
        menu = QtWidgets.QMenu(self)
        act = menu.addAction("Show Kernel Code")
        act.triggered.connect(lambda: self.code_requested.emit(int(gi)))
        return menu

    def _on_menu(self, pos):
        menu = self.row_menu(self.table.indexAt(pos))
        if menu is not None:
            menu.exec(self.table.viewport().mapToGlobal(pos))

    def _show_selection(self):
        """The row of the group selected in the left pane is the table's current row."""
        st = self._state
        sel = st.selection.left if st is not None else None
        gi = None
        if sel and sel[0] in ("group", "collapsed"):
            gi = sel[1]
        elif sel and sel[0] == "node" and self._workspace is not None and self._workspace.doc is not None:
            plan = self._workspace.doc.plans.get(st.strategy)
            gi = plan.group_of().get(sel[1]) if plan is not None else None
        sm = self.table.selectionModel()
        for i in range(self.proxy.rowCount()):
            if self.proxy.index(i, 0).data(GROUP_ROLE) == gi:
                if self.table.currentIndex().row() != i:
                    sm.blockSignals(True)
                    self.table.selectRow(i)
                    sm.blockSignals(False)
                    self.table.scrollTo(self.proxy.index(i, 0))
                    # again once the table has its size (a dock just brought to the front has none yet)
                    table = self.table
                    QtCore.QTimer.singleShot(0, table, lambda: table.scrollTo(table.currentIndex()))
                return
        self.table.clearSelection()


def _kind_names() -> tuple[str, ...]:
    from engine.planner.kinds import KINDS
    return tuple(KINDS)


_KIND_NAMES = _kind_names()


_LINT_TIPS = {"slow": f"measured at least {SLOW_FACTOR:g}x its estimate: the cost model misjudges this kernel",
              "layout": "only moves data between layouts (transpose / layout_transform)",
              "fallback": "no schedule rule took this kernel: the generic fallback schedule ran it",
              "unfused": "a single-op kernel that greedy (TVM's FuseOps rules) fuses with a neighbour"}


def _pct(v) -> str:
    if v is None:
        return ""
    return f"{100 * v:.0f} %" if v >= 0.1 else f"{100 * v:.1f} %"


def _peaks(ws):
    """The peaks (engine/report/kernel_report.peaks) of the Workspace's profile (its Setup's) for shares of
    the benchmark's kernel times, or None."""
    from engine.report.kernel_report import peaks

    try:
        hw = ws.setup.hardware
        if hw.name not in _PEAKS:
            _PEAKS[hw.name] = peaks(hw)
    except Exception:  # noqa: BLE001 - a profile that cannot be read: no shares, the rest of the table stays
        return None
    return _PEAKS[hw.name]


_PEAKS: dict = {}


def _eff_header(report, measured: bool):
    if report is not None:
        pk = report.peaks
        return plain.rich("efficiency <b>measured</b> (kernel report, {runs} runs; ONNX Runtime profiled beside it) "
                          "against {gf:.0f} GFLOP/s and {gb:.1f} GB/s", runs=report.runs, gf=pk.flops / 1e9,
                          gb=pk.bandwidth / 1e9)
    if measured:
        return plain.rich("efficiency from the benchmark's kernel times (Run > Measure Kernels vs ONNX Runtime for "
                          "ORT's)")
    return plain.rich("Run > Measure Kernels vs ONNX Runtime for each kernel's efficiency and ORT's time")


def _eff_tip(r) -> str:
    parts = [r.eff_source]
    if r.flops is not None:
        parts.append(f"{r.flops:,} FLOPs, {r.bytes:,} bytes moved ({r.flops / r.bytes:.2f} FLOP/byte)" if r.bytes
                     else f"{r.flops:,} FLOPs")
    if r.ort_block is not None:
        parts.append(f"ONNX Runtime: block B{r.ort_block} of the same ONNX nodes")
    return "\n".join(parts)


def _us(v) -> str:
    if v is None:
        return ""
    return f"{v:,.1f}" if v < 10_000 else f"{v / 1000:,.1f} ms"
