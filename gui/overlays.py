"""What the views draw over the graph: the heat overlay (measured kernel time, or the plan's estimate,
titled by the model that made it: roofline, learned, or measured while planning) with its legend, the
latency-delta overlay side by side (each group coloured by how much faster or slower the other plan
runs its operators, engine/report/plan_delta.py, with its legend), and the minimap. The overlays follow the
ViewState (heat on / off, its scale, side by side), the DeltaOverlay (on / off) and the open Document's
results into the AppModel's HeatModel; the panes draw it (GraphArea.follow_heat)."""
from __future__ import annotations

from engine.report import plan_delta

from .document import estimate_label, estimate_source
from .app_model import PaneHeat
from .evented import EventedModel


class DeltaOverlay(EventedModel):
    """Whether side by side colours each group by the latency delta to the other plan (evented, no Qt:
    `events.on(value=...)` on a change; the Differences panel's box and the panes follow it)."""

    on: bool = False


class Overlays:
    """The heat overlay and minimap controller: works out what each pane is to draw over its graph from
    what the models say (the Workspace's open Document and device, the ViewState's heat, scale and
    strategies, its own DeltaOverlay) into the AppModel's HeatModel, again whenever one of them changes,
    a pane shows another plan (the window calls `apply`) or is drawn at new positions
    (Layouts.events.drawn); the panes draw it (GraphArea.follow_heat). `settings` remembers the minimap."""

    def __init__(self, app, layouts, settings):
        self.model, self.state, self.heat, self.settings = app.workspace, app.view, app.heat, settings
        model, state = self.model, self.state
        self.heat.minimap = settings.minimap
        state.events.heat.connect(lambda ev: self._redraw())
        state.events.heat_log.connect(lambda ev: self._redraw())
        model.events.results.connect(self._on_results)
        model.events.device.connect(lambda ev: self.apply())
        self.delta = DeltaOverlay()
        self.delta.events.on.connect(lambda ev: self._on_delta())
        state.events.side_by_side.connect(lambda ev: self.apply())
        layouts.events.drawn.connect(lambda ev: self.apply())   # a pane is drawn at new positions

    def _on_delta(self):
        self.apply()
        self.heat.events.minimaps(panes=("left", "right"))

    def _on_results(self, ev):
        if ev.target == self.model.device:
            self.apply()

    def _redraw(self):
        """The heat overlay or its scale changed: drawn again, in the minimap too."""
        self.apply()
        self.heat.events.minimaps(panes=("left",))

    def heat_for(self, strategy: str) -> dict | None:
        doc = self.model.doc
        if doc is None or strategy not in doc.plans:
            return None
        plan = doc.plans[strategy]
        r = doc.result(self.model.device, strategy)
        log = self.state.heat_log
        ort = getattr(self, "ort", None)   # gui/ort_heat.OrtHeat: an imported ORT profile chosen as the source
        ort_heat = ort.heat_for(doc, plan, log) if ort is not None else None
        if ort_heat is not None:
            return ort_heat
        ku = getattr(r, "kernel_us", None) if r is not None and not r.error else None
        if ku and len(ku) == len(plan.groups) and any(v for v in ku if v):
            return {"values": list(ku), "log": log, "source": "measured",
                    "title": f"measured kernel time ({r.target})"}
        label = estimate_label(plan)   # roofline estimate | learned estimate [(k of n kernels measured)] | measured
        return {"values": list(plan.group_us), "log": log, "source": estimate_source(plan),
                "title": f"{label} ({doc.hw.title})"}

    def delta_for(self, strategy: str, other: str) -> dict | None:
        """Side by side: per group of `strategy`, the time `other` takes for its operators over this
        plan's (measured where both plans' kernels were timed on the device, else estimated)."""
        doc = self.model.doc
        if doc is None or strategy not in doc.plans or other not in doc.plans:
            return None
        a, b = doc.plans[strategy], doc.plans[other]
        dev = self.model.device
        ta, ka = plan_delta.times(a, doc.result(dev, strategy))
        tb, kb = plan_delta.times(b, doc.result(dev, other))
        if ka != kb:   # one measured, one estimated: compare the estimates
            ta, ka = list(a.group_us), "estimated"
            tb = list(b.group_us)
        return {"kind": "delta", "values": plan_delta.deltas(a, ta, b, tb), "log": True, "source": ka,
                "title": f"{ka} latency in {other} vs {strategy}", "other": other}

    @staticmethod
    def one_meaning(heat: dict, right: str, left: str) -> dict:
        """The right pane's delta overlay in the left pane's terms: its values (the left plan's time for
        its ops over its own) inverted, so that a colour means the same in both panes: how the right plan's
        time compares with the left one's (blue: faster in `right`, red: slower in `right`)."""
        vals = [None if x is None or x <= 0 else 1.0 / x for x in heat["values"]]
        return dict(heat, values=vals, title=f"{heat['source']} latency in {right} vs {left}", other=right)

    def apply(self):
        """What each pane is to draw over its graph (HeatModel.left / right; the panes follow)."""
        st, doc = self.state, self.model.doc
        delta = st.side_by_side and self.delta.on
        for pane, s, o, on in (("left", st.strategy, st.right_strategy, True),
                               ("right", st.right_strategy, st.strategy, st.side_by_side)):
            heat = self.delta_for(s, o) if delta and on else self.heat_for(s) if st.heat and on else None
            if heat is not None and heat.get("kind") == "delta" and pane == "right":
                heat = self.one_meaning(heat, st.right_strategy, st.strategy)
            # `plan`: the plan this is for; a pane still showing an older one keeps what it has until it shows it
            self.heat.set(pane, PaneHeat(doc is not None, doc.plans.get(s) if doc is not None else None, heat),
                          force=True)

    def set_minimap(self, on: bool):
        self.settings.minimap = on
        self.heat.minimap = on
