"""What the views draw over the graph: the heat overlay (measured kernel time, or the plan's estimate,
titled by the model that made it: roofline, learned, or measured while planning) with its legend, the
latency-delta overlay side by side (each group coloured by how much faster or slower the other plan
runs its operators, engine/report/plan_delta.py, with its legend), and the minimap. The overlays follow the
ViewState (heat on / off, its scale, side by side), the DeltaOverlay (on / off) and the open Document's
results; `apply` redraws them where a pane's plan changed."""
from __future__ import annotations

from engine.report import plan_delta

from .document import estimate_label, estimate_source
from .events import EmitterGroup


class DeltaOverlay:
    """Whether side by side colours each group by the latency delta to the other plan (evented, no Qt:
    `events.on(value=...)` on a change; the Differences panel's box and the panes follow it)."""

    def __init__(self):
        self.events = EmitterGroup(self, "on")
        self._on = False

    @property
    def on(self) -> bool:
        return self._on

    @on.setter
    def on(self, value: bool):
        value = bool(value)
        if value != self._on:
            self._on = value
            self.events.on(value=value)


class Overlays:
    """The heat overlay and minimap controller: draws on the GraphArea's two panes what the models say
    (the Workspace's open Document and device, the ViewState's heat, scale and strategies, its own
    DeltaOverlay), redrawn whenever one of them changes, a pane shows another plan (GraphArea.plan_shown)
    or is drawn at new positions (Layouts.events.drawn); `settings` remembers the minimap."""

    def __init__(self, model, state, area, layouts, settings):
        self.model, self.state, self.area, self.settings = model, state, area, settings
        state.events.heat.connect(lambda ev: self._redraw())
        state.events.heat_log.connect(lambda ev: self._redraw())
        model.events.results.connect(self._on_results)
        model.events.device.connect(lambda ev: self.apply())
        self.delta = DeltaOverlay()
        self.delta.events.on.connect(lambda ev: self._on_delta())
        state.events.side_by_side.connect(lambda ev: self.apply())
        area.plan_shown.connect(lambda s: self.apply())   # a pane shows another plan: its heat
        layouts.events.drawn.connect(lambda ev: self.apply())   # a pane is drawn at new positions

    def _on_delta(self):
        self.apply()
        for v in (self.area.left, self.area.right):
            v.minimap.rebuild()

    def _on_results(self, ev):
        if ev.target == self.model.device:
            self.apply()

    def _redraw(self):
        """The heat overlay or its scale changed: drawn again, in the minimap too."""
        self.apply()
        self.area.left.minimap.rebuild()

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
        """Draw the overlay (or none) on each pane, with its legend."""
        st, doc = self.state, self.model.doc
        delta = st.side_by_side and self.delta.on
        for v, s, o, on in ((self.area.left, st.strategy, st.right_strategy, True),
                            (self.area.right, st.right_strategy, st.strategy, st.side_by_side)):
            sc = v.scene()
            if sc.plan is None:
                v.legend.hide()
                v.delta_legend.hide()
                continue
            if doc is not None and sc.plan is not doc.plans.get(s):
                continue  # the pane still shows an older plan; it gets its heat when the plan is shown
            heat = self.delta_for(s, o) if delta and on else self.heat_for(s) if st.heat and on else None
            if heat is not None and heat.get("kind") == "delta" and v is self.area.right:
                heat = self.one_meaning(heat, st.right_strategy, st.strategy)
            sc.set_heat(heat)
            rng = sc.heat_range()
            if heat is not None and heat.get("kind") == "delta":
                v.legend.hide()
                v.delta_legend.set_plans(heat["title"], heat["other"])
                v.delta_legend.show()
            elif heat is not None and rng is not None:
                v.delta_legend.hide()
                v.legend.set_range(heat["title"], rng[0], rng[1], heat["log"])
                v.legend.show()
            else:
                v.legend.hide()
                v.delta_legend.hide()
            v.place_overlays()  # the kinds legend sits above the heat legend

    def set_minimap(self, on: bool):
        self.settings.minimap = on
        for v in (self.area.left, self.area.right):
            v.minimap.setVisible(on)
            if on:
                v.minimap.rebuild()
