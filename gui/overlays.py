"""What the views draw over the graph: the heat overlay (measured kernel time, or the plan's estimate,
titled by the model that made it: roofline, learned, or measured while planning) with its legend, and
the minimap. The overlay follows the ViewState (heat on / off, its scale) and the open
Document's results; `apply` redraws it where a pane's plan changed."""
from __future__ import annotations

from .document import estimate_label, estimate_source


class Overlays:
    """The heat overlay and minimap controller; reads the window's panes and actions."""

    def __init__(self, win):
        self.win = win
        win.state.events.heat.connect(lambda ev: self._on_heat(ev.value))
        win.state.events.heat_log.connect(lambda ev: self._on_heat_log(ev.value))
        win.model.events.results.connect(self._on_results)
        win.model.events.device.connect(lambda ev: self.apply())

    def _on_results(self, ev):
        if ev.target == self.win.device():
            self.apply()

    def _on_heat(self, on: bool):
        self.win.a_heat.setChecked(on)
        self.apply()
        self.win.view.minimap.rebuild()

    def _on_heat_log(self, on: bool):
        """The scale changed: persisted, and the overlay redrawn on it."""
        self.win.settings.heat_log = on
        self.win.a_log.setChecked(on)
        self.apply()
        self.win.view.minimap.rebuild()

    def heat_for(self, strategy: str) -> dict | None:
        doc = self.win.doc
        if doc is None or strategy not in doc.plans:
            return None
        plan = doc.plans[strategy]
        r = doc.result(self.win.device(), strategy)
        log = self.win.state.heat_log
        ku = getattr(r, "kernel_us", None) if r is not None and not r.error else None
        if ku and len(ku) == len(plan.groups) and any(v for v in ku if v):
            return {"values": list(ku), "log": log, "source": "measured",
                    "title": f"measured kernel time ({r.target})"}
        label = estimate_label(plan)   # roofline estimate | learned estimate [(k of n kernels measured)] | measured
        return {"values": list(plan.group_us), "log": log, "source": estimate_source(plan),
                "title": f"{label} ({doc.hw.title})"}

    def apply(self):
        """Draw the overlay (or none) on each pane, with its legend."""
        w = self.win
        st = w.state
        for v, s, on in ((w.view, st.strategy, True), (w.rview, st.right_strategy, st.side_by_side)):
            sc = v.scene()
            if sc.plan is None:
                v.legend.hide()
                continue
            if w.doc is not None and sc.plan is not w.doc.plans.get(s):
                continue  # the pane still shows an older plan; it gets its heat when the plan is shown
            heat = self.heat_for(s) if st.heat and on else None
            sc.set_heat(heat)
            rng = sc.heat_range()
            if heat is not None and rng is not None:
                v.legend.set_range(heat["title"], rng[0], rng[1], heat["log"])
                v.legend.show()
            else:
                v.legend.hide()
            v.place_overlays()  # the kinds legend sits above the heat legend

    def set_minimap(self, on: bool):
        self.win.settings.minimap = on
        for v in (self.win.view, self.win.rview):
            v.minimap.setVisible(on)
            if on:
                v.minimap.rebuild()
