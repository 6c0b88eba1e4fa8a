"""The model's layer hierarchy, from each operator's ONNX provenance (`OpNode.onnx_name`), as Model
Explorer draws it: nested scopes such as `features` > `features.9` > `features.9.conv`.

Two spellings of an ONNX node name are understood:
- a path, as PyTorch's exporter writes it: "/features/features.9/conv/conv.0/Conv" lies in the scopes
  "/features", "/features/features.9", ... (the last part names the node itself);
- a module name, as older exports write it: "features.9.conv.0.0" is the leaf module itself, in the
  scopes "features", "features.9", "features.9.conv", "features.9.conv.0".

A fused group sits in one scope: the deepest one holding all its operators (so that scope boxes
nest around group boxes, never cut through them). Operators without an ONNX name follow their group.

Where the names carry no scopes (`names_carry_scopes`: most operators have none, or the "scopes" are
not regions of the graph but buckets of one op type scattered all over it, as in Paddle's exports, where
every node is "p2o.<OpType>.<k>"), the blocks come from the graph itself (`structure`): its stages between
the cuts of the operator order that the fewest tensors cross (a single tensor where there is one), split
again inside until a block holds at most 16 operators, and named by number and their main ops ("2.3: conv
x4, add"); a block built like an earlier one of its level says so ("= 2.1"). Their keys start with
STRUCT_PREFIX.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Scope:
    key: str                          # the scope's full name ("features.9.conv", "/features/features.9")
    label: str                        # what a box shows ("features.9.conv", "features.9")
    depth: int                        # 1: outermost
    parent: str | None                # the enclosing scope's key (None: top level)
    ops: list[str] = field(default_factory=list)        # every operator inside, in graph order
    children: list[str] = field(default_factory=list)   # the scopes directly inside, in graph order


def scope_path(onnx_name: str | None) -> tuple[str, ...]:
    """The keys of the scopes an ONNX node lies in, outermost first (none for a bare name)."""
    if not onnx_name:
        return ()
    if "/" in onnx_name:
        parts = [p for p in onnx_name.split("/") if p][:-1]
        return tuple("/" + "/".join(parts[:k + 1]) for k in range(len(parts)))
    parts = [p for p in onnx_name.split(".") if p]
    return tuple(".".join(parts[:k]) for k in range(1, len(parts)))


def scope_label(key: str) -> str:
    """What a scope's box shows: its last path part, or its whole module name."""
    return key.rsplit("/", 1)[-1] if "/" in key else key


def _common(paths) -> tuple[str, ...]:
    paths = list(paths)
    if not paths:
        return ()
    out = paths[0]
    for p in paths[1:]:
        k = 0
        while k < min(len(out), len(p)) and out[k] == p[k]:
            k += 1
        out = out[:k]
    return out


# ---- do the names carry scopes? -------------------------------------------------------------------

STRUCT_PREFIX = "#"      # the keys of blocks found in the graph's structure ("#2", "#2.3")
STRUCT_MIN_OPS = 64      # a smaller graph gets no blocks from its structure (it reads well without)
STRUCT_LEAF = 16         # a block of at most this many operators is not split again
STRUCT_FANOUT = 8        # about this many blocks inside a block
STRUCT_MAX_DEPTH = 4
STRUCT_LARGE = 1500      # a larger graph gets two levels of blocks (fewer clusters for dot to lay out)
_HEAVY = ("OutEWiseFusable", "CommReduce", "Opaque")


def names_carry_scopes(graph) -> bool:
    """Whether the operators' ONNX names describe regions of the graph: at least half of them lie in a
    scope, and the scopes are dense where they lie (the innermost scope of an operator holds, on average,
    at least half of the operators between its first and its last one in graph order). Paddle's
    "p2o.Conv.12" (scope "p2o.Conv": every convolution of the model) and "Conv.3" fail the second test,
    names without scopes ("Conv_3", "/Conv") the first."""
    nodes = graph.nodes
    paths = [scope_path(n.onnx_name) for n in nodes]
    if not nodes or sum(1 for p in paths if p) < 0.5 * len(nodes):
        return False
    where: dict[str, list[int]] = {}
    for i, p in enumerate(paths):
        if p:
            where.setdefault(p[-1], []).append(i)
    dense = total = 0.0
    for pos in where.values():
        dense += len(pos) * min(1.0, len(pos) / (pos[-1] - pos[0] + 1))
        total += len(pos)
    return dense >= 0.5 * total


def _crossings(graph) -> list[int]:
    """cross[i]: how many operators' outputs at positions <= i (graph order) are read after position i."""
    nodes = graph.nodes
    pos = {n.id: i for i, n in enumerate(nodes)}
    last = list(range(len(nodes)))
    for i, n in enumerate(nodes):
        for x in n.inputs:
            j = pos.get(x)
            if j is not None and i > last[j]:
                last[j] = i
    diff = [0] * (len(nodes) + 1)
    for j, lj in enumerate(last):
        if lj > j:
            diff[j] += 1
            diff[lj] -= 1
    out, run = [], 0
    for i in range(len(nodes)):
        run += diff[i]
        out.append(run)
    return out


def _ranks(graph) -> tuple[list[int], list[int]]:
    """Each operator's earliest rank (its longest path from the graph's inputs) and latest rank (as late
    as its consumers allow: an op that reads only inputs or constants, listed late, ranks by them)."""
    pos = {n.id: i for i, n in enumerate(graph.nodes)}
    early: list[int] = []
    for n in graph.nodes:
        early.append(max((early[pos[x]] + 1 for x in n.inputs if x in pos and pos[x] < len(early)), default=0))
    top = max(early, default=0)
    late = [top] * len(early)
    for i in range(len(early) - 1, -1, -1):
        for x in graph.nodes[i].inputs:
            j = pos.get(x)
            if j is not None and j < i:
                late[j] = min(late[j], late[i] - 1)
    return early, late


def _components(graph, a: int, b: int) -> list[tuple[int, int]]:
    """Positions [a, b) as the weakly connected pieces of the graph they hold (parallel branches), where
    each piece is a run of consecutive positions; else []."""
    nodes = graph.nodes
    pos = {nodes[i].id: i for i in range(a, b)}
    root = list(range(b - a))

    def find(x):
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for i in range(a, b):
        for x in nodes[i].inputs:
            j = pos.get(x)
            if j is not None:
                root[find(i - a)] = find(j - a)
    runs: list[list[int]] = []
    for i in range(a, b):
        r = find(i - a)
        if runs and runs[-1][2] == r:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1, r])
    if len(runs) < 2 or len({r[2] for r in runs}) != len(runs):
        return []
    return [(r0, r1) for r0, r1, _ in runs]


def _split(graph, cross, rank, heavy, a: int, b: int) -> list[tuple[int, int]]:
    """The blocks inside positions [a, b): stages, cut where the fewest tensors cross (preferably before a
    heavy op, where fused groups start) and everything before the cut ranks before everything after (a
    cut never runs through parallel branches), the pieces joined into about STRUCT_FANOUT runs of similar
    size; the next-fewest crossings are tried while one run holds over half the range. With no such cut:
    the range's parallel branches, where each is a run of positions. [] for a leaf."""
    m = b - a
    if m <= STRUCT_LEAF:
        return []
    target = max(m / STRUCT_FANOUT, STRUCT_LEAF / 2)
    early, late = rank
    hi_before, lo_after = [0] * m, [0] * m
    run = -1
    for i in range(a, b):
        run = max(run, early[i])
        hi_before[i - a] = run
    run = 1 << 30
    for i in range(b - 1, a - 1, -1):
        lo_after[i - a] = run
        run = min(run, late[i])
    staged = [i for i in range(a, b - 1) if hi_before[i - a] < lo_after[i - a]]

    def branches() -> list[tuple[int, int]]:
        """The largest stage between staged cuts split into its parallel branches (the stages around it kept)."""
        bounds = [a] + [i + 1 for i in staged] + [b]
        stages = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
        big = max(stages, key=lambda r: r[1] - r[0])
        comps = _components(graph, *big)
        if len(comps) < 2:
            return []
        k = stages.index(big)
        runs = _runs(stages[:k], target) + _runs(comps, target) + _runs(stages[k + 1:], target)
        return runs if len(runs) > 1 else []

    if not staged:
        return branches()
    levels = sorted({cross[i] for i in staged})
    best: list[tuple[int, int]] = []
    for c in levels:
        cut = [i for i in staged if cross[i] <= c]
        good = [i for i in cut if heavy[i + 1]]
        cut = good or cut
        pieces, lo = [], a
        for i in cut:
            pieces.append((lo, i + 1))
            lo = i + 1
        pieces.append((lo, b))
        runs = _runs(pieces, target)
        if len(runs) < 2:
            continue
        best = runs
        if max(r1 - r0 for r0, r1 in best) <= 0.5 * m:
            break
    if not best or max(r1 - r0 for r0, r1 in best) > 0.9 * m:   # one block with a few ops beside it: its branches
        return branches() or best
    return best


def _runs(pieces, target: float) -> list[tuple[int, int]]:
    """Consecutive pieces joined into runs of at least `target` positions (a short last one joins the one
    before)."""
    runs: list[list[int]] = []
    for p0, p1 in pieces:
        if runs and runs[-1][1] - runs[-1][0] < target:
            runs[-1][1] = p1
        else:
            runs.append([p0, p1])
    if len(runs) > 1 and runs[-1][1] - runs[-1][0] < target / 2:
        tail = runs.pop()
        runs[-1][1] = tail[1]
    return [(r0, r1) for r0, r1 in runs]


def _summary(graph, lo: int, hi: int) -> str:
    """A block's main ops: its two commonest heavy ops (else its two commonest ops), with their counts."""
    from .op_words import op_word

    counts: dict[str, int] = {}
    rest: dict[str, int] = {}
    for n in graph.nodes[lo:hi]:
        if n.kind != "call_tir":
            continue
        w = op_word(n)
        (counts if n.pattern in _HEAVY else rest)[w] = (counts if n.pattern in _HEAVY else rest).get(w, 0) + 1
    top = sorted((counts or rest).items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    return ", ".join(f"{w} \u00d7{c}" if c > 1 else w for w, c in top)


def _signature(graph, lo: int, hi: int) -> tuple:
    """How a block is built: its ops in order and where each one's inputs come from (relative positions)."""
    nodes = graph.nodes[lo:hi]
    pos = {n.id: i for i, n in enumerate(nodes)}
    return tuple((n.op, tuple(sorted(pos[x] - i if x in pos else 1 for x in n.inputs))) for i, n in enumerate(nodes))


def structure(graph) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Blocks from the graph's structure (for a graph whose names carry no scopes): (operator id -> the
    keys of its blocks, outermost first; block key -> its label)."""
    nodes = graph.nodes
    paths: dict[str, tuple[str, ...]] = {n.id: () for n in nodes}
    labels: dict[str, str] = {}
    if len(nodes) < STRUCT_MIN_OPS:
        return paths, labels
    cross = _crossings(graph)
    rank = _ranks(graph)
    heavy = [n.pattern in _HEAVY for n in nodes]
    seen: dict[tuple, str] = {}

    deepest = STRUCT_MAX_DEPTH if len(nodes) <= STRUCT_LARGE else 2

    def walk(a, b, num, path, depth):
        if depth > deepest:
            return
        for k, (lo, hi) in enumerate(_split(graph, cross, rank, heavy, a, b), 1):
            if hi - lo < 2:
                continue
            n = f"{num}.{k}" if num else str(k)
            key = STRUCT_PREFIX + n
            label = f"{n}: {_summary(graph, lo, hi)}"
            sig = _signature(graph, lo, hi)
            if sig in seen:
                label += f" (= {seen[sig]})"
            else:
                seen[sig] = n
            labels[key] = label
            here = path + (key,)
            for x in nodes[lo:hi]:
                paths[x.id] = here
            walk(lo, hi, n, here, depth + 1)

    walk(0, len(nodes), "", (), 1)
    return paths, labels


_CACHE: dict[int, tuple] = {}


def _paths(graph) -> tuple[dict[str, tuple[str, ...]], dict[str, str], bool]:
    """(operator id -> its scope keys, key -> label (blocks from the structure), whether the blocks come
    from the structure), worked out once per graph."""
    import weakref

    hit = _CACHE.get(id(graph))
    if hit is not None and hit[0]() is graph:
        return hit[1]
    if names_carry_scopes(graph):
        out = ({n.id: scope_path(n.onnx_name) for n in graph.nodes}, {}, False)
    else:
        paths, labels = structure(graph)
        out = (paths, labels, True)
    for k in [k for k, v in _CACHE.items() if v[0]() is None]:
        del _CACHE[k]
    _CACHE[id(graph)] = (weakref.ref(graph), out)
    return out


def from_structure(graph) -> bool:
    """Whether the graph's blocks come from its structure (its names carry no scopes)."""
    return _paths(graph)[2]


def op_scopes(graph, groups=None) -> dict[str, tuple[str, ...]]:
    """Operator id -> the scope keys it is drawn in, outermost first. A fused group's operators all
    lie in the deepest scope common to those of its operators that have an ONNX name (blocks from the
    structure: of all its operators)."""
    own, _, structural = _paths(graph)
    named = set(own) if structural else {n.id for n in graph.nodes if n.onnx_name}
    out = dict(own)
    for g in groups or ():
        if len(g) > 1:
            c = _common(own[m] for m in g if m in named)
            for m in g:
                out[m] = c
    return out


def scope_tree(graph, groups=None) -> dict[str, Scope]:
    """Every scope that holds at least two operators, by key, outer scopes before the ones inside and
    in graph order. A scope holding exactly the operators of the one scope inside it is left out (the
    inner one is drawn in its place)."""
    where = op_scopes(graph, groups)
    labels = _paths(graph)[1]
    ops: dict[str, list[str]] = {}
    inner: dict[str, dict[str, None]] = {}
    for n in graph.nodes:
        path = where[n.id]
        for i, k in enumerate(path):
            ops.setdefault(k, []).append(n.id)
            kids = inner.setdefault(k, {})
            if i + 1 < len(path):
                kids[path[i + 1]] = None

    def drawn(k: str) -> bool:
        if len(ops[k]) < 2:
            return False
        kids = inner[k]
        return not (len(kids) == 1 and len(ops[next(iter(kids))]) == len(ops[k]))

    tree: dict[str, Scope] = {}
    for n in graph.nodes:
        parent, skipped = None, []
        for k in where[n.id]:
            if not drawn(k):
                skipped.append(k)
                continue
            if k not in tree:
                depth = tree[parent].depth + 1 if parent is not None else 1
                # a scope drawn in place of the ones left out above it names them too ('lstm1/LSTM': two
                # recurrent layers exported as '/rnn/lstm1/LSTM' and '/rnn/lstm2/LSTM' are told apart)
                label = labels.get(k) or "/".join([scope_label(x) for x in skipped if "/" in x] + [scope_label(k)])
                tree[k] = Scope(key=k, label=label, depth=depth, parent=parent, ops=ops[k])
                if parent is not None:
                    tree[parent].children.append(k)
            parent, skipped = k, []
    return tree


def group_scope(graph, members) -> tuple[str, ...]:
    """The scope keys a group's operators share, outermost first (its drawn scope is the last); none where
    the names carry no scopes (a group is then not named after "p2o.Conv")."""
    if _paths(graph)[2]:
        return ()
    named = [scope_path(graph.by_id[m].onnx_name) for m in members if graph.by_id[m].onnx_name]
    return _common(named)


def max_depth(tree: dict[str, Scope]) -> int:
    return max((s.depth for s in tree.values()), default=0)


def at_depth(tree: dict[str, Scope], depth: int) -> list[str]:
    """The scopes shown collapsed by "collapse to depth N": those at depth N, and shallower ones that
    have no scope inside them (so that every operator lies in a collapsed block or outside all)."""
    return [k for k, s in tree.items() if s.depth == depth or (s.depth < depth and not s.children)]


def breadcrumb(tree: dict[str, Scope], key: str | None) -> list[str]:
    """The keys from the outermost scope down to `key`."""
    out = []
    while key is not None and key in tree:
        out.append(key)
        key = tree[key].parent
    return out[::-1]


def innermost(tree: dict[str, Scope], graph, groups=None) -> dict[str, str | None]:
    """Operator id -> the innermost drawn scope holding it (None: outside every scope)."""
    where = op_scopes(graph, groups)
    return {nid: next((k for k in reversed(path) if k in tree), None) for nid, path in where.items()}


__all__ = ["Scope", "names_carry_scopes", "structure", "from_structure", "STRUCT_PREFIX", "scope_path", "scope_label", "op_scopes", "scope_tree", "group_scope", "max_depth",
           "at_depth", "breadcrumb", "innermost"]
