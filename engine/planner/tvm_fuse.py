"""Strategy "tvm": run TVM's own `relax.transform.FuseOps` and read its groups back onto our node ids.

How the groups are mapped back (exactly, with no guessing from names or shapes):

1. Tag every binding of main's dataflow block(s) before running FuseOps (on a copy of `graph.mod`):
   - every `call_tir` gets its own GlobalVar, `__fl_n17`, bound to the *same* PrimFunc object. FuseOps
     reads only the PrimFunc's `op_pattern` attr, so the partition is unchanged; but the callee names now
     identify the node wherever the binding ends up (a singleton left in main, or the body of a grouped
     function, where the output bindings are renamed `gv`). It also stops the BlockBuilder from
     de-duplicating two structurally equal grouped functions (two identical conv+bn+relu blocks would
     otherwise share one function, and so one body, between two groups).
   - every other binding value (tuple, tuple-get-item, other calls) gets a Span whose source name is
     `fuselens:n17`; spans are kept by the mutators FuseOps uses. Bindings without a taggable value
     (match_cast) are found by their unchanged variable.
2. Walk the fused main in order. A call to a function with attr Primitive is one group: the nodes named
   by its body's callees/spans. A tuple-get-item whose tuple is defined outside its group is not in the
   body: FuseOps passes the item instead ("partially used tuple parameter"), emitting a fresh, untagged
   `lv = tup[i]` in main. Such an argument is resolved to the original get-item node on (tuple, index).
   Fresh get-items on a multi-output group call are just output remaps. Any other binding is a singleton.
3. Check that every node landed in exactly one group; otherwise raise PlanError (never return a wrong plan).
"""
from __future__ import annotations

import time

from engine.util.errors import PlanError

from .plan import Plan, PlanResult

GV_PREFIX = "__fl_"
SPAN_PREFIX = "fuselens:"


def plan(graph, hw=None, max_depth: int | None = None) -> PlanResult:
    """FuseOps' partition of `graph` (under the current PassContext; `max_depth` overrides its
    "relax.FuseOps.max_depth")."""
    import tvm
    from tvm import relax

    t0 = time.perf_counter()
    mod = graph.mod
    if mod is None:
        raise PlanError(f"{graph.name}: no Relax module to run FuseOps on "
                        "(the tvm strategy needs the imported model)")
    tagged, origin = _tag(mod, graph)
    if max_depth is None:
        fused = relax.transform.FuseOps()(tagged)
    else:
        cur = tvm.transform.PassContext.current()
        config = dict(cur.config) if cur.config is not None else {}
        config["relax.FuseOps.max_depth"] = int(max_depth)
        with tvm.transform.PassContext(opt_level=cur.opt_level, config=config):
            fused = relax.transform.FuseOps()(tagged)
    groups = _read_groups(fused, graph, origin)
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    groups = sorted((sorted(g, key=order.__getitem__) for g in groups), key=lambda g: order[g[0]])
    depth = max_depth if max_depth is not None else _current_max_depth()
    return PlanResult(Plan("tvm", groups, planning_ms=(time.perf_counter() - t0) * 1e3,
                           notes={"max_depth": depth, "fused_functions": sum(len(g) > 1 for g in groups)}))


def _current_max_depth() -> int:
    import tvm

    cfg = tvm.transform.PassContext.current().config
    try:
        return int(cfg["relax.FuseOps.max_depth"]) if cfg is not None and "relax.FuseOps.max_depth" in cfg else 256
    except Exception:
        return 256


def _dataflow_bindings(func):
    from tvm import relax

    return [bd for blk in func.body.blocks if isinstance(blk, relax.DataflowBlock) for bd in blk.bindings]


def _tag(mod, graph):
    """A copy of `mod` whose main has every dataflow binding tagged with its node id (see the module doc).

    Returns (module, origin) where origin holds, per node id, what the untagged lookups need."""
    import tvm
    from tvm import relax

    main = mod["main"]
    bindings = _dataflow_bindings(main)
    if len(bindings) != len(graph.nodes):
        raise PlanError(f"tvm strategy, {graph.name}: the module has {len(bindings)} dataflow bindings but the graph "
                           f"{len(graph.nodes)} nodes; they must come from the same import")
    funcs = dict(mod.functions)
    var_id: dict = {}           # original binding var -> node id
    items: dict = {}            # (tuple identity, index) -> [get-item node ids], in graph order
    new_of: dict = {}           # original binding -> tagged binding
    for node, bd in zip(graph.nodes, bindings):
        val = bd.value
        nid = node.id
        span = tvm.ir.Span(tvm.ir.SourceName(SPAN_PREFIX + nid), 0, 0, 0, 0)
        new_val = val
        if isinstance(val, relax.Call) and getattr(val.op, "name", "") in ("relax.call_tir",
                                                                          "relax.call_tir_inplace"):
            gv = val.args[0]
            if node.kind == "call_tir" and node.func and node.func != gv.name_hint:
                raise PlanError(f"tvm strategy, {graph.name}: node {nid} calls {node.func} but binding {bd.var.name} "
                                   f"calls {gv.name_hint}")
            tag_gv = tvm.ir.GlobalVar(GV_PREFIX + nid)
            relax.expr._update_type(tag_gv, gv.ty)  # what IRModule gives the original's GlobalVar
            funcs[tag_gv] = mod[gv]
            new_val = relax.Call(val.op, [tag_gv, *val.args[1:]], val.attrs, val.ty_args, span)
        elif isinstance(val, relax.Call):
            new_val = relax.Call(val.op, val.args, val.attrs, val.ty_args, span)
        elif isinstance(val, relax.TupleGetItem):
            new_val = relax.TupleGetItem(val.tuple_value, val.index, span)
            key = (_identity(val.tuple_value, var_id), int(val.index))
            items.setdefault(key, []).append(nid)
        elif isinstance(val, relax.Tuple):
            new_val = relax.Tuple(val.fields, span)
        var_id[bd.var] = nid
        if new_val is not val:
            new_of[bd] = relax.VarBinding(bd.var, new_val)
    blocks = []
    for blk in main.body.blocks:
        bs = [new_of.get(bd, bd) for bd in blk.bindings]
        blocks.append(relax.DataflowBlock(bs) if isinstance(blk, relax.DataflowBlock) else relax.BindingBlock(bs))
    new_main = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty, main.is_pure,
                              main.attrs)
    out = tvm.IRModule(funcs, attrs=mod.attrs)
    out.update_func(out.get_global_var("main"), new_main)
    out = relax.transform.Normalize()(out)
    return out, {"var_id": var_id, "items": items}


def _identity(expr, env):
    """What a leaf expression stands for: a node id, ("param", name), or ("expr", its type)."""
    from tvm import relax

    if isinstance(expr, relax.Var):
        if expr in env:
            return env[expr]
        return ("param", expr.name)
    return ("expr", type(expr).__name__)  # constants and the like: only a Var can hold a tuple we track


def _tag_of(expr) -> str | None:
    from tvm import relax

    if isinstance(expr, relax.Call):
        op = expr.args[0] if getattr(expr.op, "name", "") in ("relax.call_tir", "relax.call_tir_inplace") else None
        if op is not None and getattr(op, "name_hint", "").startswith(GV_PREFIX):
            return op.name_hint[len(GV_PREFIX):]
    span = getattr(expr, "span", None)
    if span is not None:
        name = span.source_name.name
        if name.startswith(SPAN_PREFIX):
            return name[len(SPAN_PREFIX):]
    return None


def _is_primitive(func) -> bool:
    from tvm import relax

    return isinstance(func, relax.Function) and func.attrs is not None and "Primitive" in func.attrs \
        and bool(int(func.attrs["Primitive"]))


class _Fresh:
    """A fresh `tup[i]` FuseOps emitted in main for a partially used tuple parameter."""

    def __init__(self, tup, index):
        self.tup, self.index = tup, index


def _read_groups(fused, graph, origin) -> list[list[str]]:
    import tvm
    from tvm import relax

    var_id, items = origin["var_id"], origin["items"]
    main = fused["main"]
    env: dict = {}              # var in the fused main -> node id | [node ids] (multi-output call) | _Fresh
    where: dict[str, int] = {}  # node id -> group index
    groups: list[list[str]] = []

    def assign(nid, gi, what):
        if nid not in graph.by_id:
            raise PlanError(f"tvm strategy, {graph.name}: FuseOps output names an unknown node {nid!r} ({what})")
        if nid in where:
            raise PlanError(f"tvm strategy, {graph.name}: node {nid} found in two FuseOps groups ({what})")
        where[nid] = gi
        groups[gi].append(nid)

    def leaf(expr, local):
        if isinstance(expr, relax.Var):
            if expr in local:
                return local[expr]
            if expr in env:
                return env[expr]
            return ("param", expr.name)
        return ("expr", type(expr).__name__)

    def resolve_item(fresh: _Fresh, gi, members):
        cands = [c for c in items.get((fresh.tup, fresh.index), []) if c not in where]
        if not cands:
            raise PlanError(f"tvm strategy, {graph.name}: no get-item node for {fresh.tup}[{fresh.index}]")
        # Among identical get-items, the one feeding this group.
        mine = [c for c in cands if any(k in members for k in graph.consumers[c])]
        nid = (mine or cands)[0]
        assign(nid, gi, "partially used tuple argument")
        return nid

    for blk in main.body.blocks:
        for bd in blk.bindings:
            val = bd.value
            callee = fused[val.op] if isinstance(val, relax.Call) and isinstance(val.op, tvm.ir.GlobalVar) \
                else None
            if callee is not None and _is_primitive(callee):
                gi = len(groups)
                groups.append([])
                local: dict = {}
                body = [b for b in callee.body.blocks for b in b.bindings]
                members = set()
                for b in body:
                    nid = _tag_of(b.value)
                    if nid is None:
                        raise PlanError(f"tvm strategy, {graph.name}: untagged binding {b.var.name} "
                                        f"in {val.op.name_hint}")
                    if nid in where and isinstance(b.value, relax.TupleGetItem):
                        # A de-duplicated body (a group of get-items only): match on (tuple, index).
                        nid = None
                    members.add(nid)
                    local[b.var] = nid
                pending = []
                for p, a in zip(callee.params, val.args):
                    r = leaf(a, {})
                    if isinstance(r, _Fresh):
                        pending.append((p, r))
                    else:
                        local[p] = r
                for b in body:
                    nid = local[b.var]
                    if nid is None:
                        v = b.value
                        fresh = _Fresh(leaf(v.tuple_value, local), int(v.index))
                        nid = resolve_item(fresh, gi, members)
                        local[b.var] = nid
                    else:
                        assign(nid, gi, val.op.name_hint)
                for p, fresh in pending:
                    local[p] = resolve_item(fresh, gi, members)
                ret = callee.body.body
                outs = [leaf(f, local) for f in ret.fields] if isinstance(ret, relax.Tuple) else [leaf(ret, local)]
                env[bd.var] = outs if isinstance(ret, relax.Tuple) else outs[0]
                continue
            nid = _tag_of(val) if isinstance(val, (relax.Call, relax.TupleGetItem, relax.Tuple)) else None
            if nid is None and isinstance(val, relax.TupleGetItem) and isinstance(val.tuple_value, relax.Var):
                src = leaf(val.tuple_value, {})
                env[bd.var] = src[int(val.index)] if isinstance(src, list) else _Fresh(src, int(val.index))
                continue
            if nid is None:
                nid = var_id.get(bd.var)
            if nid is None:
                raise PlanError(f"tvm strategy, {graph.name}: cannot map binding {bd.var.name} "
                                "of the fused main back")
            groups.append([])
            assign(nid, len(groups) - 1, "singleton")
            env[bd.var] = nid

    missing = [n.id for n in graph.nodes if n.id not in where]
    if missing:
        raise PlanError(f"tvm strategy, {graph.name}: nodes {missing[:10]} not found in FuseOps' output")
    return [g for g in groups if g]
