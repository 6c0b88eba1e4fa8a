"""Plan with TVM's own FuseOps in a child process, for a graph that was read in one
(engine/jobs/open_model.py): it has no TVM module, and re-importing a large model into Relax holds
Python's global lock for seconds, so the child re-imports it and sends back the plan.
"""
from __future__ import annotations

from engine.util.child import run_in_child

TIME_LIMIT_S = 1800


def plan_tvm(spec: str, shapes: dict, hw, cancel=None, block: int | None = None):
    """The "tvm" strategy's Plan for the model `spec` with input `shapes`, in the channel layout of
    `block` (the graph's: graph.block), on hardware profile `hw`. Raises child.ChildFailed when
    planning fails, child.Cancelled when `cancel` is set."""
    return run_in_child(_plan_job, {"spec": spec, "shapes": shapes, "hw": hw.to_dict(), "block": block},
                        cancel=cancel, timeout_s=TIME_LIMIT_S, what="TVM planner")


def _plan_job(job: dict, say):
    from engine.devices import hardware
    from engine.model import loader

    from ..planner import make_plan
    from ..planner.setup import Setup

    graph = loader.load(job["spec"], job["shapes"], block=job.get("block"))
    return make_plan(graph, "tvm", Setup(hardware.from_dict(job["hw"]), block=job.get("block")))
