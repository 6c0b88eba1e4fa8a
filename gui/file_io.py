"""Opening models and moving plans and pictures in and out: File > Open, the recent list, drag and drop,
the input-shapes dialog for dynamic dimensions, and import / export of plan JSON, SVG, PNG and CSV.

`load_model` runs on a worker thread and touches no Qt object; `Files` is the window's controller that
asks for paths and shapes and hands a loaded model to `MainWindow.show_document`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from PySide6 import QtWidgets

from engine.jobs.open_model import NeedShapes, open_model
from engine.util.errors import FuseLensError

from .dialogs import ShapesDialog
from .document import Document, write_results_csv
from .planning import plan_fast


@dataclass(frozen=True)
class Opening:
    """What opening a model needs: the model `spec` (a path or zoo:NAME[@RES]), the input shapes
    `given` (or None), those `remembered` for the file (asked for when neither is there), and the
    Setup it is opened and planned with (Workspace.setup: the device's channel layout, the profile,
    the cost)."""
    spec: str
    given: dict | None
    remembered: dict | None
    setup: object


def load_model(o: Opening, progress, cancel):
    """Worker: read the file, resolve shapes (or ask for them), load the graph, plan the fast strategies
    (priced by o.setup's cost's estimator for its target).
    Large models are read in a child process (engine/jobs/open_model.py), so parsing them cannot freeze
    the window. The graph is in the setup's channel layout (setup.block: blocked on a CPU, NCHW on CUDA)."""
    progress("reading model", 0.02)
    r = open_model(o.spec, o.given, o.remembered, progress, cancel, block=o.setup.block)
    if isinstance(r, NeedShapes) or cancel.is_set():
        return r if not cancel.is_set() else None
    graph, shapes = r
    progress("hardware profile", 0.8)
    return plan_fast(graph, o.spec, shapes, o.setup, lambda s, f: progress(s, 0.8 + 0.2 * f), cancel)


def document_from(r: dict) -> Document:
    """The Document for what `load_model` / `plan_fast` returned."""
    return Document(spec=r["spec"], shapes=r["shapes"], graph=r["graph"], hw=r["hw"], plans=r["plans"],
                    plan_errors=r["errors"])


class Files:
    """The File menu's controller: open (dialog, recent list, dropped files, input shapes), and import /
    export of plans, pictures and results. It is given the models (the Workspace with the open
    Document and device, the ViewState, the Settings), the view it drives (the GraphArea: its
    placeholder, banner and the left pane to export), the Activity, the Planning controller (pricing
    an imported plan), the widget its dialogs belong to (`parent`), `show_document` (where a loaded
    model goes) and where its messages go (`status`, `show_error`). `recent_in(menu)`: the Open Recent
    menu it fills."""

    def __init__(self, app, settings, area, activity, planning, parent, show_document):
        self.model, self.state, self.settings, self.area = app.workspace, app.view, settings, area
        self.activity, self.planning, self.parent = activity, planning, parent
        self.show_document, self.status, self.show_error = show_document, app.messages.show, app.messages.fail
        self.recent_menu = None
        self.shapes_dialog = None   # the input-shapes dialog last shown
        self._layouts: dict[str, str] = {}   # device -> its channel layout ("NCHW16c", "NCHW")

    def recent_in(self, menu):
        """Fill `menu` with the recent models, again each time it opens."""
        self.recent_menu = menu
        menu.aboutToShow.connect(self.fill_recent)
        self.fill_recent()

    def layout_for(self, device: str) -> str:
        """The channel layout a model opens in on `device` (its Setup's block: Workspace.setup_for;
        "NCHW" where the device's settings cannot be resolved)."""
        if device not in self._layouts:
            from engine.model import opgraph

            try:
                self._layouts[device] = opgraph.layout_name(self.model.setup_for(device).block)
            except FuseLensError:
                self._layouts[device] = "NCHW"
        return self._layouts[device]

    def needs_reopen(self, device: str) -> bool:
        """Whether the open model must be opened again for `device`: its graph is in another layout."""
        doc = self.model.doc
        return (doc is not None and not doc.spec.startswith("generated:")
                and doc.graph.layout != self.layout_for(device))

    def follow_device(self) -> bool:
        """Open the model again, in the background like opening, when the selected device's channel
        layout is not the open graph's (the plans, results and layouts of the graph are of its layout).
        Returns whether it does."""
        if not self.needs_reopen(self.model.device):
            return False
        doc, want = self.model.doc, self.layout_for(self.model.device)
        self.open_model(doc.spec, dict(doc.shapes) if doc.shapes else None,
                        text=f"Reopening {doc.graph.name} in {want} for {self.model.device}")
        return True

    def open_dialog(self):
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self.parent, "Open model", self.settings.last_dir,
                                                     "ONNX models (*.onnx);;All files (*)")
        if path:
            self.settings.last_dir = str(Path(path).parent)
            self.open_model(path)

    def fill_recent(self):
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

    def open_model(self, spec: str, shapes: list[str] | dict | None = None, text: str | None = None):
        """Open `spec` (an .onnx path or zoo:NAME[@RES]) in the selected device's channel layout; `shapes`
        as CLI strings NAME=D1,D2 or a dict; `text`: the status while it opens."""
        from engine.model import onnx_input

        spec = str(spec)
        if not spec.startswith("zoo:"):
            spec = os.path.abspath(os.path.expanduser(spec))
        try:
            given = shapes if isinstance(shapes, dict) else onnx_input.parse_shape_args(shapes or [])
        except FuseLensError as e:
            self.show_error(str(e), "Input shapes")
            return
        remembered = self.settings.shapes_for(spec) if not spec.startswith("zoo:") and not given else None
        try:
            setup = self.model.setup
        except FuseLensError as e:   # the device, profile or cost the window has chosen: one line
            self._on_load_failed(str(e))
            return
        req = self.model.request("load")
        self.area.hide_error()
        name = os.path.basename(spec) if not spec.startswith("zoo:") else spec
        if self.model.doc is None:
            self.area.show_placeholder(f"Opening {name} ...")
        self.activity.run("load", text or f"Opening {name}", load_model, Opening(spec, given or None, remembered, setup),
                       background=True, request=req,
                       on_done=self._on_loaded, on_failed=self._on_load_failed,
                       on_cancelled=lambda: self.status("Opening cancelled"))

    def _on_load_failed(self, msg):
        if self.model.doc is None:
            self.area.show_placeholder("Could not open the model. Use File > Open (Ctrl+O) or File > Open Sample.")
        self.show_error(msg, "Could not open the model")

    def _on_loaded(self, r):
        if r is None:
            return
        if isinstance(r, NeedShapes):
            shapes = self.ask_shapes(r.spec, r.inputs, r.remembered, r.values, getattr(r, "examples", None))
            if shapes is None:
                self.status("Opening cancelled: no input shapes given")
                if self.model.doc is None:
                    self.area.show_placeholder("No model loaded.")
                return
            self.settings.remember_shapes(r.path, shapes)
            self.open_model(r.spec, shapes)
            return
        if r["shapes"] and not r["spec"].startswith("zoo:"):
            self.settings.remember_shapes(r["spec"], r["shapes"])
        self.settings.add_recent(r["spec"])
        self.show_document(document_from(r), cached=r["cached"])
        self.follow_device()   # another device was chosen while it opened: open it in that one's layout

    def open_graph(self, graph, spec: str | None = None):
        """Show an OpGraph that did not come from a file (a generated one): plans it off the UI thread."""
        req = self.model.request("load")
        self.activity.run("load", f"Planning {graph.name}", plan_fast, graph, spec or f"generated:{graph.name}",
                       graph.input_shapes, self.model.setup, background=True, request=req,
                       on_done=lambda r: self.show_document(document_from(r), plan_tvm=False, cached=r["cached"]),
                       on_failed=lambda m: self.show_error(m, "Planning failed"))

    def ask_shapes(self, spec, inputs, remembered, values=None, examples=None) -> dict | None:
        dlg = ShapesDialog(os.path.basename(spec), inputs, remembered, self.parent, values=values, examples=examples)
        self.shapes_dialog = dlg
        if dlg.exec() == QtWidgets.QDialog.Accepted:
            return dlg.shapes()
        return None

    def ask_shapes_again(self):
        if self.model.doc is None:
            return
        from engine.model import loader, onnx_input

        try:
            path, _ = loader.resolve_spec(self.model.doc.spec)
            model = onnx_input.read(path)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e))
            return
        inputs = [(vi.name, onnx_input.input_dims(vi)) for vi in onnx_input.graph_inputs(model)]
        shapes = self.ask_shapes(self.model.doc.spec, inputs, self.model.doc.shapes,
                                 onnx_input.inputs_choosing_branches(model), onnx_input.example_shapes(model, inputs)[0])
        if shapes:
            if not self.model.doc.spec.startswith("zoo:"):
                self.settings.remember_shapes(self.model.doc.spec, shapes)
            self.open_model(self.model.doc.spec, shapes)

    def _save_path(self, title, filt, suffix, path):
        if path:
            return str(path)
        base = f"{self.model.doc.name.replace('@', '_')}-{self.state.strategy}{suffix}" if self.model.doc else f"fuselens{suffix}"
        p, _ = QtWidgets.QFileDialog.getSaveFileName(self.parent, title, os.path.join(self.settings.last_dir, base), filt)
        if p:
            self.settings.last_dir = str(Path(p).parent)
        return p or None

    def export_plan(self, path=None, strategy: str | None = None):
        if self.model.doc is None:
            self.show_error("open a model first", "Export plan")
            return None
        strategy = strategy or self.state.strategy
        p = self._save_path("Export plan", "Plan JSON (*.json)", ".plan.json", path)
        if not p:
            return None
        from engine.planner import plan_json

        r = self.model.doc.result(self.model.device, strategy)
        try:
            plan_json.save(p, self.model.doc.plans[strategy], self.model.doc.graph, self.model.doc.hw,
                           measured=r.to_dict() if r is not None and not r.error else None)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export plan")
            return None
        self.status(f"Wrote {p}")
        return p

    def import_plan(self, path=None):
        if self.model.doc is None:
            self.show_error("open the plan's model first", "Import plan")
            return None
        if not path:
            path, _ = QtWidgets.QFileDialog.getOpenFileName(self.parent, "Import plan", self.settings.last_dir,
                                                            "Plan JSON (*.json);;All files (*)")
            if not path:
                return None
        from engine.planner import plan_json

        try:
            plan = plan_json.load(path, self.model.doc.graph)
        except FuseLensError as e:
            self.show_error(str(e), "Import plan")
            return None
        except Exception as e:  # noqa: BLE001
            self.show_error(f"{type(e).__name__}: {e}", "Import plan")
            return None
        plan.set_provenance(imported_from=str(path), imported_strategy=plan.strategy,
                            planning_ms_in_file=plan.planning_ms)
        plan.planning_ms = 0.0   # not planned here (as plan_json.imported): no planning time of its own
        plan.strategy = "custom"
        self.planning.recost(plan)             # the roofline now ...
        self.model.doc.set_custom_plan(plan)         # shown at once where custom is shown already
        self.state.strategy = "custom"      # it has a plan now (Strategies.set_strategy's guard passes)
        if self.model.cost != "roofline":
            self.planning.reprice(["custom"])  # ... the chosen estimator's figures when priced (off the UI thread)
        self.status(f"Imported {os.path.basename(str(path))} as 'custom': {plan.kernels} kernels")
        return plan

    def export_graph(self, path=None, fmt: str = "png"):
        if self.model.doc is None or self.area.left.scene().graph is None:
            self.show_error("nothing to export yet", "Export graph")
            return None
        p = self._save_path(f"Export graph as {fmt.upper()}", f"{fmt.upper()} (*.{fmt})", f".{fmt}", path)
        if not p:
            return None
        try:
            if fmt == "svg":
                self.area.left.scene().render_svg(p, f"{self.model.doc.name} - {self.state.strategy}")
            else:
                self.area.left.scene().render_png(p)
        except Exception as e:  # noqa: BLE001
            self.show_error(str(e), "Export graph")
            return None
        self.status(f"Wrote {p}")
        return p

    def export_csv(self, path=None):
        if self.model.doc is None:
            self.show_error("open a model first", "Export results")
            return None
        p = self._save_path("Export results", "CSV (*.csv)", ".results.csv", path)
        if not p:
            return None
        try:
            n = write_results_csv(self.model.doc, p)
        except OSError as e:
            self.show_error(str(e), "Export results")
            return None
        self.status(f"Wrote {n} rows to {p}")
        return p

    def open_dropped(self, path: str):
        if path.lower().endswith(".json") and self.model.doc is not None:
            self.import_plan(path)
        else:
            self.open_model(path)
