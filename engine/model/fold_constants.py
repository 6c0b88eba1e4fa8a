"""Fold every constant-only `call_tir` of main in one build.

TVM's FoldConstant compiles and runs each constant subexpression on its own (one LLVM build each):
about 20 s for MobileNetV2's decomposed batch norms. This pass collects all constant-only bindings
of main's dataflow block into one function, builds it once, runs it, and binds the results as
constants; TVM's FoldConstant then has nothing left to compute.
"""
from __future__ import annotations

import tvm
from tvm import relax


def _is_const_call(value, known) -> bool:
    if not (isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.call_tir"):
        return False
    if len(value.args) > 2:  # symbolic tir_vars
        return False
    args = value.args[1]
    fields = args.fields if isinstance(args, relax.Tuple) else [args]
    return all(isinstance(a, tvm.ir.GenericConst) or (isinstance(a, relax.Var) and a in known) for a in fields)


def fold_constant_calls(mod: tvm.IRModule) -> tvm.IRModule:
    main = mod["main"]
    blocks = list(main.body.blocks)
    const_bindings, known = [], set()
    for blk in blocks:
        if not isinstance(blk, relax.DataflowBlock):
            continue
        for bd in blk.bindings:
            if isinstance(bd, relax.VarBinding) and _is_const_call(bd.value, known):
                const_bindings.append(bd)
                known.add(bd.var)
    if not const_bindings:
        return mod
    # One function computing every constant-only value; its PrimFuncs come from mod.
    outs = [bd.var for bd in const_bindings]
    ret = relax.Tuple(outs)
    body = relax.SeqExpr([relax.DataflowBlock(const_bindings)], ret)
    fold_mod = tvm.IRModule({gv: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)})
    fold_mod["main"] = relax.Function([], body, ret.ty if hasattr(ret, "ty") else None)
    fold_mod = relax.transform.DeadCodeElimination(["main"])(fold_mod)
    exe = relax.build(fold_mod, target=tvm.target.Target({"kind": "llvm"}))
    vm = relax.VirtualMachine(exe, tvm.cpu())
    values = vm["main"]()
    arrays = [values[i].numpy() for i in range(len(outs))]
    # explicit dtype: relax.const would turn a 0-d int64 array into an int32 scalar
    consts = {v: relax.const(a, str(a.dtype)) for v, a in zip(outs, arrays)}
    new_blocks = []
    for blk in blocks:
        if isinstance(blk, relax.DataflowBlock):
            blk = relax.DataflowBlock([relax.VarBinding(bd.var, consts[bd.var]) if bd.var in consts else bd
                                       for bd in blk.bindings])
        new_blocks.append(blk)
    new_main = relax.Function(main.params, relax.SeqExpr(new_blocks, main.body.body), main.ret_ty,
                              main.is_pure, main.attrs)
    out = tvm.IRModule(dict(mod.functions.items()))
    out["main"] = new_main
    return out
