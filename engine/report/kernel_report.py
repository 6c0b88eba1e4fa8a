"""Per-kernel efficiency of a plan, beside ONNX Runtime's per-node profile (issue 20): for every
kernel its measured time (median, with a 95% interval), FLOPs and FLOP/s as a share of the
profile's FMA peak, bytes moved and bytes/s as a share of the profile's bandwidth, the bound it
hits (compute or memory: its arithmetic intensity against the ridge point peak / bandwidth), its
ONNX nodes, and ORT's time for the same nodes.

    reports = measure(spec, shapes, {"greedy": plan}, hw, "cpu", runs=30)   # one worker, see below
    r = reports["greedy"]          # KernelReport
    r.kernels                      # [KernelFigure], slowest first
    r.blocks                       # [OrtBlock]: our kernels and ORT's nodes over the same ONNX nodes
    print(text(r)); r.to_dict()    # what `bench --kernels` prints, and its JSON

What is measured, and how. One spawned worker (engine/util/child.py, TVM_NUM_THREADS = the usable cores)
builds every plan as the benchmark does (engine/kernels/build.build_plan: the schedule rules, tuning records), then
runs `runs` rounds; in each round every plan once with the VM's instrument hook (each kernel call
timed, as engine/kernels/timing.profile_kernels), every plan once without it (the whole-model time), and ORT once
with profiling on (engine/measure/ort_profile.Profiler, THREADS = 2 intra-op threads): round-robin, so load
from other processes hits all alike. The instrument adds a Python callback per call (about 1-2 us),
so the sum of kernel times runs above the whole-model time; the total line shows both. Caveat: on
the shared 2-core machine (load average 3-6), the un-instrumented whole-model time read 1.04x to 2x
the sum of the kernel medians from run to run, with and without ORT in the worker (not isolated: a
plain VM call in a process of its own varied 7.5-15 ms under that load), so `bench --kernels` also
prints bench's own whole-model median; compare kernels with kernels and ORT's nodes, and whole
models with bench's figures.

FLOPs and bytes come from the OpGraph, whatever the layout the kernels run in: a kernel's FLOPs are
its ops' (engine/model/tir_stats), its bytes what crosses its boundary (planner/cost.CostModel.group: the
values it reads from other kernels, inputs and weights, and the values it writes that are used
outside), not what its loops touch in cache. Every figure here is `measured` (times) or computed
from the model (FLOPs, bytes); the peaks say where they come from (`Peaks.*_source`).

Peaks. A data-sheet profile (assets/hardware.json) gives peak FLOP/s and bandwidth. For this host,
the peak is measured (engine/devices/fma_probe.py: FMA chains on every core, cached per CPU; /proc/cpuinfo's
nominal clock understates a boosting CPU's by up to 1.4x); where the probe cannot run it is derived
from the host facts (engine/devices/tvm_target.host_facts, the clock from /proc/cpuinfo): cores x GHz
x FMA lanes per cycle x 2 FLOP, the FMA lanes being two FMA pipes of the vector width, or of 256 bits
on AMD family 19h (Zen 3 and Zen 4 run AVX-512 on 256-bit units), both worked out in
engine/devices/peaks.py; the bandwidth is the host profile's copy probe (engine/devices/hardware.py).
Both are labelled so.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

PAUSE_S = 0.02          # between ORT's runs and ours: both thread pools spin a while after a run
CONFIDENCE_Z = 1.96     # the median's interval: order statistics at 95% (distribution-free)


# ---- peaks -----------------------------------------------------------------------------------------

@dataclass
class Peaks:
    flops: float                 # FP32 FLOP/s
    bandwidth: float             # bytes/s
    flops_source: str
    bandwidth_source: str

    @property
    def ridge(self) -> float:
        """FLOP per byte where the roofline turns: below it a kernel is memory-bound."""
        return self.flops / self.bandwidth if self.bandwidth > 0 else math.inf

    def to_dict(self) -> dict:
        return {**asdict(self), "ridge_flop_per_byte": self.ridge}


def peaks(hw, facts=None) -> Peaks:
    """The peaks a report's shares are taken against: the profile's own figures, or for this host's
    profile ("host", "host-calibrated") the peak derived from the host facts (see the module
    docstring; engine/devices/peaks.host_flops). `facts`: engine/devices/tvm_target.HostFacts (the
    worker's; None: read from /proc/cpuinfo by engine/devices/hardware.cpu_facts, without importing TVM)."""
    if hw.name not in ("host", "host-calibrated"):
        src = f"profile {hw.name}" + (f": {hw.source}" if hw.source else "")
        return Peaks(hw.peak_flops, hw.bandwidth, src, src)
    from engine.devices.peaks import host_flops

    flops, src = host_flops(facts)
    return Peaks(flops=flops, bandwidth=hw.bandwidth,
                 flops_source=src,
                 bandwidth_source="measured: the host profile's copy probe" if hw.name == "host"
                 else f"profile {hw.name}")


# ---- the arithmetic --------------------------------------------------------------------------------

def efficiency(flops: float, nbytes: float, us: float | None, pk: Peaks) -> dict:
    """A kernel's shares of the peaks: flops_share = (flops / time) / peak FLOP/s, bytes_share =
    (bytes / time) / bandwidth, intensity = flops / bytes, bound = "compute" where the intensity
    reaches the ridge point, else "memory", and roofline_share = the roofline's floor (the larger of
    flops / peak and bytes / bandwidth) / time: 1.0 is a kernel at its bound."""
    intensity = flops / nbytes if nbytes > 0 else math.inf if flops > 0 else 0.0
    bound = "compute" if intensity >= pk.ridge else "memory"
    out = {"intensity": intensity, "bound": bound, "flops_share": None, "bytes_share": None, "roofline_share": None,
           "flop_per_s": None, "bytes_per_s": None}
    if us is not None and us > 0:
        s = us * 1e-6
        floor = max(flops / pk.flops if pk.flops > 0 else 0.0, nbytes / pk.bandwidth if pk.bandwidth > 0 else 0.0)
        out.update(flop_per_s=flops / s, bytes_per_s=nbytes / s, flops_share=flops / s / pk.flops if pk.flops > 0 else None,
                   bytes_share=nbytes / s / pk.bandwidth if pk.bandwidth > 0 else None, roofline_share=floor / s)
    return out


def median_interval(xs) -> tuple[float, float, float]:
    """(median, lo, hi): the median's distribution-free 95% interval from order statistics (ranks
    n/2 -+ 1.96 sqrt(n)/2); with few samples it widens to the extremes."""
    v = sorted(xs)
    n = len(v)
    if n == 0:
        raise ValueError("no samples")
    h = CONFIDENCE_Z * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - h)), min(n - 1, math.ceil(n / 2 + h) - 1)
    return statistics.median(v), v[lo], v[max(lo, hi)]


# ---- the report --------------------------------------------------------------------------------------

@dataclass
class KernelFigure:
    group: int                   # index in plan.groups
    name: str                    # engine.report.group_names.group_title
    ops: list
    op_names: list
    onnx_nodes: list             # the model's ONNX node names its ops come from
    us: float | None             # median of the samples (measured)
    lo: float | None
    hi: float | None
    samples: int
    flops: int
    bytes: int
    intensity: float
    bound: str                   # "compute" | "memory" (from the intensity and the ridge point)
    flops_share: float | None
    bytes_share: float | None
    roofline_share: float | None
    flop_per_s: float | None = None
    bytes_per_s: float | None = None
    block: int | None = None     # index in KernelReport.blocks (ORT's nodes over the same ONNX nodes)
    ort_us: float | None = None  # ORT's time for the block (shared by every kernel of the block)
    source: str = "measured"


@dataclass
class OrtBlock:
    """Our kernels and ORT's nodes that cover the same ONNX nodes (the smallest such sets)."""
    index: int
    groups: list                 # our kernels' group indices
    ort_nodes: list              # ORT node names
    ort_ops: list
    ours_us: float
    ort_us: float

    @property
    def ratio(self) -> float | None:
        return self.ours_us / self.ort_us if self.ort_us > 0 else None

    def to_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class KernelReport:
    model: str
    strategy: str
    target: str
    peaks: Peaks
    kernels: list                # [KernelFigure], slowest first
    kernel_total_us: float       # sum of the kernels' medians
    model_us: float | None       # whole-model median, without the instrument
    model_lo: float | None = None
    model_hi: float | None = None
    runs: int = 0
    threads: dict = field(default_factory=dict)
    blocks: list = field(default_factory=list)          # [OrtBlock]
    ort: dict | None = None      # ort_profile.OrtProfile.to_dict(), or None
    ort_unmatched: list = field(default_factory=list)   # [(ORT node, op, us)]: no ONNX node of the model
    ort_missing: list = field(default_factory=list)     # ONNX nodes of our kernels ORT's profile has none of
    busy_share: float | None = None
    error: str | None = None

    def by_group(self) -> dict[int, KernelFigure]:
        return {k.group: k for k in self.kernels}

    def to_dict(self) -> dict:
        return {"model": self.model, "strategy": self.strategy, "target": self.target, "peaks": self.peaks.to_dict(),
                "kernels": [asdict(k) for k in self.kernels], "kernel_total_us": self.kernel_total_us,
                "model_us": self.model_us, "model_ci": [self.model_lo, self.model_hi], "runs": self.runs,
                "threads": self.threads, "blocks": [b.to_dict() for b in self.blocks], "ort": self.ort,
                "ort_unmatched": [list(x) for x in self.ort_unmatched], "ort_missing": self.ort_missing,
                "ort_total_us": self.ort_total_us, "busy_share": self.busy_share, "error": self.error}

    @property
    def ort_total_us(self) -> float | None:
        return self.ort.get("total_us") if self.ort else None


def build_report(graph, plan, pk: Peaks, kernel_samples: dict, model_samples, ort_prof=None, *, target: str = "cpu",
                 strategy: str | None = None, threads: dict | None = None, busy_share=None) -> KernelReport:
    """The report of `plan` from its measurements: `kernel_samples` group index -> us samples,
    `model_samples` whole-model us samples, `ort_prof` an ort_profile.OrtProfile (or None). Pure."""
    from engine.devices.hardware import Hardware
    from engine.planner.cost import CostModel

    from .group_names import group_title

    # CostModel only for its boundary bytes and FLOPs: the rates do not enter
    cm = CostModel(graph, Hardware("report", "", "cpu", pk.flops, pk.bandwidth, 1, 1 << 30, 0.0))
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    figs = []
    for gi, g in enumerate(plan.groups):
        if not any(graph.by_id[m].kind == "call_tir" for m in g):
            continue
        ops = sorted(g, key=order.__getitem__)
        est = cm.group(ops)
        xs = kernel_samples.get(gi) or []
        med, lo, hi = median_interval(xs) if xs else (None, None, None)
        e = efficiency(est.flops, est.bytes_in + est.bytes_out, med, pk)
        onnx = list(dict.fromkeys(graph.by_id[m].onnx_name for m in ops if graph.by_id[m].onnx_name))
        kinds = getattr(plan, "group_kinds", None) or []
        kind = kinds[gi].get("kind", "") if len(kinds) == len(plan.groups) else ("single" if len(g) == 1 else "epilogue")
        figs.append(KernelFigure(group=gi, name=group_title(graph, ops, kind), ops=ops,
                                 op_names=[graph.by_id[m].op for m in ops], onnx_nodes=onnx, us=med, lo=lo, hi=hi,
                                 samples=len(xs), flops=int(est.flops), bytes=int(est.bytes_in + est.bytes_out), **e))
    blocks, unmatched, missing = _blocks(figs, ort_prof)
    figs.sort(key=lambda k: -(k.us or 0.0))
    m = median_interval(model_samples) if model_samples else (None, None, None)
    return KernelReport(model=graph.name, strategy=strategy or plan.strategy, target=target, peaks=pk, kernels=figs,
                        kernel_total_us=sum(k.us or 0.0 for k in figs), model_us=m[0], model_lo=m[1], model_hi=m[2],
                        runs=max((k.samples for k in figs), default=0), threads=dict(threads or {}), blocks=blocks,
                        ort=ort_prof.to_dict() if ort_prof is not None else None, ort_unmatched=unmatched,
                        ort_missing=missing, busy_share=busy_share)


def _blocks(figs, ort_prof):
    """Group our kernels and ORT's nodes into blocks over the same ONNX nodes (connected components
    of "covers an ONNX node of"), set each kernel's block and ORT time; returns (blocks, ORT nodes of
    no ONNX node, our ONNX nodes no ORT node covers)."""
    if ort_prof is None:
        return [], [], []
    covering = ort_prof.covering()
    ort_us = {n.name: n.us for n in ort_prof.nodes}
    ort_op = {n.name: n.op for n in ort_prof.nodes}
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    missing = []
    for k in figs:
        find(("k", k.group))
        for o in k.onnx_nodes:
            n = covering.get(o)
            if n is None:
                missing.append(o)
            else:
                parent[find(("k", k.group))] = find(("o", n))
    comps: dict = {}
    for x in list(parent):
        comps.setdefault(find(x), []).append(x)
    by_group = {k.group: k for k in figs}
    blocks = []
    for members in sorted(comps.values(), key=lambda ms: min(m[1] for m in ms if m[0] == "k")
                          if any(m[0] == "k" for m in ms) else 1 << 30):
        groups = sorted(m[1] for m in members if m[0] == "k")
        nodes = [m[1] for m in members if m[0] == "o"]
        if not groups or not nodes:
            continue
        nodes.sort(key=[n.name for n in ort_prof.nodes].index)
        b = OrtBlock(index=len(blocks), groups=groups, ort_nodes=nodes, ort_ops=[ort_op[n] for n in nodes],
                     ours_us=sum(by_group[g].us or 0.0 for g in groups), ort_us=sum(ort_us[n] for n in nodes))
        blocks.append(b)
        for g in groups:
            by_group[g].block, by_group[g].ort_us = b.index, b.ort_us
    unmatched = [(n.name, n.op, n.us) for n in ort_prof.nodes if not n.onnx_nodes]
    return blocks, unmatched, list(dict.fromkeys(missing))


# ---- measuring ---------------------------------------------------------------------------------------

def thread_settings(tvm_threads: int | None = None) -> dict:
    """The thread settings a benchmark worker runs with (engine/util/child.py sets TVM_NUM_THREADS)."""
    from engine.measure.benchmark import thread_settings as ts

    return ts(tvm_threads)


def measure(spec: str, shapes, plans: dict, setup, runs: int = 30, ort: bool = True,
            progress=None, cancel=None, timeout_s: float | None = None,
            graph=None, scheduled: bool = True, tuned: bool = True) -> dict:
    """strategy -> KernelReport for each Plan of `plans`, measured together in one worker (the
    module docstring), as `setup` says (engine/planner/setup.py: its target, a CPU, and the profile
    setup.hardware the shares are of). CPU targets only (ORT runs here, and the peaks are this
    host's or the profile's). The plans are of `graph`'s channel layout (else setup.block's:
    loader.load), and so are the builds; `scheduled`, `tuned` as runner.benchmark's. Raises TargetError for another target, Cancelled when `cancel` is set, FuseLensError
    for a model ONNX Runtime cannot run; a plan whose build fails gets a report with `error`."""
    from engine.measure import ort_check
    from engine.model import loader
    from engine.util.errors import TargetError

    hw, t = setup.hardware, setup.target
    if not t.backend.host_cpu:
        raise TargetError(f"bench --kernels times kernels on this machine's CPU, not on {t.spec}")
    graph = graph if graph is not None else loader.load(spec, shapes, block=setup.block)
    job = {"spec": spec, "shapes": shapes, "block": graph.block, "target": t, "scheduled": bool(scheduled),
           "tuned": bool(tuned), "runs": max(3, int(runs)), "ort": bool(ort),
           "plans": [[s, p.groups] for s, p in plans.items()]}
    payload = ort_check.run_worker(_job, job, graph.source or spec, progress=progress, cancel=cancel,
                                   timeout_s=timeout_s or 600 * max(1, len(plans)), what="kernel report worker")
    if payload.get("error"):
        from engine.util.errors import FuseLensError

        raise FuseLensError(f"the kernel report could not be measured: {payload['error']}")
    from engine.devices.tvm_target import HostFacts

    facts = HostFacts(**payload["facts"]) if payload.get("facts") else None
    pk = peaks(hw, facts)
    prof = _profile_from(payload.get("ort"))
    threads = thread_settings(payload.get("tvm_threads"))
    out = {}
    for s, p in plans.items():
        d = payload["plans"].get(s) or {"error": "the worker returned nothing for this plan"}
        if d.get("error"):
            out[s] = KernelReport(model=graph.name, strategy=s, target=t.spec, peaks=pk, kernels=[], kernel_total_us=0.0,
                                  model_us=None, threads=threads, error=d["error"])
            continue
        ks = {int(k): v for k, v in d["kernels"].items()}
        out[s] = build_report(graph, p, pk, ks, d["model"], prof, target=t.spec, strategy=s, threads=threads,
                              busy_share=payload.get("busy_share"))
    return out


def _profile_from(d):
    if not d:
        return None
    from engine.measure.ort_profile import OrtNode, OrtProfile

    return OrtProfile(nodes=[OrtNode(**n) for n in d["nodes"]], runs=d["runs"], threads=d["threads"],
                      total_us=d["total_us"], run_us=d["run_us"], missing=d["missing"], note=d["note"])


def _job(job, say):
    """The worker: build every plan, then `runs` rounds of (each plan instrumented, each plan plain,
    ORT profiled)."""
    import dataclasses
    import time

    import tvm
    from tvm import relax

    from engine.devices.device_session import kernel_calls, open_device
    from engine.devices.tvm_target import host_facts
    from engine.kernels.build import build_plan
    from engine.measure import runner
    from engine.planner.apply import apply, kernel_groups
    from engine.util import machine_load

    t, graph, x, bad = runner.prepare_job(job, say)
    if bad:
        return {"model_error": bad}
    prof = None
    if job["ort"]:   # before TVM's pool starts: threads made later inherit the main thread's core binding
        from engine.measure.ort_profile import Profiler

        say("starting ONNX Runtime", 0.05)
        prof = Profiler(graph, inputs=x)
    dev = open_device(t).dev      # this host's CPU (measure: host_cpu targets only)
    args = [tvm.runtime.tensor(a, dev) for a in x]
    built, out = {}, {}
    n = len(job["plans"])
    for k, (s, groups) in enumerate(job["plans"]):
        say(f"{s}: building", 0.05 + 0.45 * k / n)
        try:
            exe, _ = build_plan(apply(graph, groups), t, job.get("scheduled", True), job.get("tuned", True))
            vm_i, vm_p = relax.VirtualMachine(exe, dev), relax.VirtualMachine(exe, dev)
            vm_p["main"](*args)
            built[s] = (vm_i, vm_p, kernel_groups(graph, groups))
            out[s] = {"kernels": {}, "model": []}
        except Exception as e:  # noqa: BLE001 - a failed build is this plan's error, the others still run
            msg = str(e).strip().splitlines()
            out[s] = {"error": f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]}
    instrument, calls = kernel_calls()

    hook = tvm.runtime.convert(instrument)
    for vm_i, _, _ in built.values():
        vm_i.set_instrument(hook)
    runs = job["runs"]
    load0 = machine_load.start()
    for r in range(runs):
        for s, (vm_i, vm_p, order) in built.items():
            t0 = time.perf_counter()
            vm_p["main"](*args)
            out[s]["model"].append((time.perf_counter() - t0) * 1e6)
            calls.clear()
            t0 = time.perf_counter()
            vm_i["main"](*args)
            out[s].setdefault("instrumented", []).append((time.perf_counter() - t0) * 1e6)
            if len(calls) == len(order):
                for c, gi in zip(calls, order):
                    out[s]["kernels"].setdefault(gi, []).append(c)
            elif "error" not in out[s] and r == 0:
                out[s]["misaligned"] = f"{len(calls)} kernel calls against {len(order)} kernels"
        if prof is not None:
            time.sleep(PAUSE_S)      # a pool that spins after its last task (TVM's, ORT's) goes idle first
            prof.run()
            time.sleep(PAUSE_S)
        say("timing kernels", 0.5 + 0.5 * (r + 1) / runs)
    busy = machine_load.stop(load0)
    for s, d in out.items():
        if "misaligned" in d and not d["kernels"]:
            d["error"] = f"the built module's kernel calls do not line up with the plan's kernels ({d['misaligned']})"
        d["kernels"] = {str(k): v for k, v in d.get("kernels", {}).items()}
    ort_d = prof.finish().to_dict() if prof is not None else None
    if ort_d:
        ort_d["nodes"] = [{**nd, "samples": []} for nd in ort_d["nodes"]]
    return {"plans": out, "ort": ort_d, "facts": dataclasses.asdict(host_facts()), "busy_share": busy,
            "tvm_threads": tvm.runtime.num_threads()}


# ---- text ----------------------------------------------------------------------------------------------

def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.0f}%" if v >= 0.1 else f"{100 * v:.1f}%"


def _num(v, unit="") -> str:
    from .text import human

    return "" if v is None else human(v, unit)


MIN_NAME, MIN_NODES = 12, 14   # the kernel-name and ONNX-nodes columns are shortened to fit, down to these


def terminal_width() -> int:
    """The terminal's width in characters (shutil.get_terminal_size; 120 where there is none)."""
    import shutil

    return shutil.get_terminal_size((120, 24)).columns


def text(r: KernelReport, top: int | None = None, width: int | None = None, bench_us: float | None = None) -> str:
    """The report as the CLI prints it: a header (the peaks and where they come from, the threads),
    a row per kernel, slowest first, and the total line; then ORT's blocks. Every line fits `width`
    (default: the terminal's): the ONNX nodes column (then the kernel names) shortened to whole names
    and "...", the prose wrapped. `bench_us`: bench's own whole-model median, said beside the others
    with one line on why the four times of the model differ."""
    import textwrap

    from .text import _Block, _join, fit, table

    width = max(60, width or terminal_width())
    if r.error:
        return f"{r.strategy}: kernel report failed: {r.error}"

    def wrap(line: str) -> _Block:   # the prose: wrapped, continuation lines indented
        return _Block("\n".join(textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False)
                                or [""]))
    pk = r.peaks
    lines = [wrap(f"Kernels of {r.strategy} on {r.model} ({r.target}), {r.runs} runs, measured; shares of "
                  f"peak {_num(pk.flops, 'FLOP/s')} [{pk.flops_source}] and {_num(pk.bandwidth, 'B/s')} "
                  f"[{pk.bandwidth_source}]; ridge {pk.ridge:.1f} FLOP/byte")]
    if r.threads:
        lines.append(wrap("threads: " + ", ".join(f"{k}={v}" for k, v in r.threads.items())))
    head = ["#", "kernel", "us", "95% interval", "FLOPs", "of peak", "bytes", "of BW", "bound", "of roof", "ORT us",
            "ours/ORT", "ONNX nodes"]
    ks = r.kernels if top is None else r.kernels[:top]

    def rows(name_w: int, nodes_w: int) -> list:
        out = []
        for k in ks:
            ort = "" if k.ort_us is None else f"{k.ort_us:.1f}"
            ratio = ""
            if k.block is not None:   # the block's other kernels share its ORT time: named by the block
                b = r.blocks[k.block]
                ratio = (f"{b.ratio:.2f}x" if b.ratio else "") + (f" B{b.index}" if len(b.groups) > 1 else "")
            out.append([str(k.group), fit(k.name.split(" "), name_w), "" if k.us is None else f"{k.us:.1f}",
                        "" if k.lo is None else f"[{k.lo:.1f}, {k.hi:.1f}]", _num(k.flops), _pct(k.flops_share),
                        _num(k.bytes, "B"), _pct(k.bytes_share), k.bound, _pct(k.roofline_share), ort, ratio,
                        fit(list(k.onnx_nodes), nodes_w, ", ") if k.onnx_nodes else ""])
        return out

    def laid(name_w: int, nodes_w: int | None, drop: list) -> str:   # nodes_w None: without the nodes column
        keep = [i for i, h in enumerate(head) if h not in drop and (nodes_w is not None or h != "ONNX nodes")]
        return table([[row[i] for i in keep] for row in rows(name_w, nodes_w or 1)], [head[i] for i in keep])

    def widest(t: str) -> int:
        return max(map(len, t.splitlines()))

    # the ONNX nodes column takes what the others leave; where that is under MIN_NODES the kernel names are
    # shortened, then columns left out (the interval, the roofline share, then FLOPs, bytes and ORT's time beside
    # their shares and ratio; --json has them)
    for drop in ([], ["95% interval"], ["95% interval", "of roof"], ["95% interval", "of roof", "FLOPs", "bytes"],
                 ["95% interval", "of roof", "FLOPs", "bytes", "ORT us"]):
        name_w = 38
        nodes_w = width - widest(laid(name_w, None, drop)) - 2
        if nodes_w < MIN_NODES:
            name_w = max(MIN_NAME, name_w - (MIN_NODES - nodes_w))
            nodes_w = width - widest(laid(name_w, None, drop)) - 2
        if nodes_w >= MIN_NODES:
            break
    t = laid(name_w, max(nodes_w, MIN_NODES), drop)
    lines.append(t)
    if drop:
        lines.append(wrap(f"(left out to fit {width} columns: {', '.join(drop)}; --json has them)"))
    blocks = [b for b in r.blocks if len(b.groups) > 1]
    if blocks:
        lines.append(wrap("ours/ORT over blocks of several kernels (B<n>): ORT's nodes cover the same ONNX nodes as "
                          "all of them: " + "; ".join(f"B{b.index}: {len(b.groups)} kernels" for b in blocks[:8])
                          + (" ..." if len(blocks) > 8 else "")))
    if top is not None and len(r.kernels) > top:
        lines.append(f"... {len(r.kernels) - top} more kernels (--json has every one)")
    tot = (f"total: {len(r.kernels)} kernels, their medians sum to {r.kernel_total_us:.1f} us (timed with the "
           "instrument's cost per call)")
    if r.model_us is not None:
        tot += f", against {r.model_us:.1f} us [{r.model_lo:.1f}, {r.model_hi:.1f}] for the whole model (median, 95%)"
    lines.append(wrap(tot))
    from engine.util.machine_load import is_busy

    if r.busy_share is not None and is_busy(r.busy_share):
        lines.append(wrap(f"the machine was busy: other processes used {100 * r.busy_share:.0f}% of the CPU time "
                          "while timing; figures may be distorted (compare only ratios of this run)"))
    if r.ort:
        o = r.ort
        matched = sum(b.ours_us for b in r.blocks)
        ort_matched = sum(b.ort_us for b in r.blocks)
        node_sum = sum(n["us"] for n in o["nodes"])
        lines.append(wrap(f"ONNX Runtime ({o['threads']} intra-op threads, {o['runs']} profiled runs, round-robin with "
                          f"ours): its nodes' medians sum to {node_sum:.1f} us (per run: {o['total_us']:.1f} us in "
                          f"nodes, {o['run_us']:.1f} us in all, medians); over the same ONNX nodes, sums of medians: "
                          f"ours {matched:.1f} us against ORT's {ort_matched:.1f} us"
                          + (f" = {matched / ort_matched:.2f}x" if ort_matched > 0 else "")))
        if r.ort_unmatched:
            lines.append(wrap("ORT nodes over no ONNX node (inserted by ORT): " + ", ".join(
                f"{n} ({op}, {us:.1f} us)" for n, op, us in r.ort_unmatched)))
        if r.ort_missing:
            lines.append(wrap("ONNX nodes of our kernels ORT's profile does not cover (removed or folded by ORT): "
                              + ", ".join(r.ort_missing[:12]) + (" ..." if len(r.ort_missing) > 12 else "")))
        if o.get("note"):
            lines.append(wrap("ORT: " + o["note"]))
    if bench_us is not None:
        lines.append(wrap(f"bench's whole-model median for {r.strategy} (round-robin with the other plans, no ORT in "
                          f"the process): {bench_us:.1f} us; the kernels' medians sum to "
                          f"{r.kernel_total_us / bench_us:.2f}x that"))
    lines.append(wrap(WHY_TIMES_DIFFER))
    return _join(lines)   # a value's newline or control character escaped (text._join)


WHY_TIMES_DIFFER = ("why these times differ: bench's median ran without ORT, round-robin with the other plans; the "
                    "whole model here ran beside ORT; the kernel sum adds the instrument's 1-2 us a call and leaves out "
                    "the gaps between kernels; ORT's \"in all\" adds its work between nodes")


__all__ = ["Peaks", "KernelFigure", "KernelReport", "OrtBlock", "peaks", "efficiency", "median_interval",
           "build_report", "measure", "text", "thread_settings"]
