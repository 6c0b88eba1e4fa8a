"""An ONNX Runtime profile file a user made (SessionOptions.enable_profiling), read and laid over a plan.

    prof = read(path, graph)              # OrtProfile (engine/measure/ort_profile.py); FuseLensError: one line
    us = group_times(prof, graph, plan.groups)   # ORT's time per group of any plan (None: no ORT node there)
    summary(prof, graph)                  # "23 ORT nodes, 1.84 ms per run (median of 10 runs) ..."

The file is ORT's Chrome trace: a JSON list of events (or an object holding it as "traceEvents"); a
node's time is an event `{"cat": "Node", "name": "<node>_kernel_time", "dur": us, "ts": us, "args":
{"op_name": ...}}`, a run a "Session" event named "model_run" or "SequentialExecutor::Execute".
Every number is checked (engine/util/numbers.py: finite, a duration from 0 to MAX_DUR_US, no NaN or
Infinity); the file must be a regular file of at most MAX_BYTES; a file that is not such a profile, or
whose nodes are none of the model's, gets one line saying so. Nothing is run and nothing is cached.

ORT's node names are mapped to the model's ONNX nodes as for FuseLens' own ORT runs (ort_profile.match:
a node named as an ONNX node, or as one plus `_suffix`, represents it; ONNX nodes ORT fused away join
the neighbour that absorbed them), with the model's own graph standing in for ORT's optimized one,
which the user's run did not save. A node's time is shared evenly among the operators (OpGraph nodes)
of the ONNX nodes it covers; a group's time is the sum over its operators. Several runs: each node's
median over the runs (the first, warm-up run included: a profile file says nothing of which it is).
"""
from __future__ import annotations

import statistics

from engine.util.errors import FuseLensError
from engine.util.numbers import finite, loads

MAX_BYTES = 256 << 20          # a profile of 10,000 nodes x 1,000 runs is about 2 GB; this keeps it sane
MAX_DUR_US = 1e10              # about 3 hours: no kernel runs longer
RUN_NAMES = ("model_run", "SequentialExecutor::Execute")


class ProfileError(FuseLensError):
    """A file that is not a usable ONNX Runtime profile for this model: one line saying why."""


def _fail(path, why: str):
    from engine.util.stdio import one_value

    return ProfileError(f"{one_value(path)[:200]}: {why}")


def events_of(path) -> list:
    """The trace events of the profile file `path`, checked (the module docstring). Raises ProfileError."""
    from engine.util.cache_dir import FileTooLargeError, NotRegularFileError, read_file

    try:
        data = read_file(path, MAX_BYTES)
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except IsADirectoryError:
        raise _fail(path, "is a folder, not an ONNX Runtime profile") from None
    except NotRegularFileError:
        raise _fail(path, "is not a regular file (a device, pipe or socket)") from None
    except FileTooLargeError as e:
        raise _fail(path, f"the file is {e.strerror}") from None
    except PermissionError:
        raise _fail(path, "permission denied (cannot read the file)") from None
    except OSError as e:
        raise _fail(path, f"cannot read the file ({e.strerror or type(e).__name__})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(path, "not an ONNX Runtime profile (not UTF-8 text; ORT writes JSON)") from None
    del data
    try:
        d = loads(text)
    except RecursionError:
        raise _fail(path, "not an ONNX Runtime profile (JSON nested too deeply)") from None
    except ValueError as e:
        raise _fail(path, f"not an ONNX Runtime profile (not valid JSON: {str(e).splitlines()[0][:120]})") from None
    if isinstance(d, dict) and isinstance(d.get("traceEvents"), list):
        d = d["traceEvents"]
    if not isinstance(d, list):
        raise _fail(path, "not an ONNX Runtime profile (ORT writes a JSON list of trace events)")
    out = []
    nodes = 0
    for k, e in enumerate(d):
        if not isinstance(e, dict):
            continue
        cat, name = e.get("cat"), e.get("name")
        is_node = cat == "Node" and isinstance(name, str) and name.endswith("_kernel_time")
        is_run = cat == "Session" and name in RUN_NAMES
        if not (is_node or is_run):
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not finite(ts, 0, 1e18) or not finite(dur, 0, MAX_DUR_US):
            raise _fail(path, f"a damaged profile: event {k} ({'node' if is_node else 'run'}) has "
                              f"{'ts' if not finite(ts, 0, 1e18) else 'dur'} that is not a time in microseconds")
        if is_node:
            if len(name) > 4096:
                raise _fail(path, f"a damaged profile: event {k} has a node name of {len(name)} characters")
            args = e.get("args")
            op = args.get("op_name", "") if isinstance(args, dict) else ""
            e = {"cat": "Node", "name": name, "ts": ts, "dur": dur, "args": {"op_name": str(op)[:200]}}
            nodes += 1
        else:
            e = {"cat": "Session", "name": name, "ts": ts, "dur": dur}
        out.append(e)
    if not nodes:
        raise _fail(path, "holds no node timings (no \"cat\": \"Node\" events named <node>_kernel_time): make it "
                          "with ONNX Runtime's SessionOptions.enable_profiling = True")
    return out


def _model_graph(graph):
    """The model's ONNX GraphProto (the frozen model the loader keeps), or None without one."""
    try:
        import onnx

        from engine.model.loader import frozen_path

        return onnx.load(str(frozen_path(graph)), load_external_data=False).graph
    except Exception:  # noqa: BLE001 - a generated graph, or no cache entry: names only
        return None


def _names_graph(graph):
    """A stand-in GraphProto from the OpGraph's ONNX names (a graph with no ONNX file): node names and
    the edges between them."""
    from onnx import helper

    by_name: dict[str, list] = {}
    for n in graph.nodes:
        if n.onnx_name:
            by_name.setdefault(n.onnx_name, []).append(n)
    where = {n.id: n.onnx_name for n in graph.nodes if n.onnx_name}
    nodes = []
    for name, ns in by_name.items():
        ins = sorted({where[i] for n in ns for i in n.inputs if where.get(i) and where[i] != name})
        nodes.append(helper.make_node("Op", [f"{i}:out" for i in ins], [f"{name}:out"], name=name))
    return helper.make_graph(nodes, "names", [], [])


def _by_output(model, ort_names) -> dict[str, str]:
    """ORT node name -> the ONNX node it stands for, for ORT names that are no node's name (nor one
    plus `_suffix`) but an output tensor's, or one plus `_suffix`: ORT names a fused node after its
    output where the model's nodes carry other names (Paddle's exports: node `p2o.Conv.3`, its output
    `conv2d_53.tmp_0`, ORT's node `conv2d_53.tmp_0_nchwc`). Each ONNX node is taken once."""
    known = {n.name for n in model.node if n.name}
    out_of = {t: n.name for n in model.node if n.name for t in n.output if t}
    taken, alias = set(), {}
    for o in ort_names:
        if o in known or any(o.startswith(n + "_") for n in known):
            taken.add(o)
    for o in ort_names:
        if o in taken:
            continue
        best = o if o in out_of else max((t for t in out_of if o.startswith(t + "_")), key=len, default=None)
        if best is not None and out_of[best] not in taken and out_of[best] not in alias.values():
            alias[o] = out_of[best]
    return alias


def _as_ort_graph(model, ort_names):
    """The model's graph with each ONNX node an ORT node represents (its name, or its name plus
    `_suffix`: ort_profile.match's first rule) renamed to that ORT node: the stand-in for ORT's
    optimized graph, which match() walks to place the ONNX nodes ORT fused away."""
    from onnx import helper

    known = {n.name for n in model.node if n.name}
    owner: dict[str, str] = {}
    for o in ort_names:
        best = o if o in known else max((n for n in known if o.startswith(n + "_")), key=len, default=None)
        if best is not None and best not in owner:
            owner[best] = o
    nodes = [helper.make_node(n.op_type, list(n.input), list(n.output), name=owner.get(n.name, n.name))
             for n in model.node]
    return helper.make_graph(nodes, "ort", [], [])


def read(path, graph):
    """The OrtProfile of the profile file `path` mapped onto `graph`'s ONNX nodes. Raises ProfileError
    (one line) for a file that is not an ORT profile, is damaged, or names none of the model's nodes."""
    from .ort_profile import OrtNode, OrtProfile, match, parse_events

    events = events_of(path)
    per, ops, order, spans = parse_events(events)
    model = _model_graph(graph) or _names_graph(graph)
    alias = _by_output(model, order)
    named = [alias.get(o, o) for o in order]
    try:
        cover, missing = match(model, _as_ort_graph(model, named), named)
    except RecursionError:
        cover, missing = {}, []
    nodes = [OrtNode(name=n, op=ops[n], us=statistics.median(per[n]), samples=[],
                     onnx_nodes=cover.get(alias.get(n, n), [])) for n in order if per.get(n)]
    ours = {n.onnx_name for n in graph.nodes if n.onnx_name}
    if not any(set(n.onnx_nodes) & ours for n in nodes):
        first = ", ".join(repr(n.name[:40]) for n in nodes[:3])
        raise _fail(path, f"none of its {len(nodes)} nodes ({first}{' ...' if len(nodes) > 3 else ''}) is a node "
                          f"of {graph.name}: is it a profile of another model?")
    runs = max((len(v) for v in per.values()), default=0)
    totals = [sum(v[k] for v in per.values() if k < len(v)) for k in range(runs)]
    unnamed = sum(1 for n in model.node if not n.name)
    return OrtProfile(nodes=nodes, runs=max(len(spans), runs), threads=0,
                      total_us=statistics.median(totals) if totals else 0.0,
                      run_us=statistics.median(spans) if spans else 0.0, missing=missing,
                      note=f"{unnamed} ONNX nodes have no name and cannot be matched" if unnamed else "")


def op_times(prof, graph) -> dict[str, float]:
    """ORT's time per operator (OpGraph node id): each ORT node's median shared evenly among the
    operators of the ONNX nodes it covers."""
    ops_of: dict[str, list[str]] = {}
    for n in graph.nodes:
        if n.onnx_name:
            ops_of.setdefault(n.onnx_name, []).append(n.id)
    out: dict[str, float] = {}
    for node in prof.nodes:
        ids = [i for o in node.onnx_nodes for i in ops_of.get(o, [])]
        for i in ids:
            out[i] = out.get(i, 0.0) + node.us / len(ids)
    return out


def group_times(prof, graph, groups) -> list:
    """ORT's time per group of `groups` (the sum over its operators), None for a group none of ORT's
    nodes covers."""
    per = op_times(prof, graph)
    out = []
    for g in groups:
        xs = [per[m] for m in g if m in per]
        out.append(sum(xs) if xs else None)
    return out


def summary(prof, graph) -> str:
    """One line: how many of ORT's nodes, their time per run, how many map onto the model."""
    matched = sum(1 for n in prof.nodes if n.onnx_nodes)
    per_run = f"{prof.total_us / 1000:.3f} ms in nodes per run" + (f" (median of {prof.runs} runs)" if prof.runs > 1 else "")
    s = f"{len(prof.nodes)} ONNX Runtime nodes, {per_run}; {matched} of them map onto {graph.name}'s nodes"
    if prof.missing:
        s += f", {len(prof.missing)} of its ONNX nodes have no ORT time"
    return s


__all__ = ["read", "events_of", "op_times", "group_times", "summary", "ProfileError", "MAX_BYTES"]
