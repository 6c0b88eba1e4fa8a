"""The app's state in one object (napari's ViewerModel), without Qt: what the controllers are given and
change, and what the views subscribe to.

    workspace  Workspace: the open Document, its plans and results, devices, profile, cost, budget, requests
    view       ViewState: the strategies shown, side by side, heat on and its scale, collapsed groups, selection
    scopes     ScopeView: the model's blocks shown, and those collapsed
    layout     LayoutModel: the direction, the layouts applied, and how the shown one was made
    heat       HeatModel: what each pane draws over its graph (heat or latency delta), the minimaps shown
    differences  DifferencesModel: side by side, the groups only one plan has and the one shown
    find       FindModel: what the find box's label says
    messages   Messages: the status line and the last error (napari's ViewerModel.status)

A controller takes the AppModel (and the other controllers it asks for work), never the window: where
a controller still drives a view, the view is passed to it by name, and tests/gui/test_gui_structure.py
counts those references so they only go down.
"""
from __future__ import annotations

from dataclasses import dataclass

from .evented import EventedModel
from .messages import Messages
from .scope_view import ScopeView
from .view_state import ViewState


class LayoutModel(EventedModel):
    """The graph's layout: `direction` ("TB" top to bottom, "LR" left to right), `full` (the current
    strategy's layout of every op, or None), `compact` (the layout shown places the collapsed groups as
    one node), `shown` (the layout the left pane is drawn at), and how the shown layout was made (`how`:
    the status bar's label, `note`: its tooltip). The layout controller asks for layouts and hands them
    over (`arrived`); the panes (gui/pane_layouts.py) apply them and keep `full`, `compact` and `shown`."""

    direction: str = "TB"
    full: object = None
    compact: bool = False
    shown: object = None    # the Layout the left pane is drawn at now (the panes keep it current)
    how: str = ""
    note: str = ""
    # requested(token, anchor): a layout is asked for; arrived(layout, pending, provisional, kept): one is
    # here for the panes; drawn: a pane shows a plan at new positions; applied(layout): the panes are drawn
    # hold(nid): the next layout asked for keeps op `nid` where it is drawn now (inside a collapsed block)
    EVENTS = ("requested", "arrived", "drawn", "applied", "hold")


@dataclass(frozen=True, eq=False)
class PaneHeat:
    """What one pane draws over its graph: `heat` (the overlay's values, scale, source and title, or None)
    for `plan`; `checked`: a pane showing another plan than `plan` (an older one) keeps what it draws."""
    checked: bool
    plan: object
    heat: dict | None


class HeatModel(EventedModel):
    """The overlays over the two panes: `left` and `right` (PaneHeat, or None before the first), and
    whether the minimaps are shown. events.minimaps(panes=...): the overlay changed in a way the
    minimaps of those panes show."""

    left: object = None
    right: object = None
    minimap: bool = False
    EVENTS = ("minimaps",)


class DifferencesModel(EventedModel):
    """Side by side: the fused groups only one of the two plans has, as `rows` of (strategy, group index,
    its op ids, "left" | "right"), in graph order; `current`: the row shown (-1: none yet;
    events.current(value=, show=True) when it is to be shown, not only marked); `head`: what the panel's
    header says (None: side by side is off; (left, right, None): planning; (left, right, k): k rows only
    in left); `summary`: (Document, left, right) for the summary line above the panes."""

    rows: tuple = ()
    current: int = -1
    head: object = None
    summary: object = None


class FindModel(EventedModel):
    """The find box's label: how many ops match, or which match is shown ("3/12")."""

    label: str = ""


class AppModel:
    def __init__(self, workspace, view: ViewState, scopes: ScopeView | None = None,
                 messages: Messages | None = None, layout: LayoutModel | None = None, heat: HeatModel | None = None,
                 differences: DifferencesModel | None = None, find: FindModel | None = None):
        self.workspace = workspace
        self.view = view
        self.scopes = scopes if scopes is not None else ScopeView()
        self.messages = messages if messages is not None else Messages()
        self.layout = layout if layout is not None else LayoutModel()
        self.heat = heat if heat is not None else HeatModel()
        self.differences = differences if differences is not None else DifferencesModel()
        self.find = find if find is not None else FindModel()

    @property
    def status(self) -> str:
        """The status line's last message (napari's `viewer.status`)."""
        return self.messages.status
