"""Recommendation panel: the published decision tree drawn as a tree, the path taken for this model
and hardware profile highlighted, each test's value against its threshold, and the measured verdict
beside the rule's (with any disagreement stated, a note when the unfused plan measured fastest, and a
caveat where it was timed on a busy machine).

The tree is laid out as a chain (each question's leaf below it, the next question to its right), so it
suits a wide, low dock; it is never drawn smaller than MIN_SCALE (the view scrolls instead). The
measured verdict's tab says what decided it, short (engine.report.recommend's `summary`: the pick, each
candidate with a lower median and why it lost, the plans that are no candidate, the same plans), in a box
as tall as its text up to MAX_DETAILS of the room (no scrolling at 1400x900); the whole detail is its
tooltip. Expand (or a double-click on the tree) opens the tree in a window of its own, as large as the
user makes it."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .. import plain, style
from . import follow_results

NODE_W, NODE_H, LEAF_W, LEAF_H = 120.0, 64.0, 72.0, 28.0
HGAP, VGAP = 28.0, 26.0
FONT_PT = 9.5
MIN_SCALE = 0.8    # the tree's text at least ~7.5 pt (10 px) on screen: below that the view scrolls
MAX_DETAILS = 0.62  # the verdict's box takes up to this share of the tree's and its room, to need no scrolling


def normalise_tree(tree) -> tuple[str, dict[str, tuple[str, str, str]]]:
    """engine.report.recommend's tree -> (root, {node: (question, yes, no)}); leaves are the strategies."""
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
        return plain.rich("<i>Measured verdict: not yet measured</i> (benchmark greedy and dp or hybrid on the "
                          "selected device to add one).")
    return plain.rich("<b>No measured verdict:</b> {why}", why=why)


class VerdictText(QtWidgets.QTextBrowser):
    """The measured verdict in full, scrolling in its own room; text(): what it says, as plain text."""

    def text(self) -> str:
        return self.toPlainText()


class TreeView(QtWidgets.QGraphicsView):
    """A view of the tree's scene that fits it, never below MIN_SCALE (then it scrolls, showing the
    path's end); a double-click asks for the tree's own window (`expand_requested`)."""
    expand_requested = QtCore.Signal()

    def __init__(self, scene, parent=None, max_scale: float = 1.0):
        super().__init__(scene, parent)
        self.max_scale = max_scale
        self.focus_rect: QtCore.QRectF | None = None   # what to show when the whole tree does not fit
        self.setRenderHints(QtGui.QPainter.Antialiasing | QtGui.QPainter.TextAntialiasing)
        self.setDragMode(QtWidgets.QGraphicsView.ScrollHandDrag)

    def fit(self):
        rect = self.scene().sceneRect()
        if rect.isEmpty():
            return
        vp = self.viewport().size()
        k = min(vp.width() / rect.width(), vp.height() / rect.height())
        k = max(MIN_SCALE, min(self.max_scale, k))
        self.setTransform(QtGui.QTransform.fromScale(k, k))
        self.centerOn(self.focus_rect.center() if self.focus_rect is not None and (
            rect.width() * k > vp.width() or rect.height() * k > vp.height()) else rect.center())

    def scale_factor(self) -> float:
        return self.transform().m11()

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self.fit()

    def mouseDoubleClickEvent(self, ev):  # noqa: N802
        self.expand_requested.emit()


class RecommendationPanel(QtWidgets.QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.verdict = plain.label("No model loaded.")
        self.verdict.setWordWrap(True)
        self.headline = plain.label("")       # the measured verdict in one line
        self.headline.setWordWrap(True)
        self.expand_button = QtWidgets.QToolButton()
        self.expand_button.setText("Expand")
        self.expand_button.setToolTip(plain.tooltip("Open the decision tree in a window of its own (or double-click "
                                                    "the tree)"))
        self.expand_button.clicked.connect(self.expand)
        self.scene = QtWidgets.QGraphicsScene(self)
        self.view = TreeView(self.scene)
        self.view.expand_requested.connect(self.expand)
        self.measured = VerdictText()    # the measured verdict in full: it scrolls, the tree keeps its room
        self.measured.setOpenLinks(False)
        self.tests = QtWidgets.QTreeWidget()
        self.tests.setHeaderLabels(["test", "value", "threshold", "passed"])
        self.tests.setRootIsDecorated(False)
        self.tests.header().setSectionResizeMode(QtWidgets.QHeaderView.ResizeToContents)
        self.details = QtWidgets.QTabWidget()
        self.details.setDocumentMode(True)
        self.details.addTab(self.measured, "Measured verdict")
        self.details.addTab(self.tests, "Tests")
        self.details.currentChanged.connect(lambda _: self.fit_details())
        split = self.split = QtWidgets.QSplitter(QtCore.Qt.Vertical)
        split.addWidget(self.view)
        split.addWidget(self.details)
        split.setStretchFactor(0, 1)     # the tree takes what the panel grows by; the verdict's text scrolls
        split.setStretchFactor(1, 0)
        split.setChildrenCollapsible(False)
        self.details.setMinimumHeight(70)
        split.setSizes([220, 80])
        top = QtWidgets.QHBoxLayout()
        heads = QtWidgets.QVBoxLayout()
        heads.addWidget(self.verdict)
        heads.addWidget(self.headline)
        top.addLayout(heads, 1)
        top.addWidget(self.expand_button, 0, QtCore.Qt.AlignTop)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(split, 1)
        self.rec = None
        self.ctx, self._measured = "", None   # ctx: the context line the recommendation was shown with
        self.highlighted: list[str] = []
        self.dark = False
        self.window_view: TreeView | None = None   # the tree's own window, once opened

    def follow(self, workspace):
        """Recommend from the model from now on: the open Document, the results measured on the selected
        device and the compile-time budget (engine.report.recommend)."""
        self._workspace = workspace
        follow_results(workspace, self.redraw)
        workspace.events.budget.connect(lambda ev: self.redraw())

    def redraw(self):
        ws = self._workspace
        doc = ws.doc
        if doc is None:
            return
        from engine.report import recommend

        try:
            # every result, errored or not correct ones too: the engine leaves those out and says why
            measured = doc.results_for(ws.device)
            rec = recommend.recommend(doc.graph, doc.hw, ws.budget, measured or None, same=doc.same_plans())
        except Exception as e:  # noqa: BLE001 - shown in the panel
            self.show_message(f"Recommendation failed: {e}")
            return
        self.show_recommendation(rec, f"{doc.name} on {doc.hw.title}, budget {ws.budget:g}%, measured on {ws.device}",
                                 measured=list(measured))

    def set_theme(self, dark: bool):
        self.dark = dark
        for v in (self.view, self.window_view):
            if v is not None:
                v.setBackgroundBrush(QtGui.QColor("#1e1f22" if dark else "#fbfbfc"))
        if self.rec is not None:
            self.show_recommendation(self.rec, self.ctx, self._measured)

    def show_message(self, text: str):
        self.rec = None
        self.scene.clear()
        self.tests.clear()
        plain.plain_label(self.verdict, text)
        plain.plain_label(self.headline, "")
        self.measured.setPlainText("")

    def show_recommendation(self, rec, ctx: str = "", measured=None):
        """measured: the strategies with a benchmark result on the device (usable or not), to say what
        is missing when there is no measured verdict."""
        self.rec, self.ctx, self._measured = rec, ctx, measured
        plain.rich_label(self.verdict, plain.rich("<b>Rule's verdict: {v}</b>", v=rec.verdict)
                         + (plain.rich(" &nbsp; <small>({ctx})</small>", ctx=ctx) if ctx else ""))
        unfused = getattr(rec, "unfused_note", None)
        compared = len(getattr(rec, "measured", None) or {})   # the candidates the measured verdict compared
        if rec.measured_verdict:
            head = plain.rich("<b>Measured verdict: {v}</b>", v=rec.measured_verdict)
            if getattr(rec, "busy_note", None):   # the detail ends with the whole line
                head += plain.rich(" <span style='color:#d97706'><b>(timed on a busy machine: may be distorted)</b>"
                                   "</span>")
            if rec.disagreement:
                head += plain.rich(" &nbsp; <span style='color:#d62728'><b>Disagreement:</b> {d}</span>",
                                   d=rec.disagreement)
            elif unfused:
                head += plain.rich(" &nbsp; <span style='color:#d97706'><b>The unfused plan measured fastest.</b>"
                                   "</span>")
            elif compared >= 2:   # never with one plan measured: nothing to agree with
                head += plain.rich(" &nbsp; <span style='color:#2ca02c'>The rule and the measurements agree.</span>")
            # what decided it, short (the box needs no scrolling); the whole detail in its tooltip
            txt = head + plain.rich("<br><b>Why:</b> {d}", d=getattr(rec, "summary", None) or rec.measured_detail or "")
        else:
            head = txt = no_verdict_text(rec, measured)
        plain.rich_label(self.headline, head)
        plain.set_html(self.measured, txt)
        QtCore.QTimer.singleShot(0, self, self.fit_details)   # once laid out: the box as tall as its text
        self.measured.setToolTip(plain.tooltip(rec.measured_detail.replace("; ", "\n"))
                                 if rec.measured_detail else "")
        self.tests.clear()
        for t in rec.tests:
            unit = t.get("unit", "")
            cmp = ">=" if str(t.get("name", "")).startswith("budget") else ">"
            it = QtWidgets.QTreeWidgetItem([t.get("question") or t["name"], f"{t['value']} {unit}".strip(),
                                            f"{cmp} {t['threshold']} {unit}".strip(),
                                            "yes" if t["passed"] else "no"])
            self.tests.addTopLevelItem(it)
        self._draw(rec)

    def fit_details(self):
        """The verdict's box as tall as its text (no scrolling), up to MAX_DETAILS of the room below the
        headlines, taken from the tree (which then scrolls at MIN_SCALE rather than shrink its text; Expand
        shows it whole)."""
        sizes = self.split.sizes()
        if len(sizes) != 2 or not self.isVisible() or self.details.currentWidget() is not self.measured:
            return
        doc = self.measured.document()
        doc.setTextWidth(self.measured.viewport().width())
        need = int(doc.size().height()) + (self.details.height() - self.measured.viewport().height()) + 2
        total = sum(sizes)
        want = min(need, int(total * MAX_DETAILS))
        if want > sizes[1]:
            self.split.setSizes([total - want, want])

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self.fit_details()

    def expand(self):
        """The tree in a window of its own (the same scene), fitted to it and resizable."""
        if self.window_view is None:
            dlg = QtWidgets.QDialog(self)
            dlg.setWindowTitle("Decision tree")
            self.window_view = TreeView(self.scene, dlg, max_scale=2.5)
            self.window_view.setBackgroundBrush(QtGui.QColor("#1e1f22" if self.dark else "#fbfbfc"))
            lay = QtWidgets.QVBoxLayout(dlg)
            lay.setContentsMargins(4, 4, 4, 4)
            lay.addWidget(self.window_view)
            r = self.scene.sceneRect()
            dlg.resize(int(max(900, r.width() * 1.3 + 40)), int(max(320, r.height() * 1.3 + 40)))
        dlg = self.window_view.parent()
        self.window_view.focus_rect = self.view.focus_rect
        dlg.show()
        dlg.raise_()
        self.window_view.fit()

    # ---- drawing --------------------------------------------------------------------------------

    def _layout(self, root, tree):
        """Node positions as a chain: a question's inner child continues to its right, its leaf hangs
        below it (both leaves: yes to the right, no below); a question with two inner children (not in
        the published tree) puts the no-branch below. -> {"node", "x", "y", "kids": [(label, child)], "q"}."""
        def place(node, x, y):
            if node not in tree:
                return {"node": node, "x": x, "y": y, "kids": [], "w": LEAF_W, "h": LEAF_H}
            q, yes, no = tree[node]
            right, below = (("yes", yes), ("no", no)) if yes in tree or no not in tree else (("no", no), ("yes", yes))
            n = {"node": node, "x": x, "y": y, "q": q, "w": NODE_W, "h": NODE_H}
            inner = right[1] in tree   # a leaf to the right sits level with this node's middle
            a = place(right[1], x + NODE_W / 2 + HGAP + (NODE_W if inner else LEAF_W) / 2,
                      y if inner else y + (NODE_H - LEAF_H) / 2)
            a["right"] = True
            # below this node; a whole chain (two questions as children) below everything to its right
            b_y = (bottom(a) if below[1] in tree else y + NODE_H) + VGAP
            b = place(below[1], x, b_y)
            n["kids"] = [(right[0], a), (below[0], b)]
            return n

        def bottom(n):
            return max([n["y"] + n["h"]] + [bottom(k) for _, k in n["kids"]])

        return place(root, NODE_W / 2, 0.0)

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
        self.view.setBackgroundBrush(QtGui.QColor("#1e1f22" if self.dark else "#fbfbfc"))
        font = QtGui.QFont()
        font.setPointSizeF(FONT_PT)
        bold = QtGui.QFont(font)
        bold.setBold(True)
        self.text_items: list[QtWidgets.QGraphicsItem] = []
        focus = []

        def text(label, f, rect, colour):
            t = self.scene.addText("", f)
            t.setDefaultTextColor(colour)
            t.setTextWidth(rect.width() - 6)
            plain.set_html(t, plain.rich("<div align='center'>{label}</div>",
                                         label=plain.Rich("<br>").join(str(label).split("\n"))))
            br = t.boundingRect()
            t.setPos(rect.center().x() - br.width() / 2, rect.center().y() - br.height() / 2)
            self.text_items.append(t)
            return t

        def draw(n, on_path: bool):
            leaf = not n["kids"]
            w, h = n["w"], n["h"]
            rect = QtCore.QRectF(n["x"] - w / 2, n["y"], w, h)
            if leaf:
                c = QtGui.QColor(style.STRATEGY_COLOURS.get(n["node"], "#888"))
                if not on_path:
                    c.setAlpha(70)
                item = self.scene.addRect(rect, QtGui.QPen(hi if on_path else dim, 3 if on_path else 1), c)
                text(n["node"], bold, rect, fg)
                if on_path:
                    focus.append(rect)
            else:
                test = tests.get(n["node"])
                fill = QtGui.QColor(hi if on_path else dim)
                fill.setAlpha(40 if on_path else 15)
                item = self.scene.addRect(rect, QtGui.QPen(hi if on_path else dim, 3 if on_path else 1), fill)
                label = n["q"]
                if test is not None:
                    label += f"\n{test['value']} {test.get('unit', '')}: {'yes' if test['passed'] else 'no'}"
                text(label, font, rect, fg)
            item.setData(0, n["node"])
            if on_path:
                self.highlighted.append(n["node"])
            for lab, k in n["kids"]:
                kp = on_path and (n["node"], k["node"]) in on_path_edges and lab == (
                    "yes" if tests.get(n["node"], {}).get("passed") else "no")
                pen = QtGui.QPen(hi if kp else dim, 3 if kp else 1.2)
                if k.get("right"):      # to the right
                    a, b = QtCore.QPointF(n["x"] + w / 2, n["y"] + h / 2), QtCore.QPointF(k["x"] - k["w"] / 2,
                                                                                       k["y"] + k["h"] / 2)
                    at = QtCore.QPointF((a.x() + b.x()) / 2 - 8, a.y() - 18)
                else:                   # below
                    a, b = QtCore.QPointF(n["x"], n["y"] + h), QtCore.QPointF(k["x"], k["y"])
                    at = QtCore.QPointF(a.x() + 4, (a.y() + b.y()) / 2 - 9)
                self.scene.addLine(QtCore.QLineF(a, b), pen)
                tl = self.scene.addSimpleText(lab, font)
                tl.setBrush(hi if kp else dim)
                tl.setPos(at)
                draw(k, kp)

        draw(self._layout(root, tree), True)
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-8, -8, 8, 8))
        self.view.focus_rect = focus[-1] if focus else None
        for v in (self.view, self.window_view):
            if v is not None:
                v.focus_rect = self.view.focus_rect
                QtCore.QTimer.singleShot(0, v, v.fit)   # (not after v is gone)
        self.view.fit()

    def text_pixel_size(self) -> float:
        """The tree's text height on screen in the panel (px): the font's pixel size times the view's scale."""
        f = QtGui.QFont()
        f.setPointSizeF(FONT_PT)
        return QtGui.QFontMetricsF(f).height() * self.view.scale_factor()
