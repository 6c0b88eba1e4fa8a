"""Properties of what was clicked: an operator, a fused group, or an edge between groups. A group measured
by Measure Kernels vs ONNX Runtime (gui/kernel_reports.py, engine/report/kernel_report.py) also shows its kernel's
figures, each labelled measured or computed: time with its interval, FLOP/s and bytes/s as shares of the
profile's peaks, the bound, and ONNX Runtime's time for the same ONNX nodes."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from engine.layout import graph as L
from engine.planner.plan import provenance_of
from engine.report.result_rows import group_estimate
from engine.report.text import human

from .. import plain, style


def breakable(text: str) -> str:
    """`text` for display, where an identifier (fused_conv2d_add_relu, an ONNX name like block/conv/Conv_1)
    may also break after an underscore or a slash: a zero-width space there. Word wrap breaks only at
    spaces, so a long identifier would otherwise be clipped, or widen the panel."""
    return text.replace("_", "_\u200b").replace("/", "/\u200b")


class WrappingDelegate(QtWidgets.QStyledItemDelegate):
    """Row heights for wrapped values. A tree asks its delegate for a row's size without the column's
    width, so the style lays the text out on one line; here a value (or a row spanning both columns)
    is measured at the width it is drawn at. Keys are measured unwrapped: the key column fits them."""

    def initStyleOption(self, option, index):  # noqa: N802
        super().initStyleOption(option, index)
        option.text = breakable(option.text)   # on screen only: the item's text stays as it is

    def sizeHint(self, option, index):  # noqa: N802
        tree = self.parent()
        spanned = index.column() == 0 and tree.isFirstColumnSpanned(index.row(), index.parent())
        if index.column() == 0 and not spanned:
            return super().sizeHint(option, index)
        width = tree.viewport().width() if spanned else tree.columnWidth(index.column())
        depth, up = 0, index.parent()
        while up.isValid():
            depth, up = depth + 1, up.parent()
        if spanned:  # the branch indicators' indentation
            width -= tree.indentation() * (depth + 1)
        opt = QtWidgets.QStyleOptionViewItem(option)
        opt.rect = QtCore.QRect(0, 0, max(width, 40), 1 << 20)
        return super().sizeHint(opt, index)


class PropertiesPanel(QtWidgets.QTreeWidget):
    """Key/value rows (with nested rows for a group's members). `values()` gives them as a dict.
    Long values wrap within the panel's width (no horizontal scrolling, nothing elided)."""

    node_requested = QtCore.Signal(str)   # a member row was double-clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setColumnCount(2)
        self.setHeaderLabels(["property", "value"])
        self.setRootIsDecorated(True)
        self.setAlternatingRowColors(True)
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        self.setTextElideMode(QtCore.Qt.ElideNone)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarAlwaysOff)
        self.setItemDelegate(WrappingDelegate(self))
        # the full text of the current row (or the key fact) wraps here, below the table
        self.details = QtWidgets.QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(QtCore.Qt.TextSelectableByMouse)
        self.details.setMinimumHeight(40)
        self.details.setAlignment(QtCore.Qt.AlignTop | QtCore.Qt.AlignLeft)
        self.currentItemChanged.connect(lambda cur, _prev: cur is not None and self._detail(cur.text(0), cur.text(1)))
        self.header().setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeToContents)
        self.header().setStretchLastSection(True)
        self.header().sectionResized.connect(self._rewrap)   # a value column of another width: new heights
        self.itemDoubleClicked.connect(self._dbl)
        self.kind = None
        self._reports = None     # gui/kernel_reports.KernelReports (follow_reports)
        self.show_message("Click an operator, a group or an edge between groups.")

    # ---- following the models --------------------------------------------------------------------

    def follow(self, workspace, state):
        """Describe what `state.selection` says is shown (ViewState), in the plan of its pane's strategy
        and with the kernel times measured on the selected device (Workspace), from now on."""
        self._workspace, self._state = workspace, state
        for name in ("document", "plans", "results", "device"):
            workspace.events[name].connect(self._on_change)
        for name in ("selection", "strategy", "right_strategy", "collapsed"):
            state.events[name].connect(self._on_change)

    def follow_reports(self, reports):
        """Show the kernel reports of `reports` (gui/kernel_reports.KernelReports) from now on."""
        self._reports = reports
        reports.events.reports.connect(self._on_change)

    def _on_change(self, ev):
        if ev.type in ("results", "reports") and ev.target not in (self._workspace.device, None):
            return
        self.redraw()

    def redraw(self):
        """Show the selected item (or, with nothing selected, what to click)."""
        doc, st = self._workspace.doc, self._state
        if doc is None:
            self.show_message("Open a model (File > Open, or drop an .onnx file here).")
            return
        sel = st.selection
        strategy = st.right_strategy if sel.pane == "right" else st.strategy
        plan = doc.plans.get(strategy)
        item = sel.shown
        g = doc.graph
        if item is None or plan is None or not _still_means_something(g, plan, item):
            self.show_message(f"{g.name}: {len(g)} operators, {g.layout} layout. Click an operator, a group or an edge.")
            return
        kind, key = item
        res = doc.result(self._workspace.device, strategy)
        if kind == "node":
            self.show_node(g, key, plan, res)
        elif kind in ("group", "collapsed"):
            rep = self._reports.get(doc, self._workspace.device, strategy) if self._reports is not None else None
            self.show_group(g, plan, key, res, collapsed=sel.pane == "left" and key in st.collapsed_in(plan),
                            report=rep)
        elif kind == "edge":
            self.show_edge(g, plan, *key)

    def _rewrap(self, *_):
        self.scheduleDelayedItemsLayout()

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self._rewrap()   # rows spanning both columns wrap at the panel's width

    def _dbl(self, item, _col):
        nid = item.data(0, QtCore.Qt.UserRole)
        if nid:
            self.node_requested.emit(nid)

    def _detail(self, key: str, value: str):
        plain.plain_label(self.details, plain.rich("<b>{key}</b>: {value}", key=key, value=breakable(value)) if key
                          else breakable(value))

    def container(self) -> QtWidgets.QWidget:
        """The table with the wrapping details line under it (what the dock shows)."""
        w = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self, 1)
        lay.addWidget(self.details)
        return w

    def show_message(self, text: str):
        self.details.setText("")
        self.clear()
        self.kind = None
        it = QtWidgets.QTreeWidgetItem([text])
        self.addTopLevelItem(it)
        it.setFirstColumnSpanned(True)

    def _row(self, key, value, parent=None, tip: str | None = None):
        it = QtWidgets.QTreeWidgetItem([str(key), str(value)])
        for col in (0, 1):  # a key beside a value wrapped over several lines stays level with its first line
            it.setTextAlignment(col, QtCore.Qt.AlignLeft | QtCore.Qt.AlignTop)
        if tip or len(str(value)) > 60:
            it.setToolTip(1, plain.tooltip(tip or str(value)))
        (parent.addChild if parent is not None else self.addTopLevelItem)(it)
        return it

    def values(self) -> dict[str, str]:
        out = {}
        for i in range(self.topLevelItemCount()):
            it = self.topLevelItem(i)
            out[it.text(0)] = it.text(1)
        return out

    # ---- what can be shown -----------------------------------------------------------------------

    def show_node(self, graph, nid: str, plan=None, result=None):
        n = graph.by_id[nid]
        self.clear()
        self.kind = "node"
        self._row("operator", n.op)
        self._row("id", n.id)
        self._row("pattern kind", n.pattern)
        self._row("binding", n.kind + (f" {n.func}" if n.func else ""))
        self._row("output shape", L.shape_text(n.shape) + f"  {n.dtype}")
        ins = [L.shape_text(graph.by_id[i].shape) for i in n.inputs]
        self._row("input shapes", ", ".join(ins) or "(graph inputs only)")
        if n.externals:
            self._row("external args", ", ".join(n.externals))
        self._row("bytes read", human(n.bytes_read, "B"))
        self._row("bytes written", human(n.bytes_written, "B"))
        self._row("FLOPs", human(n.flops))
        self._row("ONNX node", n.onnx_name or "-")
        self._row("producers", ", ".join(f"{i} {graph.by_id[i].op}" for i in dict.fromkeys(n.inputs)) or "-")
        self._row("consumers", ", ".join(f"{c} {graph.by_id[c].op}" for c in graph.consumers.get(n.id, [])) or "-")
        if plan is not None:
            gi = plan.group_of()[nid]
            members = plan.groups[gi]
            self._row("group", f"{gi}: {L.group_name(graph, members)} ({len(members)} ops)")
            info = group_kind(plan, gi)
            if info is not None:
                self._row("group kind", kind_title(info))
            self._add_cost(plan, gi, result)
        self._detail("ONNX node", n.onnx_name or "-") if n.onnx_name else self._detail("operator", f"{n.op} ({n.func})")
        self.expandAll()

    def _add_cost(self, plan, gi, result):
        """The group's figure under the name of the model that made it ("roofline estimate", "learned
        estimate"; "measured (cold, alone)" where its kernel was timed while planning), and its measured
        kernel time from the benchmark."""
        pv = provenance_of(plan)
        measured = pv.measured_group_us or ()
        timed = measured[gi] if gi < len(measured) else None
        est = group_estimate(plan, gi)
        if est is not None:
            label, us = est
            if label == "measured":
                timed = us if timed is None else timed
            else:
                self._row(label, f"{us:.2f} us ({plan.hardware or 'profile'})", tip=pv.cost_note or None)
        if timed is not None:
            self._row("measured (cold, alone)", f"{timed:.2f} us",
                      tip="This group's kernel built and timed by itself on "
                          f"{pv.timed_on or 'the device'} while planning; "
                          + ("the planner decided by these times" if pv.measured else "the estimate uses this time"))
        self._row("measured kernel time", _measured(result, gi))

    def show_group(self, graph, plan, gi: int, result=None, collapsed: bool = False, report=None):
        members = plan.groups[gi]
        self.clear()
        self.kind = "group"
        self._row("group", f"{gi}: {L.group_name(graph, members)}")
        self._row("strategy", plan.strategy)
        info = group_kind(plan, gi)
        if info is not None:
            from engine.planner import kinds

            self._row("fusion kind", _title(info["kind"]), tip=_kind_tip(info["kind"]))
            badge = style.kind_badge_text(info)
            self._row("beyond FuseOps", f"yes (badge {badge})" if badge else "no: FuseOps forms it too",
                      tip=_kind_tip(info["kind"]))
            feats = [f for f in info.get("features") or () if f in kinds.KINDS]
            self._row("kind features", ", ".join(_title(f) for f in feats) if feats else "-")
        self._row("operators", str(len(members)))
        kernels = sum(graph.by_id[m].kind == "call_tir" for m in members)
        self._row("kernel", "yes (one launch)" if kernels else "no (tuples only, nothing launches)")
        self._add_cost(plan, gi, result)
        if kernels:
            self._add_efficiency(report, gi)
        flops = sum(graph.by_id[m].flops for m in members)
        self._row("FLOPs", human(flops))
        inside = set(members)
        read = sum(graph.by_id[m].bytes_read for m in members)
        self._row("bytes (unfused sum)", human(read + sum(graph.by_id[m].bytes_written for m in members), "B"))
        pats = sorted({graph.by_id[m].pattern for m in members})
        self._row("pattern kinds", ", ".join(pats))
        ext_in = sorted({i for m in members for i in graph.by_id[m].inputs if i not in inside},
                        key=lambda s: int(s[1:]))
        self._row("inputs from other groups", ", ".join(ext_in) or "-")
        self._row("state", "collapsed" if collapsed else "expanded")
        top = self._row("nodes", "double-click one to go there")
        for m in members:
            n = graph.by_id[m]
            it = self._row(n.id, f"{n.op}  [{n.pattern}]  {L.shape_text(n.shape)}", top)
            it.setData(0, QtCore.Qt.UserRole, n.id)
        self._detail("group", f"{gi}: {L.group_name(graph, members)}, {len(members)} ops"
                     + (f"; {kind_title(info)}" if info is not None else ""))
        self.expandAll()

    def _add_efficiency(self, report, gi: int):
        """The kernel report's figures of group `gi` (measured: times; computed: FLOPs, bytes, bound)."""
        k = report.by_group().get(gi) if report is not None and not report.error else None
        if k is None:
            self._row("efficiency", "not measured (Run > Measure Kernels vs ONNX Runtime)" if report is None
                      else f"kernel report failed: {report.error}" if report.error else "not in the kernel report")
            return
        pk = report.peaks
        if k.us is not None:
            self._row("kernel time (measured)", f"{k.us:.1f} us [{k.lo:.1f}, {k.hi:.1f}] (median, 95%, "
                      f"{k.samples} runs)")
        self._row("FLOP/s (measured)", "-" if k.flops_share is None else
                  f"{human(k.flop_per_s, 'FLOP/s')} = {_share(k.flops_share)} of peak {human(pk.flops, 'FLOP/s')}",
                  tip=f"peak: {pk.flops_source}")
        self._row("bytes/s (measured)", "-" if k.bytes_share is None else
                  f"{human(k.bytes_per_s, 'B/s')} = {_share(k.bytes_share)} of {human(pk.bandwidth, 'B/s')}",
                  tip=f"bandwidth: {pk.bandwidth_source}; bytes: what crosses the kernel's boundary")
        self._row("bound (computed)", f"{k.bound}: {k.intensity:.2f} FLOP/byte against the ridge {pk.ridge:.1f}",
                  tip=f"{human(k.flops)} FLOPs, {human(k.bytes, 'B')} moved")
        if report.ort is None:
            return
        if k.block is None:
            self._row("ONNX Runtime (measured)", "no ORT node covers this kernel's ONNX nodes"
                      + (f" ({', '.join(k.onnx_nodes[:4])})" if k.onnx_nodes else ""))
            return
        b = report.blocks[k.block]
        shared = f"; with {len(b.groups) - 1} more of our kernels: ours {b.ours_us:.1f} us" if len(b.groups) > 1 else ""
        self._row("ONNX Runtime (measured)", f"{b.ort_us:.1f} us for the same ONNX nodes "
                  f"({', '.join(b.ort_nodes[:3])}{' ...' if len(b.ort_nodes) > 3 else ''}){shared}"
                  + (f"; ours / ORT = {b.ratio:.2f}x" if b.ratio else ""),
                  tip=f"ONNX Runtime, {report.ort.get('threads')} intra-op threads, {report.ort.get('runs')} profiled "
                      f"runs round-robin with ours; ONNX nodes: {', '.join(k.onnx_nodes)}")

    def show_edge(self, graph, plan, src: str, dst: str):
        a, b = graph.by_id[src], graph.by_id[dst]
        g = plan.group_of()
        self.clear()
        self.kind = "edge"
        self._row("edge", f"{src} {a.op} -> {dst} {b.op}")
        self._row("tensor", f"{L.shape_text(a.shape)} {a.dtype}")
        if g[src] == g[dst]:
            self._row("fused", f"yes: both in group {g[src]} ({L.group_name(graph, plan.groups[g[src]])})")
            info = group_kind(plan, g[src])
            if info is not None:
                self._row("group kind", kind_title(info))
            self._detail("fused", "yes: the two ops run in one kernel")
            return
        self._row("fused", f"no: group {g[src]} -> group {g[dst]}")
        ka, kb = group_kind(plan, g[src]), group_kind(plan, g[dst])
        if ka is not None and kb is not None:
            self._row("group kinds", f"{_title(ka['kind'])} -> {_title(kb['kind'])}")
        e = next((x for x in plan.explanations if x.get("src") == src and x.get("dst") == dst), None)
        if e is None:
            self._row("why not fused", f"no explanation recorded by the {plan.strategy} planner")
            self._detail("why not fused", f"no explanation recorded by the {plan.strategy} planner")
            return
        self._row("reason", str(e.get("reason", "")))
        self._row("why not fused", str(e.get("detail", "")))
        considered = kinds_text(e.get("kinds"))   # the kinds the fused kernel would be
        if considered:
            self._row("kinds if fused", considered)
        self._detail("why not fused", str(e.get("detail", "")) + (f" (kinds if fused: {considered})"
                                                                  if considered else ""))
        if "fused_us" in e:
            self._row("fused cost", f"{e['fused_us']:.2f} us")
        if "split_us" in e:
            self._row("apart cost", f"{e['split_us']:.2f} us")
        self.resizeColumnToContents(0)


def _still_means_something(graph, plan, item) -> bool:
    """Whether a selected item names something of this graph and plan (a group index of an older plan,
    or an op of another graph, does not)."""
    kind, key = item
    if kind == "node":
        return key in graph.by_id
    if kind in ("group", "collapsed"):
        return 0 <= key < len(plan.groups)
    if kind == "edge":
        return all(k in graph.by_id for k in key)
    return False


def _title(kind) -> str:
    from engine.planner import kinds

    return kinds.TITLES.get(str(kind), str(kind))


def _kind_tip(kind: str) -> str:
    from engine.planner import kinds

    return f"{_title(kind)}" + (" - a kernel TVM's FuseOps does not form (engine/planner/kinds.py)"
                                if kind in kinds.BEYOND else " - a kernel TVM's FuseOps forms too")


def group_kind(plan, gi: int) -> dict | None:
    """plan.group_kinds[gi] ({"kind", "features"}), or None where the plan has no kinds."""
    gk = getattr(plan, "group_kinds", None) or []
    return gk[gi] if len(gk) == len(plan.groups) and 0 <= gi < len(gk) else None


def kind_title(info: dict) -> str:
    """'anchor chain (tile-wise) + stitched reduction [CS]': the main kind, the group's other features,
    and its badge (kinds beyond FuseOps only)."""
    main = info.get("kind", "")
    extra = [_title(f) for f in info.get("features") or () if f != main]
    badge = style.kind_badge_text(info)
    return _title(main) + (f" + {', '.join(extra)}" if extra else "") + (f" [{badge}]" if badge else "")


def kinds_text(v) -> str:
    """An explanation's "kinds" entry, whatever its shape: names, {kind: note} or [{"kind": ..., ...}]."""
    if not v:
        return ""
    if isinstance(v, str):
        return _title(v)
    if isinstance(v, dict):
        return "; ".join(f"{_title(k)}: {_plain(x)}" if x not in (None, "", True) else _title(k) for k, x in v.items())
    parts = []
    for x in v:
        if isinstance(x, dict):
            name = x.get("kind") or x.get("name") or "?"
            rest = ", ".join(f"{k} {_plain(val)}" for k, val in x.items() if k not in ("kind", "name"))
            parts.append(_title(name) + (f" ({rest})" if rest else ""))
        else:
            letter = style.KIND_LETTERS.get(str(x))
            parts.append(_title(x) + (f" [{letter}]" if letter else ""))
    return "; ".join(parts)


def _plain(x) -> str:
    if isinstance(x, float):
        return f"{x:.2f}"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return str(x)


def _share(v: float) -> str:
    return f"{100 * v:.0f}%" if v >= 0.1 else f"{100 * v:.1f}%"


def _measured(result, gi) -> str:
    if result is None:
        return "not yet measured"
    if getattr(result, "error", None):
        return f"benchmark failed: {result.error}"
    ku = getattr(result, "kernel_us", None) or []
    if gi < len(ku):
        v = ku[gi]
        return "launches nothing" if v is None else f"{v:.2f} us (on {result.target})"
    return "no per-kernel profile"
