"""Recommendation panel: the published decision tree drawn as a tree, the path taken for this model
and hardware profile highlighted, each test's value against its threshold, and the measured verdict
beside the rule's (with any disagreement stated, and a caveat where it was timed on a busy machine)."""
from __future__ import annotations

import html

from PySide6 import QtCore, QtGui, QtWidgets

from .. import style
from . import follow_results

NODE_W, NODE_H, LEAF_W, LEAF_H = 250.0, 56.0, 90.0, 32.0
HGAP, VGAP = 24.0, 46.0


def normalise_tree(tree) -> tuple[str, dict[str, tuple[str, str, str]]]:
    """engine.recommend's tree -> (root, {node: (question, yes, no)}); leaves are the strategies."""
    if isinstance(tree, dict) and tree and all(isinstance(v, (tuple, list)) and len(v) == 3 for v in tree.values()):
        children = {c for v in tree.values() for c in v[1:]}
        root = next((k for k in tree if k not in children), next(iter(tree)))
        return root, {k: tuple(v) for k, v in tree.items()}
    raise ValueError("unrecognised decision-tree description")


def no_verdict_text(rec, measured=None) -> str:
    """Why there is no measured verdict, as the panel shows it: the engine's reason (greedy, the
    baseline, has no usable result; results not correct or errored are excluded), else what is
    still to be measured."""
    excluded = dict(getattr(rec, "excluded", None) or {})
    detail = (rec.measured_detail or "").strip()
    measured = list(measured or [])
    if detail:
        for prefix in ("no measured verdict: ", "No measured verdict: "):
            detail = detail.removeprefix(prefix)
        why = detail
    elif excluded:
        why = "results that cannot count: " + "; ".join(f"{s} ({w})" for s, w in excluded.items())
    elif measured and "greedy" not in measured:
        why = (f"greedy, the baseline of the comparison, is not measured yet (measured: {', '.join(measured)}); "
               "benchmark greedy on the selected device to add one.")
    elif measured:
        why = "only greedy is measured: benchmark dp or hybrid on the selected device to compare with it."
    else:
        return ("<i>Measured verdict: not yet measured</i> (benchmark greedy and dp or hybrid on the selected "
                "device to add one).")
    return f"<b>No measured verdict:</b> {html.escape(why)}"


class RecommendationPanel(QtWidgets.QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.verdict = QtWidgets.QLabel("No model loaded.")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(QtCore.Qt.RichText)
        self.measured = QtWidgets.QLabel("")
        self.measured.setWordWrap(True)
        self.measured.setTextFormat(QtCore.Qt.RichText)
        self.scene = QtWidgets.QGraphicsScene(self)
        self.view = QtWidgets.QGraphicsView(self.scene)
        self.view.setRenderHints(QtGui.QPainter.Antialiasing | QtGui.QPainter.TextAntialiasing)
        self.view.setDragMode(QtWidgets.QGraphicsView.ScrollHandDrag)
        self.tests = QtWidgets.QTreeWidget()
        self.tests.setHeaderLabels(["test", "value", "threshold", "passed"])
        self.tests.setRootIsDecorated(False)
        self.tests.header().setSectionResizeMode(QtWidgets.QHeaderView.ResizeToContents)
        self.tests.setMinimumHeight(60)
        self.tests.setMaximumHeight(96)
        split = QtWidgets.QSplitter(QtCore.Qt.Vertical)
        split.addWidget(self.view)
        split.addWidget(self.tests)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([400, 90])
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.verdict)
        lay.addWidget(split, 1)
        lay.addWidget(self.measured)
        self.rec = None
        self._ctx, self._measured = "", None
        self.highlighted: list[str] = []
        self.dark = False

    def follow(self, workspace):
        """Recommend from the model from now on: the open Document, the results measured on the selected
        device and the compile-time budget (engine.recommend)."""
        self._workspace = workspace
        follow_results(workspace, self.redraw)
        workspace.events.budget.connect(lambda ev: self.redraw())

    def redraw(self):
        ws = self._workspace
        doc = ws.doc
        if doc is None:
            return
        from engine import recommend

        try:
            # every result, errored or not correct ones too: the engine leaves those out and says why
            measured = doc.results_for(ws.device)
            rec = recommend.recommend(doc.graph, doc.hw, ws.budget, measured or None)
        except Exception as e:  # noqa: BLE001 - shown in the panel
            self.show_message(f"Recommendation failed: {e}")
            return
        self.show_recommendation(rec, f"{doc.name} on {doc.hw.title}, budget {ws.budget:g}%, measured on {ws.device}",
                                 measured=list(measured))

    def set_theme(self, dark: bool):
        self.dark = dark
        self.view.setBackgroundBrush(QtGui.QColor("#1e1f22" if dark else "#fbfbfc"))
        if self.rec is not None:
            self.show_recommendation(self.rec, self._ctx, self._measured)

    def show_message(self, text: str):
        self.rec = None
        self.scene.clear()
        self.tests.clear()
        self.verdict.setText(text)
        self.measured.setText("")

    def show_recommendation(self, rec, ctx: str = "", measured=None):
        """measured: the strategies with a benchmark result on the device (usable or not), to say what
        is missing when there is no measured verdict."""
        self.rec, self._ctx, self._measured = rec, ctx, measured
        self.verdict.setText(f"<b>Rule's verdict: {rec.verdict}</b>"
                             + (f" &nbsp; <small>({ctx})</small>" if ctx else ""))
        if rec.measured_verdict:
            txt = f"<b>Measured verdict: {rec.measured_verdict}</b>"
            if getattr(rec, "busy_note", None):   # the detail ends with the whole line
                txt += " <span style='color:#d97706'><b>(timed on a busy machine: may be distorted)</b></span>"
            txt += f"<br>{rec.measured_detail or ''}"
            if rec.disagreement:
                txt += f"<br><span style='color:#d62728'><b>Disagreement:</b> {rec.disagreement}</span>"
            else:
                txt += "<br><span style='color:#2ca02c'>The rule and the measurements agree.</span>"
        else:
            txt = no_verdict_text(rec, measured)
        self.measured.setText(txt)
        self.tests.clear()
        for t in rec.tests:
            unit = t.get("unit", "")
            cmp = ">=" if str(t.get("name", "")).startswith("budget") else ">"
            it = QtWidgets.QTreeWidgetItem([t.get("question") or t["name"], f"{t['value']} {unit}".strip(),
                                            f"{cmp} {t['threshold']} {unit}".strip(),
                                            "yes" if t["passed"] else "no"])
            self.tests.addTopLevelItem(it)
        self._draw(rec)

    # ---- drawing --------------------------------------------------------------------------------

    def _draw(self, rec):
        self.scene.clear()
        try:
            root, tree = normalise_tree(rec.tree())
        except (ValueError, AttributeError, TypeError) as e:
            self.scene.addText(f"(cannot draw the tree: {e})")
            return
        tests = {t["name"]: t for t in rec.tests}
        path = list(rec.path)
        on_path_edges = set(zip(path, path[1:]))
        fg = QtGui.QColor("#dfe1e5" if self.dark else "#222")
        dim = QtGui.QColor("#6b6e74" if self.dark else "#9aa0a8")
        hi = QtGui.QColor("#ffcc00" if self.dark else "#e0115f")
        self.highlighted = []

        # lay out: leaves get consecutive x slots; inner nodes centre over their children
        slots = [0.0]

        def place(node, depth, parent_key):
            key = f"{parent_key}/{node}"
            if node not in tree:
                x = slots[0]
                slots[0] += LEAF_W + HGAP
                return {"key": key, "node": node, "x": x + LEAF_W / 2, "y": depth * (NODE_H + VGAP), "kids": []}
            q, yes, no = tree[node]
            a = place(yes, depth + 1, key)
            b = place(no, depth + 1, key)
            x = (a["x"] + b["x"]) / 2
            return {"key": key, "node": node, "x": x, "y": depth * (NODE_H + VGAP), "kids": [("yes", a), ("no", b)],
                    "q": q}

        lay = place(root, 0, "")
        font = QtGui.QFont()
        font.setPointSizeF(9.5)
        bold = QtGui.QFont(font)
        bold.setBold(True)

        def draw(n, on_path: bool):
            leaf = not n["kids"]
            w, h = (LEAF_W, LEAF_H) if leaf else (NODE_W, NODE_H)
            rect = QtCore.QRectF(n["x"] - w / 2, n["y"], w, h)
            if leaf:
                c = QtGui.QColor(style.STRATEGY_COLOURS.get(n["node"], "#888"))
                if not on_path:
                    c.setAlpha(70)
                item = self.scene.addRect(rect, QtGui.QPen(hi if on_path else dim, 3 if on_path else 1), c)
                t = self.scene.addSimpleText(n["node"], bold)
            else:
                test = tests.get(n["node"])
                fill = QtGui.QColor(hi if on_path else dim)
                fill.setAlpha(40 if on_path else 15)
                item = self.scene.addRect(rect, QtGui.QPen(hi if on_path else dim, 3 if on_path else 1), fill)
                label = n["q"]
                if test is not None:
                    label += f"\nvalue {test['value']} {test.get('unit', '')} -> {'yes' if test['passed'] else 'no'}"
                t = self.scene.addSimpleText(label, font)
            item.setData(0, n["node"])
            if on_path:
                self.highlighted.append(n["node"])
            t.setBrush(fg)
            br = t.boundingRect()
            t.setPos(rect.center().x() - br.width() / 2, rect.center().y() - br.height() / 2)
            for lab, k in n["kids"]:
                kp = on_path and (n["node"], k["node"]) in on_path_edges and lab == (
                    "yes" if tests.get(n["node"], {}).get("passed") else "no")
                pen = QtGui.QPen(hi if kp else dim, 3 if kp else 1.2)
                self.scene.addLine(n["x"], n["y"] + h, k["x"], k["y"], pen)
                tl = self.scene.addSimpleText(lab, font)
                tl.setBrush(hi if kp else dim)
                tl.setPos((n["x"] + k["x"]) / 2 + 4, (n["y"] + h + k["y"]) / 2 - 8)
                draw(k, kp)

        draw(lay, True)
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-10, -10, 10, 10))
        QtCore.QTimer.singleShot(0, lambda: self.view.fitInView(self.scene.sceneRect(), QtCore.Qt.KeepAspectRatio))

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        if self.scene.items():
            self.view.fitInView(self.scene.sceneRect(), QtCore.Qt.KeepAspectRatio)
