"""What tests/{gui,integration}/test_gui.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import pytest
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import TIMEOUT_MS, make_settings, open_graph, open_model, settle, shot  # noqa: E402


PROFILE = "t4"                 # the profile these tests are written for (the cpu device's own is the host's)


def generated():
    """The graph most tests open: 60 ops in ResNet-like blocks (tests/synthetic.residual): fused groups of up
    to four ops fed from outside, forks and joins, groups of different costs (the heat overlay), greedy and
    dp plans that share groups and differ in others, and more ops than the recommendation's threshold
    (engine.report.recommend.MIN_OPS)."""
    return synthetic.residual(56)


@pytest.fixture
def win(new_window, qtbot):
    """A fresh window (t4, greedy) on the generated graph: planned, laid out and idle."""
    w = new_window(profile=PROFILE, strategy="greedy")
    open_graph(qtbot, w, generated())
    return w


def on_screen_colour(view, scene_point) -> QtGui.QColor:
    img = view.viewport().grab().toImage()
    p = view.mapFromScene(scene_point)
    return QtGui.QColor(img.pixel(p.x(), p.y()))


def node_probe(scene, nid) -> QtCore.QPointF:
    """A point inside a node, clear of its text."""
    it = scene.nodes[nid]
    w, h = scene.layout.sizes[nid]
    return QtCore.QPointF(it.pos().x() - w / 2 + 4, it.pos().y())


def close(a: QtGui.QColor, b: QtGui.QColor, tol=6) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))

