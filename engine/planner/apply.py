"""Turn any legal plan into a Relax module TVM can build.

For each group of two or more bindings: a private Relax function with the `Primitive` attribute
holding the group's bindings (constants lifted to parameters, one output per value used outside
the group), called from main; then FuseTIR merges each such function into one PrimFunc. This is
the route TVM's own FuseTIR tests use; TVM has no Python API that takes an arbitrary grouping.
"""
from __future__ import annotations

import re

import tvm
from tvm import relax

from engine.util.errors import PlanError

from .plan import group_of
from .validate import check_convex_acyclic, check_partition, check_tuple_outputs


def kernel_groups(graph, groups) -> list[int]:
    """Indices of the groups that launch a kernel, in the order the built module calls them."""
    order = check_convex_acyclic(graph, groups)
    return [gi for gi in order if any(graph.by_id[m].kind == "call_tir" for m in groups[gi])]


def apply(graph, groups: list[list[str]]):
    """The prepared module of `graph` with `groups` fused (FuseTIR done)."""
    check_partition(graph, groups)
    order = check_convex_acyclic(graph, groups)
    check_tuple_outputs(graph, groups)
    mod = graph.mod
    main = mod["main"]
    blocks = list(main.body.blocks)
    df_index = next(k for k, b in enumerate(blocks) if isinstance(b, relax.DataflowBlock))
    bindings = list(blocks[df_index].bindings)
    if len(bindings) != len(graph.nodes):
        raise PlanError("the plan's graph does not match the module (binding count differs)")
    where = group_of(groups)
    var_group = {bd.var: where[graph.nodes[k].id] for k, bd in enumerate(bindings)}
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    used_later = _used_outside(graph, where)

    bb = relax.BlockBuilder(mod)  # add_func gives each GlobalVar its function type
    names: set[str] = set(gv.name_hint for gv in mod.get_global_vars())
    emitted: dict[int, list] = {}
    for gi, g in enumerate(groups):
        members = sorted(g, key=pos.__getitem__)
        if len(members) < 2 or all(graph.by_id[m].kind in ("tuple", "tuple_get_item") for m in members):
            continue
        # A get-item of a tuple made outside the group is a projection of an input, no computation:
        # it stays in main, ahead of the call. Inside, an escaping one would be an output that is
        # an input, which FuseTIR turns into an in-place call without in-place indices.
        hoisted = [m for m in members if graph.by_id[m].kind == "tuple_get_item"
                   and not any(where.get(i) == gi for i in graph.by_id[m].inputs)]
        inner = [m for m in members if m not in hoisted]
        gbinds = [bindings[pos[m]] for m in inner]
        fn, args, outs = _group_function(gbinds, gi, var_group, {bindings[pos[m]].var for m in inner
                                                                  if m in used_later})
        gv = bb.add_func(fn, unique_name(func_name(graph, members), names))
        emitted[gi] = [gv, args, outs, [bindings[pos[m]] for m in hoisted]]
    new_mod = bb.get()

    # Rewrite main's dataflow block group by group, in a topological order of the groups.
    new_bindings = []
    for gi in order:
        if gi not in emitted:
            new_bindings += [bindings[pos[m]] for m in sorted(groups[gi], key=pos.__getitem__)]
            continue
        gv, args, outs, hoisted = emitted[gi]
        new_bindings += hoisted
        call = relax.Call(gv, args)
        if len(outs) == 1:
            new_bindings.append(relax.VarBinding(outs[0], call))
        else:
            tv = relax.DataflowVar(f"g{gi}_out", relax.TupleType([o.ty for o in outs]))
            new_bindings.append(relax.VarBinding(tv, call))
            new_bindings += [relax.VarBinding(o, relax.TupleGetItem(tv, k)) for k, o in enumerate(outs)]
    blocks[df_index] = relax.DataflowBlock(new_bindings)
    new_mod["main"] = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty,
                                     main.is_pure, main.attrs)
    try:
        new_mod = relax.transform.Normalize()(new_mod)
        new_mod = relax.transform.FuseTIR()(new_mod)
        new_mod = relax.transform.DeadCodeElimination()(new_mod)
    except Exception as e:  # noqa: BLE001 - TVM raises its own error types
        raise PlanError(f"TVM could not fuse the plan's groups: {str(e).strip().splitlines()[-1][:300]}") from None
    return new_mod


def _used_outside(graph, where) -> set[str]:
    out = set(graph.outputs)
    for n in graph.nodes:
        for i in n.inputs:
            if where[i] != where[n.id]:
                out.add(i)
    return out


def _group_function(gbinds, gi, var_group, escaping):
    """(Primitive function, call arguments, escaping vars of main) for one group."""
    params, args, remap = [], [], {}
    inside = {bd.var for bd in gbinds}

    def param_for(expr):
        key = expr
        if key not in remap:
            p = relax.Var(f"p{len(params)}", expr.ty)
            params.append(p)
            args.append(expr)
            remap[key] = p
        return remap[key]

    def sub(e):
        if isinstance(e, relax.Tuple):
            return relax.Tuple([sub(f) for f in e.fields])
        if isinstance(e, relax.Var):
            return local[e] if e in inside else param_for(e)
        if isinstance(e, tvm.ir.GenericConst):
            return param_for(e)
        return e

    local, fbinds = {}, []
    for bd in gbinds:
        v = bd.value
        if isinstance(v, relax.Call):
            nv = relax.Call(v.op, [v.args[0], sub(v.args[1]), *v.args[2:]], v.attrs, v.ty_args)
        elif isinstance(v, relax.Tuple):
            nv = sub(v)
        elif isinstance(v, relax.TupleGetItem):
            nv = relax.TupleGetItem(sub(v.tuple_value), v.index)
        else:
            raise PlanError(f"cannot fuse binding {bd.var.name} ({type(v).__name__})")
        lv = relax.DataflowVar(bd.var.name, bd.var.ty)
        local[bd.var] = lv
        fbinds.append(relax.VarBinding(lv, nv))
    outs = [bd.var for bd in gbinds if bd.var in escaping]
    ret_vars = []
    for o in outs:
        gv = relax.Var(f"{o.name}_o", o.ty)
        fbinds.append(relax.VarBinding(gv, local[o]))
        ret_vars.append(gv)
    body = relax.SeqExpr([relax.DataflowBlock(fbinds)], ret_vars[0] if len(ret_vars) == 1 else relax.Tuple(ret_vars))
    ret_ty = ret_vars[0].ty if len(ret_vars) == 1 else relax.TupleType([v.ty for v in ret_vars])
    fn = relax.Function(params, body, ret_ty, True, tvm.ir.DictAttrs({"Primitive": True}))
    return fn, args, outs


def func_name(graph, members) -> str:
    """The name of the fused function of `members`: its TIR ops in order (as FuseOps names them)."""
    ops = []
    for m in members:
        n = graph.by_id[m]
        if n.kind == "call_tir" and (not ops or ops[-1] != n.op):
            ops.append(n.op)
    base = "fused_" + "_".join(ops)
    return re.sub(r"[^A-Za-z0-9_]", "_", base)[:96]


def unique_name(name: str, names: set) -> str:
    """`name`, or with the first free number appended; recorded in `names`."""
    cand, k = name, 1
    while cand in names or cand == "fused":
        cand, k = f"{name}{k}", k + 1
    names.add(cand)
    return cand
