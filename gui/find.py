"""Find an operator by name or type from the window's find box, and step through the matches.

The find box sits at the right end of the menu bar, where the toolbar's width cannot push it into
the toolbar's overflow menu or squeeze it to "Fi..." (a native menu bar, as on macOS, has no room
for widgets: there it is a toolbar of its own). Ctrl+F focuses it; while it has the focus, the
letters typed go into it, not to the single-key shortcuts (gui/actions.py)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

FIND_WIDTH = 200   # px: room for a name such as "fused_conv2d_add"


class Find:
    """The find box's controller: `hits` are the node ids matching the text, `pos` the one shown.
    It reads the window's panes and find box, and selects through the window's `select_node`."""

    def __init__(self, win):
        self.win = win
        self.hits: list[str] = []
        self.pos = -1

    def build(self) -> QtWidgets.QWidget:
        """The find box, its match count and its previous/next buttons, placed on the window
        (win.find_edit, win.find_label)."""
        w = self.win
        bar = QtWidgets.QWidget(w)
        bar.setObjectName("find_bar")
        row = QtWidgets.QHBoxLayout(bar)
        row.setContentsMargins(4, 0, 4, 0)
        row.setSpacing(2)
        w.find_edit = QtWidgets.QLineEdit(bar)
        w.find_edit.setPlaceholderText("Find op (Ctrl+F)")
        w.find_edit.setClearButtonEnabled(True)
        w.find_edit.setFixedWidth(FIND_WIDTH)
        w.find_edit.textChanged.connect(w.find)
        w.find_edit.returnPressed.connect(lambda: w.find_step(-1 if QtWidgets.QApplication.keyboardModifiers()
                                                              & QtCore.Qt.ShiftModifier else +1))
        w.find_label = QtWidgets.QLabel("", bar)
        w.find_label.setMinimumWidth(w.find_label.fontMetrics().horizontalAdvance(" 999/999 "))  # no jitter
        row.addWidget(w.find_edit)
        row.addWidget(w.find_label)
        for arrow, tip, d in ((QtCore.Qt.UpArrow, "Previous match (Shift+F3)", -1),
                              (QtCore.Qt.DownArrow, "Next match (F3)", +1)):
            b = QtWidgets.QToolButton(bar)
            b.setArrowType(arrow)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.clicked.connect(lambda _=False, d=d: w.find_step(d))
            row.addWidget(b)
        mb = w.menuBar()
        if mb.isNativeMenuBar():
            tb = w.addToolBar("Find")
            tb.setObjectName("toolbar_find")
            tb.addWidget(bar)
        else:
            mb.setCornerWidget(bar, QtCore.Qt.TopRightCorner)
        return bar

    def focus(self):
        """Ctrl+F: the find box, shown (its toolbar may have been hidden), focused, its text selected."""
        e = self.win.find_edit
        bar = e.parentWidget()
        if isinstance(bar.parentWidget(), QtWidgets.QToolBar) and not bar.isVisible():
            bar.parentWidget().show()
        e.setFocus(QtCore.Qt.ShortcutFocusReason)
        e.selectAll()

    def find(self, text: str):
        w = self.win
        sc = w.view.scene()
        self.hits = sc.find(text) if sc.graph is not None else []
        if w.state.side_by_side:
            w.rview.scene().find(text)
        self.pos = -1
        w.find_label.setText(f" {len(self.hits)} found " if text else "")
        if self.hits:
            self.step(+1)

    def step(self, d: int):
        w = self.win
        if not self.hits:
            if w.find_edit.text():
                w.status(f"No op matches {w.find_edit.text()!r}")
            return
        self.pos = (self.pos + d) % len(self.hits)
        nid = self.hits[self.pos]
        w.find_label.setText(f" {self.pos + 1}/{len(self.hits)} ")
        w.select_node(nid)
