"""ONNX Runtime's own per-node profile of a model, mapped back to the model's ONNX nodes.

    prof = profile(graph, runs=20, threads=2)    # runs ORT with SessionOptions.enable_profiling
    prof.nodes        # [OrtNode]: ORT's node name, op, median us over the runs, the ONNX nodes it covers
    prof.unmatched    # ORT nodes that cover no ONNX node of the model (layout reorders ORT inserts)
    prof.missing      # ONNX nodes no ORT node covers (removed or folded by ORT's optimizer)

ORT runs the shape-frozen model the loader keeps (loader.frozen_path), on the CPU execution provider,
`threads` intra-op threads (2 by default, one per usable core, as FuseLens' runner; inter-op 1), with
its default optimizations (ORT_ENABLE_ALL), so what it times is what `bench` compares against. The
profile JSON and the optimized model ORT saves are written into a temporary folder that is removed.

How ORT's nodes are mapped back. ORT's optimizer fuses nodes and renames them: Conv + BatchNorm +
Clip becomes one `Conv` named after one of them plus `_nchwc` (NchwcTransformer), a residual Add is
absorbed into the NCHWc convolution before it as its Sum input, reorders (`ReorderInput`,
`ReorderOutput`) are inserted with names of their own. The profile only names the surviving node, so:
  1. each ORT node whose name is an ONNX node's name, or one followed by `_suffix` (the longest such
     name), represents that ONNX node;
  2. every other ONNX node u joins a neighbour: the first represented nodes downstream of u through
     unrepresented ones (ORT's fused node absorbed its producers), else upstream of u (it absorbed a
     consumer, as the Sum of an NCHWc Conv), where that choice agrees with ORT's optimized graph
     (saved by ORT beside the profile): u's other neighbours must be that ORT node's producers
     (downstream choice) or consumers (upstream choice), through ORT's inserted nodes;
  3. ONNX nodes neither choice fits are `missing` (ORT removed or folded them).
Unnamed ONNX nodes cannot be matched by name: they are `missing`, and `note` says so.
"""
from __future__ import annotations

import json
import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field

from engine.util.errors import FuseLensError

THREADS = 2   # as the runner: one TVM thread per usable core on this 2-core machine (clamped to usable_cores)


@dataclass
class OrtNode:
    name: str                     # ORT's node name (as in its profile, without "_kernel_time")
    op: str                       # ORT's op type (Conv, ReorderOutput, ...)
    us: float                     # median over the runs
    samples: list = field(default_factory=list)
    onnx_nodes: list = field(default_factory=list)   # the model's ONNX node names it covers


@dataclass
class OrtProfile:
    nodes: list                   # [OrtNode], in execution order
    runs: int
    threads: int
    total_us: float               # median over the runs of the sum of the node times
    run_us: float                 # median over the runs of ORT's whole run (its "model_run" events)
    missing: list = field(default_factory=list)    # ONNX node names no ORT node covers
    note: str = ""

    @property
    def unmatched(self) -> list:
        return [n for n in self.nodes if not n.onnx_nodes]

    def covering(self) -> dict[str, str]:
        """ONNX node name -> the ORT node that covers it."""
        return {o: n.name for n in self.nodes for o in n.onnx_nodes}

    def to_dict(self) -> dict:
        return {"runs": self.runs, "threads": self.threads, "total_us": self.total_us, "run_us": self.run_us,
                "missing": self.missing, "note": self.note,
                "nodes": [{k: v for k, v in asdict(n).items() if k != "samples"} for n in self.nodes]}


# ---- parsing ---------------------------------------------------------------------------------------

def parse_events(events) -> tuple[dict[str, list[float]], dict[str, str], list[str], list[float]]:
    """ORT's profile (the JSON list of trace events) -> (node name -> its kernel time in each run,
    node name -> op type, node names in execution order, each run's duration us). Node events are
    `{"cat": "Node", "name": "<node>_kernel_time", "dur": us, "args": {"op_name": ...}}`; runs are the
    Session events named "model_run" (older ORT) or "SequentialExecutor::Execute"."""
    if not isinstance(events, list):
        raise ValueError("an ONNX Runtime profile is a JSON list of events")
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if isinstance(e, dict) and e.get("cat") == "Session"
                  and e.get("name") in ("model_run", "SequentialExecutor::Execute") and _num(e.get("ts"), e.get("dur")))
    # "model_run" encloses "SequentialExecutor::Execute" when both are there: keep the outer spans
    spans: list[tuple[float, float]] = []
    for s in runs:
        if spans and s[0] >= spans[-1][0] and s[1] <= spans[-1][1]:
            continue
        spans.append(s)
    per: dict[str, list[float]] = {}
    ops: dict[str, str] = {}
    order: list[str] = []
    run_of: dict[str, list[tuple[int, float]]] = {}
    for e in events:
        if not (isinstance(e, dict) and e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")
                and _num(e.get("ts"), e.get("dur"))):
            continue
        name = e["name"][: -len("_kernel_time")]
        if name not in ops:
            order.append(name)
            ops[name] = str((e.get("args") or {}).get("op_name", ""))
        k = next((i for i, (a, b) in enumerate(spans) if a <= e["ts"] <= b), -1)
        run_of.setdefault(name, []).append((k, float(e["dur"])))
    for name, xs in run_of.items():
        by_run: dict[int, float] = {}
        for k, d in xs:
            by_run[k] = by_run.get(k, 0.0) + d     # a node that runs twice in one run counts once, summed
        per[name] = [by_run[k] for k in sorted(by_run)]
    return per, ops, order, [b - a for a, b in spans]


def _num(*xs) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)


# ---- mapping ORT's nodes back to the model's ONNX nodes ------------------------------------------

def match(onnx_graph, ort_graph, ort_names) -> tuple[dict[str, list[str]], list[str]]:
    """(ORT node name -> the ONNX node names it covers, ONNX nodes no ORT node covers): the module
    docstring's rules. `onnx_graph`, `ort_graph`: onnx GraphProtos (the model, ORT's optimized
    model); `ort_names`: the ORT node names to map (the profile's)."""
    names = [n.name for n in onnx_graph.node if n.name]
    known = set(names)
    rep: dict[str, str] = {}        # ORT name -> the ONNX node it represents
    for o in ort_names:
        if o in known:
            rep[o] = o
            continue
        best = max((n for n in known if o.startswith(n + "_")), key=len, default=None)
        if best is not None and best not in rep.values():
            rep[o] = best
    owner = {v: k for k, v in rep.items()}        # ONNX node -> ORT node
    # the ONNX graph's node edges
    prod = {t: n.name for n in onnx_graph.node if n.name for t in n.output}
    succ: dict[str, set] = {n: set() for n in names}
    pred: dict[str, set] = {n: set() for n in names}
    for n in onnx_graph.node:
        if not n.name:
            continue
        for t in n.input:
            p = prod.get(t)
            if p and p != n.name:
                pred[n.name].add(p)
                succ[p].add(n.name)
    # ORT's optimized graph: producers and consumers of each ORT node, through nodes that represent none
    oprod = {t: n.name for n in ort_graph.node for t in n.output}
    o_in: dict[str, set] = {n.name: {oprod[t] for t in n.input if t in oprod} for n in ort_graph.node}
    o_out: dict[str, set] = {n.name: set() for n in ort_graph.node}
    for n, ps in o_in.items():
        for p in ps:
            o_out[p].add(n)

    def reached(todo, edges, keep) -> set:
        """The nodes of `keep` reached from `todo` along `edges`, passing through nodes not in `keep`."""
        seen, out, todo = set(), set(), list(todo)
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            if x in keep:
                out.add(x)
            else:
                todo.extend(edges.get(x, ()))
        return out

    def through(start, edges) -> set:
        """The represented ORT nodes reached from `start` along `edges`, passing ORT's own nodes."""
        return reached(edges.get(start, ()), edges, rep)

    def first(u, edges) -> set:
        """The represented ONNX nodes reached from u along `edges` through unrepresented ones."""
        return reached(edges[u], edges, owner)

    cover: dict[str, list[str]] = {o: [n] for o, n in rep.items()}
    assigned = dict(owner)          # ONNX node -> ORT node, filled in graph (topological) order
    missing = []
    for u in names:
        if u in assigned:
            continue
        ins = {assigned[p] for p in pred[u] if p in assigned}
        outs = {assigned[c] for c in succ[u] if c in assigned}
        chosen = None
        for x in sorted(first(u, succ)):   # ORT's node absorbed u, its producer
            ox = owner[x]
            if ins <= through(ox, o_in) | {ox}:
                chosen = ox
                break
        if chosen is None:                 # ORT's node absorbed u, its consumer (a Conv's Sum input)
            for ox in sorted(ins) or sorted(owner[x] for x in first(u, pred)):
                if (ins - {ox}) <= through(ox, o_in) | {ox} and outs <= through(ox, o_out) | {ox}:
                    chosen = ox
                    break
        if chosen is None:
            missing.append(u)
        else:
            assigned[u] = chosen
            cover[chosen].append(u)
    order = {n: k for k, n in enumerate(names)}
    return {o: sorted(v, key=order.__getitem__) for o, v in cover.items()}, missing


# ---- running ORT ------------------------------------------------------------------------------------

class Profiler:
    """A profiling ORT session on `graph`'s frozen model, to interleave its runs with other work:

        prof = Profiler(graph, threads=2)   # session made, one warm-up run (not counted)
        prof.run()                          # one profiled run, as often as wanted
        result = prof.finish()              # OrtProfile; the temporary folder is removed

    Raises FuseLensError with one line when ORT cannot load or run the model."""

    def __init__(self, graph, threads: int | None = None, inputs=None):
        import onnxruntime as ort

        from engine.kernels.build import random_inputs
        from engine.model.loader import frozen_path
        from engine.util.cpus import usable_cores

        from .ort_check import ort_feed

        self.graph = graph
        self.threads = max(1, min(threads or THREADS, usable_cores()))
        self.path = str(frozen_path(graph))
        self.runs = 0
        self._dir = tempfile.TemporaryDirectory(prefix="fuselens-ortprof-")
        d = self._dir.name
        so = self._so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = self.threads, 1
        so.log_severity_level = 3          # the optimized model's "hardware specific" warning is expected
        # ORT's pool spins on after a run ends and steals the cores from whatever runs next (our kernels,
        # when the runs are interleaved); this stops it at the end of each run, not during one
        so.add_session_config_entry("session.force_spinning_stop", "1")
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(d, "ort")
        so.optimized_model_filepath = os.path.join(d, "optimized.onnx")
        try:
            self.sess = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
            self.feed = ort_feed(self.sess, graph, inputs if inputs is not None else random_inputs(graph, seed=0))
            self.sess.run(None, self.feed)     # warm-up: profiled too, dropped in finish() (the first run)
        except Exception as e:  # noqa: BLE001 - ORT's own errors: one line
            self._dir.cleanup()
            raise FuseLensError(f"ONNX Runtime could not profile {graph.name}: {_line(e)}") from None

    def run(self) -> None:
        try:
            self.sess.run(None, self.feed)
        except Exception as e:  # noqa: BLE001
            raise FuseLensError(f"ONNX Runtime could not profile {self.graph.name}: {_line(e)}") from None
        self.runs += 1

    def finish(self) -> OrtProfile:
        import onnx

        try:
            prof_file = self.sess.end_profiling()
            with open(prof_file) as f:
                events = json.load(f)
            opt_path = self._so.optimized_model_filepath
            opt = onnx.load(opt_path).graph if os.path.exists(opt_path) else None
        except (OSError, ValueError) as e:
            raise FuseLensError(f"ONNX Runtime's profile of {self.graph.name} could not be read: {_line(e)}") from None
        finally:
            self.sess = None
            self._dir.cleanup()
        return build_profile(events, onnx.load(self.path, load_external_data=False).graph, opt, self.runs, self.threads)


def _line(e) -> str:
    msg = str(e).strip().splitlines()
    return (msg[-1] if msg else type(e).__name__)[:300]


def build_profile(events, model_graph, optimized_graph, runs: int, threads: int) -> OrtProfile:
    """An OrtProfile from ORT's profile events (the warm-up run first, dropped when there are more
    than `runs` runs), the model's ONNX graph and ORT's optimized graph (None: the model's)."""
    per, ops, order, spans = parse_events(events)
    per = {k: v[1:] if len(v) > runs else v for k, v in per.items()}   # drop the warm-up run
    spans = spans[1:] if len(spans) > runs else spans
    cover, missing = match(model_graph, optimized_graph if optimized_graph is not None else model_graph, order)
    unnamed = sum(not n.name for n in model_graph.node)
    nodes = [OrtNode(name=n, op=ops[n], us=statistics.median(per[n]), samples=per[n], onnx_nodes=cover.get(n, []))
             for n in order if per.get(n)]
    n_runs = max((len(v) for v in per.values()), default=0)
    totals = [sum(v[k] for v in per.values() if k < len(v)) for k in range(n_runs)]
    note = f"{unnamed} ONNX nodes have no name and cannot be matched" if unnamed else ""
    return OrtProfile(nodes=nodes, runs=runs, threads=threads, total_us=statistics.median(totals) if totals else 0.0,
                      run_us=statistics.median(spans) if spans else 0.0, missing=missing, note=note)


def profile(graph, runs: int = 20, threads: int | None = None, inputs=None, progress=None) -> OrtProfile:
    """ORT's per-node profile of `graph`'s frozen model: `runs` profiled runs after one warm-up, on
    `threads` intra-op threads (THREADS, at most the usable cores)."""
    p = Profiler(graph, threads, inputs)
    try:
        for k in range(runs):
            p.run()
            if progress:
                progress("ONNX Runtime profile", (k + 1) / runs)
    except BaseException:
        p.sess = None
        p._dir.cleanup()
        raise
    return p.finish()


__all__ = ["OrtNode", "OrtProfile", "Profiler", "profile", "build_profile", "parse_events", "match", "THREADS"]
