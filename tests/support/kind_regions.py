"""Regions of real models that the fusion-kind tests and their benchmarks share
(tests/{integration,unit}/test_chain_rules.py and scripts/bench_kinds_chain.py: inverted-residual chains;
tests/{integration,unit}/test_stage_rules.py and scripts/bench_kinds_stages.py: squeeze-and-excitation regions and the
test transformer with split Q/K/V projections)."""
from __future__ import annotations

from pathlib import Path

TRANSFORMER = Path(__file__).resolve().parents[1] / "data" / "transformer_dynamo_export.onnx"


# ---- inverted-residual chains (cpu.Chain) -----------------------------------------------------------

def chain_groups(graph, groups):
    """Merge the greedy groups of each inverted residual (expand -> depthwise -> project, or
    depthwise -> project when there is no expand) into one group. A depthwise convolution is a
    conv2d node whose output has as many channels as its input and whose FLOPs per output element
    are 2*k*k; its group is merged with the producer group when that is a conv group used only by
    it, and with the consumer group when that is a conv group and its only consumer."""
    where = {m: gi for gi, g in enumerate(groups) for m in g}

    def conv_of(g):  # an NCHW conv2d or a blocked one (conv2d_nchwc, conv2d_nchwc_dw)
        return next((m for m in g if graph.by_id[m].op == "conv2d" or graph.by_id[m].op.startswith("conv2d_nchwc")),
                    None)

    def in_channels(node):
        if node.inputs:
            return graph.by_id[node.inputs[0]].shape[1]
        return next(iter(graph.input_shapes.values()))[1]

    def is_dw(node):
        per = node.flops / max(1, numel(node.shape))
        return node.shape[1] == in_channels(node) and per in (2 * 9, 2 * 25)

    def out_groups(gi):
        outs = set()
        for m in groups[gi]:
            for c in graph.consumers[m]:
                if where[c] != gi:
                    outs.add(where[c])
        return outs

    def in_groups(gi):
        ins = set()
        for m in groups[gi]:
            for p in graph.by_id[m].inputs:
                if where[p] != gi:
                    ins.add(where[p])
        return ins

    merged, used = [], set()
    for gi, g in enumerate(groups):
        c = conv_of(g)
        if c is None or not is_dw(graph.by_id[c]) or gi in used:
            continue
        part = [gi]
        ins = in_groups(gi)
        if len(ins) == 1:
            p = next(iter(ins))
            if p not in used and conv_of(groups[p]) and out_groups(p) == {gi} and \
                    not is_dw(graph.by_id[conv_of(groups[p])]):
                part.insert(0, p)
        outs = out_groups(gi)
        if len(outs) == 1:
            q = next(iter(outs))
            if q not in used and conv_of(groups[q]) and in_groups(q) <= {gi} | set(in_groups(part[0])) and \
                    not is_dw(graph.by_id[conv_of(groups[q])]):
                part.append(q)
        if len(part) >= 2:
            merged.append(part)
            used.update(part)
    out = [list(g) for gi, g in enumerate(groups) if gi not in used]
    for part in merged:
        out.append([m for gi in part for m in groups[gi]])
    return out


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ---- squeeze-and-excitation regions and the Q/K/V transformer (cpu.Stages) --------------------------

def split_qkv(model) -> int:
    """In place: every MatMul(x, W[D, 3D]) (a packed Q/K/V in-projection; with its Add(b[3D]) if
    there is one) becomes three MatMuls reading x (and three Adds) and a Concat of their outputs.
    Returns the number of projections split."""
    import numpy as np
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes = list(g.node)
    out, n_split, skip = [], 0, set()
    for i, nd in enumerate(nodes):
        if i in skip:
            continue
        w = inits.get(nd.input[1]) if nd.op_type == "MatMul" and len(nd.input) == 2 else None
        if w is None or len(w.dims) != 2 or w.dims[1] != 3 * w.dims[0]:
            out.append(nd)
            continue
        d = w.dims[0]
        weights = numpy_helper.to_array(w)
        add_i = next((j for j, m in enumerate(nodes) if m.op_type == "Add" and nd.output[0] in m.input and
                      any(x in inits and list(inits[x].dims) == [3 * d] for x in m.input)), None)
        bias = b_name = None
        if add_i is not None:
            b_name = next(x for x in nodes[add_i].input if x != nd.output[0])
            bias = numpy_helper.to_array(inits[b_name])
            skip.add(add_i)
        parts = []
        for k, tag in enumerate("qkv"):
            wn = f"{nd.input[1]}_{n_split}{tag}"
            g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(weights[:, k * d:(k + 1) * d]), wn))
            mm = f"{nd.output[0]}_{tag}"
            out.append(helper.make_node("MatMul", [nd.input[0], wn], [mm], name=f"{nd.name}_{tag}"))
            if bias is not None:
                bn = f"{b_name}_{n_split}{tag}"
                g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(bias[k * d:(k + 1) * d]), bn))
                out.append(helper.make_node("Add", [mm, bn], [mm + "_b"], name=f"{nd.name}_{tag}_bias"))
                mm += "_b"
            parts.append(mm)
        final = nodes[add_i].output[0] if bias is not None else nd.output[0]
        out.append(helper.make_node("Concat", parts, [final], axis=-1, name=f"{nd.name}_qkv"))
        n_split += 1
    del g.node[:]
    g.node.extend(out)
    return n_split


def qkv_transformer(out_dir, seq: int = 128) -> str:
    """The test transformer with static shapes (input_ids [1, seq]) and separate Q/K/V matmuls,
    saved in out_dir; returns its path. The shapes are frozen first (onnxsim) and the split done
    after: onnxsim would merge three MatMuls that read one input back into one, and the loader
    does not simplify a model that is already static."""
    import onnx

    from engine.model import onnx_input

    src = onnx_input.read(TRANSFORMER)
    shapes = onnx_input.resolve_shapes(src, {"input_ids": [1, seq]}, str(TRANSFORMER))
    frozen = onnx_input.freeze(src, shapes, str(TRANSFORMER))
    if split_qkv(frozen) == 0:
        raise RuntimeError("no packed Q/K/V projection found")
    onnx.checker.check_model(frozen)
    path = Path(out_dir) / f"transformer_qkv_{seq}.onnx"
    onnx.save(frozen, str(path))
    return str(path)


def se_regions(graph, greedy_groups, which: int) -> dict[str, list[list[str]]]:
    """The greedy groups that make up squeeze-and-excitation block `which` (0-based) of an
    EfficientNet: {"A": [mean], [conv1 ...]], "B": + [conv2 ... scale], "C": + [projection conv]}."""
    means = [gi for gi, grp in enumerate(greedy_groups)
             if any(graph.by_id[m].op == "mean" and len(graph.by_id[m].shape) == 4 for m in grp)]
    gi = means[which]
    return {v: [list(greedy_groups[k]) for k in range(gi, gi + n)] for v, n in (("A", 2), ("B", 3), ("C", 4))}
