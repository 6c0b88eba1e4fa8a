"""Opening models and moving plans and pictures in and out: File > Open, the recent list, drag and drop,
the input-shapes dialog for dynamic dimensions, and import / export of plan JSON, SVG, PNG and CSV.

`load_model` runs on a worker thread and touches no Qt object; `FileIO` is the part of `MainWindow`
that asks for paths and shapes and hands a loaded model to `MainWindow._show_document`.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtWidgets

from engine.errors import FuseLensError

from . import procs, worker
from .dialogs import ShapesDialog
from .document import Document, write_results_csv
from .planning import plan_fast

NeedShapes = procs.NeedShapes


def load_model(spec: str, given: dict | None, remembered: dict | None, profile: str, target: str, progress, cancel):
    """Worker: read the file, resolve shapes (or ask for them), load the graph, plan the fast strategies.
    Large models are read in a child process (see procs), so parsing them cannot freeze the window."""
    progress("reading model", 0.02)
    if procs.big_file(spec):
        progress("reading model (separate process)", 0.05)
        r = procs.run("open_model", spec, given, remembered, strip=True, cancel=cancel)
    else:
        r = procs.open_model(spec, given, remembered)
    if isinstance(r, NeedShapes) or cancel.is_set():
        return r if not cancel.is_set() else None
    graph, shapes = r
    progress("hardware profile", 0.8)
    return plan_fast(graph, spec, shapes, profile, target, lambda s, f: progress(s, 0.8 + 0.2 * f), cancel)


def document_from(r: dict) -> Document:
    """The Document for what `load_model` / `plan_fast` returned."""
    return Document(spec=r["spec"], shapes=r["shapes"], graph=r["graph"], hw=r["hw"], plans=r["plans"],
                    plan_errors=r["errors"])


class FileIO:
    """MainWindow's File menu, recent files, drag and drop, and import / export."""

    def open_dialog(self):
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open model", self.settings.last_dir,
                                                        "ONNX models (*.onnx);;All files (*)")
        if path:
            self.settings.last_dir = str(Path(path).parent)
            self.open_model(path)

    def _fill_recent(self):
        self.recent_menu.clear()
        items = self.settings.recent()
        for i, spec in enumerate(items):
            a = self.recent_menu.addAction(f"&{i + 1}  {spec}\tCtrl+{i + 1}")  # the window's action has the key
            a.triggered.connect(lambda _=False, s=spec: self.open_model(s))
        if not items:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def open_recent(self, i: int):
        items = self.settings.recent()
        if i < len(items):
            self.open_model(items[i])

    def open_model(self, spec: str, shapes: list[str] | dict | None = None):
        """Open `spec` (an .onnx path or zoo:NAME[@RES]); `shapes` as CLI strings NAME=D1,D2 or a dict."""
        from engine import onnx_input

        spec = str(spec)
        if not spec.startswith("zoo:"):
            spec = os.path.abspath(os.path.expanduser(spec))
        try:
            given = shapes if isinstance(shapes, dict) else onnx_input.parse_shape_args(shapes or [])
        except FuseLensError as e:
            self.show_error(str(e), "Input shapes")
            return
        remembered = self.settings.shapes_for(spec) if not spec.startswith("zoo:") and not given else None
        self._gen += 1
        gen = self._gen
        self.area.hide_error()
        name = os.path.basename(spec) if not spec.startswith("zoo:") else spec
        if self.doc is None:
            self.area.show_placeholder(f"Opening {name} ...")
        t = worker.submit(load_model, spec, given or None, remembered, self._profile_name(), self.device(),
                          name="load", background=True,
                          on_done=lambda r, gen=gen: self._on_loaded(gen, r),
                          on_failed=lambda m, gen=gen: self._on_load_failed(gen, m),
                          on_cancelled=lambda: self.status("Opening cancelled"))
        self._start("load", t, f"Opening {name}")

    def _on_load_failed(self, gen, msg):
        if gen != self._gen:
            return
        if self.doc is None:
            self.area.show_placeholder("Could not open the model. Use File > Open (Ctrl+O) or File > Open Sample.")
        self.show_error(msg, "Could not open the model")

    def _on_loaded(self, gen, r):
        if gen != self._gen or r is None:
            return
        if isinstance(r, NeedShapes):
            shapes = self.ask_shapes(r.spec, r.inputs, r.remembered)
            if shapes is None:
                self.status("Opening cancelled: no input shapes given")
                if self.doc is None:
                    self.area.show_placeholder("No model loaded.")
                return
            self.settings.remember_shapes(r.path, shapes)
            self.open_model(r.spec, shapes)
            return
        if r["shapes"] and not r["spec"].startswith("zoo:"):
            self.settings.remember_shapes(r["spec"], r["shapes"])
        self.settings.add_recent(r["spec"])
        self._show_document(document_from(r), cached=r["cached"])

    def open_graph(self, graph, spec: str | None = None):
        """Show an OpGraph that did not come from a file (a generated one): plans it off the UI thread."""
        self._gen += 1
        gen = self._gen
        profile, target = self._profile_name(), self.device()
        t = worker.submit(plan_fast, graph, spec or f"generated:{graph.name}", graph.input_shapes, profile, target,
                          name="load", background=True,
                          on_done=lambda r: gen == self._gen and self._show_document(document_from(r), plan_tvm=False,
                                                                                       cached=r["cached"]),
                          on_failed=lambda m: self.show_error(m, "Planning failed"))
        self._start("load", t, f"Planning {graph.name}")

    def ask_shapes(self, spec, inputs, remembered) -> dict | None:
        dlg = ShapesDialog(os.path.basename(spec), inputs, remembered, self)
        self.shapes_dialog = dlg
        if dlg.exec() == QtWidgets.QDialog.Accepted:
            return dlg.shapes()
        return None

    def ask_shapes_again(self):
        if self.doc is None:
            return
        from engine import loader, onnx_input

        try:
            path, _ = loader.resolve_spec(self.doc.spec)
            model = onnx_input.read(path)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e))
            return
        inputs = [(vi.name, onnx_input.input_dims(vi)) for vi in onnx_input.graph_inputs(model)]
        shapes = self.ask_shapes(self.doc.spec, inputs, self.doc.shapes)
        if shapes:
            if not self.doc.spec.startswith("zoo:"):
                self.settings.remember_shapes(self.doc.spec, shapes)
            self.open_model(self.doc.spec, shapes)

    def _save_path(self, title, filt, suffix, path):
        if path:
            return str(path)
        base = f"{self.doc.name.replace('@', '_')}-{self.strategy}{suffix}" if self.doc else f"fuselens{suffix}"
        p, _ = QtWidgets.QFileDialog.getSaveFileName(self, title, os.path.join(self.settings.last_dir, base), filt)
        if p:
            self.settings.last_dir = str(Path(p).parent)
        return p or None

    def export_plan(self, path=None, strategy: str | None = None):
        if self.doc is None:
            self.show_error("open a model first", "Export plan")
            return None
        strategy = strategy or self.strategy
        p = self._save_path("Export plan", "Plan JSON (*.json)", ".plan.json", path)
        if not p:
            return None
        from engine.planner import plan_json

        r = self.doc.result(self.device(), strategy)
        try:
            plan_json.save(p, self.doc.plans[strategy], self.doc.graph, self.doc.hw,
                           measured=r.to_dict() if r is not None and not r.error else None)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export plan")
            return None
        self.status(f"Wrote {p}")
        return p

    def import_plan(self, path=None):
        if self.doc is None:
            self.show_error("open the plan's model first", "Import plan")
            return None
        if not path:
            path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Import plan", self.settings.last_dir,
                                                            "Plan JSON (*.json);;All files (*)")
            if not path:
                return None
        from engine.planner import plan_json

        try:
            plan = plan_json.load(path, self.doc.graph)
        except FuseLensError as e:
            self.show_error(str(e), "Import plan")
            return None
        except Exception as e:  # noqa: BLE001
            self.show_error(f"{type(e).__name__}: {e}", "Import plan")
            return None
        plan.notes = dict(plan.notes or {}, imported_from=str(path), imported_strategy=plan.strategy)
        plan.strategy = "custom"
        self._recost(plan)
        self.doc.plans["custom"] = plan
        self.doc.results = {k: v for k, v in self.doc.results.items() if k[1] != "custom"}
        self._fill_strategy_boxes()
        self.set_strategy("custom", force=True)
        self._update_panels()
        self.plans_changed.emit()
        self.status(f"Imported {os.path.basename(str(path))} as 'custom': {plan.kernels} kernels")
        return plan

    def export_graph(self, path=None, fmt: str = "png"):
        if self.doc is None or self.view.scene().graph is None:
            self.show_error("nothing to export yet", "Export graph")
            return None
        p = self._save_path(f"Export graph as {fmt.upper()}", f"{fmt.upper()} (*.{fmt})", f".{fmt}", path)
        if not p:
            return None
        try:
            if fmt == "svg":
                self.view.scene().render_svg(p, f"{self.doc.name} - {self.strategy}")
            else:
                self.view.scene().render_png(p)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export graph")
            return None
        self.status(f"Wrote {p}")
        return p

    def export_csv(self, path=None):
        if self.doc is None:
            self.show_error("open a model first", "Export results")
            return None
        p = self._save_path("Export results", "CSV (*.csv)", ".results.csv", path)
        if not p:
            return None
        try:
            n = write_results_csv(self.doc, p)
        except OSError as e:
            self.show_error(str(e), "Export results")
            return None
        self.status(f"Wrote {n} rows to {p}")
        return p

    def dragEnterEvent(self, ev):  # noqa: N802
        if ev.mimeData().hasUrls() and any(u.isLocalFile() for u in ev.mimeData().urls()):
            ev.acceptProposedAction()

    def dropEvent(self, ev):  # noqa: N802
        for u in ev.mimeData().urls():
            if u.isLocalFile():
                self.open_dropped(u.toLocalFile())
                ev.acceptProposedAction()
                return

    def open_dropped(self, path: str):
        if path.lower().endswith(".json") and self.doc is not None:
            self.import_plan(path)
        else:
            self.open_model(path)
