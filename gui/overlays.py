"""What the views draw over the graph: the heat overlay (measured kernel time, or estimated cost) with
its legend, and the minimap."""
from __future__ import annotations


class Overlays:
    """MainWindow's heat overlay and minimap switches."""

    def set_heat(self, on: bool):
        self.heat_on = on
        self.a_heat.setChecked(on)
        self._apply_heat()
        self.view.minimap.rebuild()

    def set_heat_log(self, on: bool):
        self.settings.heat_log = on
        self.a_log.setChecked(on)
        self._apply_heat()
        self.view.minimap.rebuild()

    def heat_for(self, strategy: str) -> dict | None:
        if self.doc is None or strategy not in self.doc.plans:
            return None
        plan = self.doc.plans[strategy]
        r = self.doc.result(self.device(), strategy)
        ku = getattr(r, "kernel_us", None) if r is not None and not r.error else None
        if ku and len(ku) == len(plan.groups) and any(v for v in ku if v):
            return {"values": list(ku), "log": self.settings.heat_log, "source": "measured",
                    "title": f"measured kernel time ({r.target})"}
        return {"values": list(plan.group_us), "log": self.settings.heat_log, "source": "estimated",
                "title": f"estimated cost ({self.doc.hw.title})"}

    def _apply_heat(self):
        for v, s, on in ((self.view, self.strategy, True), (self.rview, self.right_strategy, self.area.side_by_side)):
            sc = v.scene()
            if sc.plan is None:
                v.legend.hide()
                continue
            heat = self.heat_for(s) if self.heat_on and on else None
            sc.set_heat(heat)
            rng = sc.heat_range()
            if heat is not None and rng is not None:
                v.legend.set_range(heat["title"], rng[0], rng[1], heat["log"])
                v.legend.show()
            else:
                v.legend.hide()
            v.place_overlays()  # the kinds legend sits above the heat legend

    def set_minimap(self, on: bool):
        self.settings.minimap = on
        for v in (self.view, self.rview):
            v.minimap.setVisible(on)
            if on:
                v.minimap.rebuild()
