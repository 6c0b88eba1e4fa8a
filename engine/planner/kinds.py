"""Fusion kinds: what kind of kernel a group is, and which kinds a profile's backend compiles.

One rule per kind, in one place. The cost model (legality and cost), the DP and the hybrid (through
the incremental `GroupShape`), `optimal`, the explanations and the app (badges) all read it.

A group that TVM's FuseOps could make is one of:
    single      one op
    epilogue    at most one anchor (conv, matmul, pool) followed by elementwise/broadcast ops,
                or a chain of elementwise/injective ops
The kinds beyond FuseOps (features: one group may have several):
    prologue          an op that is not an anchor computes a value an anchor of the same group
                      reads, and no anchor of the group runs before it (pad, transpose, elementwise
                      before a conv/matmul, computed inside the anchor's tile loop)
    anchor_chain      an anchor's output reaches another anchor inside the group (1x1 conv ->
                      depthwise conv -> 1x1 conv; the intermediate stays on chip, tile by tile)
    horizontal        two or more anchors of the group whose outputs reach no other anchor of the
                      group: siblings (Q/K/V matmuls, parallel convs) that run in one kernel
    reduction_stitch  a reduction (or pooling) whose result reaches another anchor or reduction
                      inside the group (squeeze-and-excitation: global pool -> conv -> act ->
                      conv -> sigmoid -> scale; softmax and layer norm with the ops around them).
                      An anchor downstream of that reduction whose output is small
                      (<= SMALL_BYTES: the 1x1-spatial convs of an SE block) feeding another
                      anchor is part of the stitch, not an anchor chain.
    attention         QK^T (a batched matmul) -> optional scale/mask elementwise ops -> softmax
                      (one softmax op, or max / exp / sum / divide as exporters write it) -> .V
                      (a batched matmul), with at most an elementwise/injective epilogue: one
                      kernel whose seq x seq score matrix stays on chip, a tile of query rows at a
                      time (the CPU `Attention` schedule rule). It replaces the anchor chain (or
                      stitch) those anchors would otherwise be (`attention_shape`).

Whether a kind is allowed, and what it costs, is the profile's choice (`Hardware.kinds`, per
target: assets/hardware.json); a kind stays off where the backend cannot schedule it or where it
measured slower.
"""
from __future__ import annotations

from dataclasses import dataclass

from .rules import named

ANCHOR = "OutEWiseFusable"
REDUCE = "CommReduce"
EWISE = ("ElemWise", "Broadcast")

BEYOND = ("prologue", "anchor_chain", "horizontal", "reduction_stitch", "attention")
KINDS = ("single", "epilogue", *BEYOND)

TITLES = {
    "single": "single op",
    "epilogue": "anchor + epilogue (FuseOps)",
    "prologue": "prologue fused into an anchor",
    "anchor_chain": "anchor chain (tile-wise)",
    "horizontal": "horizontal (sibling anchors)",
    "reduction_stitch": "stitched reduction",
    "attention": "attention (QK^T, softmax, .V in one kernel)",
}

# the order in which a group's main kind is named when it has several features
PRIORITY = ("attention", "anchor_chain", "reduction_stitch", "horizontal", "prologue")

# a value this small (an SE block's pooled vector) needs no tiling to stay on chip
SMALL_BYTES = 64 * 1024

# the attention kind: the ops its softmax is made of (besides elementwise ones), and the row tile
# of the CPU Attention rule (engine/schedules/cpu/attention.py: TILE_ROWS), whose scores must fit on
# chip (onchip_need; at 16 rows x 1,024 keys, 128 KiB per core). It has no limit of its own: measured
# against its three kernels (scripts/bench_kinds_attention.py, 12 heads x 64, 2-core AVX-512 Xeon)
# it was faster at every sequence tried: 1.42x at 64 and 128 keys, 1.10x at 256, 1.46x at 1,024.
SOFTMAX_REDUCTIONS = ("max", "sum")
ATTENTION_TILE_ROWS = 16

# the op of engine/model/int8_matmul.py's integer matmul, and the kinds its group never has
INT8_MATMUL = "int8_matmul"
INT8_BLOCKED = ("anchor_chain", "horizontal", "reduction_stitch")


@dataclass(frozen=True)
class KindConfig:
    """A kind's knobs on one profile: allowed at all, and the efficiency its kernels reach
    relative to the profile's roofline (the calibration knob for that kind)."""
    enabled: bool = False
    efficiency: float = 1.0
    note: str = ""


def config(hw, kind: str) -> KindConfig:
    raw = (getattr(hw, "kinds", None) or {}).get(kind)
    if raw is None:
        return KindConfig()
    if isinstance(raw, bool):
        return KindConfig(enabled=raw)
    return KindConfig(**{k: raw[k] for k in ("enabled", "efficiency", "note") if k in raw})


def enabled(hw, kind: str) -> bool:
    return config(hw, kind).enabled


class GroupShape:
    """The kind features of a group, built by adding members in reverse topological order
    (every inside consumer of a member is added before it), as the DP extends a segment to the
    front. `inside(c)` says whether node c belongs to the group (now or by the time it is complete).

    Monotone features (once present, no earlier member removes them): anchor_chain, horizontal,
    reduction_stitch. `prologue` is not: a pending prologue op becomes part of a chain when an
    anchor upstream of it joins the group.
    """
    __slots__ = ("cm", "inside", "feeds", "after", "after_reduce", "pending", "small_links", "anchors",
                 "sink_anchors", "chain", "stitch", "members", "int8", "int8_mm", "not_ewise", "int_red", "heavy",
                 "matmuls", "not_attention", "_attention")

    def __init__(self, cm, inside):
        self.cm, self.inside = cm, inside
        self.feeds: set[int] = set()      # members whose value reaches an anchor of the group
        self.after: set[int] = set()      # members downstream of an anchor of the group
        self.after_reduce: set[int] = set()  # members downstream of a reduction (or pooling) of the group
        self.small_links: set[int] = set()   # anchors with a small output that feed another anchor
        self.pending: set[int] = set()    # non-anchor compute members that feed an anchor
        self.members: list[int] = []
        self.anchors = self.sink_anchors = 0
        self.chain = self.stitch = False
        self.int8 = False                 # an int8 matmul (engine/model/int8_matmul.py) is a member
        self.int8_mm = False              # ... an int8 matmul itself
        self.not_ewise = False            # a member that is neither elementwise nor an int8 matmul
        self.int_red = False              # an integer reduction (an int8 matmul's zero-point row sums)
        self.heavy = 0                    # members that are not elementwise
        self.matmuls = 0                  # matmul members (an attention has two)
        self.not_attention = 0            # heavy members no attention holds (a conv, a pool, a mean...)
        self._attention: tuple[int, str] = (-1, "")   # attention_shape at len(members), cached

    def add(self, v: int) -> None:
        cm = self.cm
        pat = cm.pattern[v]
        node = cm.graph.nodes[v]
        # an int8 matmul, or an integer reduction (the row/column sums of its zero-point correction)
        self.int8 = self.int8 or node.op == INT8_MATMUL or (pat == REDUCE and str(node.dtype).startswith(("int", "uint")))
        self.int8_mm = self.int8_mm or node.op == INT8_MATMUL
        self.int_red = self.int_red or (pat == REDUCE and str(node.dtype).startswith(("int", "uint")))
        self.heavy += pat not in EWISE
        if pat == ANCHOR and node.op.startswith("matmul"):
            self.matmuls += 1
        elif pat in (ANCHOR, REDUCE) and node.op != "softmax" and node.op not in SOFTMAX_REDUCTIONS:
            self.not_attention += 1
        self.not_ewise = self.not_ewise or (node.op != INT8_MATMUL and pat not in EWISE)
        inside_cons = [c for c in cm.consumers[v] if self.inside(c)]
        feeds = any(cm.pattern[c] == ANCHOR or c in self.feeds for c in inside_cons)
        if feeds:
            self.feeds.add(v)
        # a reduction, or a pooling down to a small value (a global pool; a 2x2 max pool is an anchor)
        reducer = pat == REDUCE or (pat == ANCHOR and not is_mac(cm.graph.nodes[v].op) and cm.vbytes[v] <= SMALL_BYTES)
        if pat == ANCHOR:
            self.anchors += 1
            if not feeds:
                self.sink_anchors += 1
            elif reducer:
                self.stitch = True
            elif cm.vbytes[v] <= SMALL_BYTES:
                self.small_links.add(v)           # a stitch if it runs after a reduction, else a chain
            else:
                self.chain = True
        elif pat == REDUCE:
            if feeds or any(cm.pattern[c] not in EWISE for c in inside_cons if not cm.glue[c]):
                self.stitch = True
        elif feeds and not cm.glue[v]:
            self.pending.add(v)
        if pat in (ANCHOR, REDUCE):
            self._mark(inside_cons, self.after)   # what runs after this anchor or reduction
        if reducer:
            self._mark(inside_cons, self.after_reduce)
        self.members.append(v)

    def _mark(self, start, seen: set) -> None:
        stack = list(start)
        while stack:
            c = stack.pop()
            if c not in seen:
                seen.add(c)
                stack.extend(x for x in self.cm.consumers[c] if self.inside(x))

    def _small_chain(self) -> bool:
        return any(v not in self.after_reduce for v in self.small_links)

    def attention_why(self) -> str:
        """attention_shape of the group as it is now ('' when it is an attention), cached per size."""
        if self.matmuls != 2 or self.not_attention:
            return "its anchors are not two matmuls around a softmax"
        if self._attention[0] != len(self.members):
            self._attention = (len(self.members), attention_shape(self.cm, self.members))
        return self._attention[1]

    def is_attention(self) -> bool:
        return self.matmuls == 2 and not self.not_attention and not self.attention_why()

    def _may_become_attention(self) -> bool:
        """Members added upstream may still make the group an attention (its QK^T not yet in)."""
        return self.matmuls < 2 and not self.not_attention

    def features(self) -> tuple[str, ...]:
        out = []
        if self.pending and any(p not in self.after for p in self.pending):
            out.append("prologue")
        if self.is_attention():                 # its chain and stitch are the attention's own
            return (*out, "attention")
        if self.chain or self._small_chain():
            out.append("anchor_chain")
        if self.sink_anchors > 1:
            out.append("horizontal")
        if self.stitch or any(v in self.after_reduce for v in self.small_links):
            out.append("reduction_stitch")
        return tuple(out)

    def blocked(self, hw) -> tuple[str, bool, str]:
        """(the first feature the profile does not allow, whether adding earlier members can never
        allow it, why) or ("", False, ""). Not final: a prologue that an anchor upstream may make
        part of a chain, and a chain of small values that a reduction upstream makes a stitch.
        An int8 matmul's group is one int8 matmul with its epilogue (and prologue): its kernel
        (cpu.Int8Dense, vpdpbusd) takes no sibling anchor, chain or stitched reduction, which the
        float Stages rule would run at a fraction of its speed (smart_turn_v3's dp, 3x none); nor
        is an integer reduction (its zero-point correction's row sums) stitched with a softmax
        (Stages: 25-30 ms a kernel there, against 1-3 ms unfused), nor with anything that is not
        elementwise (`softmax + quantize + cast + sum` went to the generic Reduction rule: 7-8 ms
        against 0.7-1.6 ms for RowReduction's `softmax + quantize`); and its epilogue is elementwise:
        a transpose, reshape, repack or sum after it would read the int32 tile back from memory
        and recompute the inlined epilogue per consumer (dp's such groups ran at 4-8% of peak
        where greedy's elementwise ones reached 40-80%)."""
        if self.int8_mm and self.not_ewise:
            return "epilogue", True, "an int8 matmul's epilogue is elementwise (a transpose, repack or sum after it is a pass of its own)"
        if self.int_red and self.heavy > 1:
            return "epilogue", True, "an integer row sum (an int8 matmul's zero-point correction) is a pass of its own"
        for f in self.features():
            if self.int8 and f in INT8_BLOCKED:
                return f, True, "an int8 matmul's kernel takes one int8 matmul with its epilogue"
            bad = why_blocked(f, hw) if not enabled(hw, f) else ""
            if not bad and f == "anchor_chain":
                shape = chain_shape(self.cm, self.members)
                bad = f"not a chain the backend computes band by band: {shape}" if shape else ""
            if bad:
                # a softmax -> .V (or a softmax alone) is not final where QK^T may still join
                may_attend = f in ("anchor_chain", "reduction_stitch") and enabled(hw, "attention") and \
                    self._may_become_attention()
                final = not ((f == "prologue" and enabled(hw, "anchor_chain"))
                             or (f == "anchor_chain" and not self.chain and enabled(hw, "reduction_stitch"))
                             or may_attend)
                return f, final, bad
        return "", False, ""


def is_mac(op: str) -> bool:
    """A multiply-accumulate anchor (convolution, matmul, int8 matmul); pools and means are reductions."""
    return op.startswith(("conv", "matmul", "dense", "batch_matmul", INT8_MATMUL))


def chain_shape(cm, members) -> str:
    """Why the anchors of a group are not a chain that is computed band by band (the CPU `Chain`
    schedule rule's shape), or '': every anchor a 4-D convolution, the anchors one path, no
    intermediate used outside the group, no side branch (every op feeds the last convolution or is
    its epilogue). Adding earlier ops never repairs a broken shape, so the DP stops there."""
    inside = set(members)
    nodes = cm.graph.nodes
    anchors = sorted(v for v in inside if cm.pattern[v] == ANCHOR)
    for v in anchors:
        shp = nodes[v].shape
        if not nodes[v].op.startswith("conv2d") or not isinstance(shp, list) or len(shp) not in (4, 5):
            return f"{named(cm, v)} is not a 4-D convolution"
    if any(len(nodes[v].shape) == 5 for v in anchors):
        why = _blocked_chain_shape(cm, anchors)
        if why:
            return why

    def reach(v):
        seen, stack = set(), [v]
        while stack:
            x = stack.pop()
            for c in cm.consumers[x]:
                if c in inside and c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen
    down = {v: reach(v) for v in anchors}
    for a, b in zip(anchors, anchors[1:]):
        if b not in down[a]:
            return f"its convolutions {named(cm, a)} and {named(cm, b)} are not one path"
    sink = anchors[-1]
    tail = down[sink] | {sink}
    for v in inside - tail:
        if cm.is_output[v] or any(c not in inside for c in cm.consumers[v]):
            return f"the intermediate {named(cm, v)} is also used outside the group"
        if sink not in reach(v):
            return f"{named(cm, v)} is a side branch"
    return ""


BLOCKED_DENSE, BLOCKED_DEPTHWISE = "conv2d_nchwc", "conv2d_nchwc_dw"   # engine/model/blocked_layout.py's op names
BLOCKED_CHAIN_MAX = 3


def _blocked_chain_shape(cm, anchors) -> str:
    """Why blocked (NCHW[x]c) anchors are not a chain the CPU `BlockedChain` rule computes, or '':
    2-3 blocked convolutions, each depthwise or a dense 1x1 of stride 1 (the first may be any dense
    conv: it reads the chain's input, not a band of an intermediate)."""
    nodes = cm.graph.nodes
    for k, v in enumerate(anchors):
        n = nodes[v]
        if len(n.shape) != 5 or not n.op.startswith(BLOCKED_DENSE):
            return f"{named(cm, v)} is a blocked (NCHW[x]c) convolution in a chain with an NCHW one"
        if k == 0 or n.op.startswith(BLOCKED_DEPTHWISE):
            continue
        src = nodes[cm.index[n.inputs[0]]] if n.inputs else None
        ss = src.shape if src is not None else None
        out = 1
        for d in n.shape:
            out *= int(d)
        cin = int(ss[1]) * int(ss[4]) if isinstance(ss, list) and len(ss) == 5 else 0
        if not cin or n.flops != 2 * out * cin or int(ss[2]) != int(n.shape[2]):
            return (f"{named(cm, v)} is a blocked (NCHW[x]c) convolution that is not a 1x1 of stride 1 "
                    "after the first, which is not chained band by band")
    if len(anchors) > BLOCKED_CHAIN_MAX:
        return f"its {len(anchors)} blocked (NCHW[x]c) convolutions are more than {BLOCKED_CHAIN_MAX} chained band by band"
    return ""


def _reach(cm, v: int, inside: set) -> set:
    """Members reachable from v through members (v excluded)."""
    seen, stack = set(), [v]
    while stack:
        x = stack.pop()
        for c in cm.consumers[x]:
            if c in inside and c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def attention_shape(cm, members) -> str:
    """Why a group is not an attention that the CPU `Attention` rule computes in one kernel, or '':
    two batched matmuls (relax `matmul`, the second operand read [.., K, N]: K^T and V as the rule
    vectorises them), the first's scores [.., q, keys] reaching the second only through a softmax
    over the keys (one `softmax` op, or a `max` and a `sum` reduction with elementwise ops) and
    elementwise/injective ops (scale, mask, reshape), which is the second's left operand; no
    member before QK^T (a prologue) and none beside the path; after .V only elementwise/injective
    ops (its epilogue); no score, exp or probability value used outside the group."""
    inside = set(members)
    nodes = cm.graph.nodes
    mms = sorted(v for v in inside if cm.pattern[v] == ANCHOR and nodes[v].op.startswith("matmul"))
    if len(mms) != 2:
        return "its anchors are not two matmuls around a softmax"
    qk, pv = mms
    for v in mms:
        shp = nodes[v].shape
        if not isinstance(shp, list) or len(shp) < 3 or isinstance(shp[0], list):
            return f"{named(cm, v)} is not a batched matmul"
    down = _reach(cm, qk, inside)
    if pv not in down:
        return f"its matmuls {named(cm, qk)} and {named(cm, pv)} are not one path"
    tail = _reach(cm, pv, inside)
    between = {v for v in down - tail - {pv} if pv in _reach(cm, v, inside)}
    soft = [v for v in between if nodes[v].op == "softmax"]
    reds = sorted(nodes[v].op for v in between if cm.pattern[v] == REDUCE)
    if not (len(soft) == 1 and not reds) and not (not soft and reds == sorted(SOFTMAX_REDUCTIONS)):
        return f"no softmax between {named(cm, qk)} and {named(cm, pv)}"
    for v in between:
        if v not in soft and cm.pattern[v] not in (*EWISE, "Injective", REDUCE):
            return f"{named(cm, v)} between the matmuls is not part of a softmax"
        if cm.is_output[v] or any(c not in inside for c in cm.consumers[v]):
            return f"the intermediate {named(cm, v)} is also used outside the group"
    if cm.is_output[qk] or any(c not in inside for c in cm.consumers[qk]):
        return f"the scores {named(cm, qk)} are also used outside the group"
    if not any(cm.inputs[pv] and p in between for p in cm.inputs[pv][:1]):
        return f"the softmax is not the left operand of {named(cm, pv)}"
    for v in tail:
        if cm.pattern[v] not in (*EWISE, "Injective") and not cm.glue[v]:
            return f"{named(cm, v)} after {named(cm, pv)} is not an elementwise epilogue"
    for v in sorted(down - tail - between - {pv}):
        return f"{named(cm, v)} is a side branch"
    for v in sorted(inside - down - {qk}):
        return f"{named(cm, v)} runs before {named(cm, qk)} (a prologue) or beside the attention"
    return ""


def features_of(cm, members) -> tuple[str, ...]:
    """The beyond-FuseOps features of a group given as node indices."""
    inside = set(members)
    s = GroupShape(cm, inside.__contains__)
    for v in sorted(inside, reverse=True):     # graph.nodes is topological: reverse adds consumers first
        s.add(v)
    return s.features()


def main_kind(n_members: int, features) -> str:
    for k in PRIORITY:
        if k in features:
            return k
    return "single" if n_members == 1 else "epilogue"


def classify(cm, groups) -> list[dict]:
    """Per group (node ids or indices): {"kind": main kind, "features": [...]}."""
    out = []
    for g in groups:
        idx = [cm.index[m] if isinstance(m, str) else m for m in g]
        f = features_of(cm, idx)
        out.append({"kind": main_kind(len(idx), f), "features": list(f)})
    return out


def why_blocked(kind: str, hw) -> str:
    c = config(hw, kind)
    extra = f" ({c.note})" if c.note else ""
    return f"fused, this would be a kernel of kind {kind} ({TITLES[kind]}); profile {hw.name} leaves that kind off{extra}"


# ---- what a kind costs (estimates; measured mode replaces them by timings) -------------------

BAND_ROWS = 14      # rows of the consumer's output per tile of an anchor chain (the CPU prototype's
HALO_ROWS = 2       # bands); a 3x3 consumer needs 2 more producer rows per band, recomputed: +14%


def _rows(node) -> int:
    s = node.shape
    return int(s[0] * s[2]) if isinstance(s, list) and len(s) in (4, 5) and not isinstance(s[0], list) else 1


def onchip_need(cm, staged: int, features, inside) -> float:
    """Bytes the group must keep on chip (all units together). An anchor chain computed band by
    band holds only a band of each intermediate (plus its halo); anything else holds all of it."""
    if "attention" in features and staged:
        nodes = cm.graph.nodes
        qk = min(v for v in inside if cm.pattern[v] == ANCHOR and nodes[v].op.startswith("matmul"))
        rows = 1
        for d in nodes[qk].shape[:-1]:
            rows *= int(d)
        return staged * min(1.0, ATTENTION_TILE_ROWS * cm.hw.units / max(rows, 1))
    if "anchor_chain" not in features or staged == 0:
        return staged
    rows = min((_rows(cm.graph.nodes[v]) for v in inside if cm.pattern[v] == ANCHOR), default=1)
    return staged * min(1.0, (BAND_ROWS + HALO_ROWS) * cm.hw.units / max(rows, 1))


def extra_flops(cm, shape: "GroupShape") -> float:
    """An anchor chain recomputes its producer anchors' halo rows in every band: HALO/BAND more of
    their work (the prototype measured 14% more expand work)."""
    if not shape.chain or shape.is_attention():     # an attention recomputes nothing
        return 0.0
    return sum(cm.flops[v] for v in shape.feeds if cm.pattern[v] == ANCHOR) * HALO_ROWS / BAND_ROWS


def efficiency(hw, features) -> float:
    """The lowest efficiency among the group's kinds (1.0 for FuseOps' own kinds)."""
    return min((config(hw, f).efficiency for f in features), default=1.0)
