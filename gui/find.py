"""Find an operator by name or type from the window's find box, and step through the matches.

The find box sits at the right end of the menu bar, where the toolbar's width cannot push it into
the toolbar's overflow menu or squeeze it to "Fi..." (a native menu bar, as on macOS, has no room
for widgets: there it is a toolbar of its own). Ctrl+F focuses it; while it has the focus, the
letters typed go into it, not to the single-key shortcuts (gui/actions.py)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import plain

FIND_WIDTH = 200   # px: room for a name such as "fused_conv2d_add"


class Find:
    """The find box's controller: `hits` are the node ids matching the text, `pos` the one shown.
    It is given the ViewState (side by side), the view it searches (the GraphArea's panes), where a
    match is selected (`select_node`) and where its messages go (`status`); `build(win)` puts the find
    box on the window (its menu bar's corner, or a toolbar of its own) as `win.find_edit`, `win.find_label`."""

    def __init__(self, app, area, select_node, open_block=None):
        self.state, self.area, self.select_node, self.messages = app.view, area, select_node, app.messages
        self.open_block = open_block     # (op id): expand the collapsed blocks holding it (Scopes.open_to)
        self.edit: QtWidgets.QLineEdit | None = None
        self.label: QtWidgets.QLabel | None = None
        self.hits: list[str] = []
        self.pos = -1

    def build(self, win) -> QtWidgets.QWidget:
        """The find box, its match count and its previous/next buttons, placed on the window `win`
        (win.find_edit, win.find_label)."""
        bar = QtWidgets.QWidget(win)
        bar.setObjectName("find_bar")
        row = QtWidgets.QHBoxLayout(bar)
        row.setContentsMargins(4, 0, 4, 0)
        row.setSpacing(2)
        self.edit = win.find_edit = QtWidgets.QLineEdit(bar)
        self.edit.setPlaceholderText("Find op (Ctrl+F)")
        self.edit.setClearButtonEnabled(True)
        self.edit.setFixedWidth(FIND_WIDTH)
        self.edit.textChanged.connect(self.find)
        self.edit.returnPressed.connect(lambda: self.step(-1 if QtWidgets.QApplication.keyboardModifiers()
                                                          & QtCore.Qt.ShiftModifier else +1))
        self.label = win.find_label = QtWidgets.QLabel("", bar)
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance(" 999/999 "))  # no jitter
        row.addWidget(self.edit)
        row.addWidget(self.label)
        for arrow, tip, d in ((QtCore.Qt.UpArrow, "Previous match (Shift+F3)", -1),
                              (QtCore.Qt.DownArrow, "Next match (F3)", +1)):
            b = QtWidgets.QToolButton(bar)
            b.setArrowType(arrow)
            b.setToolTip(plain.tooltip(tip))
            b.setAutoRaise(True)
            b.clicked.connect(lambda _=False, d=d: self.step(d))
            row.addWidget(b)
        mb = win.menuBar()
        if mb.isNativeMenuBar():
            tb = win.addToolBar("Find")
            tb.setObjectName("toolbar_find")
            tb.addWidget(bar)
        else:
            mb.setCornerWidget(bar, QtCore.Qt.TopRightCorner)
        return bar

    def focus(self):
        """Ctrl+F: the find box, shown (its toolbar may have been hidden), focused, its text selected."""
        e = self.edit
        bar = e.parentWidget()
        if isinstance(bar.parentWidget(), QtWidgets.QToolBar) and not bar.isVisible():
            bar.parentWidget().show()
        e.setFocus(QtCore.Qt.ShortcutFocusReason)
        e.selectAll()

    def find(self, text: str):
        sc = self.area.left.scene()
        self.hits = sc.find(text) if sc.graph is not None else []
        if self.state.side_by_side:
            self.area.right.scene().find(text)
        self.pos = -1
        plain.plain_label(self.label, f" {len(self.hits)} found " if text else "")
        if self.hits:
            self.step(+1)

    def step(self, d: int):
        if not self.hits:
            if self.edit.text():
                self.messages.show(f"No op matches {self.edit.text()!r}")
            return
        self.pos = (self.pos + d) % len(self.hits)
        nid = self.hits[self.pos]
        plain.plain_label(self.label, f" {self.pos + 1}/{len(self.hits)} ")
        self.select_node(nid)
        if self.open_block is not None:   # a match inside a collapsed block: the block opens around it
            self.open_block(nid)
