"""The File menu's dialogs (a view): it asks the user for paths and input shapes and hands the answers to
the Files controller (gui/file_io.py), which never shows a dialog. It also fills File > Open Recent, and
exports the graph as SVG or PNG, which only the left pane's scene can draw.

Each command takes an optional path: given one (a test, a script, a dropped file), it asks nothing.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtWidgets

from . import dialogs


class FilePrompts:
    """Asks for what `files` (a Files controller) needs, as dialogs owned by `parent` (the window);
    `settings` keeps the last folder, `area` (the GraphArea) draws the exported graph, `messages` says
    what was written. `shapes_dialog`: the input-shapes dialog last shown."""

    def __init__(self, files, settings, area, messages, parent):
        self.files, self.settings, self.area, self.messages, self.parent = files, settings, area, messages, parent
        self.shapes_dialog = None
        self.recent_menu = None
        files.events.shapes_wanted.connect(lambda ev: self.ask_shapes(ev.question))

    # -- opening --
    def open(self):
        """File > Open: ask for a model and open it."""
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self.parent, "Open model", self.settings.last_dir,
                                                        "ONNX models (*.onnx);;All files (*)")
        if path:
            self.settings.last_dir = str(Path(path).parent)
            self.files.open_model(path)

    def recent_in(self, menu):
        """Fill `menu` with the recent models, again each time it opens."""
        self.recent_menu = menu
        menu.aboutToShow.connect(self.fill_recent)
        self.fill_recent()

    def fill_recent(self):
        self.recent_menu.clear()
        items = self.files.recent()
        for i, spec in enumerate(items):
            shown = " ".join(spec.split()).replace("&", "&&")   # a path's & is no mnemonic, its tab no column
            a = self.recent_menu.addAction(f"&{i + 1}  {shown}\tCtrl+{i + 1}")  # the window's action has the key
            a.triggered.connect(lambda _=False, s=spec: self.files.open_model(s))
        if not items:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def ask_shapes(self, q):
        """The input-shapes dialog for `q` (a ShapesQuestion); the answer goes back to the controller."""
        dlg = dialogs.ShapesDialog(os.path.basename(q.spec), q.inputs, q.remembered, self.parent, values=q.values,
                                   examples=q.examples)
        self.shapes_dialog = dlg
        if dlg.exec() == QtWidgets.QDialog.Accepted:
            self.files.shapes_given(q, dlg.shapes())
        else:
            self.files.shapes_refused(q)

    # -- plans and results --
    def _save_path(self, title: str, filt: str, suffix: str, strategy: str | None = None) -> str | None:
        base = self.files.suggested_name(suffix, strategy)
        p, _ = QtWidgets.QFileDialog.getSaveFileName(self.parent, title, os.path.join(self.settings.last_dir, base),
                                                     filt)
        if p:
            self.settings.last_dir = str(Path(p).parent)
        return p or None

    def import_plan(self, path=None):
        """Import a plan JSON as "custom" (without a path: ask for one); the Plan, or None."""
        if not self.files.ready_to_import():
            return None
        if not path:
            path, _ = QtWidgets.QFileDialog.getOpenFileName(self.parent, "Import plan", self.settings.last_dir,
                                                            "Plan JSON (*.json);;All files (*)")
            if not path:
                return None
        return self.files.import_plan(path)

    def export_plan(self, path=None, strategy: str | None = None):
        """Export a strategy's plan as JSON (without a path: ask for one); the path written, or None."""
        if not self.files.ready_to_export("Export plan"):
            return None
        path = path or self._save_path("Export plan", "Plan JSON (*.json)", ".plan.json", strategy)
        return self.files.export_plan(path, strategy) if path else None

    def export_csv(self, path=None):
        """Export the results as CSV (without a path: ask for one); the path written, or None."""
        if not self.files.ready_to_export("Export results"):
            return None
        path = path or self._save_path("Export results", "CSV (*.csv)", ".results.csv")
        return self.files.export_csv(path) if path else None

    # -- the graph, as the left pane draws it --
    def export_graph(self, path=None, fmt: str = "png"):
        """Export the left pane's graph as SVG or PNG (without a path: ask for one); the path, or None."""
        doc, scene = self.files.model.doc, self.area.left.scene()
        if doc is None or scene.graph is None:
            self.messages.fail("nothing to export yet", "Export graph")
            return None
        p = str(path) if path else self._save_path(f"Export graph as {fmt.upper()}", f"{fmt.upper()} (*.{fmt})",
                                                   f".{fmt}")
        if not p:
            return None
        try:
            if fmt == "svg":
                scene.render_svg(p, f"{doc.name} - {self.files.state.strategy}")
            else:
                scene.render_png(p)
        except Exception as e:  # noqa: BLE001
            self.messages.fail(str(e), "Export graph")
            return None
        self.messages.show(f"Wrote {p}")
        return p
