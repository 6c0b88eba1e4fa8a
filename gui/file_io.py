"""Opening models and moving plans and results in and out: open (a path, the recent list, a dropped
file), input shapes for dynamic dimensions, and import / export of plan JSON and the results CSV.

`load_model` runs on a worker thread and touches no Qt object; `Files` is the window's controller: it is
given paths and shapes (gui/file_prompts.py, a view, asks the user for them) and emits what it needs
asked (events.shapes_wanted) and the Document it loaded (events.opened: the window shows it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.jobs.open_model import NeedShapes, open_model
from engine.util.errors import FuseLensError

from .document import Document, write_results_csv
from .events import EmitterGroup
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


@dataclass(frozen=True)
class ShapesQuestion:
    """Input shapes to ask for: the model `spec` and its file `path`, its `inputs` [(name, dims)], the
    shapes `remembered` (or None), the inputs whose values choose a branch (`values`) and shapes the
    model's own metadata suggests (`examples`, or None)."""
    spec: str
    path: str
    inputs: list
    remembered: dict | None
    values: list | None = None
    examples: dict | None = None


def document_from(r: dict) -> Document:
    """The Document for what `load_model` / `plan_fast` returned."""
    return Document(spec=r["spec"], shapes=r["shapes"], graph=r["graph"], hw=r["hw"], plans=r["plans"],
                    plan_errors=r["errors"])


class Files:
    """The File menu's controller: open (a path, the recent list, a dropped file, input shapes), and
    import / export of plans and results. It is given the models (the AppModel: the Workspace with the
    open Document and device, the ViewState, the Messages; the Settings), the Activity and the Planning
    controller (pricing an imported plan). events.opened(doc, plan_tvm, cached): a loaded model for the
    window to show; events.shapes_wanted(question): input shapes to ask for (the answer comes back as
    `shapes_given` or `shapes_refused`). Where nothing is shown yet, the graph area's placeholder says
    what happens (Messages.place)."""

    def __init__(self, app, settings, activity, planning):
        self.model, self.state, self.settings = app.workspace, app.view, settings
        self.activity, self.planning, self.messages = activity, planning, app.messages
        self.status, self.show_error = app.messages.show, app.messages.fail
        self.events = EmitterGroup(self, "opened", "shapes_wanted")
        self._layouts: dict[str, str] = {}   # device -> its channel layout ("NCHW16c", "NCHW")

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

    def recent(self) -> list[str]:
        """The recent models, newest first (File > Open Recent lists them)."""
        return self.settings.recent()

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
            self.load_failed(str(e))
            return
        req = self.model.request("load")
        self.messages.clear_error()
        name = os.path.basename(spec) if not spec.startswith("zoo:") else spec
        if self.model.doc is None:
            self.messages.place(f"Opening {name} ...")
        self.activity.run("load", text or f"Opening {name}", load_model, Opening(spec, given or None, remembered, setup),
                       background=True, request=req,
                       on_done=self.loaded, on_failed=self.load_failed,
                       on_cancelled=lambda: self.status("Opening cancelled"))

    def load_failed(self, msg):
        """The worker could not open the model: the error (and, with nothing open, the placeholder says so)."""
        if self.model.doc is None:
            self.messages.place("Could not open the model. Use File > Open (Ctrl+O) or File > Open Sample.")
        self.show_error(msg, "Could not open the model")

    def loaded(self, r):
        """The worker's answer: the Document to show (events.opened), or shapes to ask for (events.shapes_wanted)."""
        if r is None:
            return
        if isinstance(r, NeedShapes):
            self.events.shapes_wanted(question=ShapesQuestion(r.spec, r.path, r.inputs, r.remembered, r.values,
                                                              getattr(r, "examples", None)))
            return
        if r["shapes"] and not r["spec"].startswith("zoo:"):
            self.settings.remember_shapes(r["spec"], r["shapes"])
        self.settings.add_recent(r["spec"])
        self.events.opened(doc=document_from(r), plan_tvm=True, cached=r["cached"])
        self.follow_device()   # another device was chosen while it opened: open it in that one's layout

    def open_graph(self, graph, spec: str | None = None):
        """Show an OpGraph that did not come from a file (a generated one): plans it off the UI thread."""
        req = self.model.request("load")
        self.activity.run("load", f"Planning {graph.name}", plan_fast, graph, spec or f"generated:{graph.name}",
                       graph.input_shapes, self.model.setup, background=True, request=req,
                       on_done=lambda r: self.events.opened(doc=document_from(r), plan_tvm=False, cached=r["cached"]),
                       on_failed=lambda m: self.show_error(m, "Planning failed"))

    def shapes_given(self, q: ShapesQuestion, shapes: dict):
        """The answer to events.shapes_wanted: open the model with `shapes` (remembered for its file)."""
        if not q.path.startswith("zoo:"):
            self.settings.remember_shapes(q.path, shapes)
        self.open_model(q.spec, shapes)

    def shapes_refused(self, q: ShapesQuestion):
        """No answer to events.shapes_wanted: the model is not opened."""
        self.status("Opening cancelled: no input shapes given")
        if self.model.doc is None:
            self.messages.place("No model loaded.")

    def ask_shapes_again(self):
        """Set Input Shapes: ask for the open model's input shapes again (events.shapes_wanted)."""
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
        self.events.shapes_wanted(question=ShapesQuestion(
            self.model.doc.spec, self.model.doc.spec, inputs, self.model.doc.shapes,
            onnx_input.inputs_choosing_branches(model), onnx_input.example_shapes(model, inputs)[0]))

    def ready_to_export(self, where: str) -> bool:
        """Whether there is a model to export from (else the error, under `where`)."""
        if self.model.doc is None:
            self.show_error("open a model first", where)
            return False
        return True

    def suggested_name(self, suffix: str, strategy: str | None = None) -> str:
        """The file name an export suggests: MODEL-STRATEGY.SUFFIX."""
        doc = self.model.doc
        return f"{doc.name.replace('@', '_')}-{strategy or self.state.strategy}{suffix}" if doc else f"fuselens{suffix}"

    def export_plan(self, path, strategy: str | None = None):
        """Write `strategy`'s plan (default: the one shown) as plan JSON to `path`; the path, or None."""
        if not self.ready_to_export("Export plan"):
            return None
        strategy = strategy or self.state.strategy
        p = str(path)
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

    def ready_to_import(self) -> bool:
        """Whether a plan can be imported (a model is open; else the error)."""
        if self.model.doc is None:
            self.show_error("open the plan's model first", "Import plan")
            return False
        return True

    def import_plan(self, path):
        """Load the plan JSON at `path` as the "custom" strategy; the Plan, or None (the error shown)."""
        if not self.ready_to_import():
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

    def export_csv(self, path):
        """Write the results measured so far as CSV to `path`; the path, or None."""
        if not self.ready_to_export("Export results"):
            return None
        p = str(path)
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
