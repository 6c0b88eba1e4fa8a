"""Edges go around the operators, not through them: graphviz dot's routes (engine/layout/graph.py parses
them, gui/graph/scene.py draws them) on the zoo's MobileNetV2, whose residual edges (n155 -> n175)
used to cross the blocks' nodes."""
from __future__ import annotations

import shutil

import pytest

pytest.importorskip("pytestqt")


pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


def test_a_route_that_no_longer_fits_is_not_used(qapp):
    from engine.layout import graph as L
    from gui.graph.scene import GraphScene
    from tests.support import synthetic

    g = synthetic.chain(3)
    inp = L.build_input(g)
    lay = L.layered(inp)
    far = [(500.0, 500.0)] * 4 + [(900.0, 900.0)]
    lay.routes = {("n0", "n1"): far}
    sc = GraphScene()
    sc.set_graph(g, lay)
    r = sc.edges[("n0", "n1")].path().boundingRect()
    assert r.bottom() < 400   # drawn between the two nodes where they are, not along the stale route

