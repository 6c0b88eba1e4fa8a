"""Measured-cost planning: time the kernels the DP chooses between, cache the figures, and hand
them to `dp.segment_dp` in place of the cost model's estimates.

Entry points (what `--cost measured` uses):

    from engine.planner import kernel_timing
    costs = kernel_timing.measured_costs(graph, hw, "cpu", progress=cb, cancel=event)  # profiles what is missing
    segs, stats, costs = calibrate.measured_dp(graph, hw, "cpu", costs=costs)     # node-index segments
    costs.stats   # candidates, candidate_kernels, unique_kernels, built, cached, failed, profile_s, error

or by hand: `dp.segment_dp(cm, chain_order(graph), max_len, math.inf, costs=costs)`, with
cm = CostModel(graph, calibrate.calibrated(hw, "cpu") or hw). Use cutoff=math.inf: segment_dp's
2x cut-off compares a segment's cost with the MODEL's estimate of its ops apart, so measured times
(another scale) cut good segments: MobileNetV2@224, 1 thread, with the cut-off 89 kernels at
22.9 ms of measured kernel time, without it 69 kernels at 17.1 ms (greedy: 55 at 18.0 ms);
EfficientNet-B0 35.8 ms vs 24.3 ms (greedy 26.0 ms).

`measured_costs` returns a `MeasuredCosts`: callable(segment of node indices) -> measured us; for a
segment whose kernel was not measured (the cap left it out) the sum of its ops' measured times
(unknown="apart", the default: an unmeasured fusion gets no credit), or None when an op has no
figure either (the DP then keeps its estimate). unknown="none" returns None for every unmeasured
segment; the DP then picks the segments the model under-estimates (EfficientNet-B0: 64 of its
159 kernels unmeasured). `costs.group_us(node ids)` gives any group's figure (plan totals).
Profiling never raises for a TVM failure: `costs.stats["error"]` says what went wrong, and what
was measured so far is kept. A set `cancel` raises runner.Cancelled; progress(stage, fraction).
With profile=False nothing is built: only cached figures (fast, no TVM import).

What is measured
----------------
Candidates: every segment `segment_dp(cm, chain_order(graph), max_len, cutoff)` asks a cost for
(the legal segments within the 2x cut-off: a `costs` callable that records and returns None), plus
greedy's groups (FuseOps' partition, engine.planner.greedy; on the zoo they are ranges of the DP's
order, so the measured DP can pick them and is never worse than greedy by the measured figures).
Then the DP runs again on the measured figures; segments it asks about that were never candidates
are profiled in a second round (at most a quarter of the cap).

The cap: `max_kernels` (MAX_KERNELS = 400; None: all) distinct kernels per model, counted by a
TVM-free `signature` that matches the structural hash. Single ops and greedy's groups first, then
segments by the model's regret: how much slower, in the model's terms, the best segmentation that
uses the segment is than the best one. MobileNetV2@224 has 1,301 candidates = 544 distinct
kernels; all of them took 150 s on the 2 shared cores (LLVM codegen 0.1-0.15 s a kernel), over the
2-minute goal; the 400 kept (every segment within 1.1% regret) take 55-85 s the first time, 0.1 s
from the cache. EfficientNet-B0: 1,624 candidates = 760 kernels, 400 kept (0.11% regret), 50-60 s
(57 kernels shared with MobileNetV2).

How: in a spawned worker process (a TVM crash ends the worker, not the caller), candidates are
packed into few `apply()` calls (non-overlapping ranges of one topological order form a legal plan
together: MobileNetV2's 1,301 need 16), each candidate's fused PrimFunc is read off the binding of
its group, and kernels are deduplicated by `tvm_ffi.structural_hash`. Kernels without a figure
are scheduled with engine.schedules, compiled CHUNK at a time and timed one call a sample on random
inputs (engine/kernels/batch.py builds them, engine/kernels/timing.time_kernel times them):
  - caches cold (flush="all", FLUSH): `f_preproc="cache_flush_cpu_non_first_arg"` clflushes the
    arguments before every repeat; that preprocessor skips argument 0, so each kernel gets a dummy
    scalar first parameter. "non_first" keeps TVM's behaviour (first input warm), "none" is warm.
    Against in-network kernel times (engine.measure.runner's VM instrument, greedy plans) cold timings are
    1.1-1.3x (median) with Spearman 0.92-0.98; warm ones 0.8x with Spearman 0.985-0.993. Plans from
    warm figures split more (91 vs 69 kernels on MobileNetV2) and ran no faster end to end.
  - on THREADS = 1 TVM thread (threads=None: all cores): on the shared 2-core machine, 2-thread
    timings of the same kernels varied 0.45-7x between passes (a pool thread descheduled by
    other work; the flush gap lets the pool fall asleep), 1-thread ones 0.89-1.07x.
  - the figure is the minimum over 7-23 samples (noise on a shared machine only adds time); at
    the end, kernels whose samples spread (median > 2x min) or whose measured/estimated ratio is
    4x the batch's typical one are timed again, and keep the lower minimum.

Cache (under engine.util.cache_dir.cache_dir("kernels"), or `cache=` a folder):
    times-<target>-s<SCHEDULE_VERSION>.json    structural hash -> {"us": min over samples, "median", "n", ...}
    segments-<model sha>.json                  segment (node ids) -> structural hash ("" = no kernel)
The times file is keyed by (hash, target string, schedule version): any model's plan reuses them.
For CPU targets the target string names the machine (CPU model, cores, vector width), the
threads and the flush mode. Writes are atomic (engine.util.cache_dir.write_atomic: temp file +
os.replace, merged with what another process wrote meanwhile); a file that does not parse is a miss
and is deleted; one written for another target, version or model is a miss (and is overwritten by
the next save); a record with wrong field types is a miss (the kernel is timed again). Never a
crash. force=True (measured_costs, KernelTimer.profile) times every candidate again, cached or not,
and overwrites their records. The worker saves after every chunk: an interrupted run keeps what it
measured. Targets: cpu; rpc (kernels exported, linked by a board's cross compiler where the device is
one, uploaded and timed there by the remote runtime, on its own threads, without flushing); cuda
untested, no flushing.
"""
from __future__ import annotations

import hashlib
import re
import statistics
import time
from pathlib import Path

from engine.kernels.batch import build_and_time, compile_or_error, device, schedule_or_error
from engine.kernels.timing import time_kernel
from engine.util import cache_dir as _files
from engine.util.cache_dir import cache_dir
from engine.util.child import ChildFailed, WorkerFault, run_in_child
from engine.util.cpus import usable_cores
from engine.util.numbers import finite

from .dp import CUTOFF, MAX_LEN
from .plan import group_of

FORMAT = 2
CHUNK = 48                  # PrimFuncs per compiled module
FLUSH_MODES = ("all", "non_first", "none")
MAX_KERNELS = 400           # distinct kernels profiled per model by default (see the module docstring)
FLUSH = "all"               # cache state kernels are timed in (see the module docstring)
THREADS = 1                 # TVM threads kernels are timed on (None: all cores; see the module docstring)


def ignore_load() -> bool:
    """FUSELENS_IGNORE_LOAD=1: trust timings taken while other processes oversubscribed the cores
    (tests that count kernels on a shared machine); by default they are marked busy and not used."""
    import os

    return os.environ.get("FUSELENS_IGNORE_LOAD") == "1"


# ---- keys and files ------------------------------------------------------------------------


def target_key(target="cpu", threads: int | None = THREADS, flush: str = FLUSH) -> str:
    """The target string timings are keyed by. For CPU targets it names this machine (a figure
    from another CPU is not reused), the threads kernels ran on and the cache state (flush mode);
    otherwise the target spec. `target`: a Target or its spec."""
    from engine.devices import targets

    t = targets.as_target(target)
    if t.backend.host_cpu:
        from engine.devices.hardware import cpu_facts

        f = cpu_facts()
        return f"cpu|{f['model']}|{f['cores']}c|{f['vector_bits']}b|t{threads or usable_cores()}|flush-{flush}"
    return t.spec


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", s)[:60] + "-" + hashlib.sha256(s.encode()).hexdigest()[:10]


def schedule_version() -> int:
    """engine.schedules.SCHEDULE_VERSION, read from its source unless already imported: importing
    the schedules imports TVM (over a second), and reading cached figures must stay fast."""
    import sys

    mod = sys.modules.get("engine.schedules")
    if mod is not None:
        return int(getattr(mod, "SCHEDULE_VERSION", 0))
    src = Path(__file__).resolve().parent.parent / "schedules" / "__init__.py"
    try:
        m = re.search(r"^SCHEDULE_VERSION\s*=\s*(\d+)", src.read_text(), re.M)
    except OSError:
        m = None
    if m:
        return int(m.group(1))
    from ..schedules import SCHEDULE_VERSION

    return SCHEDULE_VERSION


def _tvm_version() -> str:
    try:
        from importlib.metadata import version

        return version("apache-tvm")
    except Exception:  # noqa: BLE001 - any packaging problem: still a stable string
        return "unknown"


def segment_key(ids) -> str:
    """A group's key: its node ids in graph order (ids "n12" sort by their number)."""
    return ",".join(sorted(ids, key=lambda s: (len(s), s)))


def read_json(path: Path) -> dict:
    """A cache file's content, {} when missing or unreadable (a miss, never a crash); a file that
    does not parse to a JSON object is deleted."""
    d = _files.read_json(path, numbers=True)   # NaN, Infinity, 1e300, a denormal: a miss (engine/util/numbers.py)
    return d if isinstance(d, dict) else {}


def write_json(path: Path, data: dict) -> None:
    """Atomic write: a temp file in the same folder, then os.replace."""
    _files.write_json(path, data)


def valid_record(r) -> bool:
    """A kernel's record: {"us": > 0, "median"?, "n"?, ...} or {"error": str, ...}."""
    if not isinstance(r, dict):
        return False
    if "error" in r:
        return isinstance(r["error"], str)
    return (finite(r.get("us"), 1e-6, 1e12) and finite(r.get("median", r["us"]), 0.0, 1e12)   # us: a ps to 11 days
            and isinstance(r.get("n", 1), int) and finite(r.get("n", 1), 0, 1 << 40))


class KernelCache:
    """The two cache files: kernel times for one (target, schedule version), segment hashes for one model."""

    def __init__(self, folder: Path | None, tkey: str, model_sha: str):
        self.folder = Path(folder) if folder is not None else cache_dir("kernels")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tkey, self.model_sha, self.sv = tkey, model_sha, schedule_version()
        self.times_file = self.folder / f"times-{_slug(tkey)}-s{self.sv}.json"
        self.segments_file = self.folder / f"segments-{model_sha[:32]}.json"
        self.tvm = _tvm_version()

    def _times_ok(self, d: dict) -> dict:
        if d.get("format") != FORMAT or d.get("target") != self.tkey or d.get("schedule_version") != self.sv:
            return {}
        k = d.get("kernels")
        return {h: r for h, r in k.items() if valid_record(r)} if isinstance(k, dict) else {}

    def _segments_ok(self, d: dict) -> dict:
        if d.get("format") != FORMAT or d.get("model") != self.model_sha or d.get("tvm") != self.tvm:
            return {}
        s = d.get("segments")
        return {k: h for k, h in s.items() if isinstance(h, str)} if isinstance(s, dict) else {}

    def times(self) -> dict[str, dict]:
        return self._times_ok(read_json(self.times_file))

    def segments(self) -> dict[str, str]:
        return self._segments_ok(read_json(self.segments_file))

    def add_times(self, new: dict[str, dict]) -> None:
        merged = {**self.times(), **new}   # re-read: keep what another process wrote meanwhile
        write_json(self.times_file, {"format": FORMAT, "target": self.tkey, "schedule_version": self.sv,
                                     "kernels": merged})

    def add_segments(self, new: dict[str, str]) -> None:
        merged = {**self.segments(), **new}
        write_json(self.segments_file, {"format": FORMAT, "model": self.model_sha, "tvm": self.tvm,
                                        "segments": merged})


# ---- candidates ----------------------------------------------------------------------------

def candidates(cm, order, max_len: int = MAX_LEN, cutoff: float = CUTOFF, costs=None) -> list[list[int]]:
    """The segments (node indices, sorted) segment_dp asks a cost for: the legal segments within
    the 2x cut-off, in the order asked. With `costs`, the DP runs with those figures (a measured
    DP's cut-off then sees measured times and may ask about others)."""
    from .dp import segment_dp

    seen: dict[tuple, None] = {}

    def record(seg):
        seen.setdefault(tuple(sorted(seg)), None)
        return costs(seg) if costs is not None else None

    segment_dp(cm, order, max_len, cutoff, costs=record)
    return [list(s) for s in seen]


def signature(cm, seg) -> tuple:
    """What a segment's fused kernel depends on, without TVM: each member's TIR function (the
    importer shares one PrimFunc among identical ops), where its inputs come from inside the
    segment, and whether its value leaves the segment. Equal signatures give structurally equal
    fused PrimFuncs (MobileNetV2: 1,301 candidates, 544 signatures, 544 structural hashes)."""
    s = sorted(seg)
    loc = {v: k for k, v in enumerate(s)}
    inside = set(s)
    nodes = cm.graph.nodes
    return tuple((nodes[v].func or nodes[v].kind, tuple(loc.get(p, -1) for p in cm.inputs[v]),
                  bool(cm.is_output[v] or any(c not in inside for c in cm.consumers[v]))) for v in s)


def regret(cm, order, segs) -> list[float]:
    """Per segment: (cost of the best segmentation of `order` that uses it - cost of the best one)
    / cost of the best one, over the given segments with the model's costs. A segment that is not
    a range of `order` gets 0 (it is kept with the forced ones)."""
    import math

    pos = {v: k for k, v in enumerate(order)}
    n = len(order)
    spans = []
    for s in segs:
        p = [pos[v] for v in s]
        spans.append((min(p), max(p) + 1) if max(p) - min(p) + 1 == len(s) else None)
    cost = [cm.group(s).us if sp else 0.0 for s, sp in zip(segs, spans)]
    by_end: dict[int, list] = {}
    by_start: dict[int, list] = {}
    for k, sp in enumerate(spans):
        if sp:
            by_end.setdefault(sp[1], []).append((sp[0], cost[k]))
            by_start.setdefault(sp[0], []).append((sp[1], cost[k]))
    pre = [0.0] + [math.inf] * n
    for i in range(1, n + 1):
        pre[i] = min((pre[j] + c for j, c in by_end.get(i, [])), default=math.inf)
    suf = [math.inf] * n + [0.0]
    for j in range(n - 1, -1, -1):
        suf[j] = min((c + suf[i] for i, c in by_start.get(j, [])), default=math.inf)
    best = pre[n] if pre[n] > 0 and math.isfinite(pre[n]) else 1.0
    return [(pre[sp[0]] + cost[k] + suf[sp[1]] - best) / best if sp else 0.0 for k, sp in enumerate(spans)]


def greedy_groups(graph, cm) -> list[list[int]]:
    """FuseOps' groups (engine.planner.greedy) that launch a kernel, as sorted node indices."""
    from .greedy import partition

    groups = partition(graph)[0]
    return [sorted(cm.index[m] for m in g) for g in groups if any(graph.by_id[m].kind == "call_tir" for m in g)]


# ---- what the DP gets ----------------------------------------------------------------------

class MeasuredCosts:
    """`segment_dp`'s `costs` argument: callable(segment of node indices) -> us | None.

    A segment with a measured kernel returns its time. For one without (left out by the cap, or
    asked only by another DP): unknown="apart" (default) returns the sum of its ops' measured
    times, i.e. no credit for a fusion nobody measured, so the DP never prefers an unmeasured
    fusion to measured ones because the model under-estimated it; None when an op has no figure
    either. unknown="none" returns None for every unmeasured segment (the DP's estimate)."""

    def __init__(self, ids: list[str], table: dict[str, float], stats: dict, unknown: str = "apart"):
        if unknown not in ("apart", "none"):
            raise ValueError("unknown must be 'apart' or 'none'")
        self.ids, self.table, self.stats, self.unknown = ids, table, stats, unknown
        self.hits = self.misses = 0

    def key(self, segment) -> str:
        return segment_key(self.ids[v] if isinstance(v, int) else v for v in segment)

    def __call__(self, segment):
        us = self.table.get(self.key(segment))
        if us is not None:
            self.hits += 1
            return us
        self.misses += 1
        if self.unknown == "apart" and len(segment) > 1:
            parts = [self.table.get(self.key([v])) for v in segment]
            if all(p is not None for p in parts):
                return sum(parts)
        return None

    def group_us(self, group) -> float | None:
        """The measured time of a group given as node ids or indices, or None."""
        return self.table.get(self.key(group))

    def __len__(self) -> int:
        return len(self.table)


class KernelTimer:
    """Profiles the candidate kernels of one graph for one target (see the module docstring)."""

    def __init__(self, graph, hw, target="cpu", *, max_len: int = MAX_LEN, cutoff: float = CUTOFF,
                 cm=None, cache: Path | str | None = None, flush: str = FLUSH, include_greedy: bool = True,
                 max_kernels: int | None = MAX_KERNELS, threads: int | None = THREADS, spec: str | None = None):
        from engine.devices import targets

        from .cost import CostModel
        from .order import chain_order

        if flush not in FLUSH_MODES:
            raise ValueError(f"flush must be one of {FLUSH_MODES}")
        self.graph, self.hw, self.target = graph, hw, targets.as_target(target)   # parsed once, here
        self.cm = cm or CostModel(graph, hw)
        self.order = chain_order(graph)
        self.max_len, self.cutoff, self.flush = max_len, cutoff, flush
        self.include_greedy, self.max_kernels = include_greedy, max_kernels
        self.spec = spec
        self.threads = threads or usable_cores()
        self.tkey = target_key(self.target, self.threads, flush)
        self.cache = KernelCache(Path(cache) if cache is not None else None, self.tkey, graph.sha256)
        self.stats: dict = {}

    # -- the candidate set --
    def candidates(self) -> list[list[int]]:
        """DP candidates plus greedy's groups, capped to `max_kernels` distinct kernels (see _cap)."""
        segs = candidates(self.cm, self.order, self.max_len, self.cutoff)
        n_dp = len(segs)
        forced = {tuple(s) for s in segs if len(s) == 1}
        if self.include_greedy:
            greedy = greedy_groups(self.graph, self.cm)
            forced |= {tuple(g) for g in greedy}
            have = {tuple(s) for s in segs}
            segs += [g for g in greedy if tuple(g) not in have]
        st = self.stats
        st["candidates"], st["greedy_extra"] = n_dp, len(segs) - n_dp
        st["candidate_kernels"] = len({signature(self.cm, s) for s in segs})
        self.all_candidates = segs
        if self.max_kernels is not None and st["candidate_kernels"] > self.max_kernels:
            segs = self._cap(segs, forced, self.max_kernels)
        st["selected"] = len(segs)
        return segs

    def _cap(self, segs, forced, limit):
        """The segments of the `limit` most useful distinct kernels: single ops and greedy's groups
        first, then by the model's regret (how much slower the best plan that uses the segment is
        than the best plan, in the model's terms); a segment whose kernel is already in is free."""
        reg = regret(self.cm, self.order, segs)
        ranked = sorted(range(len(segs)), key=lambda k: (tuple(segs[k]) not in forced, reg[k]))
        chosen, sigs = [], set()
        for k in ranked:
            sg = signature(self.cm, segs[k])
            if sg in sigs or len(sigs) < limit or tuple(segs[k]) in forced:
                sigs.add(sg)
                chosen.append(k)
        dropped = [reg[k] for k in set(range(len(segs))) - set(chosen)]
        self.stats["capped_regret"] = min(dropped) if dropped else None   # the smallest regret left out
        return [segs[k] for k in sorted(chosen)]

    def keys(self, segs) -> list[str]:
        return [segment_key(self.cm.ids[v] for v in s) for s in segs]

    # -- cached figures --
    def table(self) -> dict[str, float]:
        """segment key -> measured us, for every segment the caches know (no TVM)."""
        seg_hash, times = self.cache.segments(), self.cache.times()
        out = {}
        for k, h in seg_hash.items():
            rec = times.get(h) if h else None
            if isinstance(rec, dict) and isinstance(rec.get("us"), (int, float)) and not rec.get("error") \
                    and not rec.get("busy"):
                out[k] = float(rec["us"])
        return out

    def missing(self, segs) -> list[list[int]]:
        """Segments whose kernel has no figure: not yet extracted, or extracted but not timed."""
        seg_hash, times = self.cache.segments(), self.cache.times()
        out = []
        for s, k in zip(segs, self.keys(segs)):
            h = seg_hash.get(k)
            if h is None or (h and (h not in times or times[h].get("busy"))):   # busy: taken again
                out.append(s)
        return out

    def time_segments(self, segs, progress=None, cancel=None, timeout_s: float = 900, force: bool = False) -> dict:
        """Time these segments' kernels (those without a quiet cached figure, or all with force) in
        one worker run. Returns the worker's stats: built, failed, busy (timed while the machine
        was busy: not trusted, left out), error."""
        todo = list(segs) if force else self.missing(segs)
        if not todo:
            return {"built": 0, "failed": 0, "busy": 0, "error": None}
        self._force = force
        return self._run_worker(todo, progress, cancel, timeout_s, 0, 1)

    def costs(self, unknown: str = "apart") -> MeasuredCosts:
        return MeasuredCosts(self.cm.ids, self.table(), self.stats, unknown)

    # -- profiling --
    def profile(self, progress=None, cancel=None, timeout_s: float = 900, rounds: int = 2,
                force: bool = False) -> dict:
        """Measure every candidate without a cached figure (in a worker process); force=True: every
        candidate, cached or not (their records are replaced). Returns stats."""
        t0 = time.perf_counter()
        segs = self.candidates()
        st = self.stats
        st.update(built=0, cached=0, failed=0, extracted=0, worker_runs=0, rounds=0, error=None)
        todo = list(segs) if force else self.missing(segs)
        self._force = force
        asked = {tuple(s) for s in self.all_candidates}
        for r in range(rounds):
            if not todo:
                break
            st["rounds"] = r + 1
            res = self._run_worker(todo, progress, cancel, timeout_s, r, rounds)
            st["worker_runs"] += 1
            for k in ("built", "failed", "extracted", "extract_s", "compile_s", "time_s", "retimed", "busy"):
                st[k] = st.get(k, 0) + res.get(k, 0)
            if res.get("error"):
                st["error"] = res["error"]
                break
            if r + 1 < rounds:   # what a DP using the measured figures asks that is still unknown
                measured = self.costs("none")
                more = candidates(self.cm, self.order, self.max_len, self.cutoff, costs=measured)
                new = [s for s in more if tuple(s) not in asked]
                asked.update(tuple(s) for s in new)
                todo = self.missing(new)
                if self.max_kernels is not None and len({signature(self.cm, s) for s in todo}) > self.max_kernels // 4:
                    keep = self.stats.get("capped_regret")
                    todo = self._cap(todo, set(), self.max_kernels // 4)
                    self.stats["capped_regret"], self.stats["second_round_capped_regret"] = keep, \
                        self.stats.get("capped_regret")
                st["second_round"] = len(todo)
        self._summarise(segs)
        st["profile_s"] = time.perf_counter() - t0
        if progress:
            progress("done" if st["worker_runs"] else "cached", 1.0)
        return st

    def _summarise(self, segs):
        seg_hash, times = self.cache.segments(), self.cache.times()
        hashes = {seg_hash.get(k) for k in self.keys(segs)} - {None, ""}
        st = self.stats
        st["unique_kernels"] = len(hashes)
        st["measured"] = sum(1 for h in hashes if "us" in (times.get(h) or {}))
        st["cached"] = max(0, st["measured"] - st.get("built", 0))
        table = self.table()
        st["no_figure"] = sum(1 for k in self.keys(segs) if k not in table)

    def _run_worker(self, segs, progress, cancel, timeout_s, rnd, rounds) -> dict:
        g = self.graph
        job = {"spec": self.spec or g.source, "shapes": g.input_shapes, "sha": g.sha256, "block": g.block,
               "segments": [[self.cm.ids[v] for v in s] for s in segs], "target": self.target,
               "tkey": self.tkey, "cache": str(self.cache.folder), "flush": self.flush, "threads": self.threads,
               "force": getattr(self, "_force", False),
               "hw": {**self.hw.to_dict(), "kinds": self.hw.kinds}}
        lo, span = rnd / rounds, 1.0 / rounds
        say = (lambda stage, frac: progress(stage, lo + span * frac)) if progress else None
        try:
            payload = run_in_child(profile_job, job, progress=say, cancel=cancel, timeout_s=timeout_s,
                                   what="profiling worker", threads=job["threads"] or usable_cores())
        except WorkerFault:   # stopped, stuck, or a limit of the system: the command's one line
            raise
        except ChildFailed as e:
            payload = {"error": str(e)}
        if "timed out" in (payload.get("error") or ""):
            payload["error"] += " (figures so far are kept)"
        return payload


def measured_costs(graph, hw, target="cpu", *, progress=None, cancel=None, profile: bool = True,
                   max_len: int = MAX_LEN, cutoff: float = CUTOFF, cm=None, cache=None, flush: str = FLUSH,
                   max_kernels: int | None = MAX_KERNELS, unknown: str = "apart", threads: int | None = THREADS,
                   timeout_s: float = 900, force: bool = False) -> MeasuredCosts:
    """A `costs` callable for dp.segment_dp with measured kernel times (see the module docstring).

    Profiles the candidates without a cached figure first (profile=True; a worker process; progress
    (stage, fraction); a set `cancel` raises runner.Cancelled). Pass the same max_len/cutoff as the
    DP. Segments without a kernel figure: see MeasuredCosts (`unknown`). force=True: every
    candidate is timed again, cached figures or not."""
    timer = KernelTimer(graph, hw, target, max_len=max_len, cutoff=cutoff, cm=cm, cache=cache, flush=flush,
                        max_kernels=max_kernels, threads=threads)
    if profile:
        timer.profile(progress, cancel, timeout_s, force=force)
    else:
        t0 = time.perf_counter()
        segs = timer.candidates()
        timer.stats.update(built=0, failed=0, worker_runs=0, error=None)
        timer._summarise(segs)
        timer.stats["profile_s"] = time.perf_counter() - t0
    return timer.costs(unknown)


# ---- the worker process ----------------------------------------------------------------------

def profile_job(job, say) -> dict:
    from engine.model import loader

    say("loading model", 0.0)
    graph = loader.load(job["spec"], job["shapes"], block=job.get("block"))
    if graph.sha256 != job["sha"]:
        raise RuntimeError("the model file changed since it was planned")
    cache = KernelCache(Path(job["cache"]), job["tkey"], graph.sha256)
    t = job["target"]   # a Target (KernelTimer's own, pickled to the worker as it is)
    say("extracting kernels", 0.02)
    t0 = time.perf_counter()
    seg_hash, funcs, names = extract(graph, job["segments"])
    cache.add_segments(seg_hash)
    extract_s = time.perf_counter() - t0
    times = cache.times()
    todo = list(funcs) if job.get("force") else [h for h in funcs if h not in times or times[h].get("busy")]
    stats = {"extracted": len(seg_hash), "unique": len(funcs), "built": 0, "failed": 0, "extract_s": extract_s,
             "compile_s": 0.0, "time_s": 0.0, "threads": job.get("threads") or 1}
    flush = job["flush"] if t.backend.host_cpu else "none"
    # chunks compiled in parallel (LLVM releases Python's lock: one thread per core), a wave at a
    # time, then timed one after another with nothing else compiling; saved after every chunk
    workers = max(1, min(usable_cores(), len(todo))) if t.backend.host_cpu else 1
    size = max(1, min(CHUNK, -(-len(todo) // workers)))
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    stats["compile_workers"] = workers
    done = 0
    handles: dict[str, tuple] = {}
    records: dict[str, dict] = {}
    stats["busy"] = 0
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers, thread_name_prefix="fuselens-compile") as pool:
        for w in range(0, len(chunks), workers):
            wave = chunks[w:w + workers]
            say(f"building kernels {done}/{len(todo)}", 0.1 + 0.85 * done / max(1, len(todo)))
            c0 = time.perf_counter()
            mods = [schedule_or_error([(h, funcs[h]) for h in c], t, flush) for c in wave]   # Python: one at a time
            futs = [pool.submit(compile_or_error, m, t, c[0]) for m, c in zip(mods, wave)]
            built = [f.result() for f in futs]
            stats["compile_s"] += time.perf_counter() - c0
            for chunk, res in zip(wave, built):
                say(f"timing kernels {done}/{len(todo)}", 0.1 + 0.85 * done / max(1, len(todo)))
                new = build_and_time([(h, funcs[h], names[h]) for h in chunk], t, flush, stats, handles,
                                      busy_check=t.backend.host_cpu and not ignore_load(), compiled=res)
                stats["busy"] += sum(1 for r in new.values() if r.get("busy"))
                cache.add_times(new)
                records.update(new)
                stats["built"] += sum(1 for r in new.values() if "us" in r)
                stats["failed"] += sum(1 for r in new.values() if "error" in r)
                done += len(chunk)
    # a second look, later, at kernels a busy machine may have disturbed
    if records and job.get("hw"):
        from engine.devices.hardware import from_dict

        from .cost import CostModel

        cm = CostModel(graph, from_dict(job["hw"]))
        index = {n.id: i for i, n in enumerate(graph.nodes)}
        first_seg = {}
        for key, h in seg_hash.items():
            first_seg.setdefault(h, key)
        est = {h: cm.group([index[m] for m in first_seg[h].split(",")]).us for h in records if h in first_seg}
        t1 = time.perf_counter()
        for attempt in range(2):
            bad = suspects(records, est)
            if not bad:
                break
            say(f"re-timing {len(bad)} kernels a busy machine may have slowed", 0.96 + 0.02 * attempt)
            for h in bad:
                rt, f, name = handles[h]
                try:
                    mn, med, n = time_kernel(rt, "k" + h, f, device(t), flush)
                except Exception:  # noqa: BLE001 - keep the first figure
                    continue
                r = records[h]
                r.update(us=min(r["us"], mn), median=min(r["median"], med), n=r["n"] + n, retimed=attempt + 1)
            stats["retimed"] = stats.get("retimed", 0) + len(bad)
            cache.add_times({h: records[h] for h in bad})
        stats["time_s"] += time.perf_counter() - t1
    stats["seconds"] = time.perf_counter() - t0
    return stats


def suspects(records: dict[str, dict], est: dict[str, float], spread: float = 2.0, outlier: float = 4.0) -> list[str]:
    """Kernels whose timing looks disturbed: samples spread widely (median > spread x min), or
    measured/estimated more than `outlier` times the typical ratio of the batch."""
    ratios = {h: r["us"] / est[h] for h, r in records.items() if "us" in r and est.get(h, 0) > 0}
    typical = statistics.median(ratios.values()) if ratios else None
    out = []
    for h, r in records.items():
        if "us" not in r:
            continue
        if r.get("median", r["us"]) > spread * r["us"] or (typical and ratios.get(h, 0) > outlier * typical):
            out.append(h)
    return out


def extract(graph, segments) -> tuple[dict[str, str], dict[str, object], dict[str, str]]:
    """Fused PrimFuncs of many candidate groups, with few apply() calls.

    Returns (segment key -> structural hash as hex, "" when the group makes no kernel or TVM could
    not fuse it; hash -> PrimFunc; hash -> a readable name)."""
    import tvm
    import tvm_ffi
    from tvm import relax

    from .apply import apply
    from .order import chain_order

    index = {n.id: i for i, n in enumerate(graph.nodes)}
    pos = {v: k for k, v in enumerate(chain_order(graph))}
    mod = graph.mod
    block = next(b for b in mod["main"].body.blocks if isinstance(b, relax.DataflowBlock))
    var_node = {bd.var: k for k, bd in enumerate(block.bindings)}
    segs = [sorted({index[m] for m in s}) for s in segments]

    # pack: non-overlapping ranges of one topological order are a legal plan together
    batches: list[tuple[set, list[int]]] = []
    for si, s in enumerate(segs):
        p = [pos[v] for v in s]
        if max(p) - min(p) + 1 == len(s):
            for used, members in batches:
                if used.isdisjoint(s):
                    used.update(s)
                    members.append(si)
                    break
            else:
                batches.append((set(s), [si]))
        else:
            batches.append((set(s), [si]))   # not a range: alone

    seg_hash: dict[str, str] = {}
    funcs: dict[str, object] = {}
    names: dict[str, str] = {}
    call_tir_op = tvm.ir.Op.get("relax.call_tir")

    def run(batch: list[int]) -> bool:
        bsegs = [segs[si] for si in batch]
        inb = set().union(*bsegs)
        groups = [[graph.nodes[v].id for v in s] for s in bsegs]
        groups += [[n.id] for i, n in enumerate(graph.nodes) if i not in inb]
        try:
            new = apply(graph, groups)
        except Exception:  # noqa: BLE001 - PlanError or a TVM error: retry the batch's groups alone
            return False
        where = group_of(bsegs)
        found: dict[int, object] = {}
        nblock = next(b for b in new["main"].body.blocks if isinstance(b, relax.DataflowBlock))
        for bd in nblock.bindings:
            val = bd.value
            if not isinstance(val, relax.Call) or not _is_call_tir(val, call_tir_op):
                continue
            k = var_node.get(bd.var)
            if k is not None:
                gi = where.get(k)
            else:
                m = re.fullmatch(r"g(\d+)_out", bd.var.name)
                gi = int(m.group(1)) if m else None
            if gi is None or gi >= len(bsegs) or gi in found:
                continue
            found[gi] = (val.args[0].name_hint, new[val.args[0]])
        for gi, si in enumerate(batch):
            key = segment_key(graph.nodes[v].id for v in segs[si])
            if gi not in found:
                seg_hash[key] = ""
                continue
            name, f = found[gi]
            h = format(tvm_ffi.structural_hash(f) & ((1 << 64) - 1), "016x")
            seg_hash[key] = h
            funcs.setdefault(h, f)
            names.setdefault(h, name)
        return True

    for _, batch in batches:
        if not run(batch):
            for si in batch:
                if not run([si]):
                    seg_hash[segment_key(graph.nodes[v].id for v in segs[si])] = ""
    return seg_hash, funcs, names


def _is_call_tir(call, op) -> bool:
    o = call.op
    if op is not None:
        return o.same_as(op)
    return getattr(o, "name", "") == "relax.call_tir"
