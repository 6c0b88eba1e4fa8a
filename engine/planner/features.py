"""Features of a candidate kernel (a group of ops) for the learned cost model (learned.py).

One row per group, computed from the CostModel's per-node tables (no TVM): the roofline's own
terms, the group's fusion kind and op mix, its data movement, the extents of its main anchor and
how they divide the vector width and the core count, and its working set against the caches.
A row is a list of floats in the order of NAMES; FEATURE_VERSION changes whenever a feature does
(samples and trained models of another version are not used).

    X = rows(cm, segments)           # one row per segment (node indices)
"""
from __future__ import annotations

import math

from . import kinds

FEATURE_VERSION = 2

NAMES = (
    # the roofline itself (max of its compute and memory terms, plus CALL_US instead of the
    # profile's launch overhead: a kernel timed alone has none), then each term, log us
    "log_roofline_us", "log_compute_us", "log_memory_us",
    # work and data movement, log1p
    "log_flops", "log_halo_flops", "log_bytes_in", "log_bytes_out", "log_staged", "log_weights",
    "log_intensity",
    # op mix
    "ops", "mac_ops", "dense_convs", "depthwise_convs", "matmuls", "pools_reductions", "elementwise",
    "injective", "log_special_elems", "log_elementwise_elems",
    # fusion kinds beyond FuseOps
    "prologue", "anchor_chain", "horizontal", "reduction_stitch",
    # the main anchor (the member with the most FLOPs)
    "main_is_mac", "main_flops_per_out", "main_log_out_elems", "main_log_channels", "main_log_spatial",
    "main_channels_div_lanes", "main_channels_mod_lanes", "main_rows_div_cores", "main_log_rows_per_core",
    # working set against the caches (log2 ratios) and the largest staged intermediate
    "ws_vs_l1", "ws_vs_l2", "ws_vs_l3", "staged_vs_l2", "weights_vs_l2",
    # the machine (so one model can serve several)
    "lanes", "cores",
)


CALL_US = 0.25      # what even an empty kernel takes to call and return, timed alone (about 0.1-0.3 us)

# elementwise functions that cost many instructions per element (the roofline counts one FLOP)
SPECIAL = ("sigmoid", "exp", "tanh", "erf", "log", "sqrt", "rsqrt", "pow", "softmax", "gelu", "silu", "swish",
           "sin", "cos", "divide", "power")


def cache_sizes(hw) -> tuple[int, int, int]:
    """(L1 per core, L2 per core, L3 in all) bytes for a profile: this machine's own for `host`
    profiles, a board's from its compile section, else (32 KB, onchip_bytes, 0)."""
    if getattr(hw, "kind", "cpu") == "cpu" and str(getattr(hw, "name", "")).startswith("host"):
        from engine.devices.hardware import cpu_facts

        f = cpu_facts()
        return int(f["l1"]), int(f["l2"]), int(f["l3"])
    comp = _compile_facts(hw)
    if comp:
        return int(comp.get("l1", 32768)), int(comp.get("l2", hw.onchip_bytes)), int(comp.get("l3", 0))
    return 32768, int(hw.onchip_bytes), 0


def vector_lanes(hw) -> int:
    """float32 lanes of the profile's vectors (host: this CPU's; a board's: its compile section)."""
    if getattr(hw, "kind", "cpu") != "cpu":
        return 32                                   # a GPU warp
    if str(getattr(hw, "name", "")).startswith("host"):
        from engine.devices.hardware import cpu_facts

        return max(1, int(cpu_facts()["vector_bits"]) // 32)
    comp = _compile_facts(hw)
    return max(1, int(comp.get("vector_bits", 128)) // 32) if comp else 4


def _compile_facts(hw) -> dict:
    try:
        from engine.devices.hardware import profile_data

        return dict(profile_data().get(hw.name, {}).get("compile") or {})
    except Exception:  # noqa: BLE001 - an unknown profile has no compile section
        return {}


def _l1p(x: float) -> float:
    return math.log1p(max(0.0, float(x)))


def _log2r(a: float, b: float) -> float:
    return math.log2((a + 1.0) / (b + 1.0)) if b > 0 else 0.0


class Featurizer:
    """Rows for many segments of one graph on one profile (the per-graph facts computed once)."""

    def __init__(self, cm):
        self.cm = cm
        hw = cm.hw
        self.l1, self.l2, self.l3 = cache_sizes(hw)
        self.lanes = vector_lanes(hw)
        # the kernels the model learns from are timed on measure.THREADS threads: the roofline's
        # compute term and the parallel extents are taken per timing thread, so a profile of more
        # or fewer cores (another machine, or `taskset`) gives the same row for the same kernel
        from .kernel_timing import THREADS

        self.units = max(1, int(hw.units))
        self.cores = max(1, min(self.units, THREADS or self.units))
        nodes = cm.graph.nodes
        self.kind = []
        self.per_out = []
        for i, n in enumerate(nodes):
            out = max(1, cm.vbytes[i] // 4)
            fpo = cm.flops[i] / out
            self.per_out.append(fpo)
            if cm.glue[i]:
                k = "glue"
            elif n.pattern == kinds.ANCHOR and kinds.is_mac(n.op):
                k = "matmul" if not n.op.startswith("conv") else ("depthwise" if fpo <= 2 * 49 + 2 else "conv")
            elif n.pattern in (kinds.ANCHOR, kinds.REDUCE):
                k = "reduce"
            elif n.pattern in kinds.EWISE:
                k = "ewise"
            else:
                k = "injective"
            self.kind.append(k)
        self.special = [any(w in (n.op or "").lower() or w in (n.func or "").lower() for w in SPECIAL)
                        and not cm.glue[i] for i, n in enumerate(nodes)]

    def row(self, seg) -> list[float]:
        cm = self.cm
        idx = sorted(cm.index[m] if isinstance(m, str) else m for m in seg)
        e = cm.group(idx)
        base_flops = sum(cm.flops[i] for i in idx)
        weights = sum(cm.ext_bytes[i] for i in idx)
        counts = {"matmul": 0, "conv": 0, "depthwise": 0, "reduce": 0, "ewise": 0, "injective": 0, "glue": 0}
        for i in idx:
            counts[self.kind[i]] += 1
        compute = [i for i in idx if not cm.glue[i]] or idx
        main = max(compute, key=lambda i: (cm.flops[i], cm.vbytes[i]))
        node = cm.graph.nodes[main]
        shp = node.shape if isinstance(node.shape, list) and node.shape and not isinstance(node.shape[0], list) else []
        if len(shp) == 4:                          # NCHW
            ch, rows, spatial = shp[1], shp[0] * shp[2], shp[2] * shp[3]
        elif len(shp) >= 2:
            ch, rows, spatial = shp[-1], max(1, math.prod(shp[:-1])), max(1, math.prod(shp[:-1]))
        else:
            ch, rows, spatial = (shp[0] if shp else 1), 1, 1
        ch = max(1, int(ch))
        moved = e.bytes_in + e.bytes_out
        ws = moved + e.staged_bytes
        f = set(e.features)
        compute_us = e.compute_us * self.units / self.cores
        us = max(compute_us, e.memory_us) + CALL_US
        special = sum(cm.vbytes[i] / 4 for i in idx if self.special[i])
        ew = sum(cm.vbytes[i] / 4 for i in idx if self.kind[i] == "ewise")
        return [
            math.log(us), math.log(max(compute_us, 1e-4)), math.log(max(e.memory_us, 1e-4)),
            _l1p(e.flops), _l1p(e.flops - base_flops), _l1p(e.bytes_in), _l1p(e.bytes_out), _l1p(e.staged_bytes),
            _l1p(weights), math.log((e.flops + 1.0) / (moved + 1.0)),
            float(len(idx) - counts["glue"]), float(counts["matmul"] + counts["conv"] + counts["depthwise"]),
            float(counts["conv"]), float(counts["depthwise"]), float(counts["matmul"]), float(counts["reduce"]),
            float(counts["ewise"]), float(counts["injective"]), _l1p(special), _l1p(ew),
            # an attention (kinds.py) is a chain of anchors to this FEATURE_VERSION's model (it has no column)
            float("prologue" in f), float("anchor_chain" in f or "attention" in f), float("horizontal" in f),
            float("reduction_stitch" in f),
            float(self.kind[main] in ("matmul", "conv", "depthwise")), _l1p(self.per_out[main]),
            _l1p(cm.vbytes[main] / 4), _l1p(ch), _l1p(spatial),
            float(ch % self.lanes == 0), float(ch % self.lanes) / self.lanes, float(rows % self.cores == 0),
            _l1p(rows / self.cores),
            _log2r(ws, self.l1), _log2r(ws, self.l2 * self.cores), _log2r(ws, self.l3),
            _log2r(e.staged_bytes, self.l2), _log2r(weights, self.l2),
            float(self.lanes), float(self.cores),
        ]

    def roofline_us(self, seg) -> float:
        """The first feature, in us: the roofline per timing thread, plus CALL_US."""
        return math.exp(self.row(seg)[0])


def rows(cm, segments) -> list[list[float]]:
    fz = Featurizer(cm)
    return [fz.row(s) for s in segments]



