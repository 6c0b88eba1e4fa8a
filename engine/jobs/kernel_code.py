"""The code of fused kernels, built in a child process for the app's Kernel code view (issue 30).

    codes = kernel_code(spec, shapes, block, sha, [req, ...], targets.HOST, cancel=event)   # [KernelCode | str]
    req = {"strategy": "dp", "groups": plan.groups, "group": 3, "kind": "anchor_chain"}

Each request is one group of one plan (engine/report/kernel_code.generate): FuseTIR, the schedule
rules, and one compile of that PrimFunc for the target (engine/kernels/build.compile_kernels; CUDA
source is built without a GPU). The child re-loads the model from the loader's cache (the app's
graph, read in a child, has no TVM module) and checks it is the graph the plans were made on
(`sha`); TVM's code generation holds Python's lock for a while and a TVM crash must not take the
app with it, so it runs there, never in the app. A request that fails gives its error's line in place of its KernelCode; the others are still built.
"""
from __future__ import annotations

from engine.util.child import run_in_child

TIME_LIMIT_S = 600


def kernel_code(spec: str, shapes, block, sha: str, requests: list[dict], target, progress=None,
                cancel=None) -> list:
    """[KernelCode, or a one-line error] per request (see the module docstring), built for the Target
    `target` (parsed at the edge: the app's Kernel code window). Raises
    child.ChildFailed when the child fails as a whole, child.Cancelled when `cancel` is set."""
    from engine.report.kernel_code import KernelCode

    out = run_in_child(_job, {"spec": spec, "shapes": shapes, "block": block, "sha": sha, "target": target,
                              "requests": [dict(r, groups=[list(g) for g in r["groups"]]) for r in requests]},
                       progress=progress, cancel=cancel, timeout_s=TIME_LIMIT_S, what="kernel code builder")
    return [KernelCode.from_dict(x) if isinstance(x, dict) else str(x) for x in out]


def _job(job: dict, say):
    from engine.model import loader
    from engine.report import kernel_code as K
    from engine.util.errors import FuseLensError

    say("loading the model", 0.05)
    graph = loader.load(job["spec"], job["shapes"], block=job.get("block"))
    if job.get("sha") and graph.sha256 != job["sha"]:
        raise FuseLensError("the model file changed since it was opened: open it again to see its kernels")
    out = []
    reqs = job["requests"]
    for k, r in enumerate(reqs):
        say(f"building {r.get('strategy', '')} kernel {r['group']}", 0.1 + 0.9 * k / max(1, len(reqs)))
        try:
            kc = K.generate(graph, r["groups"], int(r["group"]), job["target"], strategy=r.get("strategy", ""),
                            kind=r.get("kind"))
            out.append(kc.to_dict())
        except Exception as e:  # noqa: BLE001 - this request's error; the others are still built
            msg = [x for x in str(e).strip().splitlines() if x.strip()]
            out.append((msg[-1] if msg else type(e).__name__)[:400] if isinstance(e, FuseLensError)
                       else f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400])
    say("done", 1.0)
    return out
