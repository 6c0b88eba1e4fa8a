"""The fusion cost model: a roofline per group plus launch overhead, on a hardware profile.

A group (one kernel) costs

    launch_us + max(flops / (peak_flops * compute_efficiency),
                    boundary_bytes / (bandwidth * bandwidth_efficiency))

where boundary_bytes are the bytes that cross the group's boundary: values read from other groups,
graph inputs and weights, and values written that are used outside the group (or are graph
outputs). Values produced and consumed inside the group are free: an elementwise, broadcast or
injective consumer recomputes them per element in registers. An anchor (OutEWiseFusable) or a
reduction that reads a value produced inside its own group needs that value staged on chip:
`staged_bytes / units` must fit `onchip_bytes` (shared memory per SM, L2 per core). That is the
hardware limit the planners check (an anchor chain computed tile by tile needs only a band of
rows on chip: kinds.onchip_need); it and the other fusion rules are in rules.py. Staging is not
free: staged bytes count at STAGE_COST (a tenth) of a DRAM byte, so between two equal plans the
one with epilogue fusion wins. Which kinds of
group beyond FuseOps' (prologue, anchor chain, horizontal, stitched reduction) a profile allows,
and the efficiency of each, are the profile's (kinds.py). Tuples and tuple-get-items move no data and launch nothing.

Everything is per node and additive, so planners can evaluate segments incrementally; the
calibration knobs are the profile's efficiencies and launch_us.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.devices.hardware import Hardware
from engine.model.opgraph import DTYPE_BYTES

from . import kinds, rules

GLUE = {"tuple", "tuple_get_item"}
STAGE_COST = 0.1


def value_bytes(node) -> int:
    shapes = node.shape if node.shape and isinstance(node.shape[0], list) else [node.shape]
    total = 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        total += n
    return total * DTYPE_BYTES.get(node.dtype, 4)


@dataclass
class GroupEstimate:
    us: float
    compute_us: float
    memory_us: float
    flops: int
    bytes_in: int
    bytes_out: int
    staged_bytes: int
    legal: bool = True
    why: str = ""            # the broken rule or limit, when not legal
    limit: str = ""          # "rule" | "hardware"
    features: tuple = ()     # fusion kinds beyond FuseOps this group uses (kinds.py)


class CostModel:
    def __init__(self, graph, hw: Hardware):
        self.graph, self.hw = graph, hw
        nodes = graph.nodes
        self.index = {n.id: i for i, n in enumerate(nodes)}
        self.ids = [n.id for n in nodes]
        self.flops = [n.flops for n in nodes]
        self.vbytes = [value_bytes(n) for n in nodes]
        self.inputs = [[self.index[i] for i in dict.fromkeys(n.inputs)] for n in nodes]
        self.consumers = [[self.index[c] for c in graph.consumers[n.id]] for n in nodes]
        outs = set(graph.outputs)
        self.is_output = [n.id in outs for n in nodes]
        self.glue = [n.kind in GLUE for n in nodes]
        self.pattern = [n.pattern for n in nodes]
        # bytes read from graph inputs and weights (everything read that is not another node's value)
        self.ext_bytes = []
        for n in nodes:
            from_nodes = sum(self.vbytes[self.index[i]] for i in n.inputs) if not self.glue[self.index[n.id]] else 0
            self.ext_bytes.append(max(0, n.bytes_read - from_nodes))
        self.tuple_valued = [n.kind == "tuple" or bool(n.shape and isinstance(n.shape[0], list)) for n in nodes]
        self.compute_rate = hw.peak_flops * hw.compute_efficiency / 1e6   # FLOP per us
        self.byte_rate = hw.bandwidth * hw.bandwidth_efficiency / 1e6     # bytes per us
        self.onchip_total = hw.onchip_bytes * hw.units
        self.node_us = [self._single_us(i) for i in range(len(nodes))]

    # -- one formula, used by every planner ---------------------------------------------------
    def time_us(self, flops: float, boundary: float, has_kernel: bool, eff: float = 1.0) -> tuple[float, float, float]:
        c, m = flops / (self.compute_rate * eff), boundary / (self.byte_rate * eff)
        return (self.hw.launch_us if has_kernel else 0.0) + max(c, m), c, m

    def kernel_us(self, flops: float, moved: float, staged: float, fits: bool, has_kernel: bool, shape,
                  features) -> tuple[float, float, float, float]:
        """A group's roofline from its totals: `moved` boundary bytes, `staged` bytes kept on chip
        (`fits`: within the limit, else they spill to DRAM), its kinds (`shape`, `features`).
        Returns (us, compute_us, memory_us, flops with an anchor chain's recomputed halo). The DP
        asks this for every segment it evaluates, with totals it keeps incrementally."""
        flops += kinds.extra_flops(self, shape)
        moved += STAGE_COST * staged if fits else 2 * staged
        us, c, m = self.time_us(flops, moved, has_kernel, kinds.efficiency(self.hw, features))
        return us, c, m, flops

    def _single_us(self, i: int) -> float:
        """group([i]).us, without the general bookkeeping (the planners ask for every node)."""
        out = self.vbytes[i] if (self.is_output[i] or self.consumers[i]) and not self.glue[i] else 0
        boundary = self.ext_bytes[i] + sum(self.vbytes[p] for p in self.inputs[i]) + out
        return self.time_us(self.flops[i], boundary, not self.glue[i])[0]

    def group(self, members) -> GroupEstimate:
        """Estimate one group given as node indices (or ids)."""
        idx = [self.index[m] if isinstance(m, str) else m for m in members]
        inside = set(idx)
        shape = kinds.GroupShape(self, inside.__contains__)
        flops = bytes_in = bytes_out = staged = 0
        read: set[int] = set()
        legal, why, limit = True, "", ""
        for i in sorted(idx, reverse=True):
            shape.add(i)
            flops += self.flops[i]
            bytes_in += self.ext_bytes[i]
            for p in self.inputs[i]:
                if p not in inside:
                    read.add(p)
                elif self.pattern[i] in rules.STAGING:
                    staged += self.vbytes[p]
            if rules.escapes(self, i, inside.__contains__):
                bytes_out += 0 if self.glue[i] else self.vbytes[i]
            if len(idx) > 1 and legal:
                bad = rules.member_rule(self, i, inside.__contains__)
                if bad:
                    legal, why, limit = False, bad, "rule"
        bytes_in += sum(self.vbytes[p] for p in read)
        features = shape.features()
        if legal and len(idx) > 1:
            blocked, _, reason = shape.blocked(self.hw)
            if blocked:
                legal, why, limit = False, reason, "rule"
        too_big = rules.onchip_limit(self, kinds.onchip_need(self, staged, features, inside))
        if legal and too_big:
            legal, why, limit = False, too_big, "hardware"
        has_kernel = not all(self.glue[i] for i in idx)
        us, c, m, flops = self.kernel_us(flops, bytes_in + bytes_out, staged, not too_big, has_kernel, shape, features)
        return GroupEstimate(us, c, m, int(flops), bytes_in, bytes_out, staged, legal, why, limit, features)

    def plan_cost(self, groups) -> tuple[float, list[float]]:
        per = [self.group(g).us for g in groups]
        return sum(per), per
