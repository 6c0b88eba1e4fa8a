"""The run settings, resolved once at a front end's edge: one `Setup`.

    target    where kernels are built for and timed (engine/devices/targets.Target)
    hardware  the cost-model profile plans are priced on (engine/devices/hardware.Hardware)
    cost      what dp, hybrid and optimal decide by, and what every plan is priced by (cost_source.COSTS)
    block     the channel layout models are loaded in (loader.load's block: None is NCHW)

The CLI resolves one from its arguments (cli.validate: cli/arguments.check_setup), the app from its selected device,
profile and cost (gui/workspace.py); each bad word is one line there (TargetError, FuseLensError),
before any work. The engine takes the Setup as it is and never parses a setting again: make_plan,
BenchRequest, the kernel report, the kernel code view and the learned model's lookup.

    s = resolve("cpu", hardware="t4", cost="learned")     # the edge: words -> a Setup
    make_plan(graph, "dp", s)
    make_plan(graph, "dp", Setup(hw))                      # in code: the roofline of `hw` on this CPU
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.devices.hardware import Hardware
from engine.devices.targets import HOST, Target
from engine.util.errors import PlanError

from .cost_source import COSTS


@dataclass(frozen=True)
class Setup:
    """Resolved run settings (see the module docstring). Constructed directly in code (the target
    defaults to this machine's CPU, the cost to the roofline, which depends on nothing measured,
    the layout to NCHW); from the words a user gives, by `resolve`."""
    hardware: Hardware
    target: Target = HOST
    cost: str = "roofline"
    block: int | None = None

    def __post_init__(self):
        if not isinstance(self.hardware, Hardware):
            raise TypeError(f"Setup.hardware is a Hardware (a profile resolved at the edge), not {self.hardware!r}")
        if not isinstance(self.target, Target):
            raise TypeError(f"Setup.target is a Target (a spec parsed at the edge), not {self.target!r}")
        check_cost(self.cost)
        if self.block is not None and (isinstance(self.block, bool) or not isinstance(self.block, int)
                                       or self.block < 1):
            raise TypeError(f"Setup.block is None (NCHW) or a positive number of channels, not {self.block!r}")

    @property
    def spec(self) -> str:
        """The target's spec ("cpu", "cuda:0", "rpc://...")."""
        return self.target.spec


def check_cost(cost: str) -> str:
    """`cost` when it is one of COSTS, else one PlanError line."""
    if cost not in COSTS:
        raise PlanError(f"unknown cost {cost!r}; choose from {', '.join(COSTS)}")
    return cost


def default_cost(target: Target) -> str:
    """What a benchmark decides by unless told: measured where kernels can be timed (this machine's
    CPU), the cost model elsewhere."""
    return "measured" if target.spec == "cpu" else "model"


def resolve(target: str = "cpu", hardware: str | None = None, cost: str | None = "model", layout: str = "auto",
            *, reach: bool = False) -> Setup:
    """The Setup the words name: `target` a spec (cpu, cuda[:N], rpc://...), `hardware` a profile
    name (None: the target's own: a board's, host for the CPU, t4 for a GPU), `cost` one of COSTS
    (None: default_cost of the target), `layout` auto | blocked | nchw (auto: the target's own,
    loader.block_for_target). `reach`: check the device is there. A bad word is one line
    (TargetError, FuseLensError, PlanError), raised before anything is measured."""
    from engine.devices import targets
    from engine.model import loader

    from . import profiles

    hw = profiles.get(hardware) if hardware else None   # a bad profile is reported before a bad target
    t = targets.parse(target)
    hw = hw or profiles.get(t.hardware)
    s = Setup(hw, t, check_cost(cost if cost is not None else default_cost(t)), loader.block_for_target(t, layout))
    if reach:   # last: the one check that may wait on the network
        targets.check(t)
    return s
