"""Check that two checkouts of FuseLens schedule every kernel identically (a refactoring of
engine/schedules must not change the generated code, nor SCHEDULE_VERSION).

    python scripts/check_schedules_identical.py --before /tmp/sched-before [--after .] [--quick]

`--before` / `--after` are repository roots (e.g. a `git worktree add /tmp/sched-before <commit>`).
Each root is imported in a subprocess of its own (`--dump`), which schedules:
- the greedy and dp plans of zoo:mobilenetv2@64, resnet50@64, efficientnet_b0@64, yolov4_tiny@128,
  vgg16@32 for the CPU, and mobilenetv2@64's dp plan (T4 profile) for cuda:sm_75;
- mobilenetv2@64's greedy groups merged into anchor chains (the Chain rule's kernels, as in
  tests/{integration,unit}/test_chain_rules.py) and efficientnet_b0@64's dp plan with stitched reductions and
  horizontal siblings on (the Stages rule's kernels, as in tests/{integration,unit}/test_stage_rules.py);
- the small Relax cases of tests/{integration,unit}/test_schedules.py (CASES);
- the groups, kernel count, estimate and kinds of the none/greedy/dp/hybrid plans of the CPU models.
Every scheduled PrimFunc's TVMScript, the rule that took it and the rule errors are written to a
JSON file per root; the two are then compared exactly. Exit status 0 when identical, 1 otherwise
(the first differences are printed). `--quick`: only mobilenetv2 (cpu and cuda) and the cases.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CPU_MODELS = ["mobilenetv2@64", "resnet50@64", "efficientnet_b0@64", "yolov4_tiny@128", "vgg16@32"]
CHAIN_BLOCKS = [(3, 3), (6, 3), (0, 3)]  # (first greedy group, number merged) of mobilenetv2@64


def _record(out: dict, key: str, mod, target: str) -> None:
    from tvm import tirx

    from engine import schedules

    smod, report = schedules.schedule(mod, target)
    funcs = {}
    for gv, f in smod.functions_items():
        if isinstance(f, tirx.PrimFunc):
            funcs[gv.name_hint] = {"rule": report.rule_of(gv.name_hint), "script": f.script()}
    out[key] = {"funcs": funcs, "errors": dict(sorted(report.errors.items())),
                "unscheduled": sorted(report.unscheduled), "fast_exp": sorted(report.fast_exp)}
    print(f"  {key}: {report.summary().split(' in ')[0]}", file=sys.stderr, flush=True)


def dump(root: str, path: str, quick: bool) -> None:
    sys.path.insert(0, root)
    os.chdir(root)
    import tvm
    from dataclasses import replace

    import engine
    try:
        from engine.devices import hardware
        from engine.model import loader
    except ImportError:  # a checkout from before engine/ was grouped by stage packages
        from engine import hardware, loader
    from engine import schedules
    from engine.planner import make_plan as _make_plan
    from engine.planner.apply import apply

    try:
        from engine.planner.setup import Setup

        def make_plan(g, strategy, hw):   # the roofline of `hw` on this CPU
            return _make_plan(g, strategy, Setup(hw))
    except ImportError:  # a checkout from before the run settings were one Setup
        make_plan = _make_plan

    assert Path(engine.__file__).resolve().is_relative_to(Path(root).resolve()), engine.__file__
    out: dict = {"SCHEDULE_VERSION": schedules.SCHEDULE_VERSION}
    models = CPU_MODELS[:1] if quick else CPU_MODELS
    host = hardware.get("host")
    for m in models:
        g = loader.load(f"zoo:{m}")
        for s in ("greedy", "dp", "hybrid", "none"):
            p = make_plan(g, s, host)
            out.setdefault("plans", {})[f"cpu {m} {s}"] = {"groups": [list(x) for x in p.groups], "kernels": p.kernel_count,
                                                          "estimated_us": p.estimated_us, "kinds": p.group_kinds}
            if s in ("greedy", "dp"):
                _record(out, f"cpu {m} {s}", apply(g, p.groups), "cpu")
    g = loader.load("zoo:mobilenetv2@64")
    _record(out, "cuda:sm_75 mobilenetv2@64 dp", apply(g, make_plan(g, "dp", hardware.get("t4")).groups), "cuda:sm_75")
    groups = [list(gr) for gr in make_plan(g, "greedy", host).groups]
    for first, count in CHAIN_BLOCKS:
        merged = groups[:first] + [sum(groups[first:first + count], [])] + groups[first + count:]
        _record(out, f"cpu mobilenetv2@64 chain {first}+{count}", apply(g, merged), "cpu")
    if not quick:
        on = {"enabled": True}
        stitch = replace(host, kinds={"reduction_stitch": on, "horizontal": on})
        g = loader.load("zoo:efficientnet_b0@64")
        _record(out, "cpu efficientnet_b0@64 dp stitched", apply(g, make_plan(g, "dp", stitch).groups), "cpu")
    from tests.support.schedules import CASES

    for name, (make, _rule) in CASES.items():
        mod = tvm.transform.Sequential([tvm.relax.transform.LegalizeOps(), tvm.relax.transform.AnnotateTIROpPattern(),
                                        tvm.relax.transform.FoldConstant(), tvm.relax.transform.FuseOps(),
                                        tvm.relax.transform.FuseTIR()])(make())
        _record(out, f"cpu case {name}", mod, "cpu")
    Path(path).write_text(json.dumps(out, indent=1, sort_keys=True))


def compare(a: dict, b: dict, limit: int = 5) -> list[str]:
    diffs = []
    if a["SCHEDULE_VERSION"] != b["SCHEDULE_VERSION"]:
        diffs.append(f"SCHEDULE_VERSION {a['SCHEDULE_VERSION']} -> {b['SCHEDULE_VERSION']}")
    pa, pb = a.get("plans", {}), b.get("plans", {})
    diffs += [f"plan {k}: differs" for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k)]
    for key in sorted(set(a) | set(b)):
        if key in ("SCHEDULE_VERSION", "plans"):
            continue
        if key not in a or key not in b:
            diffs.append(f"{key}: only in {'before' if key in a else 'after'}")
            continue
        ka, kb = a[key], b[key]
        for field in ("errors", "unscheduled", "fast_exp"):
            if ka[field] != kb[field]:
                diffs.append(f"{key}: {field} {ka[field]} -> {kb[field]}")
        if set(ka["funcs"]) != set(kb["funcs"]):
            diffs.append(f"{key}: functions differ: {sorted(set(ka['funcs']) ^ set(kb['funcs']))}")
        for fn in sorted(set(ka["funcs"]) & set(kb["funcs"])):
            fa, fb = ka["funcs"][fn], kb["funcs"][fn]
            if fa["rule"] != fb["rule"]:
                diffs.append(f"{key} {fn}: rule {fa['rule']} -> {fb['rule']}")
            if fa["script"] != fb["script"]:
                d = "\n".join(list(difflib.unified_diff(fa["script"].splitlines(), fb["script"].splitlines(),
                                                        "before", "after", lineterm=""))[:40])
                diffs.append(f"{key} {fn}: TIR differs\n{d}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="repository root of the reference checkout")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--keep", help="folder to keep the two JSON dumps in")
    a = ap.parse_args()
    if a.dump:
        dump(a.root, a.dump, a.quick)
        return 0
    if not a.before:
        ap.error("--before is required")
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="sched-identical-"))
    tmp.mkdir(parents=True, exist_ok=True)
    dumps = {}
    for label, root in (("before", a.before), ("after", a.after)):
        path = tmp / f"{label}.json"
        if not (a.keep and path.exists() and label == "before"):
            print(f"{label}: {root}", file=sys.stderr, flush=True)
            env = {**os.environ, "PYTHONPATH": str(Path(root).resolve())}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--dump", str(path), "--root", str(Path(root).resolve())]
            subprocess.run(cmd + (["--quick"] if a.quick else []), check=True, env=env)
        dumps[label] = json.loads(path.read_text())
    diffs = compare(dumps["before"], dumps["after"])
    n = sum(len(v["funcs"]) for k, v in dumps["after"].items() if k not in ("SCHEDULE_VERSION", "plans"))
    if diffs:
        print(f"{len(diffs)} differences over {n} scheduled PrimFuncs:")
        for d in diffs[:20]:
            print(d)
        return 1
    print(f"identical: {len(dumps['after'].get('plans', {}))} plans, {n} scheduled PrimFuncs in {len(dumps['after']) - 2} modules, "
          f"SCHEDULE_VERSION {dumps['after']['SCHEDULE_VERSION']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
