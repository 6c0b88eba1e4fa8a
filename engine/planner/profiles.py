"""Cost-model profiles by the names users give (--hardware, the app's profile box, scripts): the fixed
ones of assets/hardware.json and this machine's (engine/devices/hardware.py), and `host-calibrated`, this
machine's profile fitted to its measured kernel times (engine/planner/calibrate.py), which exists
once `main.py calibrate` has run. The one place a name becomes a Hardware.
"""
from __future__ import annotations

from engine.devices import hardware
from engine.devices.hardware import Hardware

CALIBRATED = "host-calibrated"


def get(name: str) -> Hardware:
    """The profile `name`; an unknown one, or a calibration never made, is one FuseLensError line."""
    if hardware.normalise(name) == hardware.normalise(CALIBRATED):
        from .calibrate import host_calibrated

        return host_calibrated()
    return hardware.get(name)
