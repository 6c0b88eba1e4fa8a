"""Edges go around the operators, not through them: graphviz dot's routes (engine/layout/graph.py parses
them, gui/graph/scene.py draws them) on the zoo's MobileNetV2, whose residual edges (n155 -> n175)
used to cross the blocks' nodes."""
from __future__ import annotations

import shutil

import pytest
from engine.planner.setup import Setup

pytest.importorskip("pytestqt")


pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


def _crossings(sc):
    out = []
    for (a, b), e in sc.edges.items():
        if not e.isVisible():
            continue
        path = e.path()
        for k in range(1, 60):
            pt = path.pointAtPercent(k / 60)
            hit = next((nid for nid, it in sc.nodes.items() if nid not in (a, b) and it.isVisible()
                        and it.sceneBoundingRect().adjusted(3, 3, -3, -3).contains(pt)), None)
            if hit is not None:
                out.append((a, b, hit))
                break
    return out


def test_mobilenet_edges_do_not_cross_nodes(qapp, private_cache):
    from engine.devices import hardware
    from engine.layout import graph as L
    from engine.layout.cache import cache_key, cached, forget_in_memory, store
    from engine.layout.dot import run_dot
    from engine.model import loader
    from engine.planner import make_plan
    from gui.graph.scene import GraphScene

    g = loader.load("zoo:mobilenetv2@32")
    plan = make_plan(g, "greedy", Setup(hardware.get("t4")))
    inp = L.build_input(g, plan.groups)
    lay = run_dot(inp, 60)
    assert ("n155", "n175") in lay.routes and len(lay.routes) == len(inp.edges)
    sc = GraphScene()
    sc.set_graph(g, lay, plan)
    assert _crossings(sc) == []
    # the routes survive the layout cache
    key = cache_key(g.sha256, "greedy", inp)
    store(key, lay)
    forget_in_memory()
    again = cached(key, inp)
    assert again is not None and again.routes == lay.routes

