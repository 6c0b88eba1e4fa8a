"""Colours: stable group colours, the heat map, and the light/dark scheme the system asks for."""
from __future__ import annotations

import math

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout.graph import group_hue

STRATEGY_COLOURS = {"none": "#8c8c8c", "tvm": "#4e79a7", "greedy": "#f28e2b", "dp": "#59a14f", "hybrid": "#b07aa1", "optimal": "#76b7b2",
                    "custom": "#e15759", "published": "#9c755f"}


def is_dark(widget: QtWidgets.QWidget | None = None) -> bool:
    app = QtWidgets.QApplication.instance()
    if app is not None:
        scheme = app.styleHints().colorScheme()
        if scheme == QtCore.Qt.ColorScheme.Dark:
            return True
        if scheme == QtCore.Qt.ColorScheme.Light:
            return False
    pal = widget.palette() if widget is not None else QtGui.QGuiApplication.palette()
    return pal.color(QtGui.QPalette.Window).lightness() < 128


def scheme_is_dark(scheme=None) -> bool:
    if scheme is None:
        app = QtWidgets.QApplication.instance()
        scheme = app.styleHints().colorScheme() if app is not None else QtCore.Qt.ColorScheme.Unknown
    return scheme == QtCore.Qt.ColorScheme.Dark


def apply_scheme(app: QtWidgets.QApplication, scheme=None) -> bool:
    """Fusion style with a palette matching the system's light or dark scheme; returns dark or not."""
    app.setStyle("Fusion")
    dark = scheme_is_dark(scheme)
    if dark:
        p = QtGui.QPalette()
        base, window, text = QtGui.QColor("#1e1f22"), QtGui.QColor("#2b2d30"), QtGui.QColor("#dfe1e5")
        for role, c in [(QtGui.QPalette.Window, window), (QtGui.QPalette.WindowText, text),
                        (QtGui.QPalette.Base, base), (QtGui.QPalette.AlternateBase, window),
                        (QtGui.QPalette.Text, text), (QtGui.QPalette.Button, window),
                        (QtGui.QPalette.ButtonText, text), (QtGui.QPalette.ToolTipBase, window),
                        (QtGui.QPalette.ToolTipText, text), (QtGui.QPalette.Highlight, QtGui.QColor("#3574f0")),
                        (QtGui.QPalette.HighlightedText, QtGui.QColor("white")),
                        (QtGui.QPalette.PlaceholderText, QtGui.QColor("#8c8f94"))]:
            p.setColor(role, c)
        app.setPalette(p)
    else:
        app.setPalette(app.style().standardPalette())
    return dark


class Theme:
    """Scene colours for the current scheme."""

    def __init__(self, dark: bool):
        self.dark = dark
        self.background = QtGui.QColor("#1e1f22" if dark else "#fbfbfc")
        self.text = QtGui.QColor("#e8e8e8" if dark else "#1d1d1f")
        self.subtext = QtGui.QColor("#c8c8c8" if dark else "#5a5a60")
        self.edge = QtGui.QColor("#7d8088" if dark else "#9aa0a8")
        self.grey = QtGui.QColor("#55585e" if dark else "#d5d7db")
        self.grey_small = QtGui.QColor("#45474c" if dark else "#e6e7ea")
        self.node_pen = QtGui.QColor("#15161a" if dark else "#6e737b")
        self.select = QtGui.QColor("#ffcc00" if dark else "#e0115f")
        # Find's matches: a dashed orange outline, far from every colour of the heat ramp (viridis) and
        # from the delta overlay's blue and red, so that it never reads as a heat value
        self.found = QtGui.QColor("#ff8c1a" if dark else "#f26b00")
        self.only_here = QtGui.QColor("#ff4d4d" if dark else "#d6002a")


# Fusion kinds beyond TVM FuseOps (engine/planner/kinds.py): a letter badge on the group box, filled with
# the kind's colour. Mid-dark saturated fills keep white letters readable (contrast >= 4.5) and stand out
# from the pale group fills (light scheme) and from the dark background (dark scheme, light rim).
KIND_LETTERS = {"prologue": "P", "anchor_chain": "C", "horizontal": "H", "reduction_stitch": "S", "attention": "A"}
KIND_COLOURS = {"prologue": "#1565c0", "anchor_chain": "#7b1fa2", "horizontal": "#00796b",
                "reduction_stitch": "#a84f00", "attention": "#ad1457"}
KIND_ORDER = ("attention", "anchor_chain", "reduction_stitch", "horizontal", "prologue")   # kinds.PRIORITY


def kind_colour(kind: str) -> QtGui.QColor:
    return QtGui.QColor(KIND_COLOURS.get(kind, "#5a5a60"))


def kind_badge_text(info: dict | None) -> str:
    """The badge letters of a group ({"kind", "features"} from plan.group_kinds): its main kind first,
    then its other beyond-FuseOps features; "" for FuseOps' own kinds (no badge)."""
    if not info:
        return ""
    main = info.get("kind", "")
    feats = [f for f in KIND_ORDER if f in (info.get("features") or ()) and f != main]
    return "".join(KIND_LETTERS[k] for k in ([main] if main in KIND_LETTERS else []) + feats)


def group_colour(members, dark: bool = False) -> QtGui.QColor:
    """The stable colour of a fused group (from its first node): same group, same colour, every time."""
    h = group_hue(members)
    return QtGui.QColor.fromHsvF(h, 0.6 if dark else 0.45, 0.48 if dark else 0.97)


def box_colour(members, dark: bool = False) -> QtGui.QColor:
    h = group_hue(members)
    return QtGui.QColor.fromHsvF(h, 0.8, 0.85 if dark else 0.7)


# A perceptual ramp (viridis-like, 6 stops) for the heat overlay.
_RAMP = [(0.0, (68, 1, 84)), (0.2, (65, 68, 135)), (0.4, (42, 120, 142)), (0.6, (34, 168, 132)),
         (0.8, (122, 209, 81)), (1.0, (253, 231, 37))]


def ramp(t: float) -> QtGui.QColor:
    t = min(1.0, max(0.0, t))
    for (a, ca), (b, cb) in zip(_RAMP, _RAMP[1:]):
        if t <= b:
            f = (t - a) / (b - a)
            return QtGui.QColor(*(round(x + (y - x) * f) for x, y in zip(ca, cb)))
    return QtGui.QColor(*_RAMP[-1][1])


def heat_fraction(v: float, lo: float, hi: float, log: bool) -> float:
    if hi <= lo:
        return 1.0
    if log:
        lo_, hi_ = math.log10(max(lo, 1e-3)), math.log10(max(hi, 1e-3))
        return 0.0 if hi_ <= lo_ else (math.log10(max(v, 1e-3)) - lo_) / (hi_ - lo_)
    return (v - lo) / (hi - lo)
