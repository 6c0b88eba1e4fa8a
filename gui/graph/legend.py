"""The legends drawn over a graph view's bottom-left corner: the heat overlay's colour ramp with its
range, and the badges of the fusion kinds beyond TVM's FuseOps in the drawn plan."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .. import plain, style


class HeatLegend(QtWidgets.QWidget):
    """Colour ramp with its range, scale and source, in the view's bottom-left corner."""

    def __init__(self, parent):
        super().__init__(parent)
        self.setFixedSize(230, 58)
        self.title = ""
        self.lo = self.hi = 0.0
        self.log = False
        self.hide()

    def set_range(self, title: str, lo: float, hi: float, log: bool):
        self.title, self.lo, self.hi, self.log = title, lo, hi, log
        f = QtGui.QFont(self.font())
        f.setPointSizeF(8)
        need = QtGui.QFontMetrics(f).horizontalAdvance(self.full_title()) + 20   # the whole title, never cut
        self.setFixedSize(max(230, min(need, 560)), 58)
        self.update()

    def full_title(self) -> str:
        return self.title + ("  (log scale)" if self.log else "  (linear scale)")

    def ticks(self) -> list[tuple[float, str]]:
        """(where on the ramp, 0..1; the time there) for its two ends and its middle: on a log scale the
        middle is the geometric mean of the ends, on a linear one their mean."""
        lo, hi = self.lo, self.hi
        mid = (lo * hi) ** 0.5 if self.log and lo > 0 else (lo + hi) / 2
        return [(0.0, _us(lo)), (0.5, _us(mid)), (1.0, _us(hi))]

    def paintEvent(self, ev):  # noqa: N802
        ticks = self.ticks()
        paint_ramp(self, self.full_title(), style.ramp, ticks[0][1], ticks[2][1], 100, middle=ticks[1][1])


def paint_ramp(w: QtWidgets.QWidget, title: str, colour_at, left: str, right: str, text_w: int,
               middle: str = "") -> None:
    """A ramp legend on `w`: a rounded panel in the palette's colours, `title` above a colour ramp
    (`colour_at(t)` for t from 0 to 1), `left` and `right` under its two ends, `text_w` px wide each,
    and `middle` (with a tick) under its middle."""
    p = QtGui.QPainter(w)
    p.setRenderHint(QtGui.QPainter.Antialiasing)
    pal = w.palette()
    bg = QtGui.QColor(pal.color(QtGui.QPalette.Window))
    bg.setAlpha(230)
    p.setBrush(bg)
    p.setPen(QtGui.QPen(pal.color(QtGui.QPalette.Mid)))
    p.drawRoundedRect(QtCore.QRectF(w.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5)
    p.setPen(pal.color(QtGui.QPalette.WindowText))
    f = p.font()
    f.setPointSizeF(8)
    p.setFont(f)
    p.drawText(QtCore.QRectF(8, 3, w.width() - 16, 16), QtCore.Qt.AlignLeft, title)
    grad = QtGui.QLinearGradient(8, 0, w.width() - 8, 0)
    for i in range(11):
        grad.setColorAt(i / 10, colour_at(i / 10))
    p.setBrush(grad)
    p.setPen(QtCore.Qt.NoPen)
    p.drawRect(QtCore.QRectF(8, 21, w.width() - 16, 12))
    p.setPen(pal.color(QtGui.QPalette.WindowText))
    p.drawText(QtCore.QRectF(8, 36, text_w, 16), QtCore.Qt.AlignLeft, left)
    p.drawText(QtCore.QRectF(w.width() - 8 - text_w, 36, text_w, 16), QtCore.Qt.AlignRight, right)
    if middle:
        cx = w.width() / 2
        p.drawLine(QtCore.QPointF(cx, 31), QtCore.QPointF(cx, 36))
        p.drawText(QtCore.QRectF(cx - 40, 36, 80, 16), QtCore.Qt.AlignHCenter, middle)
    p.end()


class KindLegend(QtWidgets.QWidget):
    """The badges of the fusion kinds beyond FuseOps present in the drawn plan, each with its title and
    how many groups have it, in the view's bottom-left corner, above the heat legend (hidden when the plan
    has none). Drawn in the palette's colours, so it follows the light or dark scheme."""

    ROW_H = 17

    def __init__(self, parent):
        super().__init__(parent)
        self.counts: dict[str, int] = {}
        self.hide()

    def _font(self, size=8.0, bold=False) -> QtGui.QFont:
        f = QtGui.QFont(self.font())
        f.setPointSizeF(size)
        f.setBold(bold)
        return f

    def set_kinds(self, counts: dict[str, int]):
        from engine.planner import kinds

        self.counts = dict(counts)
        if not counts:
            self.hide()
            return
        fm, fb = QtGui.QFontMetrics(self._font()), QtGui.QFontMetrics(self._font(8.0, True))
        w = max([fm.horizontalAdvance(self._row_text(k, n)) + 42 for k, n in counts.items()]
                + [fb.horizontalAdvance(self._title()) + 16])
        self.setFixedSize(min(w, 340), 6 + self.ROW_H * (len(counts) + 1) + 4)
        self.setToolTip(plain.tooltip("\n".join(f"{style.KIND_LETTERS[k]}: {kinds.TITLES[k]}" for k in counts)
                                      + "\nA box without a badge is a kind TVM's FuseOps forms too (single op, "
                                        "anchor + epilogue).\nClick a group: Properties names its kind and "
                                        "features."))
        self.show()
        self.update()

    @staticmethod
    def _title() -> str:
        return "Fusion kinds beyond FuseOps"

    @staticmethod
    def _row_text(kind: str, n: int) -> str:
        from engine.planner import kinds

        return f"{kinds.TITLES.get(kind, kind)}  ({n} group{'s' if n != 1 else ''})"

    def paintEvent(self, ev):  # noqa: N802
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.Antialiasing)
        pal = self.palette()
        bg = QtGui.QColor(pal.color(QtGui.QPalette.Window))
        bg.setAlpha(232)
        p.setBrush(bg)
        p.setPen(QtGui.QPen(pal.color(QtGui.QPalette.Mid)))
        p.drawRoundedRect(QtCore.QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5)
        text = pal.color(QtGui.QPalette.WindowText)
        p.setFont(self._font(8.0, True))
        p.setPen(text)
        w = self.width()
        p.drawText(QtCore.QRectF(8, 3, w - 16, self.ROW_H), QtCore.Qt.AlignLeft | QtCore.Qt.AlignVCenter, self._title())
        y = 3 + self.ROW_H
        for kind, n in self.counts.items():
            pill = QtCore.QRectF(8, y + 2, 20, self.ROW_H - 4)
            p.setPen(QtCore.Qt.NoPen)
            p.setBrush(style.kind_colour(kind))
            p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
            p.setPen(QtGui.QColor("white"))
            p.setFont(self._font(7.5, True))
            p.drawText(pill, QtCore.Qt.AlignCenter, style.KIND_LETTERS.get(kind, "?"))
            p.setPen(text)
            p.setFont(self._font())
            p.drawText(QtCore.QRectF(34, y, w - 40, self.ROW_H), QtCore.Qt.AlignLeft | QtCore.Qt.AlignVCenter,
                       self._row_text(kind, n))
            y += self.ROW_H
        p.end()


def _us(v: float) -> str:
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.1f} us"


DELTA_MAX = 2.0   # the ends of the delta overlay's scale: 2x faster, 2x slower


def delta_colour(ratio: float) -> QtGui.QColor:
    """The delta overlay's colour for other / this: blue where the other plan is faster, red where it
    is slower, grey-white where both take the same time (a log scale, clamped at DELTA_MAX)."""
    import math

    t = max(-1.0, min(1.0, math.log(max(ratio, 1e-9)) / math.log(DELTA_MAX)))
    mid, fast, slow = (238, 238, 238), (33, 102, 172), (178, 24, 43)
    end = slow if t > 0 else fast
    f = abs(t)
    return QtGui.QColor(*(round(a + (b - a) * f) for a, b in zip(mid, end)))


class DeltaLegend(QtWidgets.QWidget):
    """The latency-delta overlay's scale, side by side: what the colours say about the other plan."""

    def __init__(self, parent):
        super().__init__(parent)
        self.setFixedSize(260, 58)
        self.title = ""
        self.other = ""
        self.hide()

    def set_plans(self, title: str, other: str):
        self.title, self.other = title, other
        self.update()

    def paintEvent(self, ev):  # noqa: N802
        paint_ramp(self, self.title, lambda t: delta_colour(DELTA_MAX ** (2 * t - 1)),
                   f"{DELTA_MAX:g}x faster in {self.other}", f"{DELTA_MAX:g}x slower", 120)
