"""What the blocked-layout (NCHW[x]c) rules share: recognising a blocked convolution's reduction
block (`conv_roles`), the register budget of the target and the register tiles of MLAS's
micro-kernel (`choose_dense_tile`, `choose_depthwise_tile`). Used by cpu/blocked.py (`BlockedConv`,
one conv) and cpu/blocked_chain.py (`BlockedChain`, a chain of them computed band by band).
"""
from __future__ import annotations

from tvm import ir, tirx

from engine.devices.tvm_target import vector_lanes

from .analysis import vars_in

MAX_COLS = 28              # output columns per register tile, at most
MAX_OC_BLOCKS = 4          # output-channel blocks per register tile, at most
RI_UNROLL = 8              # the input block's reduction (ri) is unrolled by up to this (16: no faster, longer code)
FREE_REGISTERS = 8         # vector registers a tile leaves free: with 4 (28 accumulators) LLVM spills, 1.5-2x slower


def register_budget(target) -> tuple[int, int]:
    """(vector lanes of float32, accumulators one tile may hold) for an LLVM target: AVX-512 and
    AArch64 have 32 vector registers, AVX/AVX2/SSE 16; four stay free for the weight vectors and
    the broadcast input."""
    lanes = vector_lanes(target)
    try:
        triple = str(target.attrs.get("mtriple", "") or "")
    except Exception:  # noqa: BLE001 - a target without attrs
        triple = ""
    regs = 32 if lanes >= 16 or triple.startswith("aarch64") else 16
    return lanes, regs - FREE_REGISTERS


def _is_var(e, v) -> bool:
    return isinstance(e, tirx.Var) and e.same_as(v)


def _is_zero(e) -> bool:
    return isinstance(e, tirx.IntImm) and int(e) == 0


def _strip_cast(e):
    while isinstance(e, tirx.Cast):
        e = e.value
    return e


def _mac_operands(block, out_buf):
    """(a, b) loads of `out[...] = out[...] + a * b`, or None."""
    body = block.body
    if not isinstance(body, tirx.BufferStore) or not body.buffer.same_as(out_buf):
        return None
    v = body.value
    if not isinstance(v, tirx.Add):
        return None
    acc, prod = (v.a, v.b) if isinstance(v.a, ir.TensorLoad) and v.a.source.same_as(out_buf) else (v.b, v.a)
    if not (isinstance(acc, ir.TensorLoad) and acc.source.same_as(out_buf)):
        return None
    prod = _strip_cast(prod)
    if not isinstance(prod, tirx.Mul):
        return None
    a, b = _strip_cast(prod.a), _strip_cast(prod.b)
    if not (isinstance(a, ir.TensorLoad) and isinstance(b, ir.TensorLoad)):
        return None
    return a, b


def conv_roles(block):
    """Map the block's iter vars to roles, or None if it is not a blocked conv."""
    ivs = list(block.iter_vars)
    sp = [iv.var for iv in ivs if iv.iter_type == tirx.IterVar.DataPar]
    rd = [iv.var for iv in ivs if iv.iter_type == tirx.IterVar.CommReduce]
    if len(sp) != 5 or len(rd) not in (2, 4) or len(ivs) != len(sp) + len(rd):
        return None
    if len(block.writes) != 1:
        return None
    out = block.writes[0].source
    widx = [r.min for r in block.writes[0].region]
    if len(widx) != 5 or not all(_is_var(e, v) for e, v in zip(widx, sp)):
        return None
    ops = _mac_operands(block, out)
    if ops is None:
        return None
    data = next((x for x in ops if len(x.indices) == 5), None)
    weight = next((x for x in ops if len(x.indices) == 6), None)
    if data is None or weight is None:
        return None
    n, o, y, x, b = sp
    di, wi = list(data.indices), list(weight.indices)
    if len(rd) == 4:
        # dense: w[o, rc, ry, rx, ri, b], data[n, rc, f(y, ry), g(x, rx), ri]
        if not (_is_var(wi[0], o) and _is_var(wi[5], b)):
            return None
        rc, ry, rx, ri = wi[1], wi[2], wi[3], wi[4]
        if not all(isinstance(v, tirx.Var) and any(v.same_as(r) for r in rd) for v in (rc, ry, rx, ri)):
            return None
        if not (_is_var(di[0], n) and _is_var(di[1], rc) and _is_var(di[4], ri)):
            return None
        if vars_in(di[2]) != {y, ry} and vars_in(di[2]) != {y}:
            return None
        if vars_in(di[3]) != {x, rx} and vars_in(di[3]) != {x}:
            return None
        return dict(n=n, o=o, y=y, x=x, b=b, rc=rc, ry=ry, rx=rx, ri=ri), False, data.source, weight.source
    # depthwise: w[c, 0, ry, rx, 0, j], data[n, c, f(y, ry), g(x, rx), j]
    if not (_is_var(wi[0], o) and _is_zero(wi[1]) and _is_zero(wi[4]) and _is_var(wi[5], b)):
        return None
    ry, rx = wi[2], wi[3]
    if not all(isinstance(v, tirx.Var) and any(v.same_as(r) for r in rd) for v in (ry, rx)):
        return None
    if not (_is_var(di[0], n) and _is_var(di[1], o) and _is_var(di[4], b)):
        return None
    if not vars_in(di[2]) <= {y, ry} or not vars_in(di[3]) <= {x, rx}:
        return None
    return dict(n=n, o=o, y=y, x=x, b=b, ry=ry, rx=rx), True, data.source, weight.source


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_dense_tile(ob_blocks: int, ow: int, vecs_per_block: int, budget: int) -> tuple[int, int]:
    """(output-channel blocks, output columns) of the register tile: the most accumulators within
    the budget; among equals, two channel blocks (MLAS's shape), then more columns."""
    def best_of(col_options):
        best = None
        for oc in [d for d in _divisors(ob_blocks) if d <= MAX_OC_BLOCKS]:
            for cols in col_options:
                accs = oc * cols * vecs_per_block
                if accs > budget:
                    continue
                key = (accs, -abs(oc - 2), cols)
                if best is None or key > best[0]:
                    best = (key, oc, cols)
        return best

    best = best_of([d for d in _divisors(ow) if d <= MAX_COLS])
    if best is None or 2 * best[0][0] < budget:
        # no divisor of the width makes a good tile (a prime width: 29, 57): a tile that does not
        # divide it, whose last one is partial (a predicate on its columns)
        ragged = best_of([c for c in range(2, min(ow, MAX_COLS) + 1)])
        if ragged is not None and (best is None or ragged[0][0] > 2 * best[0][0]):
            best = ragged
    return (best[1], best[2]) if best else (1, 1)


def choose_depthwise_tile(ow: int, vecs_per_block: int, budget: int) -> int:
    """Output columns of a depthwise tile: the largest divisor of the width within the budget (and
    at most 16, so the kernel's weight vectors can stay in registers too)."""
    cap = max(1, min(16, budget // max(1, vecs_per_block)))
    return max(d for d in _divisors(ow) if d <= cap)


__all__ = ["FREE_REGISTERS", "MAX_COLS", "MAX_OC_BLOCKS", "RI_UNROLL", "choose_depthwise_tile", "choose_dense_tile",
           "conv_roles", "register_budget"]
