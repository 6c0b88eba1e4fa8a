"""The app's shape (issue 32, step 4): controllers change models, views subscribe to them.

A controller is given the AppModel (gui/app_model.py: the Workspace, the ViewState, the ScopeView, the
LayoutModel and the Messages) and the other controllers it hands work to; it imports no Qt widget and
no view module, and reaches no view through its own attributes (no controller does: the last two, the
File menu's dialogs and the Kernel code window, now answer model events in gui/file_prompts.py and
gui/kernel_code_view.py). The models are Qt-free and usable without a window (tests below), and the window's
commands are one table (gui/action_table.py).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# module -> the controller class in it
CONTROLLERS = {
    "activity": "Activity", "bench_controller": "Benchmarks", "differences": "Differences",
    "fidelity_controller": "FidelityController", "file_io": "Files", "find": "Find", "layout_controller": "Layouts",
    "ort_heat": "OrtHeat", "planning": "Planning", "scope_controller": "Scopes", "selection": "Selection",
    "strategies": "Strategies", "tune_controller": "Tuning", "kernel_code_controller": "KernelCodeController",
    "kernel_reports": "KernelReportController", "overlays": "Overlays",
}
# what a controller may be given: the AppModel, the settings, the Activity (work in flight) and other controllers
MODEL_PARAMS = {"app", "settings", "activity", "files", "planning", "tuning", "layouts", "differences", "store",
                "kernel_reports", "time_limit_s", "selection", "scopes"}
QT_WIDGETS = ("PySide6.QtWidgets", "PySide6.QtGui", "PySide6.QtSvg", "pyqtgraph")
VIEW_MODULES = ("gui.graph", "gui.panels", "gui.dialogs", "gui.graph_area", "gui.main_window", "gui.actions",
                "gui.plain", "gui.style", "gui.chart_export")
# names by which a controller reaches a view: the panes and docks, the status bar's widgets, a scene
VIEW_ATTRS = {"area", "panel", "parent", "props_dock", "device_box", "latency_dock", "dock_cost", "dock_latency",
              "layout_label", "progress", "cancel_button", "bar", "edit", "label", "view", "rview"}
VIEW_CALLS = {"scene", "statusBar", "raise_"}

# the controllers' constructor parameters in all (105 before issue 32 step 4): only ever down
PARAM_BUDGET = 43


def _imports(tree, module: str) -> set[str]:
    pkg = module.rsplit(".", 1)[0]
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in n.names}
    return out


def view_uses(source: str, module: str, cls: str) -> tuple[set[str], list[str]]:
    """What the controller class `cls` in `source` (module `module`, "gui.x") does with views: "param NAME"
    (a constructor parameter that is not a model or controller), "import M" (a Qt widget or view module,
    anywhere in the module), "self.NAME" (a view attribute it touches), ".scene()" / ".statusBar()" /
    ".raise_()" (a call into a pane or a dock). Also returns its constructor parameters."""
    tree = ast.parse(source)
    found: set[str] = set()
    imps = _imports(tree, module)
    hits = {i for i in imps if i in QT_WIDGETS or i in VIEW_MODULES or i.startswith(("gui.graph.", "gui.panels."))}
    found |= {f"import {h}" for h in hits if h.rsplit(".", 1)[0] not in hits}   # a module, not its names
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    init = next((f for f in klass.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    params = [a.arg for a in (init.args.args[1:] + init.args.kwonlyargs)] if init else []
    view_params = {p for p in params if p not in MODEL_PARAMS}
    found |= {f"param {p}" for p in view_params}
    for n in ast.walk(klass):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                and (n.attr in VIEW_ATTRS or n.attr in view_params):
            found.add(f"self.{n.attr}")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in VIEW_CALLS:
            found.add(f".{n.func.attr}()")
    return found, params


def _controller(module: str):
    path = ROOT / "gui" / f"{module}.py"
    return view_uses(path.read_text(), f"gui.{module}", CONTROLLERS[module])


@pytest.mark.parametrize("module", sorted(CONTROLLERS))
def test_controllers_never_call_into_views(module):
    found, _ = _controller(module)
    assert found == set(), f"gui/{module}.py reaches views: {sorted(found)}"


def test_controllers_take_few_parameters_and_no_message_callables():
    total = 0
    for module in CONTROLLERS:
        _, params = _controller(module)
        total += len(params)
        assert not {"status", "show_error", "model", "state"} & set(params), (module, params)
    assert total <= PARAM_BUDGET, f"the controllers take {total} constructor parameters (budget {PARAM_BUDGET})"


def test_the_check_finds_a_deliberate_violation():
    clean = "class C:\n    def __init__(self, app, activity):\n        self.model = app.workspace\n" \
            "    def go(self):\n        self.model.set_device('cpu')\n"
    assert view_uses(clean, "gui.probe", "C") == (set(), ["app", "activity"])
    bad = ("from PySide6 import QtWidgets\nfrom .graph.scene import GraphScene\n"
           "class C:\n    def __init__(self, app, area):\n        self.area = area\n"
           "    def go(self):\n        from . import dialogs\n        self.area.left.scene().set_plan(None)\n"
           "        self.parent.statusBar()\n")
    found, _ = view_uses(bad, "gui.probe", "C")
    assert found == {"import PySide6.QtWidgets", "import gui.graph.scene", "import gui.dialogs", "param area",
                     "self.area", "self.parent", ".scene()", ".statusBar()"}
    # and in a real controller: planning.py is clean; one line pushing into a pane is caught
    src = (ROOT / "gui" / "planning.py").read_text()
    assert view_uses(src, "gui.planning", "Planning")[0] == set()
    pushed = src.replace("    def plan_tvm(self):", "    def plan_tvm(self):\n        self.area.left.scene().clear()", 1)
    assert pushed != src
    assert view_uses(pushed, "gui.planning", "Planning")[0] == {"self.area", ".scene()"}


def test_the_models_import_no_qt():
    import gui.action_table
    import gui.app_model
    import gui.evented
    import gui.messages

    for mod in (gui.app_model, gui.evented, gui.messages, gui.action_table):
        tree = ast.parse(Path(mod.__file__).read_text())
        assert not {i for i in _imports(tree, mod.__name__) if i.startswith(("PySide6", "pyqtgraph"))}, mod.__name__


# ---- the evented base and the models, without a window ------------------------------------------------

def test_an_evented_model_has_typed_fields_and_one_event_each():
    from gui.evented import EventedModel

    class M(EventedModel):
        on: bool = False
        keys: frozenset = frozenset()
        thing: object = None
        EVENTS = ("poked",)

    m = M(on=1)
    assert m.on is True and M.FIELDS == ("on", "keys", "thing") and set(m.events.names) == {"on", "keys", "thing", "poked"}
    got = []
    for n in m.events.names:
        m.events[n].connect(lambda ev: got.append((ev.type, ev.value if hasattr(ev, "value") else None)))
    m.on = True                      # unchanged: nothing
    m.keys = {"a"}                   # converted, emitted once
    m.keys = frozenset({"a"})
    a, b = [1], [1]
    m.thing = a
    m.thing = b                      # equal but another object: a change
    m.thing = b
    assert m.set("on", True, force=True)
    assert got == [("keys", frozenset({"a"})), ("thing", a), ("thing", b), ("on", True)]
    assert m.keys == frozenset({"a"}) and m.thing is b
    with pytest.raises(TypeError):
        M(nope=1)
    with pytest.raises(TypeError):
        type("Bad", (EventedModel,), {"__annotations__": {"x": "int"}})


def test_messages_replace_the_status_callables():
    from gui.app_model import AppModel
    from gui.view_state import ViewState

    app = AppModel(workspace=None, view=ViewState())
    shown, errors = [], []
    app.messages.events.status.connect(lambda ev: shown.append((ev.value, ev.ms)))
    app.messages.events.error.connect(lambda ev: errors.append(ev.value))
    app.messages.show("Loaded g", 15000)
    app.messages.show("Loaded g", 15000)          # shown again: its timeout restarts
    app.messages.fail("boom", "Layout failed")
    app.messages.fail("x" * 5000)
    assert shown == [("Loaded g", 15000), ("Loaded g", 15000)] and app.status == "Loaded g"
    assert errors[0] == "Layout failed: boom" and len(errors[1]) == app.messages.MAX_ERROR_CHARS
    assert errors[1].endswith("...") and app.messages.error == errors[1]
    assert app.messages.line == errors[1][:200]   # what the status line shows: the error's first line, cut
    app.messages.show("stage", 0)
    assert app.messages.line == "stage" and shown[-1] == ("stage", 0)


def test_the_view_state_and_layout_model_are_evented_models():
    from gui.app_model import LayoutModel
    from gui.evented import EventedModel
    from gui.scope_view import ScopeView
    from gui.view_state import ViewState

    assert all(isinstance(m, EventedModel) for m in (ViewState(), ScopeView(), LayoutModel()))
    lm, seen = LayoutModel(), []
    lm.events.direction.connect(lambda ev: seen.append(ev.value))
    lm.direction = "LR"
    lm.direction = "LR"
    assert seen == ["LR"] and ViewState("dp").right_strategy == "greedy"


def test_the_actions_table_names_each_action_once_with_a_handler():
    from gui.action_table import table

    rows = table(["greedy", "dp"], {"dp": "dynamic programming"})
    names = [r.name for r in rows]
    assert len(names) == len(set(names)) and {"open", "tune", "heat", "strategy:dp", "recent:8"} <= set(names)
    assert all(callable(r.handler) for r in rows)
    assert all(r.checked_when is None or r.checkable for r in rows)
    tune = next(r for r in rows if r.name == "tune")
    assert tune.shortcuts == ("Ctrl+T",) and tune.icon_text == "Tune..."
    assert next(r for r in rows if r.name == "strategy:dp").tip == "dynamic programming"


def test_files_asks_for_shapes_through_an_event_and_places_the_placeholder():
    """Files (gui/file_io.py) without a window: a question for input shapes is an event, a refusal says so
    in the status line and the graph area's placeholder, and exporting with no model is one error."""
    from gui.app_model import AppModel
    from gui.file_io import Files, NeedShapes, ShapesQuestion
    from gui.view_state import ViewState
    from gui.workspace import Workspace

    app = AppModel(workspace=Workspace(), view=ViewState())
    files = Files(app, settings=None, activity=None, planning=None)
    asked, placed, errors = [], [], []
    files.events.shapes_wanted.connect(lambda ev: asked.append(ev.question))
    app.messages.events.placeholder.connect(lambda ev: placed.append(ev.value))
    app.messages.events.error.connect(lambda ev: errors.append(ev.value))
    q = ShapesQuestion("m.onnx", "/x/m.onnx", [("x", ["N", 3])], None)
    files.loaded(NeedShapes(spec=q.spec, path=q.path, inputs=q.inputs, remembered=None))
    assert [a.spec for a in asked] == ["m.onnx"] and asked[0].inputs == [("x", ["N", 3])]
    files.shapes_refused(asked[0])
    assert placed == ["No model loaded."] and app.status == "Opening cancelled: no input shapes given"
    assert files.export_plan("/tmp/never.json") is None and errors == ["Export plan: open a model first"]
    assert not files.ready_to_import() and errors[-1] == "Import plan: open the plan's model first"
    app.messages.clear_error()
    assert errors[-1] == "" and files.suggested_name(".csv") == "fuselens.csv"


def test_the_kernel_code_model_is_what_the_window_draws(qapp):
    """The Kernel code controller fills a KernelCodeModel (no window): asking with no model open is one
    error and opens nothing; closing the window stops following the selection."""
    from gui.app_model import AppModel
    from gui.kernel_code_controller import KernelCodeController, KernelCodeModel
    from gui.view_state import ViewState
    from gui.workspace import Workspace

    app = AppModel(workspace=Workspace(), view=ViewState())
    kc = KernelCodeController(app, kernel_reports=None, activity=None)
    assert isinstance(kc.code, KernelCodeModel) and not kc.code.open
    errors = []
    app.messages.events.error.connect(lambda ev: errors.append(ev.value))
    kc.show("dp", 0)
    kc.show_selected()
    assert errors == ["Kernel code: open a model first",
                      "Kernel code: select a group or an operator first (or right-click one)"]
    assert not kc.code.open and kc.code.left is None and kc.group_of("left", ("group", 0)) is None
    kc.code.open = True
    kc.closed()
    assert not kc.code.open
