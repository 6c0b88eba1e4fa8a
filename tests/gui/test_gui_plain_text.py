"""Issue 31, class 3 (the app): text from a file reaches Qt as plain text.

Qt renders a QLabel's text, any tooltip and a text document's `setHtml` as rich text when it looks like
HTML, so an ONNX node named `<b>X</b><img src="file:///etc/passwd">` would be rendered. Every view goes
through gui/plain.py (plain_label, rich, rich_label, set_html, tooltip, label).

- A structural test: every setText / setToolTip / setHtml / setWhatsThis / QLabel(...) / pyqtgraph's
  setLabel / setTitle / LabelItem (HTML) /
  QToolTip.showText / ToolTipRole item data / QMessageBox text in gui/ takes a string literal or a call to
  gui.plain; no view sets a rich (or auto) text format itself. The few plain-rendering widgets whose
  `setText` takes data (QGraphicsSimpleTextItem, pyqtgraph's TextItem) are allow-listed with a reason. The
  checker is itself tested on a source string with bad calls. (Status-bar messages, window titles, item
  texts of item views and QGraphicsSimpleTextItem(text) are painted as plain text by Qt: not checked.)
- A behavioural test: a model whose node and input names are hostile HTML, opened in the app; the
  Properties panel, tooltips, the breadcrumb, the error banner show the literal `<b>`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUI = ROOT / "gui"
HELPER_MODULE = "plain"
HELPERS = {"plain_label", "rich", "rich_label", "set_html", "tooltip", "label", "esc"}

# method name -> which positional argument is the text (-1: the last)
# (setStatusTip is not here: a status tip is shown by QStatusBar.showMessage, painted as plain text)
SETTERS = {"setText": -1, "setToolTip": -1, "setHtml": 0, "setWhatsThis": -1}
MESSAGE_BOXES = {"about", "information", "warning", "critical", "question"}

# (file, enclosing function, call) -> why data text there is plain text already. Each entry must still match.
ALLOWED = {
    ("gui/graph/boxes.py", "GroupBoxes._style_badge", "setText"):
        "a QGraphicsSimpleTextItem (the kind badge's letters): Qt paints its text as plain text",
    ("gui/panels/latency.py", "LatencyPanel._fit_marks", "setText"):
        "pyqtgraph's TextItem.setText calls QGraphicsTextItem.setPlainText",
    ("gui/kernel_code_view.py", "KernelCodeDialog.copy", "setText"):
        "QClipboard.setText: the kernel's code put on the clipboard as text/plain; nothing renders it",
    ("gui/graph/scene_export.py", "SceneExport.render_svg", "setTitle"):
        "QSvgGenerator.setTitle: the exported file's <title>, which Qt writes escaped; not shown in the app",
}


def _is_literal(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_helper(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == HELPER_MODULE:
        return f.attr in HELPERS
    return isinstance(f, ast.Name) and f.id in HELPERS


def _ok(node) -> bool:
    if isinstance(node, ast.IfExp):                     # "Timing..." if running else "Time kernels"
        return _ok(node.body) and _ok(node.orelse)
    return _is_literal(node) or _is_helper(node)


def _name(f) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _mentions(node, attr: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(node))


def _is_tooltip_role(test) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == "ToolTipRole") or (isinstance(n, ast.Name) and n.id == "_TIP")
               for n in ast.walk(test))


def violations(source: str, path: str = "<string>") -> list[tuple[str, str, str, int]]:
    """(path, enclosing function, call, line) for each call in `source` that gives Qt text other than a
    literal or a gui.plain helper's."""
    tree = ast.parse(source)
    out = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name])
                continue
            if isinstance(child, ast.Call):
                check(child, ".".join(scope))
            if isinstance(child, ast.If) and _is_tooltip_role(child.test):   # a model's data(ToolTipRole)
                for n in (m for b in child.body for m in ast.walk(b)):
                    if isinstance(n, ast.Return) and n.value is not None and not _ok(n.value) \
                            and not (isinstance(n.value, ast.Constant) and n.value.value is None):
                        out.append((path, ".".join(scope), "ToolTipRole", n.lineno))
            visit(child, scope)

    def bad(call, what, where):
        out.append((path, where, what, call.lineno))

    def check(call, where):
        name, args = _name(call.func), call.args
        if name in SETTERS and isinstance(call.func, ast.Attribute) and args:
            if not _ok(args[SETTERS[name]]):
                bad(call, name, where)
        elif name in ("QLabel", "LabelItem", "setTitle") and args and not _ok(args[0]):   # pyqtgraph's: HTML
            bad(call, name, where)
        elif name == "setLabel" and len(args) >= 2 and not _ok(args[1]):          # pyqtgraph's axis label: HTML
            bad(call, name, where)
        elif name == "showText" and len(args) >= 2 and not _ok(args[1]):        # QToolTip.showText(pos, text)
            bad(call, name, where)
        elif name == "setItemData" and len(args) >= 3 and _mentions(args[2], "ToolTipRole") and not _ok(args[1]):
            bad(call, name, where)
        elif name in MESSAGE_BOXES and _mentions(call.func, "QMessageBox") and len(args) >= 3 and not _ok(args[2]):
            bad(call, name, where)
        elif name == "setTextFormat" and args and not _mentions(args[0], "PlainText"):
            bad(call, name, where)        # rich text only through plain.rich_label

    visit(tree, [])
    return out


def gui_sources():
    for p in sorted(GUI.rglob("*.py")):
        if p.name != "plain.py":
            yield p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")


def test_checker_catches_bad_calls():
    bad = '''
class Panel:
    def show(self, node, item, box, w, pos):
        self.label.setText(node.name)
        self.label.setToolTip(f"op {node.name}")
        item.setToolTip(1, "ONNX: " + node.onnx_name)
        lbl = QtWidgets.QLabel(node.name)
        self.details.setTextFormat(QtCore.Qt.RichText)
        self.text.setHtml(f"<b>{node.name}</b>")
        QtWidgets.QToolTip.showText(pos, node.name, w)
        box.setItemData(0, node.description, QtCore.Qt.ToolTipRole)
        QtWidgets.QMessageBox.warning(w, "Failed", str(node.error))
        action.setWhatsThis(node.name)
        self.plot.setLabel("left", f"measured on {target}")
        legend = pg.LabelItem(name, justify="left")
        self.button.setText("Timing " + node.name if node else "Time")

    def data(self, index, role):
        if role == QtCore.Qt.ToolTipRole:
            return self.rows[index.row()].name
'''
    found = violations(bad)
    assert [v[2] for v in found] == ["setText", "setToolTip", "setToolTip", "QLabel", "setTextFormat", "setHtml",
                                     "showText", "setItemData", "warning", "setWhatsThis", "setLabel", "LabelItem",
                                     "setText", "ToolTipRole"], found
    assert {v[1] for v in found} == {"Panel.show", "Panel.data"}
    good = '''
def show(self, node, item, box, w, pos):
    plain.plain_label(self.label, node.name)
    self.label.setText("Open a model")
    self.label.setToolTip(plain.tooltip(f"op {node.name}"))
    item.setToolTip(1, plain.tooltip(node.onnx_name))
    lbl = plain.label(node.name)
    empty = QtWidgets.QLabel()
    QtWidgets.QLabel("literal", w)
    plain.rich_label(self.details, plain.rich("<b>{n}</b>", n=node.name))
    self.details.setTextFormat(QtCore.Qt.PlainText)
    QtWidgets.QToolTip.showText(pos, plain.tooltip(node.name), w)
    box.setItemData(0, plain.tooltip(node.description), QtCore.Qt.ToolTipRole)
    box.setItemData(0, node.name, QtCore.Qt.UserRole)
    QtWidgets.QMessageBox.about(w, "About", plain.rich("<b>FuseLens</b> {v}", v=version))
    self.status_bar.showMessage(node.name)
    self.plot.setLabel("left", plain.esc(f"measured on {target}"))
    self.button.setText("Timing..." if node else "Time kernels")
    if role == _TIP:
        if node is None:
            return None
        return plain.tooltip(node.name)
'''
    assert violations(good) == []


def test_no_view_takes_data_text_any_other_way():
    found = [v for path, src in gui_sources() for v in violations(src, path)]
    unexpected = [v for v in found if v[:3] not in ALLOWED]
    assert not unexpected, "data text must go through gui/plain.py (plain_label, rich, tooltip): " + "\n".join(
        f"{p}:{line} in {where}: {what}" for p, where, what, line in unexpected)
    stale = set(ALLOWED) - {v[:3] for v in found}
    assert not stale, f"allow-list entries that match nothing (remove them): {sorted(stale)}"


# ---------------------------------------------------------------------------------------------- behaviour

HOSTILE = '<b>X</b><img src="file:///etc/passwd">'


def test_plain_helpers():
    from PySide6 import QtCore, QtGui, QtWidgets

    from gui import plain

    pytest.importorskip("pytestqt")
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    assert app is not None
    lab = QtWidgets.QLabel()
    plain.plain_label(lab, HOSTILE)
    assert lab.textFormat() == QtCore.Qt.PlainText and lab.text() == HOSTILE
    r = plain.rich("<b>{name}</b>: {n:.1f} ms", name=HOSTILE, n=1.25)
    assert isinstance(r, plain.Rich) and "<img" not in r and shown(r) == f"{HOSTILE}: 1.2 ms"
    assert shown(r + HOSTILE) == f"{HOSTILE}: 1.2 ms{HOSTILE}"             # plain text added is escaped
    assert shown(plain.Rich(" | ").join([HOSTILE, r])) == f"{HOSTILE} | {HOSTILE}: 1.2 ms"
    with pytest.raises(TypeError):
        plain.rich_label(lab, f"<b>{HOSTILE}</b>")                         # a plain str is not our markup
    plain.plain_label(lab, r)
    assert lab.textFormat() == QtCore.Qt.RichText and shown(lab.text()) == f"{HOSTILE}: 1.2 ms"
    tip = plain.tooltip(f"{HOSTILE}\n  second line")
    assert QtGui.Qt.mightBeRichText(tip) and "<img" not in tip and "<b>" not in tip
    doc = QtGui.QTextDocument()
    doc.setHtml(tip)
    assert doc.toPlainText() == f"{HOSTILE}\n  second line"               # lines and spaces kept
    assert plain.tooltip("") == "" and plain.tooltip(None) == ""


def shown(text: str) -> str:
    """What Qt shows for `text` where it is taken as rich text when it looks like it (tooltips, AutoText)."""
    from PySide6 import QtCore, QtGui

    if not QtGui.Qt.mightBeRichText(text):
        return text
    doc = QtGui.QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def label_shows(label) -> str:
    """What a label shows, as text (the zero-width spaces Properties adds for wrapping left out)."""
    return _label_shows(label).replace("\u200b", "")


def _label_shows(label) -> str:
    from PySide6 import QtCore

    fmt = label.textFormat()
    if fmt == QtCore.Qt.PlainText:
        return label.text()
    if fmt == QtCore.Qt.RichText:
        from PySide6 import QtGui

        doc = QtGui.QTextDocument()
        doc.setHtml(label.text())
        return doc.toPlainText()
    return shown(label.text())


def hostile_onnx(tmp_path):
    """conv -> relu -> add, every node, the input and the graph named with hostile HTML."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), dtype="float32"), "w")
    x = f"in{HOSTILE}"
    nodes = [helper.make_node("Conv", [x, "w"], ["c"], pads=[1, 1, 1, 1], name=f"block/{HOSTILE}/conv"),
             helper.make_node("Relu", ["c"], ["r"], name=f"block/{HOSTILE}/relu"),
             helper.make_node("Add", ["r", "c"], ["y"], name=f"{HOSTILE}add")]
    g = helper.make_graph(nodes, HOSTILE, [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    p = tmp_path / "hostile.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), p)
    return p


def test_hostile_names_are_shown_as_text(qtbot, new_window, tmp_path):
    from PySide6 import QtCore, QtWidgets

    from tests.support.gui_helpers import open_model, settle

    win = new_window(profile="t4", strategy="greedy")
    doc = open_model(qtbot, win, hostile_onnx(tmp_path))
    g = doc.graph
    nid = next(n.id for n in g.nodes if n.onnx_name and HOSTILE in n.onnx_name)
    # Properties: the row's details line (rich text with the key in bold) and its tooltip
    win.selection.activate("left", ("node", nid))
    props = win.props
    assert any(HOSTILE in v for v in props.values().values()), props.values()
    row = next(props.topLevelItem(i) for i in range(props.topLevelItemCount())
               if props.topLevelItem(i).text(0) == "ONNX node")
    props.setCurrentItem(row)
    assert HOSTILE in label_shows(props.details) and "<img" not in props.details.text()
    for i in range(props.topLevelItemCount()):
        tip = props.topLevelItem(i).toolTip(1)
        assert "<img" not in tip and ("<b>X" not in tip)
        if HOSTILE in props.topLevelItem(i).text(1) and tip:
            assert HOSTILE in shown(tip)
    # the graph's node tooltip, as the view shows it
    from gui import plain

    tip = plain.tooltip(win.view.scene().node_tooltip(nid))
    assert HOSTILE in shown(tip) and "<img" not in tip
    # a group: Properties, its tooltip
    gi = doc.plans["greedy"].group_of()[nid]
    win.selection.activate("left", ("group", gi))
    for i in range(props.topLevelItemCount()):
        props.setCurrentItem(props.topLevelItem(i))
        assert "<img" not in props.details.text()
    # the breadcrumb names the hostile block as text
    crumbs = win.area.scope_bar.crumbs
    assert "<img" not in crumbs.text()
    win.selection.activate("left", ("node", nid))
    assert "<b>X" in label_shows(crumbs), crumbs.text()
    # the Kernels panel's tooltips (its model's ToolTipRole) are escaped text
    from engine.report.kernel_table import kernel_rows

    km = win.kernels.model
    km.set_rows(kernel_rows(g, doc.plans["greedy"], None, doc.plans.get("greedy")))
    from gui.panels.kernels import NAME_COL
    tips = [km.data(km.index(r, NAME_COL), QtCore.Qt.ToolTipRole) for r in range(km.rowCount())]
    assert tips and all(t == plain.tooltip(shown(t)) for t in tips), tips
    # the Recommendation's verdict and the side-by-side summary, Differences
    assert "<img" not in win.recpanel.verdict.text()
    win.set_side_by_side(True)
    settle(qtbot, win)
    for lab in (win.area.summary, win.area.left_title, win.diffs.header, win.recpanel.headline):
        assert "<img" not in lab.text()
    # block tooltips
    for it in win.view.scene().items():
        assert "<img" not in it.toolTip()
    # the error banner quotes the name as text
    win.show_error(f"node {HOSTILE} failed", "Planning failed")
    banner = win.area.banner_text
    assert banner.textFormat() == QtCore.Qt.PlainText and banner.text() == f"Planning failed: node {HOSTILE} failed"
    # every label and tooltip in the window: the markup never rendered
    for lab in win.findChildren(QtWidgets.QLabel):
        if "<img" in lab.text():
            assert HOSTILE in label_shows(lab), lab.text()
    for w in win.findChildren(QtWidgets.QWidget):
        assert "<img" not in w.toolTip(), w.toolTip()
