"""The differences between the two plans shown side by side: the fused groups only one of them has, in
graph order, with Previous / Next to step through them. The list is the state: its rows are the
differences, its current row the one shown (MainWindow's `Differences` fills it and shows a row)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .. import plain


class DifferencesPanel(QtWidgets.QWidget):
    """Rows of (key, text, tooltip, colour); `chosen(row)` when a row becomes the current one, by a click,
    by Previous / Next (`step`), or by the keyboard in the list."""

    chosen = QtCore.Signal(int)
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
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button = QtWidgets.QPushButton("Next \u25bc")
        self.next_button.setToolTip(plain.tooltip("Next difference (N)"))
        self.next_button.clicked.connect(lambda: self.step(+1))
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
        self.set_differences([], "Side by side (Ctrl+D) lists the fused groups only one of the two plans has.")

    # ---- contents ---------------------------------------------------------------------------------

    def set_delta(self, on: bool):
        """Show whether the latency-delta overlay is on (the box follows the overlay's state)."""
        if self.delta_box.isChecked() != on:
            self.delta_box.blockSignals(True)
            self.delta_box.setChecked(on)
            self.delta_box.blockSignals(False)

    def set_differences(self, rows: list[tuple], header):
        """rows: (key, text, tooltip, colour or None); header: plain text, or our markup (gui.plain.rich).
        The current row stays when the rows are the same."""
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

    # ---- moving -----------------------------------------------------------------------------------

    def step(self, d: int) -> bool:
        """Make the next (d=+1) or previous (d=-1) difference current, wrapping around; False if none."""
        n = self.list.count()
        if n == 0:
            return False
        r = self.list.currentRow()
        new = (r + d) % n if r >= 0 else (0 if d > 0 else n - 1)
        if new == r:
            self.chosen.emit(r)  # one difference: show it again
        else:
            self.list.setCurrentRow(new)
        return True

    def mark(self, key) -> None:
        """Make the row of `key` current without showing it (it was selected in a view); none if absent."""
        keys = self.keys()
        self.list.blockSignals(True)
        self.list.setCurrentRow(keys.index(key) if key in keys else -1)
        self.list.blockSignals(False)
        self._update_position()

    def _on_row(self, row: int):
        self._update_position()
        if row >= 0:
            self.list.scrollToItem(self.list.item(row))
            if QtWidgets.QApplication.mouseButtons() == QtCore.Qt.NoButton:  # a click: itemClicked shows it
                self.chosen.emit(row)

    def _update_position(self):
        n, r = self.list.count(), self.list.currentRow()
        plain.plain_label(self.position, f"{r + 1} / {n}" if n and r >= 0 else (f"{n} differences" if n else ""))
