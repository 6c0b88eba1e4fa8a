"""Graph layout for the operator graph, without Qt: what to lay out, graphviz `dot` source and its
`-Tjson` output, and a built-in layered layout for when `dot` is missing or too slow.

Coordinates are points with the origin at the top left and y growing downwards (Qt's convention);
a node's position is its centre.

What keeps `dot` fast (see shared notes: one high fan-out input can turn 0.6 s into 85 s):
- constants, parameters and graph inputs are not nodes (the OpGraph has none);
- edges out of a high fan-out producer are left out of the layout and drawn straight afterwards;
- the speed settings nslimit, mclimit, remincross=false, searchsize, splines=false; never newrank;
- fused groups are drawn as clusters.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# dot's speed settings (measured: ~80 s -> 2.4 s on a 1,000-node graph). No `newrank`: present at all, it is on.
SPEED_FLAGS = {"nslimit": "2", "nslimit1": "2", "mclimit": "0.22", "remincross": "false", "searchsize": "20",
               "splines": "false"}
# up to this many nodes, dot also routes the edges around the nodes (splines=true: 0.1 s on MobileNetV2's
# 344 ops); larger graphs keep splines=false and the app's own curves
SPLINES_MAX_NODES = 1500
HIGH_FANOUT = 8          # edges out of a producer with more consumers than this stay out of the layout
NODE_H = 34.0
SMALL_H = 22.0
CHAR_W = 6.6             # average width of a 9 pt character, points
NODE_SEP = 18.0
RANK_SEP = 28.0
CLUSTER_PAD = 8.0


@dataclass
class LayoutInput:
    """What gets laid out: nodes (id -> (w, h)), edges, and clusters (lists of node ids)."""
    sizes: dict[str, tuple[float, float]]
    order: list[str]                          # a topological order of the nodes
    edges: list[tuple[str, str]]              # laid-out edges
    loose_edges: list[tuple[str, str]] = field(default_factory=list)  # drawn, not laid out (high fan-out)
    clusters: list[list[str]] = field(default_factory=list)
    # the model's scopes (engine/model/scopes.py) as nested clusters around the group clusters: scope key ->
    # (its label, the enclosing scope's key or None); each laid-out node's and group cluster's innermost scope
    scopes: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    scope_of: dict[str, str] = field(default_factory=dict)
    cluster_scope: list[str | None] = field(default_factory=list)
    direction: str = "TB"                     # "TB": inputs at the top, edges downwards; "LR": left to right
    # a collapsed group's node id ("g5") -> its group's key (group_key): what the id stood for when laid out
    stands_for: dict[str, str] = field(default_factory=dict)

    def key(self) -> str:
        """A content key for caching a layout of exactly this input."""
        import hashlib

        h = hashlib.sha256()
        h.update(json.dumps([self.order, [self.sizes[n] for n in self.order], self.edges,
                             sorted(sorted(c) for c in self.clusters)]).encode())
        if self.scopes:
            h.update(json.dumps([sorted(self.scopes.items()), sorted(self.scope_of.items())]).encode())
        if self.direction != "TB":
            h.update(self.direction.encode())
        if self.stands_for:
            h.update(json.dumps(sorted(self.stands_for.items())).encode())
        return h.hexdigest()[:32]


@dataclass
class Layout:
    pos: dict[str, tuple[float, float]]       # node id -> centre
    sizes: dict[str, tuple[float, float]]
    width: float
    height: float
    engine: str                               # "dot" | "builtin"
    seconds: float = 0.0
    note: str = ""
    # (src, dst) -> the edge's route around the nodes: cubic Bezier control points p0 c1 c2 p1 c1 c2 p2 ...
    # from the producer's bottom to the consumer's top (dot's splines; none from the built-in layout); left
    # to right: from the producer's right side to the consumer's left side
    routes: dict = field(default_factory=dict)
    direction: str = "TB"                     # LayoutInput.direction
    stands_for: dict = field(default_factory=dict)   # LayoutInput.stands_for

    def to_dict(self) -> dict:
        return {"pos": self.pos, "sizes": self.sizes, "width": self.width, "height": self.height,
                "engine": self.engine, "seconds": self.seconds, "note": self.note,
                "routes": [[a, b, [list(p) for p in pts]] for (a, b), pts in self.routes.items()],
                "direction": self.direction, "stands_for": self.stands_for}

    @classmethod
    def from_dict(cls, d: dict) -> "Layout":
        routes = {(a, b): [tuple(p) for p in pts] for a, b, pts in d.get("routes") or []}
        return cls(pos={k: tuple(v) for k, v in d["pos"].items()}, sizes={k: tuple(v) for k, v in d["sizes"].items()},
                   width=d["width"], height=d["height"], engine=d["engine"], seconds=d.get("seconds", 0.0),
                   note=d.get("note", ""), routes=routes, direction=d.get("direction", "TB"),
                   stands_for=dict(d.get("stands_for") or {}))

    def stands_for_group(self, gi: int, members) -> bool:
        """Whether this layout's node for collapsed group `gi` ("g<gi>") was laid out for these members (a
        layout made for another plan numbers its groups otherwise)."""
        cid = collapsed_id(gi)
        if cid not in self.pos:
            return False
        return self.stands_for.get(cid, group_key(members)) == group_key(members)


# ---- labels and names ---------------------------------------------------------------------------

def shape_text(shape) -> str:
    if not shape:
        return ""
    if isinstance(shape[0], (list, tuple)):
        return "(" + ", ".join("x".join(map(str, s)) for s in shape) + ")"
    return "x".join(map(str, shape))


def node_lines(node) -> tuple[str, str]:
    """(title, subtitle) drawn on a node: the op name (without TVM's internal prefixes) and its output shape."""
    from engine.report.group_names import op_title

    return op_title(node), shape_text(node.shape)


def node_size(node) -> tuple[float, float]:
    title, sub = node_lines(node)
    if node.kind in ("tuple", "tuple_get_item"):
        return max(48.0, len(title) * CHAR_W * 0.9 + 12), SMALL_H
    return max(64.0, max(len(title), len(sub) * 0.85) * CHAR_W + 16), NODE_H


def group_name(graph, members, kind: str | None = None) -> str:
    """A fused group's readable name: its ONNX scope, kind and ops (engine/report/group_names.py)."""
    from engine.report.group_names import group_title

    return group_title(graph, members, kind)


def collapsed_label(graph, members, kind: str | None = None) -> str:
    return f"{group_name(graph, members, kind)}, {len(members)} ops"


def collapsed_id(gi: int) -> str:
    return f"g{gi}"


def scope_node_id(k: int) -> str:
    """The id of the k-th scope (in scope_tree order) laid out as one node while collapsed."""
    return f"s{k}"


def scope_node_label(scope) -> str:
    return f"{scope.label}, {len(scope.ops)} ops"


def scope_node_size(scope) -> tuple[float, float]:
    return max(90.0, len(scope_node_label(scope)) * CHAR_W + 24), NODE_H + 6


SCOPE_LABEL_H = 14.0     # room at the top of a scope's box for its name


def collapsed_size(graph, members, kind: str | None = None) -> tuple[float, float]:
    return max(90.0, len(collapsed_label(graph, members, kind)) * CHAR_W + 16), NODE_H


def node_number(node_id: str) -> int:
    """An op id's number, for ordering ops as the graph lists them ("n12" -> 12)."""
    try:
        return int(node_id[1:])          # OpGraph ids are "n<k>"
    except ValueError:
        return int(re.sub(r"\D", "", node_id) or 0)


def group_key(members) -> str:
    """A stable identity for a group: its lowest-numbered node."""
    return min(members, key=node_number)


def group_hue(members) -> float:
    """A stable hue in [0, 1) for a group, from its first node's number (golden-ratio spacing)."""
    k = min(node_number(m) for m in members)
    return (k * 0.6180339887 + 0.07) % 1.0


# ---- what to lay out ------------------------------------------------------------------------------

def scope_reps(tree: dict, collapsed_scopes=()) -> dict[str, str]:
    """Operator id -> the node of the outermost collapsed scope holding it (scope_node_id)."""
    index = {k: i for i, k in enumerate(tree)}
    out: dict[str, str] = {}
    for k in tree:      # outer scopes come first: an op keeps its outermost collapsed scope
        if k in collapsed_scopes:
            for m in tree[k].ops:
                out.setdefault(m, scope_node_id(index[k]))
    return out


def build_input(graph, groups=None, collapsed=(), clusters: bool = True, kinds=None, scopes=None,
                collapsed_scopes=(), scope_clusters: bool = True, direction: str = "TB") -> LayoutInput:
    """The layout problem for `graph`: one node per op, or per collapsed group (`collapsed`: group indices;
    `kinds`: the plan's group_kinds, which a collapsed group's label names). `scopes`: the model's scope
    tree for these groups (engine/model/scopes.scope_tree), laid out as nested clusters (unless
    scope_clusters=False: the blocks are not drawn); those in `collapsed_scopes` (keys) as one node each.
    `direction`: "TB" (top to bottom) or "LR" (left to right)."""
    groups = groups or [[n.id] for n in graph.nodes]
    collapsed = set(collapsed)
    tree = scopes or {}
    in_scope = scope_reps(tree, set(collapsed_scopes)) if tree else {}
    keys = list(tree)
    rep: dict[str, str] = {}
    for gi, g in enumerate(groups):
        for m in g:
            rep[m] = in_scope.get(m) or (collapsed_id(gi) if gi in collapsed and len(g) > 1 else m)
    sizes: dict[str, tuple[float, float]] = {}
    order: list[str] = []
    for n in graph.nodes:
        r = rep[n.id]
        if r in sizes:
            continue
        if r == n.id:
            sizes[r] = node_size(n)
        elif r.startswith("s"):
            sizes[r] = scope_node_size(tree[keys[int(r[1:])]])
        else:
            gi = int(r[1:])
            kind = kinds[gi].get("kind") if kinds and len(kinds) == len(groups) else None
            sizes[r] = collapsed_size(graph, groups[gi], kind)
        order.append(r)
    edges: dict[tuple[str, str], None] = {}
    for n in graph.nodes:
        for i in n.inputs:
            a, b = rep[i], rep[n.id]
            if a != b:
                edges[(a, b)] = None
    fan: dict[str, int] = {}
    for a, _ in edges:
        fan[a] = fan.get(a, 0) + 1
    laid = [e for e in edges if fan[e[0]] <= HIGH_FANOUT]
    loose = [e for e in edges if fan[e[0]] > HIGH_FANOUT]
    cl = []
    if clusters:
        for gi, g in enumerate(groups):
            if len(g) > 1 and not (gi in collapsed) and not any(m in in_scope for m in g):
                cl.append(list(g))
    inp = LayoutInput(sizes=sizes, order=order, edges=laid, loose_edges=loose, clusters=cl,
                      direction="LR" if direction == "LR" else "TB")
    inp.stands_for = {collapsed_id(gi): group_key(groups[gi]) for gi in collapsed
                      if gi < len(groups) and collapsed_id(gi) in sizes}
    if tree and clusters and scope_clusters:
        _scope_clusters(inp, tree, rep, set(collapsed_scopes))
    return inp


def _scope_clusters(inp: LayoutInput, tree: dict, rep: dict, collapsed_scopes: set) -> None:
    """Fill inp.scopes / scope_of / cluster_scope: the scopes drawn open (not collapsed, not inside a
    collapsed one), each node's and group cluster's innermost open scope."""
    open_ = {}
    for k, sc in tree.items():
        p = sc.parent
        if k in collapsed_scopes or (p is not None and p not in open_):
            continue
        open_[k] = (sc.label, p)
    inner: dict[str, str] = {}
    for k in open_:            # outer first: inner scopes overwrite
        for m in tree[k].ops:
            inner[m] = k
    for k, sc in tree.items():   # a collapsed scope's node sits in its parent scope
        if k in collapsed_scopes and sc.parent in open_:
            for m in sc.ops:
                r = rep[m]
                if r.startswith("s"):
                    inp.scope_of[r] = sc.parent
    for m, k in inner.items():
        r = rep[m]
        if r == m or r.startswith("g"):
            inp.scope_of.setdefault(r, k)
    inp.scopes = open_
    inp.cluster_scope = [inp.scope_of.get(c[0]) for c in inp.clusters]


# ---- graphviz dot -------------------------------------------------------------------------------

def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(inp: LayoutInput, flags: dict | None = None) -> str:
    """dot source: fixed-size boxes (sizes in inches), clusters for groups, speed flags."""
    if flags is None:
        flags = dict(SPEED_FLAGS, splines="true") if len(inp.order) <= SPLINES_MAX_NODES else SPEED_FLAGS
    attrs = {"rankdir": inp.direction, "nodesep": f"{NODE_SEP / 72:.3f}", "ranksep": f"{RANK_SEP / 72:.3f}",
             "ordering": "", **flags}
    attrs.pop("ordering")
    out = ["digraph G {", "  graph [" + ", ".join(f"{k}={_q(v)}" for k, v in attrs.items()) + "];",
           '  node [shape=box, fixedsize=true, label=""];']
    in_cluster = set()
    kids: dict[str | None, list[str]] = {}
    for k, (_, p) in inp.scopes.items():
        kids.setdefault(p, []).append(k)
    scope_ix = {k: i for i, k in enumerate(inp.scopes)}
    clusters_in: dict[str | None, list[int]] = {}
    for ci in range(len(inp.clusters)):
        clusters_in.setdefault(inp.cluster_scope[ci] if ci < len(inp.cluster_scope) else None, []).append(ci)
    nodes_in: dict[str | None, list[str]] = {}
    for ci, members in enumerate(inp.clusters):
        in_cluster.update(m for m in members if m in inp.sizes)
    for n in inp.order:
        if n not in in_cluster:
            nodes_in.setdefault(inp.scope_of.get(n) if inp.scopes else None, []).append(n)

    def emit(scope, ind):
        for k in kids.get(scope, ()):
            label = inp.scopes[k][0]
            out.append(f"{ind}subgraph cluster_s{scope_ix[k]} {{ margin={CLUSTER_PAD:.0f}; label={_q(label)}; "
                       f"fontsize={SCOPE_LABEL_H - 4:.0f}; labeljust=l;")
            emit(k, ind + "  ")
            out.append(f"{ind}}}")
        for ci in clusters_in.get(scope, ()):
            out.append(f"{ind}subgraph cluster_{ci} {{ margin={CLUSTER_PAD:.0f};")
            for m in inp.clusters[ci]:
                if m in inp.sizes:
                    w, h = inp.sizes[m]
                    out.append(f"{ind}  {_q(m)} [width={w / 72:.3f}, height={h / 72:.3f}];")
            out.append(f"{ind}}}")
        for n in nodes_in.get(scope, ()):
            w, h = inp.sizes[n]
            out.append(f"{ind}{_q(n)} [width={w / 72:.3f}, height={h / 72:.3f}];")

    emit(None, "  ")
    for a, b in inp.edges:
        out.append(f"  {_q(a)} -> {_q(b)};")
    out.append("}")
    return "\n".join(out) + "\n"


def parse_dot_json(text: str, inp: LayoutInput) -> Layout:
    """Node centres from `dot -Tjson` (points, origin bottom left) flipped to y-down."""
    d = json.loads(text)
    x0, y0, x1, y1 = (float(v) for v in d["bb"].split(","))
    pos = {}
    for o in d.get("objects", []):
        if "pos" not in o or "nodes" in o or "subgraphs" in o:
            continue  # clusters have "bb" and member lists; nodes have "pos"
        name = o.get("name")
        if name in inp.sizes:
            x, y = (float(v) for v in o["pos"].split(",")[:2])
            pos[name] = (x - x0, y1 - y)
    missing = [n for n in inp.order if n not in pos]
    if missing:
        raise ValueError(f"dot output lacks {len(missing)} nodes (e.g. {missing[0]})")
    names = {o.get("_gvid"): o.get("name") for o in d.get("objects", [])}
    routes = {}
    for e in d.get("edges", []):
        a, b = names.get(e.get("tail")), names.get(e.get("head"))
        pts = _spline_points(e.get("pos", ""), x0, y1)
        if a in pos and b in pos and pts:
            routes[(a, b)] = pts
    return Layout(pos=pos, sizes=dict(inp.sizes), width=x1 - x0, height=y1 - y0, engine="dot", routes=routes,
                  direction=inp.direction, stands_for=dict(inp.stands_for))


def _spline_points(text: str, x0: float, y1: float) -> list[tuple[float, float]] | None:
    """dot's edge `pos` ("e,x,y p0 c1 c2 p1 ...": B-spline control points, then where the arrow ends) as
    y-down control points ending at the arrow's tip; None where it is not 1 + 3k points."""
    pts, end = [], None
    try:
        for tok in text.split():
            parts = tok.split(",")
            if parts[0] in ("e", "s"):
                if parts[0] == "e":
                    end = (float(parts[1]) - x0, y1 - float(parts[2]))
                continue
            pts.append((float(parts[0]) - x0, y1 - float(parts[1])))
    except (ValueError, IndexError):
        return None
    if len(pts) < 4 or (len(pts) - 1) % 3:
        return None
    if end is not None:
        pts.append(end)   # the arrow: from the last control point to its tip
    return pts


# ---- the built-in layered layout ------------------------------------------------------------------

def layered(inp: LayoutInput, sweeps: int = 4) -> Layout:
    """A Sugiyama-style layout in pure Python: longest-path ranks, barycentre ordering (members of a
    cluster kept together), then x positions pulled towards the parents' and children's mean.
    Linear-ish in the number of nodes and edges: a 5,000-node graph takes about a second. Left to right
    (inp.direction "LR"): laid out top to bottom with each node's sides swapped, then transposed."""
    if inp.direction == "LR":
        import dataclasses

        t = _layered(dataclasses.replace(inp, sizes={n: (h, w) for n, (w, h) in inp.sizes.items()}), sweeps)
        return Layout(pos={n: (y, x) for n, (x, y) in t.pos.items()}, sizes=dict(inp.sizes), width=t.height,
                      height=t.width, engine="builtin", seconds=t.seconds, direction="LR",
                      stands_for=dict(inp.stands_for))
    return _layered(inp, sweeps)


def _layered(inp: LayoutInput, sweeps: int) -> Layout:
    import time

    t0 = time.perf_counter()
    order = inp.order
    preds: dict[str, list[str]] = {n: [] for n in order}
    succs: dict[str, list[str]] = {n: [] for n in order}
    for a, b in inp.edges + inp.loose_edges:
        if a in preds and b in preds:
            succs[a].append(b)
            preds[b].append(a)
    # ranks: longest path from the sources, following the topological order
    rank: dict[str, int] = {}
    for n in order:
        rank[n] = max((rank[p] + 1 for p in preds[n] if p in rank), default=0)
    # members of a cluster on consecutive ranks where possible (pull sources of a cluster down)
    cluster_of = {m: ci for ci, c in enumerate(inp.clusters) for m in c}
    nranks = max(rank.values(), default=-1) + 1
    layers: list[list[str]] = [[] for _ in range(nranks)]
    for n in order:
        layers[rank[n]].append(n)
    idx = {n: i for layer in layers for i, n in enumerate(layer)}
    topo = {n: i for i, n in enumerate(order)}

    def sort_layer(layer, nbrs):
        keys = {}
        for n in layer:
            ns = [idx[m] for m in nbrs[n]]
            keys[n] = sum(ns) / len(ns) if ns else idx[n]
        # a cluster's members stay together: sort by the cluster's mean key, then the node's own
        ck: dict[int, list[float]] = {}
        for n in layer:
            c = cluster_of.get(n)
            if c is not None:
                ck.setdefault(c, []).append(keys[n])
        cmean = {c: sum(v) / len(v) for c, v in ck.items()}
        layer.sort(key=lambda n: (cmean.get(cluster_of.get(n), keys[n]), cluster_of.get(n, -1), keys[n], topo[n]))
        for i, n in enumerate(layer):
            idx[n] = i

    for s in range(sweeps):
        rng = range(1, nranks) if s % 2 == 0 else range(nranks - 2, -1, -1)
        nb = preds if s % 2 == 0 else succs
        for r in rng:
            if len(layers[r]) > 1:
                sort_layer(layers[r], nb)
    # x: pack each layer, then relax towards neighbours' mean, keeping order and spacing
    w = {n: inp.sizes[n][0] for n in order}
    x: dict[str, float] = {}
    for layer in layers:
        cur = 0.0
        for n in layer:
            x[n] = cur + w[n] / 2
            cur += w[n] + NODE_SEP

    def place(layer, nbrs):
        if not layer:
            return
        want = []
        for n in layer:
            ns = nbrs[n]
            want.append(sum(x[m] for m in ns) / len(ns) if ns else x[n])
        # left-to-right: no overlap, as close to `want` as the order allows; then centre the excess
        pos = []
        for i, n in enumerate(layer):
            lo = pos[-1] + (w[layer[i - 1]] + w[n]) / 2 + NODE_SEP if pos else -1e18
            pos.append(max(want[i], lo))
        for i in range(len(layer) - 2, -1, -1):
            hi = pos[i + 1] - (w[layer[i + 1]] + w[layer[i]]) / 2 - NODE_SEP
            if pos[i] > hi:
                pos[i] = hi
        for n, p in zip(layer, pos):
            x[n] = p

    for s in range(sweeps + 2):
        down = s % 2 == 0
        rng = range(nranks) if down else range(nranks - 1, -1, -1)
        for r in rng:
            place(layers[r], preds if down else succs)
    minx = min((x[n] - w[n] / 2 for n in order), default=0.0)
    pos = {}
    y = 0.0
    width = 0.0
    for r, layer in enumerate(layers):
        hmax = max((inp.sizes[n][1] for n in layer), default=NODE_H)
        for n in layer:
            px = x[n] - minx + CLUSTER_PAD * 2
            pos[n] = (px, y + hmax / 2 + CLUSTER_PAD * 2)
            width = max(width, px + w[n] / 2 + CLUSTER_PAD * 2)
        y += hmax + RANK_SEP
    return Layout(pos=pos, sizes=dict(inp.sizes), width=width, height=y + CLUSTER_PAD * 2, engine="builtin",
                  seconds=time.perf_counter() - t0, stands_for=dict(inp.stands_for))


# ---- group boxes ---------------------------------------------------------------------------------

def box_of(layout: Layout, members, pad: float = CLUSTER_PAD) -> tuple[float, float, float, float] | None:
    """(x0, y0, x1, y1) around the members that have a position."""
    xs0, ys0, xs1, ys1 = [], [], [], []
    for m in members:
        p = layout.pos.get(m)
        if p is None:
            continue
        w, h = layout.sizes[m]
        xs0.append(p[0] - w / 2)
        xs1.append(p[0] + w / 2)
        ys0.append(p[1] - h / 2)
        ys1.append(p[1] + h / 2)
    if not xs0:
        return None
    return min(xs0) - pad, min(ys0) - pad, max(xs1) + pad, max(ys1) + pad


def dirty_groups(layout: Layout, groups, stop_after: int | None = None) -> int:
    """How many multi-node groups have a box (around their members) that covers the centre of a node
    outside the group: where the current positions cannot stay for these groups. A coarse grid keeps
    this fast on 5,000 nodes; `stop_after` ends the count early."""
    cell = 200.0
    grid: dict[tuple[int, int], list[str]] = {}
    for n, (px, py) in layout.pos.items():
        grid.setdefault((int(px // cell), int(py // cell)), []).append(n)
    dirty = 0
    for g in groups:
        if len(g) < 2:
            continue
        b = box_of(layout, g, pad=2.0)
        if b is None:
            continue
        inside = set(g)
        hit = False
        for gx in range(int(b[0] // cell), int(b[2] // cell) + 1):
            for gy in range(int(b[1] // cell), int(b[3] // cell) + 1):
                for n in grid.get((gx, gy), ()):
                    if n not in inside:
                        px, py = layout.pos[n]
                        if b[0] < px < b[2] and b[1] < py < b[3]:
                            hit = True
                            break
                if hit:
                    break
            if hit:
                break
        if hit:
            dirty += 1
            if stop_after is not None and dirty >= stop_after:
                break
    return dirty


def boxes_clean(layout: Layout, groups) -> bool:
    """True when every multi-node group's box holds only its own nodes at the current positions."""
    return dirty_groups(layout, groups, stop_after=1) == 0


def needs_relayout(layout: Layout, groups, node_count: int) -> bool:
    """Whether a strategy's groups need new positions: any misleading box on a small graph; on a
    large one (where a relayout costs seconds), more than 2% of the fused groups."""
    multi = sum(len(g) > 1 for g in groups)
    if node_count <= 1500:
        return dirty_groups(layout, groups, stop_after=1) > 0
    limit = max(1, int(0.02 * multi))
    return dirty_groups(layout, groups, stop_after=limit + 1) > limit


__all__ = ["LayoutInput", "Layout", "SPEED_FLAGS", "build_input", "to_dot", "parse_dot_json", "layered", "box_of",
           "boxes_clean", "dirty_groups", "needs_relayout", "group_name", "collapsed_label", "group_hue",
           "node_lines", "shape_text"]
