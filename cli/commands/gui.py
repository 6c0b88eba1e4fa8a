"""`main.py gui [MODEL]` (and `main.py [MODEL]`): open the app. The app itself is main.py's to start
(cli never imports gui/): it is handed over as a.app (cli.App); here, whether a window can open at all."""
from __future__ import annotations

import os
import sys

from cli.arguments import SHAPES, arg
from cli.errors import NO_DISPLAY
from cli.output import say

DEFAULT_MODEL = "zoo:mobilenetv2"
HELP = "open the app"
ARGS = (arg("model", nargs="?", default=DEFAULT_MODEL), SHAPES)   # the app reports a bad model in its window


def run(a) -> int:
    model = a.model
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        say(f"No display found (DISPLAY is not set); use the command line instead, e.g. "
            f"`python main.py inspect {model}` or `python main.py --help`.")
        return NO_DISPLAY
    missing = missing_qt_xcb_libs()
    if missing:
        say(f"Cannot open a window: Qt's X11 plugin needs {', '.join(missing)} "
            f"(Debian: apt-get install {' '.join(missing)}; `make setup` does it).")
        return NO_DISPLAY
    return a.app.open(model, a.shapes)


def missing_qt_xcb_libs() -> list[str]:
    """Debian packages Qt's xcb plugin needs and cannot find (Qt would abort the process instead)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" \
            or not os.environ.get("DISPLAY"):
        return []
    import ctypes

    need = {"libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
            "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0"}
    out = []
    for lib, deb in need.items():
        try:
            ctypes.CDLL(lib)
        except OSError:
            out.append(deb)
    return out
