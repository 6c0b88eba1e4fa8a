"""Strategy "greedy": TVM Relax FuseOps' grouping rules, re-implemented on the OpGraph alone (no TVM calls).

A port of TVM 0.27's src/relax/analysis/graph_partitioner.cc (GraphPartitioner and the post-dominator
tree), fed with the graph src/relax/transform/fuse_ops.cc (GraphCreator) builds, so that it gives
exactly FuseOps' partition (tests/{integration,unit}/test_greedy_matches_tvm.py checks it against TVM), and it says why
every edge between two groups was cut.

The graph FuseOps sees (GraphCreator):
  - one node per binding; the node's kind is the PrimFunc's `op_pattern` for a `call_tir`, Injective for
    a tuple-get-item (Opaque when it reads the packed-params tuple), and Opaque for everything else: a
    tuple binding, a call of anything but a PrimFunc, match_cast. The Tuple kind (7) never occurs in Relax.
  - an edge producer -> consumer for every variable argument, with tuple arguments flattened, and each
    edge carries the *consumer's* kind.
  - a binding whose variable leaves the dataflow block (a graph output) is "external": it has no
    post-dominator, so it never fuses forward, but others can fuse into it. Params and constants are
    Opaque leaves: they never fuse and are not nodes of our OpGraph.

The algorithm (GraphPartitioner::Partition):
  1. Post-dominator tree, in reverse topological order: the parent of a node is the least common
     ancestor (LCA) in the tree of all its consumers, and `kind` is the combined (max) kind of every
     edge and tree step on the way. No consumers, or consumers whose paths only meet at different
     graph outputs: no post-dominator.
  2. Union-find groups, one per node; the group's kind starts as the node's kind and becomes
     OutEWiseFusable when it absorbs an anchor (conv2d, matmul, pooling...).
  3. Phases 0, 1, 2, each a pass over the nodes in topological order. A node that is not Opaque and
     has a post-dominator P tries to fuse into P's group:
       - skipped if the group would exceed max depth (counted as TVM does, see count_fused_nodes);
       - OutEWiseFusable (phase 0 only): the combined edge kind to P must be ElemWise and every node
         on every path up to P, P included, must be <= Broadcast;
       - ElemWise/Broadcast (phases 0 and 1): the edge kind must be <= Injective or CommReduce, nodes
         between must be <= Injective, P anything but Opaque (so side branches join a conv group);
       - Injective (phase 1 only): every node on the paths, P included, <= Injective;
       - CommReduce: never fuses forward; Opaque: never fuses at all;
       - phase 2 fuses injective ops into tuples, a no-op in Relax (no node has the Tuple kind).
     A passing path check merges every node on the paths into P's group.
Not ported: max_function_args (0, i.e. off, in Relax FuseOps) and the postponed fusing it drives.
Known gaps of the OpGraph input: FuseOps adds no edge into a match_cast binding and treats
call_tir_inplace like call_tir; the OpGraph records neither distinction (neither occurs in the
prepared ONNX models).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine.util.errors import PlanError

from .plan import Plan, PlanResult, cross_edges, group_of

ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_EWISE_FUSABLE, TUPLE, OPAQUE = 0, 1, 2, 3, 4, 7, 8
KIND_NAMES = {ELEMWISE: "ElemWise", BROADCAST: "Broadcast", INJECTIVE: "Injective", COMM_REDUCE: "CommReduce",
              OUT_EWISE_FUSABLE: "OutEWiseFusable", TUPLE: "Tuple", OPAQUE: "Opaque"}
KINDS = {v: k for k, v in KIND_NAMES.items()}
DEFAULT_MAX_DEPTH = 256


def node_kind(node) -> int:
    """The pattern kind FuseOps' GraphCreator gives a binding."""
    if node.kind == "call_tir":
        return KINDS.get(node.pattern, OPAQUE)
    if node.kind == "tuple_get_item":
        return KINDS.get(node.pattern, OPAQUE)  # Injective; Opaque when it reads the packed params
    return OPAQUE  # tuple bindings, other calls, match_cast, aliases


# ---------------------------------------------------------------------------------------------------
# The graph as FuseOps indexes it
# ---------------------------------------------------------------------------------------------------

@dataclass
class FuseGraph:
    ids: list[str]
    labels: list[str]               # "conv2d n3"
    kind: list[int]
    consumers: list[list[int]]      # forward edges; each carries kind[consumer]
    external: list[bool]            # graph outputs: no post-dominator
    binding: list[str]              # OpNode.kind: call_tir | tuple | tuple_get_item | other

    @classmethod
    def from_opgraph(cls, graph) -> "FuseGraph":
        index = {n.id: i for i, n in enumerate(graph.nodes)}
        outs = set(graph.outputs)
        return cls(ids=[n.id for n in graph.nodes], labels=[f"{n.op or n.kind} {n.id}" for n in graph.nodes],
                   kind=[node_kind(n) for n in graph.nodes],
                   consumers=[[index[c] for c in graph.consumers[n.id]] for n in graph.nodes],
                   external=[n.id in outs for n in graph.nodes], binding=[n.kind for n in graph.nodes])

    def __len__(self):
        return len(self.ids)


# ---------------------------------------------------------------------------------------------------
# Post-dominator tree (DominatorTree::PostDom)
# ---------------------------------------------------------------------------------------------------

@dataclass
class DomNode:
    parent: int | None     # immediate post-dominator (a node index), None if there is none
    depth: int
    kind: int              # combined kind of the edges from the node up to its parent


def build_post_dom_tree(g: FuseGraph) -> list[DomNode]:
    """In reverse topological order, a node's parent is the LCA of its consumers in the tree."""
    tree: list[DomNode | None] = [None] * len(g)

    def lca(lhs, rhs, kind):
        # Walk the deeper side up, folding in the kind of every tree edge stepped over.
        while lhs != rhs:
            if lhs is None or rhs is None:
                return None, kind
            if tree[lhs].depth < tree[rhs].depth:
                kind = max(kind, tree[rhs].kind)
                rhs = tree[rhs].parent
            elif tree[rhs].depth < tree[lhs].depth:
                kind = max(kind, tree[lhs].kind)
                lhs = tree[lhs].parent
            else:
                kind = max(kind, tree[lhs].kind, tree[rhs].kind)
                lhs, rhs = tree[lhs].parent, tree[rhs].parent
        return lhs, kind

    for i in reversed(range(len(g))):
        if g.external[i]:
            tree[i] = DomNode(None, 1, OPAQUE)
            continue
        parent, kind = None, ELEMWISE
        for k, c in enumerate(g.consumers[i]):
            if k == 0:
                parent = c
            else:
                parent, kind = lca(parent, c, kind)
            kind = max(kind, g.kind[c])   # the edge's kind is its consumer's
        tree[i] = DomNode(parent, tree[parent].depth + 1 if parent is not None else 1, kind)
    return tree


# ---------------------------------------------------------------------------------------------------
# The partitioner (GraphPartitioner)
# ---------------------------------------------------------------------------------------------------

@dataclass
class Decision:
    """The last thing that happened when a node tried to fuse into its post-dominator."""
    reason: str                          # "fused" | "rule" | "depth"
    detail: str = ""
    phase: int = -1                      # -1: decided before the phases (Opaque, no post-dominator)
    post_dominator: int | None = None
    blocker: int | None = None           # the op that broke the rule


@dataclass
class Partitioner:
    g: FuseGraph
    max_depth: int = DEFAULT_MAX_DEPTH
    tree: list[DomNode] = field(init=False)

    def __post_init__(self):
        n = len(self.g)
        self.tree = build_post_dom_tree(self.g)
        # Union-find: one group object per node (index == node index), as TVM's InitGroups.
        self.parent: list[int | None] = [None] * n
        self.pattern = list(self.g.kind)            # a group object's kind (updated on its root)
        self.anchor = [i if k == OUT_EWISE_FUSABLE else None for i, k in enumerate(self.g.kind)]
        self.num_nodes = [1] * n                    # exact on roots, frozen when an object stops being one
        self.decision: dict[int, Decision] = {}

    # -- union-find -----------------------------------------------------------------------------
    def root(self, i: int) -> int:
        r = i
        while self.parent[r] is not None:
            r = self.parent[r]
        while self.parent[i] is not None and self.parent[i] != r:  # path compression
            self.parent[i], i = r, self.parent[i]
        return r

    def merge(self, child: int, parent: int) -> None:
        """MergeFromTo: child's group joins parent's; an anchor carries its OutEWiseFusable kind along."""
        child, parent = self.root(child), self.root(parent)
        if child == parent:
            return
        if self.anchor[child] is not None and (self.anchor[parent] is not None or not (
                self.pattern[parent] <= BROADCAST or self.pattern[child] <= BROADCAST)):
            why = "two anchors in one group" if self.anchor[parent] is not None else \
                "cannot merge two complex groups together"
            raise PlanError(f"greedy: {why} (merging the group of {self.g.labels[child]} "
                            f"into that of {self.g.labels[parent]}); the fusion rules were broken")
        self.num_nodes[parent] += self.num_nodes[child]
        self.parent[child] = parent
        if self.anchor[child] is not None:
            self.anchor[parent] = self.anchor[child]
            self.pattern[parent] = max(self.pattern[child], self.pattern[parent])

    # -- paths between a node and its post-dominator ----------------------------------------------
    def check_path(self, src: int, sink: int, cond) -> int | None:
        """CheckPath: every node reachable from src up to sink (sink included, src not) must satisfy
        cond(kind of its group, is_sink). Returns the first node that does not, or None."""
        visited = set()
        stack = list(reversed(self.g.consumers[src]))
        while stack:
            v = stack.pop()
            if v in visited:
                continue
            visited.add(v)
            if not cond(self.pattern[self.root(v)], v == sink):
                return v
            if v != sink:
                stack.extend(reversed(self.g.consumers[v]))
        return None

    def region(self, src: int, sink: int) -> list[int]:
        """The nodes on the paths from src to sink: src and sink included, in graph order."""
        seen, stack = {src}, [src]
        while stack:
            v = stack.pop()
            if v == sink:
                continue
            for c in self.g.consumers[v]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return sorted(seen)

    def commit_fuse(self, src: int, sink: int) -> None:
        """CommitFuse: every node on the paths from src (included) to sink joins sink's group."""
        for v in self.region(src, sink):
            if v != sink:
                self.merge(v, sink)

    def count_fused_nodes(self, child: int, dom_parent: int) -> int:
        """CountFusedNodesWithNewChild, as TVM counts: the size of dom_parent's group plus, for every
        node on the paths from child to dom_parent (dom_parent excluded), the size recorded on that
        node's own group object (stale once the object is no longer a root; nodes may count twice)."""
        return self.num_nodes[self.root(dom_parent)] + sum(
            self.num_nodes[v] for v in self.region(child, dom_parent) if v != dom_parent)

    # -- the fusion passes --------------------------------------------------------------------------
    def partition(self) -> list[list[int]]:
        for i in range(len(self.g)):
            if self.g.kind[i] == OPAQUE:
                self.decision[i] = Decision("rule", self._opaque_detail(i), blocker=i)
            elif self.tree[i].parent is None:
                self.decision[i] = Decision("rule", self._no_postdom_detail(i), blocker=i)
        for phase in range(3):
            self.run_fuse(phase)
        groups: dict[int, list[int]] = {}
        for i in range(len(self.g)):
            groups.setdefault(self.root(i), []).append(i)
        return sorted(groups.values(), key=lambda grp: grp[0])

    def run_fuse(self, phase: int) -> None:
        g = self.g
        for i in range(len(g)):
            kind = self.pattern[i]               # this node's own group object, as TVM reads it
            dom = self.tree[i]
            if kind == OPAQUE or dom.parent is None:
                continue
            p = dom.parent
            size = self.count_fused_nodes(i, p)
            if size > self.max_depth:
                if self.root(i) != self.root(p):
                    self.decision[i] = Decision("depth", (
                        f"merging {g.labels[i]} into the group of its post-dominator {g.labels[p]} would "
                        f"exceed max depth {self.max_depth} ({size} ops, as TVM counts them)"), phase, p)
                continue
            if phase == 2:
                self._phase2(i, kind)
                continue
            if self.root(i) == self.root(p):
                continue                          # already fused into its post-dominator
            if self.pattern[p] == TUPLE:
                continue                          # "do not fuse into tuple for now" (never in Relax)
            if kind == OUT_EWISE_FUSABLE:
                if phase == 0:
                    self._try(i, p, phase, self._out_ewise_rule)
            elif kind <= BROADCAST:
                self._try(i, p, phase, self._elemwise_rule)
            elif kind in (INJECTIVE, TUPLE):
                if phase == 1:
                    self._try(i, p, phase, self._injective_rule)
            else:
                if kind != COMM_REDUCE:
                    raise PlanError(f"greedy: {g.labels[i]} has pattern kind {kind}, which the "
                                    "fusion rules do not know")
                self.decision[i] = Decision("rule", (
                    f"CommReduce ends a group: {g.labels[i]} is a reduction, which only takes ops in from "
                    f"before it and never fuses into its consumers"), phase, p, i)

    def _phase2(self, i: int, kind: int) -> None:
        """Phase 2 fuses injective ops into an intermediate tuple that was fused into injective
        consumers. Relax tuples are Opaque bindings, so no group has the Tuple kind: nothing happens."""
        p = self.tree[i].parent
        if kind > INJECTIVE or self.pattern[self.root(p)] == TUPLE:
            return
        if self.pattern[p] == TUPLE and self.pattern[self.root(p)] <= INJECTIVE:
            if self.check_path(i, p, lambda k, is_sink: k <= INJECTIVE) is None:
                self.commit_fuse(i, p)
                self.decision[i] = Decision("fused", phase=2, post_dominator=p)

    def _try(self, i: int, p: int, phase: int, rule) -> None:
        """Apply one kind's rule: the edge-kind precondition, then the path check, then the merge."""
        refusal = rule(i, p)
        if refusal is None:
            self.commit_fuse(i, p)
            self.decision[i] = Decision("fused", phase=phase, post_dominator=p)
        else:
            detail, blocker = refusal
            self.decision[i] = Decision("rule", detail, phase, post_dominator=p, blocker=blocker)

    # Each rule returns None when node i may fuse into its post-dominator p, else (why not, the op
    # that stops it).
    def _out_ewise_rule(self, i: int, p: int):
        head = (f"{self._who(i)} fuses only into an ElemWise path of ops <= Broadcast "
                f"(its post-dominator is {self.g.labels[p]})")
        if self.tree[i].kind != ELEMWISE:
            v = self._edge_culprit(i, p)
            return f"{head}; the path reaches {self._as_found(v)}", v
        v = self.check_path(i, p, lambda k, is_sink: k <= BROADCAST)
        return None if v is None else (f"{head}; the path reaches {self._as_found(v)}", v)

    def _elemwise_rule(self, i: int, p: int):
        head = (f"{self._who(i)} fuses only through ops <= Injective into an op that is <= Injective "
                f"or a reduction (its post-dominator is {self.g.labels[p]})")
        if not (self.tree[i].kind <= INJECTIVE or self.tree[i].kind == COMM_REDUCE):
            v = self._edge_culprit(i, p)
            return f"{head}; the path reaches {self._as_found(v)}", v

        def cond(k, is_sink):
            # Ops between must be <= Injective; the end point may be anything but Opaque, including a
            # group an OutEWiseFusable anchor already took (how side branches join a conv's group).
            return k <= INJECTIVE if not is_sink else k in (ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE,
                                                            OUT_EWISE_FUSABLE)
        v = self.check_path(i, p, cond)
        if v is None:
            return None
        if v == p:
            return f"{head}; the post-dominator is {self._as_found(v)}, and the end point must not be Opaque", v
        return f"{head}; the path reaches {self._as_found(v)}, and ops between must be <= Injective", v

    def _injective_rule(self, i: int, p: int):
        v = self.check_path(i, p, lambda k, is_sink: k <= INJECTIVE)
        if v is None:
            return None
        return (f"{self._who(i)} fuses only along paths of ops <= Injective (its post-dominator is "
                f"{self.g.labels[p]}); the path reaches {self._as_found(v)}"), v

    # -- wording --------------------------------------------------------------------------------
    def _who(self, i: int) -> str:
        """'conv2d n3 (OutEWiseFusable)'; 'add n4 (fused with conv2d n3, so OutEWiseFusable)'."""
        g, k = self.g, self.pattern[i]
        if k != g.kind[i] and self.anchor[i] is not None:
            return f"{g.labels[i]} (fused with {g.labels[self.anchor[i]]}, so {KIND_NAMES[k]})"
        return f"{g.labels[i]} ({KIND_NAMES[k]})"

    def _as_found(self, v: int) -> str:
        """How a path check sees node v: the kind of its group, and whose group when that differs."""
        g = self.g
        r = self.root(v)
        k = self.pattern[r]
        if k != g.kind[v]:
            a = self.anchor[r]
            owner = g.labels[a] if a is not None else g.labels[r]
            extra = "; two anchors never share a group" if k == OUT_EWISE_FUSABLE else ""
            return f"{g.labels[v]} ({KIND_NAMES[g.kind[v]]}, fused with {owner}: {KIND_NAMES[k]}{extra})"
        return f"{g.labels[v]} ({KIND_NAMES[k]})"

    def _edge_culprit(self, i: int, p: int) -> int:
        """The op that gives the combined edge kind from i to its post-dominator its value: the kind
        is the max over the ops on the paths from i to p, p included (each edge carries its consumer's
        kind, each tree step the kind already combined below it)."""
        ek = self.tree[i].kind
        region = [v for v in self.region(i, p) if v != i]
        return next((v for v in region if self.g.kind[v] == ek), p)

    def _opaque_detail(self, i: int) -> str:
        g = self.g
        what = {"tuple": "a tuple binding is Opaque in FuseOps",
                "tuple_get_item": "a get-item of the packed parameters is Opaque in FuseOps",
                "call_tir": "its PrimFunc's op_pattern is Opaque"}.get(
            g.binding[i], "only call_tir and tuple-get-item bindings take part in fusion")
        return f"{g.labels[i]} is Opaque ({what}): it never fuses with anything"

    def _no_postdom_detail(self, i: int) -> str:
        g = self.g
        if g.external[i]:
            return f"{g.labels[i]} has no post-dominator (its value is a graph output)"
        if not g.consumers[i]:
            return f"{g.labels[i]} has no post-dominator (its value is not used)"
        ends = []
        for c in g.consumers[i]:
            while self.tree[c].parent is not None:
                c = self.tree[c].parent
            if c not in ends:
                ends.append(c)
        names = ", ".join(g.labels[e] for e in sorted(ends))
        return (f"{g.labels[i]} has no post-dominator: the paths from its consumers never meet again "
                f"(they end at {names})")


def partition(graph, max_depth: int = DEFAULT_MAX_DEPTH) -> tuple[list[list[str]], Partitioner]:
    g = FuseGraph.from_opgraph(graph)
    part = Partitioner(g, max_depth)
    groups = part.partition()
    return [[g.ids[i] for i in grp] for grp in groups], part


def plan(graph, hw=None, max_depth: int = DEFAULT_MAX_DEPTH) -> PlanResult:
    """FuseOps' partition, computed on the OpGraph, with one explanation per edge between groups:
    {"src", "dst", "src_group", "dst_group", "reason": "rule" | "depth", "detail",
     "post_dominator": node id or None, "blocker": the node id that broke the rule, or None}.
    `hw` is unused: TVM's rules do not look at the hardware."""
    t0 = time.perf_counter()
    groups, part = partition(graph, max_depth)
    ids = part.g.ids
    index = {nid: i for i, nid in enumerate(ids)}
    where = group_of(groups)
    explanations = []
    for src, dst in cross_edges(graph, groups):
        d = part.decision.get(index[src])
        if d is None or d.reason == "fused":  # cannot happen: a fused node's consumers share its group
            d = Decision("rule", f"{part.g.labels[index[src]]} did not fuse into {part.g.labels[index[dst]]}")
        explanations.append({"src": src, "dst": dst, "src_group": where[src], "dst_group": where[dst],
                             "reason": d.reason, "detail": d.detail,
                             "post_dominator": ids[d.post_dominator] if d.post_dominator is not None else None,
                             "blocker": ids[d.blocker] if d.blocker is not None else None})
    return PlanResult(Plan("greedy", groups, explanations=explanations,
                           planning_ms=(time.perf_counter() - t0) * 1e3, notes={"max_depth": max_depth}))
