"""UI responsiveness probe: a 10 ms timer on the UI thread; the longest gap beyond its period is the
worst stall of the event loop (what a user feels as a frozen window)."""
from __future__ import annotations

import time

from PySide6 import QtCore


class StallMeter(QtCore.QObject):
    def __init__(self, period_ms: int = 10, parent=None):
        super().__init__(parent)
        self.period_ms = period_ms
        self.timer = QtCore.QTimer(self)
        self.timer.setTimerType(QtCore.Qt.PreciseTimer)
        self.timer.setInterval(period_ms)
        self.timer.timeout.connect(self._tick)
        self.reset()

    def reset(self):
        self.worst_ms = 0.0
        self.worst_at = ""
        self.label = ""
        self.gaps: list[float] = []
        self._last = None

    def start(self, label: str = ""):
        self.label = label
        self._last = time.perf_counter()
        self.timer.start()

    def mark(self, label: str):
        """Name what is happening now, so the worst stall can be attributed."""
        self.label = label

    def stop(self) -> float:
        self.timer.stop()
        self._last = None
        return self.worst_ms

    def _tick(self):
        now = time.perf_counter()
        if self._last is not None:
            gap = (now - self._last) * 1000 - self.period_ms
            self.gaps.append(gap)
            if gap > self.worst_ms:
                self.worst_ms, self.worst_at = gap, self.label
        self._last = now

    def over(self, ms: float) -> int:
        return sum(g > ms for g in self.gaps)


class StallWatch(StallMeter):
    """A StallMeter that also says where the UI thread was: a watchdog thread samples the UI thread's
    stack whenever the 10 ms timer is late by more than `threshold_ms`."""

    def __init__(self, threshold_ms: float = 50.0, period_ms: int = 10, parent=None):
        super().__init__(period_ms, parent)
        self.threshold_ms = threshold_ms
        self.samples: dict[str, int] = {}
        self._stop = None

    def start(self, label: str = ""):
        import sys
        import threading
        import traceback

        super().start(label)
        main_id = threading.get_ident()
        self._stop = threading.Event()

        def watch():
            while not self._stop.wait(0.005):
                last = self._last
                if last is None:
                    continue
                late = (time.perf_counter() - last) * 1000 - self.period_ms
                if late > self.threshold_ms:
                    f = sys._current_frames().get(main_id)
                    if f is not None:
                        stack = traceback.extract_stack(f)[-6:]
                        key = " <- ".join(f"{fr.name}:{fr.lineno}" for fr in reversed(stack))
                        self.samples[key] = self.samples.get(key, 0) + 1

        threading.Thread(target=watch, daemon=True).start()

    def stop(self) -> float:
        if self._stop is not None:
            self._stop.set()
        return super().stop()

    def report(self, top: int = 8) -> str:
        rows = sorted(self.samples.items(), key=lambda kv: -kv[1])[:top]
        return "\n".join(f"{n * 5:>5} ms  {k}" for k, n in rows)
