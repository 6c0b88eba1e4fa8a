"""The Kernel code view's controller and model (issue 30): what the compiler made of a fused group.

`KernelCodeModel` is what the window shows (gui/kernel_code_view.py draws it and never decides): the
target the code is built for, the window's title and state line, each side's kernels, and whether it is
open. `KernelCodeController` fills it: for a group named from a pane's context menu, for the selection
("Show Kernel Code", K), or for another group selected while the window is open (after FOLLOW_MS).

The code is built by engine/jobs/kernel_code.py in a child process (TVM's FuseTIR, the schedule rules and
LLVM's or NVRTC's code generation), started off the UI thread through the window's Activity (task
"kernel_code", Cancel stops it); the measured figures are looked up on that thread too. This module
imports no Qt widget (a QTimer paces following the selection).
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6 import QtCore

from .evented import EventedModel

MAX_OTHERS = 6            # side by side: at most this many of the other plan's kernels are built
FOLLOW_MS = 400           # the window follows the selection this long after the last click
DEFAULT_TITLE = "Kernel Code"


def _launches(graph, group) -> bool:   # engine.report.kernel_code.launches, imported when used
    from engine.report.kernel_code import launches

    return launches(graph, group)


# ---- the worker (no Qt) ------------------------------------------------------------------------------

def build_codes(spec, shapes, block, sha, requests, target, lookups, progress=None, cancel=None) -> list:
    """Worker: the KernelCode (or an error line) of each request, built in a child process
    (engine/jobs/kernel_code.py), each with its measured time where `lookups` has the figures to look
    in: {"graph", "plan", "setup", "bench", "figure"} per request (None: not measured; "setup": the
    device's Setup, Workspace.setup_of). `target`: the Target the code is built for."""
    from engine.jobs.kernel_code import kernel_code
    from engine.report.kernel_code import measured

    codes = kernel_code(spec, shapes, block, sha, requests, target, progress=progress, cancel=cancel)
    for kc, req, lk in zip(codes, requests, lookups):
        if isinstance(kc, str) or lk is None:
            continue
        try:
            kc.measured = measured(lk["graph"], lk["plan"], req["group"], lk["setup"],
                                   bench=lk.get("bench"), figure=lk.get("figure"))
        except Exception:  # noqa: BLE001 - a figure that cannot be read is no figure
            kc.measured = None
    return codes


# ---- the model ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One side of the window: its `heading`, its `codes` (KernelCode, or an error line) and a title
    for each (the picker lists them when there are several)."""
    heading: str
    codes: tuple
    titles: tuple


class KernelCodeModel(EventedModel):
    """What the Kernel code window shows: `target` (the target box: "cpu", "cuda:sm_75", ...), `title`
    (the window's), `state` (the line beside the target box), `left` (a Side: the group's kernel),
    `right` (a Side: side by side, the other strategy's kernels over the same ops; None: hidden), and
    `open` (the window is shown; events.raised: bring it to the front)."""

    target: str = "cpu"
    title: str = DEFAULT_TITLE
    state: str = ""
    left: object = None
    right: object = None
    open: bool = False
    EVENTS = ("raised",)


# ---- the controller ----------------------------------------------------------------------------------

class KernelCodeController:
    """Fills the KernelCodeModel (`code`) for a group. Given the AppModel (the Workspace, the ViewState,
    the Messages), the KernelReports store (measured figures) and the Activity it runs through. The
    window (gui/kernel_code_view.py) draws `code` and hands its requests back: `show`, `set_target`,
    `closed`; a pane's context menu asks `group_of` what is under the cursor."""

    def __init__(self, app, kernel_reports, activity):
        self.model, self.state, self.reports, self.activity = app.workspace, app.view, kernel_reports, activity
        self.status, self.show_error = app.messages.show, app.messages.fail
        self.code = KernelCodeModel()
        self.shown: tuple | None = None      # (strategy, group index) shown
        self.codes: list = []                # the last answer: [KernelCode | str]
        self.model.events.document.connect(lambda ev: self._closed_document())
        # while the window is open, selecting another group shows that one (after a pause: clicks in a row
        # build only the last)
        self._follow = QtCore.QTimer()
        self._follow.setSingleShot(True)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self._follow_selection)
        self.state.events.selection.connect(lambda ev: self._follow.start() if self.code.open else None)
        self._target_chosen = False          # the user picked a target: it stays; else the device's

    # -- which group --
    def _strategy_of(self, pane: str) -> str:
        return self.state.right_strategy if pane == "right" else self.state.strategy

    def group_of(self, pane: str, item) -> tuple[str, int] | None:
        """(strategy, group index) of a pane's item ("group", gi) | ("collapsed", gi) | ("node", id)."""
        doc = self.model.doc
        if doc is None or not item:
            return None
        s = self._strategy_of(pane)
        plan = doc.plans.get(s)
        if plan is None:
            return None
        kind, val = item
        if kind in ("group", "collapsed") and isinstance(val, int) and 0 <= val < len(plan.groups):
            return s, val
        if kind == "node":
            gi = plan.group_of().get(val)
            return (s, gi) if gi is not None else None
        return None

    def _follow_selection(self):
        if not self.code.open:
            return
        sel = self.state.selection
        hit = self.group_of(sel.pane, sel.shown)
        if hit is not None and hit != self.shown and self.model.doc is not None \
                and _launches(self.model.doc.graph, self.model.doc.plans[hit[0]].groups[hit[1]]):
            self.show(*hit, pane=sel.pane)

    def show_selected(self):
        """The window's action: the selected group (or the group of the selected op)."""
        sel = self.state.selection
        hit = self.group_of(sel.pane, sel.shown)
        if hit is None:
            self.show_error("select a group or an operator first (or right-click one)", "Kernel code")
            return
        self.show(*hit, pane=sel.pane)

    # -- the window's requests --
    def set_target(self, spec: str):
        """The target box: build the code shown again for `spec`."""
        self._target_chosen = True
        self.code.target = spec
        if self.shown is not None:
            self.show(*self.shown)

    def closed(self):
        """The window was closed: it no longer follows the selection."""
        self.code.open = False

    # -- building --
    def _default_target(self) -> str:
        try:
            t = self.model.setup.target
        except Exception:  # noqa: BLE001 - a device the engine cannot resolve: the CPU
            return "cpu"
        return t.build_for if t.is_gpu and ":sm_" in t.build_for else "cuda:sm_75" if t.is_gpu else \
            t.build_for if t.build_for != "cpu" else "cpu"

    def show(self, strategy: str, gi: int, pane: str = "left", target: str | None = None):
        """Build and show the code of group `gi` of `strategy`'s plan (side by side, with the other
        strategy's kernels over the same ops) for `target` (default: the target box's, the device's
        until one is picked)."""
        from engine.report import kernel_code as K
        from engine.report.group_names import group_title

        doc = self.model.doc
        if doc is None or strategy not in doc.plans:
            self.show_error("open a model first" if doc is None else f"no {strategy} plan yet", "Kernel code")
            return
        if str(doc.spec).startswith("generated:"):
            self.show_error("a generated graph has no TVM module: there is no kernel code to show", "Kernel code")
            return
        plan = doc.plans[strategy]
        if not (0 <= gi < len(plan.groups)) or not K.launches(doc.graph, plan.groups[gi]):
            self.show_error(f"group {gi} of {strategy} launches no kernel", "Kernel code")
            return
        if target:
            self.code.target = target
        elif not self._target_chosen:      # the device's until the user picks one
            self.code.target = self._default_target()
        target = self.code.target
        self.shown = (strategy, gi)
        kinds = plan.group_kinds if len(plan.group_kinds) == len(plan.groups) else []

        def req(s, p, k):
            kd = p.group_kinds[k]["kind"] if len(p.group_kinds) == len(p.groups) else None
            return {"strategy": s, "groups": p.groups, "group": k, "kind": kd}

        requests = [req(strategy, plan, gi)]
        other_s = None
        if self.state.side_by_side:
            other_s = self.state.strategy if pane == "right" else self.state.right_strategy
            other = doc.plans.get(other_s)
            if other is not None and other_s != strategy:
                for k in K.overlapping(doc.graph, plan, other, gi)[:MAX_OTHERS]:
                    requests.append(req(other_s, other, k))
            else:
                other_s = None
        from engine.devices import targets
        from engine.util.errors import FuseLensError

        try:
            built_for = targets.parse(target)   # the window's target box: the words become a Target here
        except FuseLensError as e:
            self.show_error(str(e), "Kernel code")
            return
        device = self.model.device
        lookups = []
        try:
            setup = self.model.setup_of(doc)
        except Exception:  # noqa: BLE001 - a device the engine cannot resolve: no measured figures
            setup = None
        same_kind = setup is not None and setup.target.is_gpu == built_for.is_gpu
        for r in requests:
            p = doc.plans[r["strategy"]]
            rep = self.reports.get(doc, device, r["strategy"]) if self.reports is not None else None
            fig = rep.by_group().get(r["group"]) if rep is not None and not rep.error else None
            lookups.append({"graph": doc.graph, "plan": p, "setup": setup,
                            "bench": doc.result(device, r["strategy"]), "figure": fig} if same_kind else None)
        title = group_title(doc.graph, plan.groups[gi], kinds[gi]["kind"] if kinds else None)
        self.code.title = f"{DEFAULT_TITLE} \u2014 {strategy} group {gi}: {title}"
        self.code.state = f"Building {len(requests)} kernel{'s' if len(requests) > 1 else ''} for {target}..."
        self.code.open = True
        self.code.events.raised()
        req_token = self.model.request("kernel_code")

        def done(codes):
            self.codes = codes
            self._fill(strategy, gi, other_s, requests, codes, target)

        def failed(msg):
            self.code.state = f"Failed: {msg.splitlines()[0][:300] if msg else ''}"
            self.show_error(msg, "Building the kernel code failed")

        def cancelled():
            self.code.state = "Cancelled"

        self.activity.run("kernel_code", f"Building {strategy}'s kernel {gi} for {target}", build_codes, doc.spec,
                          doc.shapes, getattr(doc.graph, "block", None), doc.graph.sha256,
                          requests, built_for, lookups, request=req_token, on_done=done, on_failed=failed,
                          on_cancelled=cancelled)

    def _fill(self, strategy, gi, other_s, requests, codes, target):
        from engine.report.group_names import group_title

        doc = self.model.doc
        mine = codes[:1]
        others = codes[1:]
        self.code.left = Side(f"{strategy}: group {gi}", tuple(mine), (self._title(mine[0], requests[0]),))
        if other_s is not None and others:
            self.code.right = Side(f"{other_s}: {len(others)} kernel{'s' if len(others) > 1 else ''} over the same ops",
                                   tuple(others), tuple(self._title(c, r) for c, r in zip(others, requests[1:])))
        else:
            self.code.right = None
        kc = mine[0]
        if isinstance(kc, str):
            self.code.state = f"Not built: {kc}"
        else:
            self.code.state = f"Built for {target} in {kc.seconds:.1f} s" + ("; not run" if kc.is_gpu else "")
        self.status(f"Kernel code of {strategy}'s group {gi}: {group_title(doc.graph, doc.plans[strategy].groups[gi])}"
                    if doc is not None and strategy in doc.plans and gi < len(doc.plans[strategy].groups) else
                    "Kernel code shown")

    @staticmethod
    def _title(kc, r) -> str:
        if isinstance(kc, str):
            return f"group {r['group']}: not built"
        return f"group {kc.group}: {kc.name}"

    def _closed_document(self):
        self.shown, self.codes = None, []
        self.code.open = False
