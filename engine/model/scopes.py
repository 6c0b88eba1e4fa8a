"""The model's layer hierarchy, from each operator's ONNX provenance (`OpNode.onnx_name`), as Model
Explorer draws it: nested scopes such as `features` > `features.9` > `features.9.conv`.

Two spellings of an ONNX node name are understood:
- a path, as PyTorch's exporter writes it: "/features/features.9/conv/conv.0/Conv" lies in the scopes
  "/features", "/features/features.9", ... (the last part names the node itself);
- a module name, as older exports write it: "features.9.conv.0.0" is the leaf module itself, in the
  scopes "features", "features.9", "features.9.conv", "features.9.conv.0".

A fused group sits in one scope: the deepest one holding all its operators (so that scope boxes
nest around group boxes, never cut through them). Operators without an ONNX name follow their group.
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


def op_scopes(graph, groups=None) -> dict[str, tuple[str, ...]]:
    """Operator id -> the scope keys it is drawn in, outermost first. A fused group's operators all
    lie in the deepest scope common to those of its operators that have an ONNX name."""
    own = {n.id: scope_path(n.onnx_name) for n in graph.nodes}
    named = {n.id for n in graph.nodes if n.onnx_name}
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
                label = "/".join([scope_label(x) for x in skipped if "/" in x] + [scope_label(k)])
                tree[k] = Scope(key=k, label=label, depth=depth, parent=parent, ops=ops[k])
                if parent is not None:
                    tree[parent].children.append(k)
            parent, skipped = k, []
    return tree


def group_scope(graph, members) -> tuple[str, ...]:
    """The scope keys a group's operators share, outermost first (its drawn scope is the last)."""
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


__all__ = ["Scope", "scope_path", "scope_label", "op_scopes", "scope_tree", "group_scope", "max_depth",
           "at_depth", "breadcrumb", "innermost"]
