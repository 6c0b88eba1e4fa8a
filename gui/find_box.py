"""The find box (a view of gui/find.py): a line edit, the match count and previous / next arrows.

It sits at the right end of the menu bar, where the toolbar's width cannot push it into the toolbar's
overflow menu or squeeze it to "Fi..." (a native menu bar, as on macOS, has no room for widgets: there
it is a toolbar of its own). Ctrl+F focuses it; while it has the focus, the letters typed go into it,
not to the single-key shortcuts (gui/action_table.py)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import plain

FIND_WIDTH = 200   # px: room for a name such as "fused_conv2d_add"


class FindBox:
    """Builds the find box onto the window `win` (win.find_edit, win.find_label): what is typed goes to
    the Find controller `finder`, the label shows the AppModel's FindModel.label."""

    def __init__(self, win, finder, find_model):
        bar = self.bar = QtWidgets.QWidget(win)
        bar.setObjectName("find_bar")
        row = QtWidgets.QHBoxLayout(bar)
        row.setContentsMargins(4, 0, 4, 0)
        row.setSpacing(2)
        self.edit = win.find_edit = QtWidgets.QLineEdit(bar)
        self.edit.setPlaceholderText("Find op (Ctrl+F)")
        self.edit.setClearButtonEnabled(True)
        self.edit.setFixedWidth(FIND_WIDTH)
        self.edit.textChanged.connect(finder.find)
        self.edit.returnPressed.connect(lambda: finder.step(-1 if QtWidgets.QApplication.keyboardModifiers()
                                                            & QtCore.Qt.ShiftModifier else +1))
        self.label = win.find_label = QtWidgets.QLabel("", bar)
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance(" 999/999 "))  # no jitter
        find_model.events.label.connect(lambda ev: plain.plain_label(self.label, ev.value))
        row.addWidget(self.edit)
        row.addWidget(self.label)
        for arrow, tip, d in ((QtCore.Qt.UpArrow, "Previous match (Shift+F3)", -1),
                              (QtCore.Qt.DownArrow, "Next match (F3)", +1)):
            b = QtWidgets.QToolButton(bar)
            b.setArrowType(arrow)
            b.setToolTip(plain.tooltip(tip))
            b.setAutoRaise(True)
            b.clicked.connect(lambda _=False, d=d: finder.step(d))
            row.addWidget(b)
        mb = win.menuBar()
        if mb.isNativeMenuBar():
            tb = win.addToolBar("Find")
            tb.setObjectName("toolbar_find")
            tb.addWidget(bar)
        else:
            mb.setCornerWidget(bar, QtCore.Qt.TopRightCorner)

    def focus(self):
        """Ctrl+F: the find box, shown (its toolbar may have been hidden), focused, its text selected."""
        e = self.edit
        bar = e.parentWidget()
        if isinstance(bar.parentWidget(), QtWidgets.QToolBar) and not bar.isVisible():
            bar.parentWidget().show()
        e.setFocus(QtCore.Qt.ShortcutFocusReason)
        e.selectAll()
