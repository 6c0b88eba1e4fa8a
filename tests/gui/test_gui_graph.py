"""The graph view and the properties panel as a user meets them (offscreen, generated graphs): a newly
opened model shows its whole width, scrolled to the top, also when the final layout replaces the
provisional one it opened with; and the properties panel wraps long values instead of eliding them or
scrolling sideways (issue 12, "What users noticed")."""
from __future__ import annotations

import pytest
from engine.layout import graph as L  # noqa: E402
from tests.support.synthetic import Builder  # noqa: E402
from tests.support.gui_graph import wide  # noqa: F401

pytest.importorskip("pytestqt")


TIMEOUT_MS = 120_000


def assert_width_fits_and_top_shown(view):
    """The scene's whole width is in view, as large as the window allows (up to 100 %), and the view
    is scrolled to the top of a graph taller than it."""
    r, vp, s = view.scene().sceneRect(), view.viewport().rect(), view.scale_factor()
    hbar, vbar = view.horizontalScrollBar(), view.verticalScrollBar()
    assert hbar.maximum() == hbar.minimum(), "a horizontal scroll bar: the width does not fit"
    assert r.width() * s <= vp.width()
    assert s == pytest.approx(1.0) or r.width() * s >= 0.9 * vp.width(), (s, r.width(), vp.width())
    assert vbar.maximum() > vbar.minimum(), "the graph should be taller than the view"
    assert vbar.value() == vbar.minimum(), "not scrolled to the top"


@pytest.fixture
def view(qapp, qtbot):
    from gui.graph.scene import GraphScene
    from gui.graph.view import GraphView

    v = GraphView(GraphScene())
    qtbot.addWidget(v)
    v.resize(800, 500)
    v.show()
    g = wide()
    v.scene().set_graph(g, L.layered(L.build_input(g, [[n.id] for n in g.nodes])))
    return v


@pytest.fixture
def win(new_window):
    """A fresh window (its own settings and caches), no model open yet."""
    return new_window(strategy="none", size=(1200, 800))


def test_fit_width_top_shows_the_whole_width_from_the_top(view):
    view.set_scale(0.05)
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
    view.fit_width_top()
    assert view.scale_factor() < 1.0   # wider than the view at 100 %
    assert_width_fits_and_top_shown(view)


def test_a_later_layout_refits_unless_the_user_moved_the_view(view):
    view.fit_width_top()
    vbar = view.verticalScrollBar()
    vbar.setValue(vbar.maximum() // 2)    # the positions change under an untouched view ...
    view.refit_width_top()
    assert_width_fits_and_top_shown(view)
    view.zoom(2.0)                        # ... but not once the user has zoomed or moved it
    vbar.setValue(vbar.maximum() // 2)
    s, y = view.scale_factor(), vbar.value()
    view.refit_width_top()
    assert view.scale_factor() == s and vbar.value() == y


@pytest.mark.parametrize("provisional", [False, True], ids=["one-layout", "provisional-then-final"])
def test_opening_a_model_fits_its_width_and_shows_its_top(win, qtbot, monkeypatch, provisional):
    from engine.jobs import layout as layout_job
    from engine.layout import dot as layout_dot

    if provisional:  # dot "too slow": the model opens with the built-in layout, and dot's replaces it
        if layout_dot.dot_path() is None:
            pytest.skip("graphviz dot is not installed: there is no final layout after a provisional one")
        monkeypatch.setattr(layout_job, "PROVISIONAL_AFTER_S", 0.0)
    engines = []
    win.layout_applied.connect(lambda lay: engines.append(lay.engine))
    with qtbot.waitSignal(win.model_loaded, timeout=TIMEOUT_MS):
        win.open_graph(wide())
    final = "dot" if layout_dot.dot_path() else "builtin"
    qtbot.waitUntil(lambda: not win.busy and engines[-1:] == [final]
                    and win.view.scene().plan is win.doc.plans.get("none"), timeout=TIMEOUT_MS)
    if provisional:
        assert engines == ["builtin", "dot"]
    assert win.view.scale_factor() < 1.0
    assert_width_fits_and_top_shown(win.view)


def test_the_properties_panel_wraps_long_values(qapp, qtbot):
    from gui.panels.properties import PropertiesPanel

    panel = PropertiesPanel()
    box = panel.container()
    qtbot.addWidget(box)
    box.resize(360, 500)
    box.show()
    g = wide(branches=30, depth=2)
    panel.show_node(g, g.nodes[0].id)        # 30 consumers: a value far wider than the panel
    qtbot.waitUntil(lambda: panel.values().get("consumers") is not None)
    qapp.processEvents()
    rows = {panel.topLevelItem(i).text(0): panel.topLevelItem(i) for i in range(panel.topLevelItemCount())}
    long_rect, short_rect = panel.visualItemRect(rows["consumers"]), panel.visualItemRect(rows["id"])
    value = panel.values()["consumers"]
    one_line = panel.fontMetrics().horizontalAdvance(value)
    assert panel.wordWrap() and one_line > 3 * panel.columnWidth(1)
    # the whole value is shown, over several lines, within the panel: nothing elided, no sideways scrolling
    assert long_rect.height() >= 3 * short_rect.height()
    assert not panel.horizontalScrollBar().isVisible()
    assert panel.header().sectionPosition(1) + panel.columnWidth(1) <= panel.viewport().width()
    # a narrower panel wraps the same value over more lines
    box.resize(260, 500)
    qtbot.waitUntil(lambda: panel.visualItemRect(rows["consumers"]).height() > long_rect.height())
    assert not panel.horizontalScrollBar().isVisible()
    # an identifier with no spaces breaks after its underscores
    b = Builder()
    name = "fused_conv2d_subtract_divide_multiply_add_maximum_minimum_relu_conv2d_add_relu_multiply_add"
    op = b.add(name, [b.add("conv2d", [])], pattern="ElemWise")
    panel.show_node(b.graph("named"), op)
    qapp.processEvents()
    rows = {panel.topLevelItem(i).text(0): panel.topLevelItem(i) for i in range(panel.topLevelItemCount())}
    assert panel.values()["operator"] == name   # the text itself is unchanged
    assert box.width() == 260                   # nor does the name (in the details line too) widen the panel
    assert panel.fontMetrics().horizontalAdvance(name) > 1.5 * panel.columnWidth(1), panel.columnWidth(1)
    assert panel.visualItemRect(rows["operator"]).height() >= 2 * panel.visualItemRect(rows["id"]).height()
    assert not panel.horizontalScrollBar().isVisible()

