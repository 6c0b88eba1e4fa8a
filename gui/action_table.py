"""The window's commands as a table (no Qt): each row names an action, its menu text, its shortcuts,
what it does, and when it is enabled or checked. gui/actions.py builds the window's QActions from it
(`win.acts[name]`), in this order (the Help > Keyboard Shortcuts list follows it), and the menus and
the toolbar place them by name.

A handler takes the window (and, for a checkable action, whether it is now checked) and hands over to
one controller of the window or sets one of its models; nothing here holds state. `enabled_when(win)`
and `checked_when(win)` are read when the actions are built and again by `actions.refresh(win)`.
A shortcut is a key sequence ("Ctrl+I"), or "std:NAME" for Qt's standard key NAME (QKeySequence.NAME).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


def all_strategies() -> list[str]:
    """The planner's strategies and 'custom' (an imported plan)."""
    from engine.planner import STRATEGIES

    return list(STRATEGIES) + ["custom"]


@dataclass(frozen=True)
class Action:
    name: str                                   # win.acts[name]
    text: str                                   # the menu text, with its & mnemonic
    handler: Callable                           # handler(win) or, checkable, handler(win, checked)
    shortcuts: tuple[str, ...] = ()
    checkable: bool = False
    tip: str = ""                               # the status tip (and tooltip)
    icon_text: str = ""                         # the toolbar's shorter text
    enabled_when: Callable | None = None        # enabled_when(win) -> bool; None: always
    checked_when: Callable | None = None        # checked_when(win) -> bool, for a checkable action


def _keys(*k: str) -> tuple[str, ...]:
    return tuple(k)


def _fixed() -> list[Action]:
    A = Action
    return [
        A("open", "&Open...", lambda w: w.prompts.open(), _keys("std:Open"), tip="Open an ONNX model"),
        A("shapes", "Set &Input Shapes...", lambda w: w.files.ask_shapes_again()),
        A("import", "&Import Plan...", lambda w: w.prompts.import_plan(), _keys("Ctrl+I"),
          tip="Load a plan JSON and show it as the 'custom' strategy"),
        A("import_ort", "Import ONNX &Runtime Profile...", lambda w: w.import_ort_profile(),
          tip="Colour groups by an ONNX Runtime profile (SessionOptions.enable_profiling JSON) "
              "beside FuseLens's own heat overlay (View > Heat Source)"),
        A("export_plan", "Export &Plan as JSON...", lambda w: w.prompts.export_plan(), _keys("Ctrl+E")),
        A("export_svg", "Export Graph as &SVG...", lambda w: w.prompts.export_graph(fmt="svg")),
        A("export_png", "Export Graph as P&NG...", lambda w: w.prompts.export_graph(fmt="png")),
        A("export_csv", "Export &Results as CSV...", lambda w: w.prompts.export_csv()),
        A("quit", "&Quit", lambda w: w.close(), _keys("std:Quit")),
        A("fit", "&Fit to Window", lambda w: w.zoom_views("fit"), _keys("F", "Space")),
        A("fit_all", "Whole &Graph", lambda w: w.zoom_views("fit_all"), _keys("Shift+F")),
        A("actual", "&Actual Size", lambda w: w.zoom_views("actual_size"), _keys("Ctrl+0")),
        A("zoom_in", "Zoom &In", lambda w: w.area.left.zoom(1.25), _keys("std:ZoomIn", "Ctrl+=")),
        A("zoom_out", "Zoom &Out", lambda w: w.area.left.zoom(0.8), _keys("std:ZoomOut")),
        A("side", "&Side by Side", lambda w, on: w.strategies.set_side_by_side(on), _keys("Ctrl+D"), checkable=True,
          tip="Compare two strategies in split panes with synchronised pan and zoom",
          checked_when=lambda w: w.state.side_by_side),
        A("heat", "&Heat Overlay", lambda w, on: setattr(w.state, "heat", on), _keys("H"), checkable=True,
          tip="Colour groups by measured kernel time (or estimated cost)", checked_when=lambda w: w.state.heat),
        A("log", "&Log Scale", lambda w, on: setattr(w.state, "heat_log", on), _keys("L"), checkable=True,
          checked_when=lambda w: w.state.heat_log),
        A("minimap", "&Minimap", lambda w, on: w.overlays.set_minimap(on), _keys("M"), checkable=True,
          checked_when=lambda w: w.settings.minimap),
        A("kernel_code", "Show &Kernel Code", lambda w: w.kernel_code.show_selected(), _keys("K"),
          tip="The selected group's kernel: the schedule rule, vector width, loop nest, TIR, LLVM IR "
              "and assembly (or CUDA source), and its measured time (also: right-click a group)"),
        A("heat_source:fuselens", "FuseLens (measured or estimated)",
          lambda w, on: setattr(w.ort_heat, "source", "fuselens"), checkable=True,
          checked_when=lambda w: w.ort_heat.source == "fuselens"),
        A("heat_source:ort", "ONNX Runtime Profile", lambda w, on: setattr(w.ort_heat, "source", "ort"),
          checkable=True, enabled_when=lambda w: w.ort_heat.profile is not None,   # while a profile is imported
          checked_when=lambda w: w.ort_heat.source == "ort"),
        A("collapse", "&Collapse Group", lambda w: w.selection.collapse_selected(), _keys("C")),
        A("expand", "&Expand Group", lambda w: w.selection.expand_selected(), _keys("E")),
        A("collapse_all", "Collapse &All Groups", lambda w: w.selection.collapse_all(), _keys("Ctrl+Shift+C")),
        A("expand_all", "E&xpand All Groups", lambda w: w.selection.expand_all(), _keys("Ctrl+Shift+E")),
        A("find", "&Find...", lambda w: w.find_box.focus(), _keys("std:Find")),
        A("find_next", "Find &Next", lambda w: w.finder.step(+1), _keys("std:FindNext", "F3")),
        A("find_prev", "Find &Previous", lambda w: w.finder.step(-1), _keys("std:FindPrevious", "Shift+F3")),
        A("diff_next", "Next &Difference", lambda w: w.differences.step(+1), _keys("N"),
          tip="Side by side: select and centre the next group only one plan has"),
        A("diff_prev", "Previous Di&fference", lambda w: w.differences.step(-1), _keys("Shift+N"),
          tip="Side by side: select and centre the previous group only one plan has"),
        A("bench", "&Benchmark", lambda w: w.bench.benchmark(), _keys("Ctrl+B"),
          tip="Build and time the shown strategies on the selected device"),
        A("bench_all", "Benchmark &All Strategies", lambda w: w.bench.benchmark(all_strategies=True),
          _keys("Ctrl+Shift+B")),
        A("kernel_report", "Measure Kernels vs &ONNX Runtime", lambda w: w.kernel_report.measure(),
          tip="Time every kernel of the shown plan beside ONNX Runtime's per-node profile: "
              "FLOP/s and bytes/s as shares of the profile's peaks, the bound, ORT's time (Properties, Kernels)"),
        A("tune", "&Tune Kernels...", lambda w: w.tuning.tune(), _keys("Ctrl+T"), icon_text="Tune...",
          tip="Tune the shown strategy's kernels with MetaSchedule on the selected device "
              "(a budget of trials or minutes); the next Benchmark uses what it finds"),
        A("time_kernels", "Time &Kernels (Cost Model)", lambda w: w.fidelity.time_kernels(),
          tip="Build and time every kernel of the shown plan on the selected device and plot the "
              "cost model's estimate of each against its time (the Cost Model panel)"),
        A("cancel", "&Cancel", lambda w: w.activity.cancel(), _keys("Esc")),
        A("shortcuts", "&Keyboard Shortcuts", lambda w: w.show_shortcuts(), _keys("std:HelpContents")),
        A("about", "&About FuseLens", lambda w: w.show_about()),
    ]


def table(strategies: list[str], tips: dict[str, str]) -> list[Action]:
    """Every action, in order: the fixed ones, one per strategy (Alt+1..) and Recent 1..9 (Ctrl+1..9)."""
    rows = _fixed()
    rows += [Action(f"strategy:{s}", f"Strategy: {s}", lambda w, on, s=s: w.strategies.set_strategy(s),
                    (f"Alt+{k + 1}",), checkable=True, tip=tips.get(s, ""),
                    checked_when=lambda w, s=s: w.state.strategy == s)
             for k, s in enumerate(strategies)]
    rows += [Action(f"recent:{i}", f"Recent {i + 1}", lambda w, i=i: w.files.open_recent(i), (f"Ctrl+{i + 1}",))
             for i in range(9)]
    names = [r.name for r in rows]
    if len(set(names)) != len(names):
        raise ValueError("two actions share a name")
    return rows

