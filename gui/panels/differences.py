"""The differences between the two plans shown side by side: the fused groups only one of them has, in
graph order, with Previous / Next to step through them. The panel draws the AppModel's DifferencesModel
(`follow`): its rows, its header and the one shown; a click, the keyboard and Previous / Next go to the
Differences controller (gui/differences.py) as `chosen(row)` and `step_requested(d)`."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import plain, style
from .properties import group_kind, kind_title

NOT_SIDE_BY_SIDE = "Side by side (Ctrl+D) lists the fused groups only one of the two plans has."


class DifferencesPanel(QtWidgets.QWidget):
    """Rows of (key, text, tooltip, colour); `chosen(row)` when a row becomes the current one, by a click,
    by Previous / Next (the controller steps, the panel says which row), or by the keyboard in the list."""

    chosen = QtCore.Signal(int)
    step_requested = QtCore.Signal(int)     # Previous (-1) / Next (+1) pressed
    delta_requested = QtCore.Signal(bool)   # the "colour by latency delta" box was toggled by the user

    def __init__(self, parent=None):
        super().__init__(parent)
        self.header = QtWidgets.QLabel()
        self.header.setWordWrap(True)
        self.list = QtWidgets.QListWidget()
        # a row's text wraps at word boundaries: an elided group name was cut mid-word at 1400x900
        self.list.setWordWrap(True)
        self.list.setTextElideMode(QtCore.Qt.ElideNone)
        self.list.setResizeMode(QtWidgets.QListView.Adjust)
        self.list.setSpacing(1)
        self.list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarAlwaysOff)
        self.list.currentRowChanged.connect(self._on_row)
        # a click shows its row (again, too: to re-centre it); keys and Previous / Next through _on_row
        self.list.itemClicked.connect(lambda it: self.chosen.emit(self.list.row(it)))
        self.prev_button = QtWidgets.QPushButton("\u25b2 Previous")
        self.prev_button.setToolTip(plain.tooltip("Previous difference (Shift+N)"))
        self.prev_button.clicked.connect(lambda: self.step_requested.emit(-1))
        self.next_button = QtWidgets.QPushButton("Next \u25bc")
        self.next_button.setToolTip(plain.tooltip("Next difference (N)"))
        self.next_button.clicked.connect(lambda: self.step_requested.emit(+1))
        self.position = QtWidgets.QLabel()
        self.delta_box = QtWidgets.QCheckBox("Colour groups by latency delta")
        self.delta_box.setToolTip(plain.tooltip("Each group coloured by how much faster (blue) or slower (red) the "
                                                "other plan runs its operators: measured where both plans were "
                                                "benchmarked, else estimated"))
        self.delta_box.toggled.connect(self.delta_requested.emit)
        bar = QtWidgets.QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addStretch(1)
        bar.addWidget(self.position)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        lay.addWidget(self.header)
        lay.addLayout(bar)
        lay.addWidget(self.delta_box)
        lay.addWidget(self.list, 1)
        self._workspace = None
        self.set_differences([], NOT_SIDE_BY_SIDE)

    # ---- following the model ----------------------------------------------------------------------

    def follow(self, workspace, diffs):
        """Draw the DifferencesModel `diffs` (its rows named from the Workspace's open Document)."""
        self._workspace = workspace
        diffs.events.rows.connect(lambda ev: self._on_rows(ev.value))
        diffs.events.head.connect(lambda ev: self._on_head(ev.value, diffs.rows))
        diffs.events.current.connect(lambda ev: self._on_current(ev.value, getattr(ev, "show", False)))

    def _on_rows(self, rows):
        doc = self._workspace.doc if self._workspace is not None else None
        self.set_differences([self._row(doc, *r) for r in rows] if doc else [], None)

    @staticmethod
    def _row(doc, s: str, gi: int, members, side: str) -> tuple:
        plan = doc.plans[s]
        info = group_kind(plan, gi)
        badge = style.kind_badge_text(info)
        # the group's name first and whole (the list wraps it at word boundaries), then where it is
        text = (f"{L.group_name(doc.graph, list(members), info and info.get('kind'))} ({len(members)} ops)\n"
                f"only in {s}, group {gi}" + (f"  [{badge}]" if badge else ""))
        tip = (f"{side} pane ({s}), group {gi}: {len(members)} ops from "
               f"{min(members, key=L.node_number)}" + (f"\nkind: {kind_title(info)}" if info else ""))
        return ((s, gi), text, tip, style.STRATEGY_COLOURS.get(s))

    def _on_head(self, head, rows):
        if head is None:
            text = NOT_SIDE_BY_SIDE
        else:
            left, right, oa = head
            text = (f"{left} | {right}: planning..." if oa is None else
                    plain.rich("<b>{n}</b> fused groups differ: {oa} only in <b>{left}</b> (left), "
                               "{ob} only in <b>{right}</b> (right). N / Shift+N: next / previous.",
                               n=len(rows), oa=oa, ob=len(rows) - oa, left=left, right=right)
                    if rows else plain.rich("<b>{left}</b> and <b>{right}</b> form the same fused groups.",
                                            left=left, right=right))
        plain.plain_label(self.header, text)

    def _on_current(self, row: int, show: bool):
        """The row shown (or only marked, `show` False: it was selected in a pane)."""
        self.list.blockSignals(True)
        self.list.setCurrentRow(row)
        self.list.blockSignals(False)
        self._update_position()
        if show and row >= 0:
            self.list.scrollToItem(self.list.item(row))
            self.chosen.emit(row)

    # ---- contents ---------------------------------------------------------------------------------

    def set_delta(self, on: bool):
        """Show whether the latency-delta overlay is on (the box follows the overlay's state)."""
        if self.delta_box.isChecked() != on:
            self.delta_box.blockSignals(True)
            self.delta_box.setChecked(on)
            self.delta_box.blockSignals(False)

    def set_differences(self, rows: list[tuple], header):
        """rows: (key, text, tooltip, colour or None); header: plain text, or our markup (gui.plain.rich),
        None to keep it. The current row stays when the rows are the same."""
        if header is not None:
            plain.plain_label(self.header, header)
        if [(r[0], r[1]) for r in rows] == list(zip(self.keys(), self.texts())):
            self._update_position()
            return
        self.list.blockSignals(True)
        self.list.clear()
        for key, text, tip, colour in rows:
            it = QtWidgets.QListWidgetItem(text)
            it.setData(QtCore.Qt.UserRole, key)
            if tip:
                it.setToolTip(plain.tooltip(tip))
            if colour is not None:
                pix = QtGui.QPixmap(10, 10)
                pix.fill(QtGui.QColor(colour))
                it.setIcon(QtGui.QIcon(pix))
            self.list.addItem(it)
        self.list.setCurrentRow(-1)
        self.list.blockSignals(False)
        for b in (self.prev_button, self.next_button):
            b.setEnabled(bool(rows))
        self._update_position()

    def keys(self) -> list:
        return [self.list.item(i).data(QtCore.Qt.UserRole) for i in range(self.list.count())]

    def key(self, row: int):
        it = self.list.item(row)
        return it.data(QtCore.Qt.UserRole) if it is not None else None

    def count(self) -> int:
        return self.list.count()

    def current(self) -> int:
        """The row shown now (-1: none yet)."""
        return self.list.currentRow()

    def texts(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    # ---- the user ---------------------------------------------------------------------------------

    def _on_row(self, row: int):
        self._update_position()
        if row >= 0:
            self.list.scrollToItem(self.list.item(row))
            if QtWidgets.QApplication.mouseButtons() == QtCore.Qt.NoButton:  # a click: itemClicked shows it
                self.chosen.emit(row)

    def _update_position(self):
        n, r = self.list.count(), self.list.currentRow()
        plain.plain_label(self.position, f"{r + 1} / {n}" if n and r >= 0 else (f"{n} differences" if n else ""))
