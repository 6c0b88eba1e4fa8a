"""The strategies: one table that make_plan, the CLI, the app and the tests read.

Every strategy is a module of this package with `plan(graph, hw, **options) -> PlanResult`
(plan.py). A new strategy is a module plus one row here: its name, the module, a one-line
description, whether it decides by cost (then `--cost measured` hands it measured kernel times
as `costs=`) and the options its `plan` takes. Modules are imported when a strategy is first
used, so reading the table (argument parsing, the app's menus) imports no planner and no TVM.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from engine.util.errors import PlanError


@dataclass(frozen=True)
class Strategy:
    name: str
    module: str                 # the module of this package that holds its plan()
    about: str                  # one line, for help texts
    costed: bool = False        # decides by cost: takes costs= (measured kernel times)
    options: tuple[str, ...] = ()
    benched: bool = True        # in `main.py bench`'s default set (optimal is a bound, not a contender)

    @property
    def plan(self):
        """The strategy's plan(graph, hw, **options) -> PlanResult."""
        return importlib.import_module(f"{__package__}.{self.module}").plan


TABLE: dict[str, Strategy] = {s.name: s for s in (
    Strategy("none", "none", "the baseline: every operator is its own kernel"),
    Strategy("tvm", "tvm_fuse", "TVM Relax FuseOps itself, its groups read back", options=("max_depth",)),
    Strategy("greedy", "greedy", "FuseOps' rules re-implemented on the graph, with reasons", options=("max_depth",)),
    Strategy("dp", "dp", "cost-model DP over ranges of a topological order", costed=True,
             options=("max_len", "cutoff", "costs")),
    Strategy("hybrid", "hybrid", "the DP on the critical path, greedy elsewhere", costed=True,
             options=("fraction", "max_len", "cutoff", "costs")),
    Strategy("optimal", "optimal", "exact 0/1 program over the DP's candidate kernels, to bound it", costed=True,
             options=("max_len", "costs", "time_limit"), benched=False),
)}

STRATEGIES = tuple(TABLE)
COSTED = tuple(s.name for s in TABLE.values() if s.costed)   # the strategies that decide by cost
BENCHED = tuple(s.name for s in TABLE.values() if s.benched)


def get(name: str) -> Strategy:
    try:
        return TABLE[name]
    except KeyError:
        raise PlanError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}") from None
