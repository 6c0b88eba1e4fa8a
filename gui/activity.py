"""What the window is doing: the tasks in flight by name, the progress bar and Cancel button in the
status bar, and the messages (status line, error banner)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import worker

QUIET_TASKS = ("devices",)   # run without progress bar or Cancel, and Cancel leaves them alone


class Activity:
    """MainWindow's status bar, progress and Cancel, errors and messages."""

    def _build_statusbar(self):
        sb = self.statusBar()
        self.layout_label = QtWidgets.QLabel("")
        self.layout_label.setToolTip("How the graph was laid out")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        for wdg in (self.progress, self.cancel_button):  # showing them must not resize the window's contents
            pol = wdg.sizePolicy()
            pol.setRetainSizeWhenHidden(True)
            wdg.setSizePolicy(pol)
        sb.addPermanentWidget(self.layout_label)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        sb.showMessage("Ready")

    def show_error(self, msg: str, where: str = ""):
        text = f"{where}: {msg}" if where else msg
        self.last_error = text
        self.area.show_error(text)
        self.statusBar().showMessage(text.splitlines()[0][:200], 15000)
        self.error_shown.emit(text)

    def status(self, msg: str, ms: int = 6000):
        self.statusBar().showMessage(msg, ms)

    def _start(self, name: str, task: worker.Task, text: str):
        old = self._tasks.get(name)
        if old is not None and old.running:
            old.cancel()
        self._tasks[name] = task
        task.signals.progress.connect(lambda st, f, name=name: self._on_progress(name, st, f))
        task.signals.finished.connect(lambda name=name, task=task: self._finish(name, task))
        self._on_progress(name, text, -1)
        self.busy_changed.emit(True)
        # the task started before these connections: what it said or did before them is not lost
        if task.last_progress is not None:
            self._on_progress(name, *task.last_progress)
        if not task.running:
            QtCore.QTimer.singleShot(0, lambda name=name, task=task: self._finish(name, task))

    def _finish(self, name: str, task: worker.Task):
        if self._tasks.get(name) is task:
            del self._tasks[name]
        self._refresh_busy()

    def _refresh_busy(self):
        visible = {k: t for k, t in self._tasks.items() if k not in QUIET_TASKS}
        busy = bool(visible) or bool(self._pending_layout and not self._pending_layout.get("quiet"))
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if not busy:
            self.busy_changed.emit(False)

    def is_busy(self) -> bool:
        """Whether anything is in flight: a task (but the quiet ones), a layout asked for (a quiet
        relayout after a toggle included), or a layout still being applied to the view."""
        return bool({k for k in self._tasks if k not in QUIET_TASKS}) or bool(self._pending_layout) \
            or self._applying > 0

    def _on_progress(self, name: str, stage: str, fraction: float):
        if name in QUIET_TASKS:
            return
        if (name == "layout" and not self._pending_layout) or (name != "layout" and name not in self._tasks):
            return  # a late report from a task that was cancelled or has finished
        self.progress.show()
        self.cancel_button.show()
        if fraction is None or fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * min(1.0, fraction)))
        fm = self.progress.fontMetrics()   # the whole stage is in the status line; the bar gets what fits
        room = self.progress.maximumWidth() - fm.horizontalAdvance("  100%") - 16
        self.progress.setFormat(fm.elidedText(stage, QtCore.Qt.ElideRight, room) + "  %p%")
        self.statusBar().showMessage(stage)

    def cancel(self):
        """Cancel loading, planning, layout, benchmarks and tuning in flight."""
        named = [k for k, t in self._tasks.items() if k not in QUIET_TASKS and t.running]
        for k in named:
            self._tasks[k].cancel()
        if self._pending_layout:
            self.layouts.cancel()
            self._pending_layout = {}
        self._tasks = {k: t for k, t in self._tasks.items() if k in QUIET_TASKS}
        self._refresh_busy()
        if named:
            self.last_cancelled = named
            self.status("Cancelled: " + ", ".join(named))
