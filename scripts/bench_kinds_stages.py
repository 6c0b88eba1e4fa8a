"""Micro-benchmark of the `Stages` CPU rule (engine/schedules/cpu/stages.py): a stitched or
horizontal kernel against the same ops as the greedy (FuseOps-like) plan's kernels called back to
back.

    python scripts/bench_kinds_stages.py [--resolutions 224,64] [--se 0,5,15] [--variants A,B,C]
                                         [--rounds 15] [--sample-ms 20] [--no-transformer]
                                         [--tiny-work N] [--json out.json]

Each case is a small Relax module holding only the ops of one region of a real model (the region's
bindings taken from the model's prepared module; the weights are the model's, the activations
random), applied twice: with the greedy plan's groups of those ops, and with all of them in one
group (one PrimFunc, scheduled by cpu.Stages). Both are scheduled with engine/schedules' default
CPU rules and built for this host.

Cases:
- EfficientNet-B0 squeeze-and-excitation block number k (--se), at each resolution:
    A  mean -> 1x1 conv -> swish                      (the host DP plan's reduction_stitch group)
    B  A -> 1x1 conv -> sigmoid -> scale of the big tensor       (the whole SE path)
    C  B -> projection 1x1 conv + batch-norm                      (SE + the conv that reads it)
- the test transformer (tests/data, sequence 128) with its packed in-projection split into Q, K and
  V matmuls reading one input (`qkv_transformer`): the host DP plan's horizontal group (3 matmuls +
  concat/reshape/transpose) and its layer-norm -> mean -> dense reduction_stitch group.

Timing: TVM's VirtualMachine time_evaluator("main"), each sample the mean of `number` calls
(number chosen so that a sample lasts about --sample-ms); the two builds of a case are sampled
round-robin (one sample each per round, the order alternating), --rounds rounds. The table shows
the medians, the ratio greedy / stitched of the medians (> 1: the stitched kernel is faster) and
the min-max of the per-round ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support.kind_regions import qkv_transformer, se_regions  # noqa: E402


# ---- a module holding one region of a model -------------------------------------------------------

def region_graph(graph, members: list[str], name: str = "region"):
    """An OpGraph (with its Relax module) holding only the bindings `members` of `graph`: main's
    parameters are the values the region reads from outside (constants included, as parameters),
    its result the values used outside the region. Returns (graph, {old node id: new id},
    [the constant's numpy array or None per parameter])."""
    import tvm
    from tvm import relax

    from engine.model import opgraph

    mod = graph.mod
    main = mod["main"]
    df = next(b for b in main.body.blocks if isinstance(b, relax.DataflowBlock))
    bindings = list(df.bindings)
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    members = sorted(members, key=pos.__getitem__)
    inside = set(members)
    escaping = set(m for m in members if m in graph.outputs or
                   any(c not in inside for c in graph.consumers[m]))
    params, consts, remap, local = [], [], {}, {}

    def param_for(e):
        if e not in remap:
            p = relax.Var(f"p{len(params)}", e.ty)
            params.append(p)
            consts.append(e.value.numpy() if isinstance(e, tvm.ir.GenericConst) else None)
            remap[e] = p
        return remap[e]

    def sub(e):
        if isinstance(e, relax.Tuple):
            return relax.Tuple([sub(f) for f in e.fields])
        if isinstance(e, relax.Var):
            return local[e] if e in local else param_for(e)
        if isinstance(e, tvm.ir.GenericConst):
            return param_for(e)
        return e

    new_binds, outs, funcs = [], [], {}
    for m in members:
        bd = bindings[pos[m]]
        v = bd.value
        if not (isinstance(v, relax.Call) and getattr(v.op, "name", "") == "relax.call_tir"):
            raise ValueError(f"region member {m} is not a call_tir")
        funcs[v.args[0]] = mod[v.args[0]]
        nv = relax.Call(v.op, [v.args[0], sub(v.args[1]), *v.args[2:]], v.attrs, v.ty_args)
        var = relax.Var(bd.var.name, bd.var.ty) if m in escaping else relax.DataflowVar(bd.var.name, bd.var.ty)
        local[bd.var] = var
        new_binds.append(relax.VarBinding(var, nv))
        if m in escaping:
            outs.append(var)
    body = relax.SeqExpr([relax.DataflowBlock(new_binds)], outs[0] if len(outs) == 1 else relax.Tuple(outs))
    ret = outs[0].ty if len(outs) == 1 else relax.TupleType([o.ty for o in outs])
    fn = relax.Function(params, body, ret, True, tvm.ir.DictAttrs({"global_symbol": "main"}))
    sub_mod = tvm.IRModule({tvm.ir.GlobalVar("main"): fn, **funcs})
    sub_mod = relax.transform.Normalize()(sub_mod)
    shapes = {p.name: [int(d) for d in p.ty.shape.values] for p in params}
    g = opgraph.from_module(sub_mod, name, "", shapes)
    ids = {m: f"n{k}" for k, m in enumerate(members)}
    return g, ids, consts


# ---- timing -----------------------------------------------------------------------------------------

def build_case(graph, groups, rules=None):
    """Schedule (default CPU rules, or `rules`) and build one grouping of a region graph.
    Returns (VirtualMachine, ScheduleReport)."""
    import tvm
    from tvm import relax

    from engine.kernels import build
    from engine import schedules
    from engine.planner.apply import apply

    mod = apply(graph, groups)
    smod, report = schedules.schedule(mod, "cpu", rules=rules)
    exe = build.build(smod, "cpu")
    return relax.VirtualMachine(exe, tvm.cpu()), report


def time_round_robin(vms: dict, args, rounds: int, sample_ms: float) -> dict[str, list[float]]:
    """Per VM, `rounds` samples in microseconds (each the mean of `number` calls)."""
    import tvm

    dev = tvm.cpu()
    timers = {}
    for k, vm in vms.items():
        vm["main"](*args)
        t = time.perf_counter()
        for _ in range(5):
            vm["main"](*args)
        est = (time.perf_counter() - t) / 5
        number = max(1, min(20000, int(sample_ms / 1e3 / max(est, 1e-7))))
        timers[k] = vm.time_evaluator("main", dev, number=number, repeat=1)
    samples = {k: [] for k in vms}
    keys = list(vms)
    for r in range(rounds):
        for k in (keys if r % 2 == 0 else keys[::-1]):
            samples[k].append(timers[k](*args).mean * 1e6)
    return samples


def stage_code_rules(tiny_work=None):
    """The default CPU rules with `Stages` also taking functions of ONE reduction (greedy's mean,
    its 1x1 conv on a [1,C,1,1] vector, ...): the greedy kernels then get the same per-stage code
    as the stitched kernel (vectorised reductions, serial tiny stages, a broadcast value computed
    once), so that greedy+ vs stitched shows what the stitching itself gains."""
    from engine import schedules
    from engine.schedules.cpu import stages as stage_rules

    class StagesAnyReduction(stage_rules.Stages):
        name = "bench.StagesOneReduction"

        def accepts(self, blocks):
            return any(b.is_reduction for b in blocks)

    kw = {} if tiny_work is None else {"tiny_work": tiny_work}
    out = []
    for r in schedules.cpu_default_rules():
        if isinstance(r, stage_rules.Stages):
            out += [stage_rules.Stages(**kw), StagesAnyReduction(**kw)]
        else:
            out.append(r)
    return out


def run_case(label, graph, members, greedy_groups, rounds, sample_ms, rules=None, plus_rules=None, check=True):
    """Greedy groups of `members` (default rules, and `plus_rules` when given) vs one group of
    them; returns a result dict."""
    import numpy as np
    import tvm

    sub, ids, consts = region_graph(graph, members, label)
    greedy = [[ids[m] for m in grp] for grp in greedy_groups]
    stitched = [[ids[m] for m in members]]
    rng = np.random.default_rng(0)
    arrays = [c if c is not None else rng.standard_normal(shape).astype("float32")
              for c, shape in zip(consts, sub.input_shapes.values())]
    args = [tvm.runtime.tensor(a, tvm.cpu()) for a in arrays]
    t0 = time.perf_counter()
    vms, reps = {}, {}
    vms["greedy"], reps["greedy"] = build_case(sub, greedy, rules)
    if plus_rules is not None:
        vms["greedy+"], reps["greedy+"] = build_case(sub, greedy, plus_rules)
    vms["stitched"], reps["stitched"] = build_case(sub, stitched, rules)
    build_s = time.perf_counter() - t0
    err = None
    if check:
        from engine.kernels import build as eb

        ref = eb.flatten(vms["greedy"]["main"](*args))
        err = 0.0
        for k in vms:
            out = eb.flatten(vms[k]["main"](*args))
            err = max(err, max(float(np.abs(a - b).max() / (np.abs(b).max() + 1e-12)) for a, b in zip(out, ref)))
    samples = time_round_robin(vms, args, rounds, sample_ms)
    res = {"case": label, "greedy_kernels": len(greedy), "rel_err": err, "build_s": build_s,
           "stitched_rule": ", ".join(sorted(reps["stitched"].handled)),
           "greedy_rules": ", ".join(sorted(reps["greedy"].handled)), "samples": samples}
    for k in vms:
        res[f"{k}_us"] = statistics.median(samples[k])
    for k in [x for x in vms if x != "stitched"]:
        ratios = [g / s for g, s in zip(samples[k], samples["stitched"])]
        res[f"{k}_ratio"] = res[f"{k}_us"] / res["stitched_us"]
        res[f"{k}_ratio_spread"] = (min(ratios), max(ratios))
    return res


def print_header(plus: bool):
    h = f"  {'case':<30}{'k':>2}{'greedy us':>10}"
    if plus:
        h += f"{'greedy+':>9}"
    h += f"{'stitch us':>10}{'greedy/stitch (min-max)':>26}"
    if plus:
        h += f"{'greedy+/stitch (min-max)':>27}"
    print(h + f"{'err':>7}")


def print_row(r):
    plus = "greedy+_us" in r
    line = f"  {r['case'][:30]:<30}{r['greedy_kernels']:>2}{r['greedy_us']:>10.1f}"
    if plus:
        line += f"{r['greedy+_us']:>9.1f}"
    line += f"{r['stitched_us']:>10.1f}"
    for k in ("greedy", "greedy+") if plus else ("greedy",):
        lo, hi = r[f"{k}_ratio_spread"]
        cell = f"{r[f'{k}_ratio']:.2f}x ({lo:.2f}-{hi:.2f})"
        line += f"{cell:>26}" if k == "greedy" else f"{cell:>27}"
    line += f"{('%.0e' % r['rel_err']) if r['rel_err'] is not None else '-':>7}"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resolutions", default="224,64")
    ap.add_argument("--se", default="0,5,15", help="SE blocks (0-based) of EfficientNet-B0 (16 in all)")
    ap.add_argument("--variants", default="A,B,C")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--sample-ms", type=float, default=20.0)
    ap.add_argument("--no-transformer", action="store_true")
    ap.add_argument("--tiny-work", type=int, default=None, help="Stages(tiny_work=N) instead of the default")
    ap.add_argument("--no-plus", action="store_true", help="skip the greedy+ column (greedy kernels with the "
                    "Stages rule's per-stage code)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import Setup, make_plan
    from engine import schedules
    from engine.devices import tvm_target as target
    from engine.schedules.cpu import stages as stage_rules

    rules = None
    if a.tiny_work is not None:
        rules = [r if not isinstance(r, stage_rules.Stages) else stage_rules.Stages(tiny_work=a.tiny_work)
                 for r in schedules.cpu_default_rules()]
    plus = None if a.no_plus else stage_code_rules(a.tiny_work)
    hw = hardware.get("host")
    f = target.host_facts()
    print(f"host: {f.mcpu}, {f.num_cores} cores, {f.vector_bits}-bit vectors; TVM threads "
          f"{os.environ.get('TVM_NUM_THREADS', 'default')}; {a.rounds} rounds round-robin, ~{a.sample_ms:.0f} ms "
          f"per sample; Stages tiny_work {a.tiny_work or stage_rules.TINY_WORK}")
    print()
    print_header(plus is not None)
    results = []
    for res in [int(x) for x in a.resolutions.split(",") if x]:
        g = loader.load(f"zoo:efficientnet_b0@{res}")
        greedy = make_plan(g, "greedy", Setup(hw)).groups
        for k in [int(x) for x in a.se.split(",") if x]:
            regions = se_regions(g, greedy, k)
            mean = next(m for m in regions["A"][0] if g.by_id[m].op == "mean")
            big = g.by_id[g.by_id[mean].inputs[0]].shape
            for v in a.variants.split(","):
                groups = regions[v]
                label = f"effnet@{res} SE{k} {v} {big[1]}x{big[2]}x{big[3]}"
                r = run_case(label, g, [m for grp in groups for m in grp], groups, a.rounds, a.sample_ms, rules, plus)
                print_row(r)
                results.append(r)
    if not a.no_transformer:
        with tempfile.TemporaryDirectory() as d:
            path = qkv_transformer(d, 128)
            g = loader.load(path)
            greedy = make_plan(g, "greedy", Setup(hw)).groups
            dp = make_plan(g, "dp", Setup(hw))
            where = {m: gi for gi, grp in enumerate(greedy) for m in grp}
            seen: set[str] = set()
            for gi, grp in enumerate(dp.groups):
                kind = dp.group_kinds[gi]["kind"]
                if kind not in ("horizontal", "reduction_stitch") or kind in seen:
                    continue  # the two layers' groups are alike: one of each kind
                parts = sorted({where[m] for m in grp})
                groups = [list(greedy[p]) for p in parts]
                if sorted(m for x in groups for m in x) != sorted(grp):
                    continue  # not a union of greedy groups
                r = run_case(f"transformer {kind}", g, list(grp), groups, a.rounds, a.sample_ms, rules, plus)
                print_row(r)
                results.append(r)
                seen.add(kind)
    print("\n  k: greedy kernels of the ops; greedy: those kernels with the default rules; greedy+: the same"
          "\n  kernels with the Stages rule's per-stage code (vectorised reductions, serial tiny stages); stitch: all"
          "\n  ops in one kernel (cpu.Stages). x/stitch: ratio of medians (> 1: the stitched kernel is faster),"
          "\n  (min-max) of the per-round ratios. err: max |build - greedy| / max |greedy| over the builds.")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
