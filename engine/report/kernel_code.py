"""The code of one fused kernel of a plan (issue 30): what the compiler made of a group.

    kc = generate(graph, plan.groups, gi, "cpu", strategy="dp", kind="anchor_chain")   # TVM, in this process
    kc.tir          # the scheduled TIR (TVMScript) of the group's PrimFunc, after the schedule rules
    kc.llvm, kc.asm # a CPU target's LLVM IR and assembly (kc.cuda: a GPU target's CUDA source)
    kc.rule         # the schedule rule that made it ("cpu.Chain", ...; "tuned" for a tuning record)
    kc.vector_lanes, kc.vector_bits, kc.loops   # its widest vectorised loop and its loop nest
    kc.measured = measured(graph, plan, gi, "cpu", hw)   # no TVM: cached figures only, or None
    print(kc.text(["summary", "tir"]))

How a group becomes a PrimFunc. The plan is applied as the benchmark applies it (planner/apply.py),
but with only this group fused and every other op alone: FuseTIR turns a group into the same PrimFunc
whatever the other groups are, so one fused function is built, not the whole model. The function is
found on main's call_tir binding of the group (the binding of its op for a single op; for a group, the
binding of an escaping value or of `g0_out`, its tuple). Then, as runner.build_plan: the tuning
records of this target when one matches (tuned=True), else the schedule rules (engine/schedules:
`schedule(mod, target)`, whose report names the rule); then that one function is compiled by
engine/kernels/build.compile_kernels for the target (engine/devices/tvm_target.make_target: the host's mcpu and vector width
on CPU; `cuda:sm_XX` builds CUDA source with no GPU, nothing is run). LLVM IR and assembly come from the
compiled module's `inspect_source("ll")` / `("asm")`, CUDA source from its CUDA import's
`inspect_source("cuda")`.

The loop nest is read off the scheduled TIR: every `for` with its extent and kind (serial, parallel,
vectorized, unrolled, or the GPU thread it is bound to), loops of extent 1 left out, with the blocks
(statements) each loop holds. The vector width is the widest vectorised loop's extent (lanes) times its
stores' element size; none means the rule vectorised nothing (LLVM may still vectorise a loop itself).

The measured time (`measured`) is taken from what is already there, never measured here: the plan's
benchmark result on the target (runner's cached result or the app's, the VM instrument's in-network
median per kernel), a kernel report's figure (bench --kernels / Measure Kernels vs ONNX Runtime), or
the kernel-timing cache of `--cost measured` (kernel_timing: the kernel timed alone, cold caches, one
thread). Its share of the peak is kernel_report.efficiency against the target's peaks: the roofline
share (the kernel's floor, max(FLOPs / peak, bytes / bandwidth), over its time) and the FLOP/s share.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field

from engine.util.errors import PlanError, UsageError
from engine.util.stdio import one_value

SECTIONS = ("summary", "loops", "tir", "llvm", "asm", "cuda")
SECTION_TITLES = {"summary": "summary", "loops": "loop nest", "tir": "scheduled TIR (TVMScript)",
                  "llvm": "LLVM IR", "asm": "assembly", "cuda": "CUDA source"}
MAX_LOOP_LINES = 400     # a loop nest longer than this is cut (the TIR has every loop)
KIND_NAMES = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread"}


@dataclass
class Loop:
    depth: int                  # nesting depth among the loops shown (extent-1 loops left out)
    var: str
    extent: int | str           # an int, or the expression's text for a symbolic extent
    kind: str                   # serial | parallel | vectorized | unrolled | thread
    thread: str = ""            # the GPU thread it is bound to (blockIdx.x, threadIdx.x)
    blocks: list = field(default_factory=list)   # the blocks directly under it (no loop between)

    def text(self) -> str:
        kind = self.thread if self.kind == "thread" and self.thread else self.kind
        s = f"{'  ' * self.depth}for {self.var} in {kind}({self.extent})"
        return s + (f"   [{', '.join(self.blocks)}]" if self.blocks else "")


@dataclass
class Measured:
    us: float
    source: str                 # what measured it, in words
    lo: float | None = None
    hi: float | None = None
    flops: int = 0
    bytes: int = 0
    bound: str = ""             # compute | memory
    roofline_share: float | None = None
    flops_share: float | None = None
    bytes_share: float | None = None
    peak_source: str = ""

    def text(self) -> str:
        s = f"{self.us:.1f} us"
        if self.lo is not None and self.hi is not None:
            s += f" [{self.lo:.1f}, {self.hi:.1f}]"
        s += f" ({self.source})"
        parts = []
        if self.roofline_share is not None:
            parts.append(f"{_pct(self.roofline_share)} of its roofline bound ({self.bound}-bound)")
        if self.flops_share is not None:
            parts.append(f"{_pct(self.flops_share)} of peak FLOP/s")
        if self.bytes_share is not None:
            parts.append(f"{_pct(self.bytes_share)} of peak bandwidth")
        return s + ("; " + ", ".join(parts) if parts else "")


def _pct(v) -> str:
    return f"{100 * v:.0f}%" if v >= 0.1 else f"{100 * v:.1f}%"


@dataclass
class KernelCode:
    strategy: str
    group: int                  # index in the plan's groups
    name: str                   # engine.report.group_names.group_title
    kind: str
    ops: list                   # op ids
    op_words: list              # readable op names
    onnx_nodes: list
    func: str = ""              # the PrimFunc's name
    target: str = "cpu"         # the target spec built for (cpu, cuda:sm_75, ...)
    target_text: str = ""       # the TVM target it was built with
    rule: str | None = None     # the schedule rule that took it; "tuned" for a tuning record
    rule_note: str = ""         # fell back, errors of rules tried before
    vector_lanes: int = 0       # the widest vectorised loop (0: none)
    vector_bits: int = 0
    vector_dtype: str = ""
    vector_loops: list = field(default_factory=list)   # the extents of the vectorised loops
    loops: list = field(default_factory=list)     # [Loop]
    loops_cut: int = 0          # loops left out of `loops` (MAX_LOOP_LINES)
    tir: str = ""
    llvm: str = ""
    asm: str = ""
    cuda: str = ""
    error: str | None = None    # the build failed: what is above it is still there (the TIR, the rule)
    measured: Measured | None = None
    seconds: float = 0.0
    model: str = ""             # the model's name

    @property
    def is_gpu(self) -> bool:
        return self.target.startswith("cuda")

    def vector_text(self) -> str:
        if not self.vector_lanes:
            return "none (no loop vectorised by the schedule)"
        s = f"{self.vector_lanes} lanes of {self.vector_dtype} ({self.vector_bits}-bit)"
        if self.vector_loops and self.vector_loops != [self.vector_lanes]:
            s += f"; vectorised loops of {', '.join(map(str, self.vector_loops))} lanes"
        return s

    def loop_text(self) -> str:
        lines = [lp.text() for lp in self.loops]
        if self.loops_cut:
            lines.append(f"... {self.loops_cut} more loops (the TIR has them all)")
        return "\n".join(lines) if lines else "(no loops)"

    def measured_text(self) -> str:
        return self.measured.text() if self.measured is not None else "not measured"

    def summary(self) -> str:
        lines = [f"kernel {self.group} of {self.strategy}" + (f" on {self.model}" if self.model else "") + f": {self.name}",
                 f"kind: {self.kind or 'single'}; ops: {' + '.join(self.op_words)}",
                 f"ONNX nodes: {', '.join(self.onnx_nodes) or '-'}",
                 f"PrimFunc: {self.func}; target: {self.target} ({self.target_text})"
                 + ("; built, not run" if self.is_gpu else ""),
                 f"schedule rule: {self.rule or 'none'}" + (f" ({self.rule_note})" if self.rule_note else ""),
                 f"vector width: {self.vector_text()}",
                 f"measured: {self.measured_text()}"]
        if self.error:
            lines.append(f"build error: {self.error}")
        return "\n".join(one_value(x) for x in lines)

    def section(self, name: str) -> str:
        """One section's text: summary, loops, tir, llvm, asm or cuda ('' when this target has none)."""
        if name == "summary":
            return self.summary()
        if name == "loops":
            return self.loop_text()
        if name in ("tir", "llvm", "asm", "cuda"):
            return getattr(self, name)
        raise ValueError(f"unknown section {name!r}")

    def available(self) -> list[str]:
        """The sections this target has (cuda for a GPU, llvm and asm for a CPU)."""
        return ["summary", "loops", "tir"] + (["cuda"] if self.is_gpu else ["llvm", "asm"])

    def text(self, sections=("summary", "loops", "tir")) -> str:
        """The sections asked for, each under a title line when there are several."""
        sections = list(sections)
        if len(sections) == 1:
            return self.section(sections[0])
        out = []
        for s in sections:
            out.append(f"==== {SECTION_TITLES[s]} ====")
            body = self.section(s)
            out.append(body if body else f"(none for {self.target})")
            out.append("")
        return "\n".join(out).rstrip("\n") + "\n"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "KernelCode":
        d = dict(d)
        d["loops"] = [Loop(**lp) for lp in d.get("loops") or []]
        if d.get("measured"):
            d["measured"] = Measured(**d["measured"])
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


# ---- which group ----------------------------------------------------------------------------------

def launches(graph, group) -> bool:
    """Whether a group runs a kernel (holds a call_tir op)."""
    return any(graph.by_id[m].kind == "call_tir" for m in group)


def kernel_groups(graph, plan) -> list[int]:
    """Indices of the plan's groups that launch a kernel."""
    return [gi for gi, g in enumerate(plan.groups) if launches(graph, g)]


def _kind(plan, gi) -> str:
    kinds = getattr(plan, "group_kinds", None) or []
    if len(kinds) == len(plan.groups):
        return kinds[gi].get("kind", "") or ""
    return "single" if len(plan.groups[gi]) == 1 else "epilogue"


def find_group(graph, plan, text) -> int:
    """The group `text` names: its index as the plan's output shows it, or its name (group_title; an
    exact match, case aside, else the one name holding `text`). Raises UsageError, saying what there is."""
    from .group_names import group_title

    s = str(text).strip()
    if re.fullmatch(r"\d{1,9}", s):
        gi = int(s)
        if gi >= len(plan.groups):
            raise UsageError(f"--kernel-code {s}: the {plan.strategy} plan has groups 0 to {len(plan.groups) - 1}")
        if not launches(graph, plan.groups[gi]):
            raise UsageError(f"--kernel-code {s}: group {gi} launches no kernel (it only moves tuple values)")
        return gi
    titles = {gi: group_title(graph, plan.groups[gi], _kind(plan, gi)) for gi in kernel_groups(graph, plan)}
    exact = [gi for gi, t in titles.items() if t.lower() == s.lower()]
    if s.endswith("...") and not exact:   # a name as a table cut it ("stitched reduction: mean + ...")
        s = s[:-3].rstrip()
    hits = exact or [gi for gi, t in titles.items() if s.lower() in t.lower()] if s else []
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise UsageError(f"--kernel-code {one_value(s)[:80]!r}: no group of the {plan.strategy} plan is named so; "
                         "give a group's index or name as the plan lists them")
    shown = "; ".join(f"{gi}: {titles[gi]}" for gi in hits[:5]) + (" ..." if len(hits) > 5 else "")
    raise UsageError(f"--kernel-code {one_value(s)[:80]!r} names {len(hits)} groups ({one_value(shown)}); "
                     "give its index")


def overlapping(graph, plan, other, gi) -> list[int]:
    """The kernel groups of `other` that share an op with group `gi` of `plan` (side by side: the other
    strategy's kernels for the same ops), in the other plan's order."""
    ops = set(plan.groups[gi])
    return [k for k in kernel_groups(graph, other) if ops.intersection(other.groups[k])]


# ---- the PrimFunc of a group ------------------------------------------------------------------------

def primfunc(graph, groups, gi):
    """(name, PrimFunc) of group `gi` of `groups`: the function the benchmark's build calls for it
    (the module docstring). Raises PlanError when the group launches no kernel or TVM cannot fuse it."""
    import tvm
    from tvm import relax

    from engine.planner.apply import apply

    group = list(groups[gi])
    if graph.mod is None:
        raise PlanError("this graph has no TVM module (a generated graph): there is no kernel code to show")
    if not launches(graph, group):
        raise PlanError(f"group {gi} launches no kernel")
    inside = set(group)
    alone = [[n.id] for n in graph.nodes if n.id not in inside]
    new = apply(graph, [group] + alone)
    block = next(b for b in graph.mod["main"].body.blocks if isinstance(b, relax.DataflowBlock))
    var_node = {bd.var: graph.nodes[k].id for k, bd in enumerate(block.bindings)}
    call_tir = tvm.ir.Op.get("relax.call_tir")
    nblock = next(b for b in new["main"].body.blocks if isinstance(b, relax.DataflowBlock))
    for bd in nblock.bindings:
        val = bd.value
        if not isinstance(val, relax.Call) or not val.op.same_as(call_tir):
            continue
        nid = var_node.get(bd.var)
        if (nid is not None and nid in inside) or (nid is None and bd.var.name == "g0_out"):
            gv = val.args[0]
            return gv.name_hint, new[gv]
    raise PlanError(f"group {gi}: no kernel call found in the built module")


# ---- the loop nest -----------------------------------------------------------------------------------

def _extent(e):
    try:
        return int(e)
    except (TypeError, ValueError):
        return str(e)


def _children(s) -> list:
    from tvm import tirx

    if isinstance(s, tirx.SeqStmt):
        return list(s.seq)
    out = []
    for a in ("block", "body", "init", "then_case", "else_case"):
        v = getattr(s, a, None)
        if isinstance(v, tirx.Stmt):
            out.append(v)
    return out


def loop_nest(func) -> tuple[list[Loop], int]:
    """(the loops of a PrimFunc, as `Loop`s in program order, the number left out beyond MAX_LOOP_LINES).
    Loops of extent 1 are left out (their body moves up)."""
    from tvm import tirx

    loops: list[Loop] = []
    cut = [0]

    def visit(s, depth: int, parent: Loop | None):
        if isinstance(s, tirx.For):
            ext = _extent(s.extent)
            kind = KIND_NAMES.get(int(s.kind), str(s.kind))
            if ext == 1 and kind != "thread":
                visit(s.body, depth, parent)
                return
            thread = ""
            if kind == "thread" and s.thread_binding is not None:
                thread = str(s.thread_binding.thread_tag)
            lp = Loop(depth, str(s.loop_var.name), ext, kind, thread)
            if len(loops) < MAX_LOOP_LINES:
                loops.append(lp)
            else:
                cut[0] += 1
            visit(s.body, depth + 1, lp)
            return
        name = type(s).__name__
        if name in ("SBlock", "Block"):
            bname = str(s.name_hint)
            if parent is not None and bname != "root" and bname not in parent.blocks:
                parent.blocks.append(bname)
        for c in _children(s):
            visit(c, depth, parent)

    visit(func.body, 0, None)
    return loops, cut[0]


def vector_width(func, hw_lanes: int | None = None) -> tuple[int, int, str, list]:
    """(lanes, bits, dtype, extents) of the vectorised loops with constant extents: `extents` every
    distinct one, lanes the widest vector they fill, a loop longer than the machine's vector
    (`hw_lanes` of 32 bits) counting as whole vectors (LLVM splits a 10-lane loop into 8 + 2);
    (0, 0, '', []) when the schedule vectorised nothing."""
    from tvm import tirx

    found: list[tuple[int, str]] = []

    def stores(s, acc):
        if isinstance(s, tirx.BufferStore):
            acc.append(str(s.buffer.dtype))
            return
        if isinstance(s, tirx.For):
            stores(s.body, acc)
            return
        for c in _children(s):
            stores(c, acc)

    def visit(s):
        if isinstance(s, tirx.For):
            ext = _extent(s.extent)
            if int(s.kind) == 2 and isinstance(ext, int):
                dts: list[str] = []
                stores(s.body, dts)
                found.append((ext, max(dts, key=_bits, default="float32")))
            visit(s.body)
            return
        for c in _children(s):
            visit(c)

    visit(func.body)
    if not found:
        return 0, 0, "", []
    best = (0, 0, "")
    for ext, dt in found:
        lanes = ext
        if hw_lanes:
            cap = max(1, hw_lanes * 32 // _bits(dt))
            lanes = min(ext, cap)
        if (lanes * _bits(dt), lanes) > (best[1], best[0]):
            best = (lanes, lanes * _bits(dt), dt)
    return best[0], best[1], best[2], sorted({e for e, _ in found})


def _bits(dtype: str) -> int:
    m = re.search(r"(\d+)", dtype)
    return int(m.group(1)) if m else 32


# ---- generating the code -----------------------------------------------------------------------------

def target_words(tgt) -> str:
    """A TVM target in a few words: llvm -mcpu=rocketlake (2 cores), cuda -arch=sm_75."""
    kind = str(tgt.kind.name)
    attrs = tgt.attrs
    parts = [kind]
    for key in ("mcpu", "arch", "mtriple"):
        v = attrs.get(key)
        if v:
            parts.append(f"-{key}={v}")
    cores = attrs.get("num-cores")
    return " ".join(parts) + (f" ({int(cores)} cores)" if cores else "")


def _one_line(e) -> str:
    msg = [x for x in str(e).strip().splitlines() if x.strip()]
    return f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]


def generate(graph, groups, gi: int, t, *, strategy: str = "", kind: str | None = None,
             tuned: bool = True, sections=None) -> KernelCode:
    """The code of group `gi` of `groups` (op ids) of `graph` for the Target `t` (cpu, cuda,
    cuda:sm_XX; parsed at the edge). TVM runs in this process (the app runs it in a child: engine/jobs/
    kernel_code.py). `sections`: which code to produce (default: all the target has); the TIR, the rule,
    the vector width and the loop nest always. A failed build is kept in `error`, with what came before it.
    Raises PlanError when the group launches no kernel."""
    import tvm

    from engine import schedules
    from engine.devices.tvm_target import make_target
    from engine.kernels.build import compile_kernels

    from .group_names import group_title, op_word

    t0 = time.perf_counter()
    members = list(groups[gi])
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    ops = sorted(members, key=order.__getitem__)
    kc = KernelCode(strategy=strategy, group=gi, name=group_title(graph, ops, kind), kind=kind or "",
                    ops=ops, op_words=[op_word(graph.by_id[m]) for m in ops if graph.by_id[m].kind == "call_tir"],
                    onnx_nodes=list(dict.fromkeys(graph.by_id[m].onnx_name for m in ops if graph.by_id[m].onnx_name)),
                    target=t.build_for, model=str(graph.name))
    name, func = primfunc(graph, groups, gi)
    kc.func = name
    tgt = make_target(t.build_for)
    kc.target_text = target_words(tgt)
    mod = tvm.IRModule({name: func.with_attr("global_symbol", name)})
    tuned_names: list = []
    if tuned:
        try:
            from engine.kernels.tuned_store import apply_tuned, store_for

            mod, tuned_names, _ = apply_tuned(mod, tgt, store_for(t))
        except Exception:  # noqa: BLE001 - no usable tuning store: the rules, as an untuned build
            tuned_names = []
    smod, rep = schedules.schedule(mod, t.build_for)
    if name in tuned_names:
        kc.rule, kc.rule_note = "tuned", "a MetaSchedule tuning record of this target (`tune`)"
    else:
        kc.rule = rep.rule_of(name)
        notes = []
        if name in rep.fallback:
            notes.append("no rule for its structure: the fallback schedule")
        if name in getattr(rep, "serial", ()):
            notes.append("small: its parallel loops made serial (one thread)")
        if name in rep.fast_exp:
            notes.append("exp/sigmoid as a vectorisable polynomial (fastmath)")
        errs = [f"{k.split(': ', 1)[-1]} refused it: {v}" for k, v in rep.errors.items() if k.startswith(name + ": ")]
        notes += errs[:3]
        kc.rule_note = "; ".join(notes)
    sfunc = smod[name]
    kc.tir = sfunc.script()
    kc.loops, kc.loops_cut = loop_nest(sfunc)
    hw_lanes = None
    if not kc.is_gpu:
        from engine.devices.tvm_target import vector_lanes

        hw_lanes = vector_lanes(tgt)
    kc.vector_lanes, kc.vector_bits, kc.vector_dtype, kc.vector_loops = vector_width(sfunc, hw_lanes)
    wanted = set(sections or kc.available())
    want_code = wanted & ({"cuda"} if kc.is_gpu else {"llvm", "asm"})
    if want_code:
        try:
            exe = compile_kernels(smod, tgt)
            m = exe.mod
            if kc.is_gpu:
                kc.cuda = next((x.inspect_source("cuda") for x in m.imports if x.kind == "cuda"), "")
            else:
                if "llvm" in wanted:
                    kc.llvm = m.inspect_source("ll")
                if "asm" in wanted:
                    kc.asm = m.inspect_source("asm")
        except Exception as e:  # noqa: BLE001 - TVM's own errors: the build's error, the rest still shown
            kc.error = _one_line(e)
    kc.seconds = time.perf_counter() - t0
    return kc


# ---- the measured time ---------------------------------------------------------------------------------

def measured(graph, plan, gi: int, setup, *, bench=None, figure=None,
             look_in_caches: bool = True) -> Measured | None:
    """The measured time of group `gi` of `plan` on setup.target (engine/planner/setup.py), from what
    is there (the module docstring), with its shares of the target's peaks (this host's on the CPU,
    else setup.hardware's); None when nothing measured it. `bench`: a BenchResult of this
    plan on this target (the app's); `figure`: a kernel_report.KernelFigure of this group (the app's
    Kernels report); look_in_caches: also the runner's cached result and the kernel-timing cache. No TVM."""
    from engine.planner.cost import CostModel

    from . import kernel_report

    t, hw = setup.target, setup.hardware
    if figure is not None and getattr(figure, "us", None):
        return Measured(us=figure.us, lo=figure.lo, hi=figure.hi, flops=int(figure.flops), bytes=int(figure.bytes),
                        bound=figure.bound, roofline_share=figure.roofline_share, flops_share=figure.flops_share,
                        bytes_share=figure.bytes_share, source=f"kernel report: in the network, median of "
                        f"{figure.samples} instrumented runs")
    us, source = None, ""
    ku = list(getattr(bench, "kernel_us", None) or []) if bench is not None and not getattr(bench, "error", None) else []
    if len(ku) == len(plan.groups) and _ok_us(ku[gi]):
        us, source = float(ku[gi]), f"benchmark on {getattr(bench, 'target', t.spec)}: in the network, VM instrument"
    if us is None and look_in_caches:
        try:
            from engine.measure import runner

            r = runner.cached_result(graph, plan, t)
            ku = list(r.kernel_us or []) if r is not None else []
            if len(ku) == len(plan.groups) and _ok_us(ku[gi]):
                us, source = float(ku[gi]), f"cached benchmark on {t.spec}: in the network, VM instrument"
        except Exception:  # noqa: BLE001 - a damaged cache is no figure
            pass
    if us is None and look_in_caches:
        try:
            from engine.planner.kernel_timing import KernelTimer

            v = KernelTimer(graph, hw, t).costs().group_us(plan.groups[gi])
            if _ok_us(v):
                us, source = float(v), f"kernel timing on {t.spec}: the kernel alone, cold caches, 1 thread (minimum)"
        except Exception:  # noqa: BLE001
            pass
    if us is None:
        return None
    m = Measured(us=us, source=source)
    try:
        ref = hw
        if t.backend.host_cpu:
            from engine.planner import profiles

            ref = profiles.get("host")
        if ref is not None:
            pk = kernel_report.peaks(ref)
            cm = CostModel(graph, ref)
            order = {n.id: k for k, n in enumerate(graph.nodes)}
            est = cm.group(sorted(plan.groups[gi], key=order.__getitem__))
            m.flops, m.bytes = int(est.flops), int(est.bytes_in + est.bytes_out)
            e = kernel_report.efficiency(m.flops, m.bytes, us, pk)
            m.bound, m.roofline_share, m.flops_share, m.bytes_share = (e["bound"], e["roofline_share"],
                                                                      e["flops_share"], e["bytes_share"])
            m.peak_source = pk.flops_source
    except Exception:  # noqa: BLE001 - no peaks: the time alone
        pass
    return m


def _ok_us(v) -> bool:
    from engine.util.numbers import finite

    return finite(v, 1e-6, 1e9) and v > 0


def parse_sections(text: str | None, t) -> list[str]:
    """--kernel-code-format's comma-separated sections (summary, loops, tir, llvm, asm, cuda; all: every
    one the Target `t` has), checked against the target. Raises UsageError."""
    have = ["summary", "loops", "tir"] + (["cuda"] if t.is_gpu else ["llvm", "asm"])
    if text is None:
        return ["summary", "loops", "tir"]
    parts = [p.strip().lower() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise UsageError(f"--kernel-code-format {one_value(text)!r}: give sections separated by commas "
                         f"({', '.join(SECTIONS)}, or all)")
    out: list[str] = []
    for p in parts:
        p = {"ll": "llvm", "llvm-ir": "llvm", "assembly": "asm", "cu": "cuda", "nest": "loops"}.get(p, p)
        if p == "all":
            out += [s for s in have if s not in out]
            continue
        if p not in SECTIONS:
            raise UsageError(f"--kernel-code-format {one_value(p)[:40]!r}: choose from {', '.join(SECTIONS)} or all")
        if p not in have:
            raise UsageError(f"--kernel-code-format {p}: {'a GPU target has CUDA source, not ' + p if t.is_gpu else 'CUDA source needs --target cuda (built, not run)'}")
        if p not in out:
            out.append(p)
    return out


def for_cli(graph, plan, group_text, setup, sections) -> str:
    """What `plan MODEL --strategy S --kernel-code GROUP` prints: the group named by `group_text`
    (find_group), built for setup.target, its `sections` (parse_sections), with the measured time
    when one is cached (its shares of setup.hardware's peaks)."""
    gi = find_group(graph, plan, group_text)
    kc = generate(graph, plan.groups, gi, setup.target, strategy=plan.strategy, kind=_kind(plan, gi),
                  sections=sections)
    if "summary" in sections:
        kc.measured = measured(graph, plan, gi, setup)
    return kc.text(sections)


__all__ = ["for_cli", "KernelCode", "Loop", "Measured", "SECTIONS", "SECTION_TITLES", "generate", "measured", "primfunc",
           "loop_nest", "vector_width", "find_group", "kernel_groups", "overlapping", "launches",
           "parse_sections"]
