"""What persists between sessions (QSettings): window geometry and state, recent files, last
directory, device, hardware profile, cost (roofline, learned or measured), compile-time budget, strategy,
input shapes per file, and the last Tune budget."""
from __future__ import annotations

import json
import os

from PySide6 import QtCore

MAX_RECENT = 9


class Settings:
    def __init__(self, qs: QtCore.QSettings | None = None):
        self.qs = qs or QtCore.QSettings("FuseLens", "FuseLens")

    def _get(self, key, default=None, type_=None):
        v = self.qs.value(key, default)
        if v is None:
            return default
        try:
            if type_ is float:
                return float(v)
            if type_ is int:
                return int(v)
            if type_ is bool:
                return v in (True, "true", "1", 1)
        except (TypeError, ValueError):
            return default
        return v

    # ---- simple values ------------------------------------------------------------------------

    @property
    def last_dir(self) -> str:
        return str(self._get("last_dir", os.path.expanduser("~")))

    @last_dir.setter
    def last_dir(self, v: str):
        self.qs.setValue("last_dir", v)

    @property
    def device(self) -> str:
        return str(self._get("device", "cpu"))

    @device.setter
    def device(self, v: str):
        self.qs.setValue("device", v)

    @property
    def profile(self) -> str:
        """The cost-model profile; until one is chosen, the selected device's own (host for cpu)."""
        return str(self._get("profile", device_profile(self.device)))

    @profile.setter
    def profile(self, v: str):
        self.qs.setValue("profile", v)

    @property
    def cost(self) -> str:
        """What the strategies are priced and decided by: "roofline", "learned" (the default) or
        "measured" (see Workspace.cost). A saved "model" (the old default) means "learned"; anything
        else unknown, the default."""
        v = str(self._get("cost", "learned"))
        v = {"model": "learned"}.get(v, v)
        return v if v in ("roofline", "learned", "measured") else "learned"

    @cost.setter
    def cost(self, v: str):
        self.qs.setValue("cost", v)

    @property
    def budget_pct(self) -> float:
        return self._get("budget_pct", 40.0, float)

    @budget_pct.setter
    def budget_pct(self, v: float):
        self.qs.setValue("budget_pct", float(v))

    @property
    def strategy(self) -> str:
        return str(self._get("strategy", "greedy"))

    @strategy.setter
    def strategy(self, v: str):
        self.qs.setValue("strategy", v)

    @property
    def repeat(self) -> int:
        return self._get("repeat", 10, int)

    @property
    def heat_log(self) -> bool:
        return self._get("heat_log", False, bool)

    @heat_log.setter
    def heat_log(self, v: bool):
        self.qs.setValue("heat_log", bool(v))

    @property
    def minimap(self) -> bool:
        return self._get("minimap", True, bool)

    @minimap.setter
    def minimap(self, v: bool):
        self.qs.setValue("minimap", bool(v))

    @property
    def left_to_right(self) -> bool:
        """The graph laid out left to right (else top to bottom)."""
        return self._get("left_to_right", False, bool)

    @left_to_right.setter
    def left_to_right(self, v: bool):
        self.qs.setValue("left_to_right", bool(v))

    @property
    def tune_budget(self) -> tuple[str, int]:
        """The last Tune budget: ("trials", N) or ("minutes", M)."""
        kind = str(self._get("tune_budget_kind", "trials"))
        if kind == "minutes":
            return kind, max(1, self._get("tune_minutes", 10, int))
        return "trials", max(1, self._get("tune_trials", 256, int))

    @tune_budget.setter
    def tune_budget(self, v: tuple[str, int]):
        kind, n = v
        self.qs.setValue("tune_budget_kind", kind)
        self.qs.setValue("tune_minutes" if kind == "minutes" else "tune_trials", int(n))

    @property
    def dot_time_limit_s(self) -> float:
        return self._get("dot_time_limit_s", 20.0, float)

    # ---- window ---------------------------------------------------------------------------------

    def save_window(self, win):
        self.qs.setValue("window/geometry", win.saveGeometry())
        self.qs.setValue("window/state", win.saveState())

    def restore_window(self, win) -> bool:
        g, s = self.qs.value("window/geometry"), self.qs.value("window/state")
        ok = False
        if g is not None:
            ok = bool(win.restoreGeometry(g))
        if s is not None:
            win.restoreState(s)
        return ok

    # ---- recent files -----------------------------------------------------------------------------

    def recent(self) -> list[str]:
        """The last files opened (zoo specs included), newest first; files gone missing are dropped."""
        raw = self._get("recent", "[]")
        try:
            items = json.loads(raw) if isinstance(raw, str) else list(raw)
        except ValueError:
            items = []
        keep = [s for s in items if isinstance(s, str) and (s.startswith("zoo:") or os.path.exists(s))]
        if keep != items:
            self.qs.setValue("recent", json.dumps(keep))
        return keep[:MAX_RECENT]

    def add_recent(self, spec: str):
        items = [s for s in self.recent() if s != spec]
        self.qs.setValue("recent", json.dumps(([spec] + items)[:MAX_RECENT]))

    # ---- input shapes per file ---------------------------------------------------------------------

    @staticmethod
    def _shape_key(path: str) -> str:
        import hashlib

        return "shapes/" + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]

    def shapes_for(self, path: str) -> dict[str, list[int]] | None:
        raw = self._get(self._shape_key(path))
        try:
            d = json.loads(raw) if raw else None
        except ValueError:
            return None
        return d if isinstance(d, dict) else None

    def remember_shapes(self, path: str, shapes: dict[str, list[int]]):
        self.qs.setValue(self._shape_key(path), json.dumps(shapes))

    def sync(self):
        self.qs.sync()


def device_profile(device: str) -> str:
    """The cost-model profile that follows a device (engine.devices.targets.Target.hardware): a board's own,
    host for the CPU, t4 for a GPU; host when the device spec does not parse."""
    from engine.devices import targets
    from engine.util.errors import FuseLensError

    try:
        return targets.parse(device).hardware
    except FuseLensError:
        return "host"
