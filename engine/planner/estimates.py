"""Kernel-time estimates for one graph from the learned model, with measured figures laid over them:
the `costs` callable the DP (and hybrid, optimal) decide with, and the source of every figure.

    est = Estimates(graph, hw, model)             # predicts every candidate kernel in one batch
    est(segment) -> us                            # what segment_dp asks (node indices)
    est.group_us(group), est.source(group)        # any group: its figure and "measured" | "learned"
    est.set_measured({key: us})                   # figures timed on the machine replace predictions

Candidates are the segments the DP evaluates (measure.candidates over both of dp.plan's orders,
within the roofline's 2x cut-off) plus FuseOps' groups, all predicted in one batch; a segment the
DP asks about later that was never a candidate gets the sum of its ops' figures (no credit for an
unpredicted fusion, as measured mode does).

The safe floor: a group that is not one of greedy's groups (a kind beyond FuseOps, or FuseOps'
kinds cut differently) and has not been measured is priced at its prediction times
exp(SAFE_Z x uncertainty), so the DP leaves greedy's grouping only where the predicted gain is
larger than the model's error. (Pricing up only the new kinds was not enough: on YOLOv4-tiny, with
its family held out of training, the DP then fused splits and concatenations into convolutions,
predicted and timed alone as faster, and ran 0.86x of greedy's speed end to end.)
"""
from __future__ import annotations

import math

import numpy as np

from . import features, kinds
from .cost import CostModel

SAFE_Z = 1.0


def segment_key(cm, seg) -> str:
    from .kernel_timing import segment_key as key

    return key(cm.ids[v] if isinstance(v, int) else v for v in seg)


class Estimates:
    def __init__(self, graph, hw, model, cm=None, candidates=None, safe_z: float = SAFE_Z):
        from . import greedy
        from .kernel_timing import CUTOFF, MAX_LEN, candidates as dp_candidates, greedy_groups
        from .order import chain_order, group_order

        self.graph, self.hw, self.model, self.safe_z = graph, hw, model, safe_z
        self.cm = cm or CostModel(graph, hw)
        self.fz = features.Featurizer(self.cm)
        self.greedy = {tuple(g) for g in greedy_groups(graph, self.cm)}
        self.orders = {"chain": chain_order(graph),
                       "greedy groups": group_order(graph, greedy.partition(graph)[0])}
        if candidates is None:
            seen: dict[tuple, None] = {}
            for order in self.orders.values():
                for s in dp_candidates(self.cm, order, MAX_LEN, CUTOFF):
                    seen.setdefault(tuple(s), None)
            for g in self.greedy:
                seen.setdefault(g, None)
            candidates = [list(s) for s in seen]
        self.mean: dict[str, float] = {}
        self.sigma: dict[str, float] = {}
        self.spread: dict[str, float] = {}
        self.new_kind: dict[str, bool] = {}     # a kind beyond FuseOps, not one of greedy's groups
        self.departs: dict[str, bool] = {}      # not one of greedy's groups (the safe floor prices it up)
        self.segs: dict[str, list[int]] = {}
        self.measured: dict[str, float] = {}
        self.stats = {"candidates": 0}
        self._predict(candidates)
        self.stats["candidates"] = len(self.mean)
        self.hits = self.misses = 0

    # -- predictions --
    def _predict(self, segs) -> None:
        segs = [sorted(s) for s in segs if segment_key(self.cm, s) not in self.mean]
        if not segs:
            return
        X = np.array([self.fz.row(s) for s in segs], dtype=float)
        us, sig = self.model.predict(X)
        res = self.model.residual
        cols = [features.NAMES.index(f) for f in kinds.BEYOND if f in features.NAMES]   # attention: anchor_chain's
        for s, u, g, x in zip(segs, us, sig, X):
            k = segment_key(self.cm, s)
            self.mean[k], self.sigma[k] = float(u), float(g)
            self.spread[k] = math.sqrt(max(0.0, float(g) ** 2 - res ** 2))   # the ensemble's disagreement
            self.segs[k] = s
            self.departs[k] = tuple(s) not in self.greedy
            self.new_kind[k] = bool(any(x[c] > 0 for c in cols)) and self.departs[k]

    def set_measured(self, table: dict[str, float]) -> None:
        """Measured us by segment key (from measure.MeasuredCosts.table); they win over predictions."""
        self.measured.update({k: float(v) for k, v in table.items() if v is not None and v > 0})

    # -- what the DP asks --
    def value(self, key: str) -> float | None:
        """The DP's figure for a candidate key: measured, else the prediction (pessimistic for an
        unmeasured new kind: the safe floor)."""
        if key in self.measured:
            return self.measured[key]
        m = self.mean.get(key)
        if m is None:
            return None
        return m * math.exp(self.safe_z * self.sigma[key]) if self.departs[key] else m

    def __call__(self, segment):
        key = segment_key(self.cm, segment)
        v = self.value(key)
        if v is not None:
            self.hits += 1
            return v
        self.misses += 1
        if len(segment) > 1:
            parts = [self.value(segment_key(self.cm, [x])) for x in segment]
            if all(p is not None for p in parts):
                return sum(parts)
        return None

    # -- any group (plan totals, labels) --
    def group_us(self, group) -> float | None:
        key = segment_key(self.cm, group)
        if key in self.measured:
            return self.measured[key]
        if key not in self.mean:
            idx = [self.cm.index[m] if isinstance(m, str) else m for m in group]
            if all(self.cm.glue[i] for i in idx):
                return 0.0
            self._predict([idx])
        return self.mean.get(key)

    def plan_us(self, groups) -> tuple[float, list[float]]:
        """(total, per group) of the best figures: measured where there are, else learned."""
        missing = [[self.cm.index[m] if isinstance(m, str) else m for m in g] for g in groups
                   if segment_key(self.cm, g) not in self.mean and segment_key(self.cm, g) not in self.measured]
        self._predict([g for g in missing if not all(self.cm.glue[i] for i in g)])
        per = [self.group_us(g) or 0.0 for g in groups]
        return sum(per), per

    def source(self, group) -> str:
        return "measured" if segment_key(self.cm, group) in self.measured else "learned"

    def uncertainty(self, group) -> float | None:
        key = segment_key(self.cm, group)
        return 0.0 if key in self.measured else self.sigma.get(key)
