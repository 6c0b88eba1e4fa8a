"""The window's model (no Qt): the open Document, replaced on each open, the requests made for it, the
devices Benchmark can run on (found off the UI thread when the window opens), the selected one, the
hardware profile and the cost (roofline estimate, learned estimate or measured) the strategies are
planned by, and the compile-time budget the recommendation allows. These choices outlive a Document, so they live here.

The selected device, profile and cost are words (the device box's names, the profile box's, the cost
box's): `setup` resolves them once into the engine's Setup (engine/planner/setup.py: the Target, the
Hardware profile, the cost and the device's channel layout), which every job is given; the engine
never parses them again.

Slow work (loading, planning, benchmarking, layout) runs off the UI thread and answers later, when the
user may have opened another model or asked again. Every controller takes a `Request` when it starts
such work and drops the answer unless `workspace.current(request)`: that is the one stale-result check.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .events import EmitterGroup


@dataclass(frozen=True, eq=False)
class Request:
    """A token for work asked for: its kind ("load", "plan", ...; None: work that only another
    Document makes stale), the Document open when it was asked for, and its number among the requests
    of that kind."""
    kind: str | None
    doc: object
    serial: int


class Workspace:
    """events.document(value=new Document, old=previous one or None) when a model is opened;
    events.devices(value=list of device dicts) when the device list is known; events.device(value=name)
    when another device is selected (results, heat and estimates shown are that device's);
    events.profile(value=name) when another hardware profile is chosen for the cost model;
    events.cost(value="roofline" | "learned" | "measured") when the strategies are to be priced and
    dp, hybrid and optimal to decide otherwise;
    events.budget(value=percent) when the compile-time budget changes. Each emits on a change only.
    events.plans, events.results and events.fidelity relay the open Document's own (same attributes),
    so a view subscribes once, not again for every model opened."""

    COSTS = ("roofline", "learned", "measured")   # engine/planner/cost_source.py
    ALIASES = {"model": "learned"}                  # what older settings and callers say

    def __init__(self, budget: float = 0.0, profile: str = "t4", cost: str = "learned"):
        cost = self._checked(cost)
        self.events = EmitterGroup(self, "document", "devices", "device", "profile", "cost", "budget", "plans",
                                   "results", "fidelity")
        self._doc = None
        self._devices: list[dict] | None = None
        self._device = "cpu"
        self._profile = profile
        self._cost = cost
        self._budget = float(budget)
        self._serials: dict[str, int] = {}
        self._setups: dict[tuple, object] = {}   # (device, profile, cost) -> its Setup

    @property
    def devices(self) -> list[dict] | None:
        """The devices found ({"name", "description", "reachable"}), None until they are."""
        return self._devices

    def set_devices(self, devices: list[dict]) -> None:
        self._devices = list(devices)
        self.events.devices(value=self._devices)

    @property
    def device(self) -> str:
        """Where Benchmark runs and whose measurements are shown ("cpu" until another is selected)."""
        return self._device

    def set_device(self, name: str) -> None:
        if name != self._device:
            self._device = name
            self.events.device(value=name)

    @property
    def profile(self) -> str:
        """The hardware profile (engine.devices.hardware name) the cost model plans for."""
        return self._profile

    def set_profile(self, name: str) -> None:
        if name != self._profile:
            self._profile = name
            self.events.profile(value=name)

    @classmethod
    def _checked(cls, cost: str) -> str:
        cost = cls.ALIASES.get(cost, cost)
        if cost not in cls.COSTS:
            raise ValueError(f"cost must be one of {cls.COSTS}, not {cost!r}")
        return cost

    @property
    def cost(self) -> str:
        """What every strategy is priced by and dp, hybrid and optimal decide by: "roofline" (the
        profile's roofline), "learned" (the learned model's predictions of the selected device's
        kernel times; the roofline where no learned model serves that device and profile) or
        "measured" (the learned model with the close calls timed on the selected device). "model",
        the old name of the default, means "learned"."""
        return self._cost

    def set_cost(self, cost: str) -> None:
        cost = self._checked(cost)
        if cost != self._cost:
            self._cost = cost
            self.events.cost(value=cost)

    def setup_for(self, device: str):
        """The Setup (engine/planner/setup.py) of `device` with the chosen profile and cost: resolved
        once per choice, here, the app's edge. A device, profile or cost the engine does not know is
        one FuseLensError line (TargetError for a device spec that does not parse)."""
        from engine.planner import setup

        key = (device, self._profile, self._cost)
        s = self._setups.get(key)
        if s is None:
            if len(self._setups) > 16:
                self._setups.clear()
            s = self._setups[key] = setup.resolve(device, self._profile, self._cost)
        return s

    @property
    def setup(self):
        """The Setup of the selected device, profile and cost (setup_for): what planning, Benchmark, the
        kernel report, the kernel code view and the learned model's lookup are given."""
        return self.setup_for(self._device)

    def setup_of(self, doc):
        """`setup` as `doc` was opened and planned: its profile (doc.hw) and its graph's channel layout."""
        return replace(self.setup, hardware=doc.hw, block=doc.graph.block)

    @property
    def budget(self) -> float:
        """Extra compile time allowed over greedy, in percent (for the recommendation)."""
        return self._budget

    def set_budget(self, pct: float) -> None:
        if pct != self._budget:
            self._budget = float(pct)
            self.events.budget(value=self._budget)

    @property
    def doc(self):
        return self._doc

    def set_document(self, doc) -> None:
        old, self._doc = self._doc, doc
        for name in ("plans", "results", "fidelity"):
            if old is not None:
                old.events[name].disconnect(self._relay)
            if doc is not None:
                doc.events[name].connect(self._relay)
        self.events.document(value=doc, old=old)

    def _relay(self, ev) -> None:
        self.events[ev.type](**{k: v for k, v in vars(ev).items() if k not in ("type", "source")})

    def request(self, kind: str | None) -> Request:
        """A new request of `kind` for the open Document; it makes earlier ones of that kind stale
        (kind None: no other request makes it stale, only another Document)."""
        if kind is None:
            return Request(None, self._doc, 0)
        n = self._serials.get(kind, 0) + 1
        self._serials[kind] = n
        return Request(kind, self._doc, n)

    def current(self, req: Request) -> bool:
        """Whether an answer to `req` still applies: the same Document is open and no newer request of
        the same kind was made since."""
        return req.doc is self._doc and (req.kind is None or self._serials.get(req.kind) == req.serial)
