"""The status bar's widgets (a view): how the graph was laid out (the LayoutModel's `how` and `note`),
and the progress bar and Cancel button of the work in flight (the Activity's events)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import plain


class ActivityBar:
    """Adds the layout label, the progress bar and the Cancel button to `status_bar` and keeps them as
    the Activity and the AppModel's LayoutModel say."""

    def __init__(self, app, activity, status_bar):
        self.layout_label = plain.label("")
        self.layout_label.setToolTip(plain.tooltip("How the graph was laid out"))
        # set off from the status text, which Qt clips 2 px before the label: a rule and some room between
        self.layout_label.setObjectName("layout_label")
        self.layout_label.setStyleSheet("#layout_label { border-left: 1px solid palette(mid); padding-left: 8px;"
                                        " margin-left: 10px; }")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(activity.cancel)
        self.cancel_button.hide()
        for wdg in (self.progress, self.cancel_button):  # showing them must not resize the window's contents
            pol = wdg.sizePolicy()
            pol.setRetainSizeWhenHidden(True)
            wdg.setSizePolicy(pol)
        status_bar.addPermanentWidget(self.layout_label)
        status_bar.addPermanentWidget(self.progress)
        status_bar.addPermanentWidget(self.cancel_button)
        activity.events.progress.connect(lambda ev: self._show_progress(ev.stage, ev.fraction))
        activity.events.shown.connect(lambda ev: (self.progress.setVisible(ev.value),
                                                  self.cancel_button.setVisible(ev.value)))
        lay = app.layout.events    # how the shown layout was made
        lay.how.connect(lambda ev: plain.plain_label(self.layout_label, ev.value))
        lay.note.connect(lambda ev: self.layout_label.setToolTip(plain.tooltip(ev.value)))

    def _show_progress(self, stage: str, fraction):
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
