"""What tests/gui/test_gui_graph.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

from tests.support.synthetic import Builder  # noqa: E402


def wide(branches: int = 12, depth: int = 20):
    """An input convolution feeding `branches` parallel chains of `depth` ops, joined by a concat: wider
    than the window at 100 %, and still taller than it once its width fits."""
    b = Builder()
    x = b.add("conv2d", [])
    heads = []
    for _ in range(branches):
        h = x
        for k in range(depth):
            h = b.add("conv2d" if k % 2 == 0 else "relu", [h])
        heads.append(h)
    b.add("concat", heads)
    return b.graph(f"wide{branches}x{depth}")

