"""QDQ matmuls as integer matmuls: a Relax pass run on the imported module before LegalizeOps.

TVM's ONNX importer turns a QDQ MatMul (activation `QuantizeLinear -> DequantizeLinear`, weight
an int8 initializer with `DequantizeLinear`) into

    q  = R.quantize(x, sa, za)                 # uint8
    xf = R.dequantize(q, sa, za)               # float32
    wf = R.dequantize(W_int8, sw, 0, axis=1)   # float32: a constant expression
    y  = R.matmul(xf, wf)                      # float32

and FoldConstant then folds `wf` into a float32 weight: the matmul runs in float32 on 4x the weight
bytes, and FuseOps groups `matmul + quantize + dequantize + add ...` as a float kernel. This pass
writes such a matmul as what ONNX Runtime runs for it (QLinearMatMul / MatMulIntegerToFloat):

    acc = int8_matmul(q, Wp)                   # sum_k int32(q[.., k]) * int32(W[k, n]), int32
    y   = float32(acc - za * colsum(W)) * (sa * sw)

- `Wp` is W packed once, here, in the layout the VNNI micro-kernel reads: [N/16, K/4, 16, 4] int8
  (16 output columns x 4 consecutive k, i.e. one `vpdpbusd` operand), zero-padded to whole blocks;
- the zero point of the activation comes out of the sum exactly, as an int32 constant per column
  (za * sum_k W[k, n]); the weight's zero point must be 0 (symmetric weights, what quantizers emit);
- the scales are one float32 constant per column (sa * sw[n]), so `acc` is the only int32 tensor.

The result keeps the matmul's variable (its ONNX provenance); the int32 matmul is an
OutEWiseFusable PrimFunc whose epilogue (the correction, the scale, the next quantize) FuseOps,
greedy and dp all fuse into it. engine/schedules/cpu/int8_dense.py schedules it with `vpdpbusd`.

Taken:
- weight matmuls: lhs `dequantize` of a uint8 tensor with a per-tensor scale and zero point
  (constants), rhs a 2-D `dequantize` of an int8 constant, per tensor or per column (axis 1), zero
  point 0;
- activation x activation matmuls (attention's Q.K^T, P.V): both sides quantized per tensor, lhs
  uint8, rhs uint8 (shifted to int8: b - 128) or int8, packed per call; the zero points come out as
  int32 row and column sums;
- conv1d (NCW, one group, no dilation): an im2col of its uint8 input (padded with the zero point)
  times the weight as [C*kw, O], the float result transposed back to NCW.
Anything else (int8 activations on the left, per-row weight scales, Gemm's transposed weight,
conv2d) stays as TVM imports it.
"""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, te

VERSION = 2   # part of the model cache's key (engine/model/loader.py CACHE_VERSION notes it)
BLOCK_N, BLOCK_K = 16, 4   # the packed weight's inner block: one vpdpbusd's 16 lanes x 4 bytes


def pack_weight(w: np.ndarray) -> np.ndarray:
    """int8 W[K, N] -> Wp[ceil(N/16), ceil(K/4), 16, 4], Wp[n//16, k//4, n%16, k%4] = W[k, n]
    (zero padding)."""
    k, n = w.shape
    kp, np_ = -(-k // BLOCK_K) * BLOCK_K, -(-n // BLOCK_N) * BLOCK_N
    padded = np.zeros((kp, np_), np.int8)
    padded[:k, :n] = w
    return np.ascontiguousarray(padded.reshape(kp // BLOCK_K, BLOCK_K, np_ // BLOCK_N, BLOCK_N).transpose(2, 0, 3, 1))


def int8_matmul_te(a: te.Tensor, wp: te.Tensor, n: int) -> te.Tensor:
    """acc[..., m, n] = sum_k int32(a[..., m, k]) * int32(wp[..., n // 16, k // 4, n % 16, k % 4]);
    `wp`'s leading (batch) dims, if any, are a's leading dims (a's last ones, counted from the right)."""
    shape = [int(d) for d in a.shape]
    k_extent = shape[-1]
    k = te.reduce_axis((0, k_extent), "k")
    nb = len(wp.shape) - 4

    def f(*idx):
        j = idx[-1]
        batch = tuple(idx[len(idx) - 2 - nb:len(idx) - 2])
        return te.sum(a[(*idx[:-1], k)].astype("int32") *
                      wp[(*batch, j // BLOCK_N, k // BLOCK_K, j % BLOCK_N, k % BLOCK_K)].astype("int32"), axis=k)

    return te.compute((*shape[:-1], n), f, name="int8_matmul")


def pack_act_te(b: te.Tensor) -> te.Tensor:
    """An activation B[..., K, N] (uint8 or int8) packed as pack_weight packs a weight, uint8 shifted
    to int8 (b - 128, so that vpdpbusd's signed operand holds it): [..., N/16, K/4, 16, 4], zero padded."""
    *batch, k_ext, n_ext = [int(d) for d in b.shape]
    n16, k4 = -(-n_ext // BLOCK_N), -(-k_ext // BLOCK_K)
    shift = 128 if str(b.dtype) == "uint8" else 0

    def f(*idx):
        *bi, jo, ko, ji, ki = idx
        j, k = jo * BLOCK_N + ji, ko * BLOCK_K + ki
        v = (b[(*bi, k, j)].astype("int32") - shift).astype("int8")
        if n16 * BLOCK_N == n_ext and k4 * BLOCK_K == k_ext:
            return v
        return tvm.tirx.if_then_else(tvm.tirx.all(j < n_ext, k < k_ext), v, tvm.tirx.const(0, "int8"))

    return te.compute((*batch, n16, k4, BLOCK_N, BLOCK_K), f, name="int8_pack")


def im2col_te(q: te.Tensor, za: int, stride: int, pad: int, kw: int, l_out: int) -> te.Tensor:
    """A conv1d's uint8 input q[1, C, L] as the rows of a matmul: cols[b, l, c * kw + r] =
    q[b, c, l * stride + r - pad], the padding filled with the zero point (so that it contributes
    (za - za) * w = 0, as a zero of the float input does)."""
    b_ext, c_ext, l_in = [int(d) for d in q.shape]

    def f(b, l, k):
        c, r = k // kw, k % kw
        x = l * stride + r - pad
        return tvm.tirx.if_then_else(tvm.tirx.all(x >= 0, x < l_in), q[b, c, x], tvm.tirx.const(za, "uint8"))

    return te.compute((b_ext, l_out, c_ext * kw), f, name="int8_im2col")


def match_conv1d(call, lhs_value, rhs_value):
    """(q, za, sa, W as [C*kw, O], sw, stride, pad, kw, l_out) where `call` is a QDQ conv1d this pass
    takes (NCW/OIW, one group, no dilation, symmetric padding, per-tensor uint8 input, int8 weight
    per output channel or per tensor with zero point 0); else None."""
    a = call.attrs
    if str(a.data_layout) != "NCW" or str(a.kernel_layout) != "OIW" or str(a.out_layout) != "NCW" or int(a.groups) != 1:
        return None
    if [int(d) for d in a.dilation] != [1] or len(a.padding) != 2 or int(a.padding[0]) != int(a.padding[1]):
        return None
    act = _quantized(lhs_value)
    if act is None or not _is_op(rhs_value, "relax.dequantize") or str(rhs_value.attrs.out_dtype) != "float32":
        return None
    q, sa, za = act
    w, sw, zw = (_const(x) for x in rhs_value.args)
    q_shape = _static_shape(q)
    if w is None or sw is None or zw is None or w.dtype != np.int8 or w.ndim != 3 or np.any(zw != 0):
        return None
    if str(q.ty.dtype) != "uint8" or len(q_shape) != 3 or q_shape[1] != w.shape[1] or sw.dtype != np.float32:
        return None
    o, c, kw = w.shape
    if sw.size != 1 and (sw.size != o or int(rhs_value.attrs.axis) != 0):
        return None
    stride, pad = int(a.strides[0]), int(a.padding[0])
    l_out = (q_shape[2] + 2 * pad - kw) // stride + 1
    return q, za, sa, w.reshape(o, c * kw).T.copy(), sw.reshape(-1), stride, pad, kw, l_out


def _const(expr):
    """The numpy value of a relax constant, else None."""
    if isinstance(expr, tvm.ir.GenericConst) and isinstance(expr.value, tvm.runtime.Tensor):
        return expr.value.numpy()
    return None


def _is_op(call, name: str) -> bool:
    return isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op) and call.op.name == name


def _static_shape(expr):
    try:
        return [int(d) for d in expr.ty.shape.values]
    except (AttributeError, TypeError, ValueError):
        return None


def _quantized(value):
    """(q, scale, zero point) of `dequantize(q, scale, zp)` with per-tensor constants, q of at least 2
    dims and static shape, float32 out; else None."""
    if not _is_op(value, "relax.dequantize") or str(value.attrs.out_dtype) != "float32":
        return None
    q, s, z = value.args
    s, z = _const(s), _const(z)
    shape = _static_shape(q)
    if s is None or z is None or s.size != 1 or z.size != 1 or s.dtype != np.float32 or shape is None or len(shape) < 2:
        return None
    return q, np.float32(s.reshape(())), int(z.reshape(()))


def match_act(lhs_value, rhs_value):
    """(qa, za, sa, qb, zb, sb) where `R.matmul(lhs, rhs)` multiplies two quantized activations
    (attention's Q.K^T and P.V): lhs uint8, rhs uint8 or int8, per-tensor, the same leading dims;
    else None."""
    a, b = _quantized(lhs_value), _quantized(rhs_value)
    if a is None or b is None:
        return None
    (qa, sa, za), (qb, sb, zb) = a, b
    sa_shape, sb_shape = _static_shape(qa), _static_shape(qb)
    if str(qa.ty.dtype) != "uint8" or str(qb.ty.dtype) not in ("uint8", "int8"):
        return None
    if sa_shape[:-2] != sb_shape[:-2] or sa_shape[-1] != sb_shape[-2]:
        return None
    return qa, za, sa, qb, zb, sb


def match(lhs_value, rhs_value):
    """(q, za, sa, W, sw) where `R.matmul(lhs, rhs)` is a QDQ matmul this pass takes, else None.
    `lhs_value` / `rhs_value`: the values the matmul's operands are bound to."""
    if not (_is_op(lhs_value, "relax.dequantize") and _is_op(rhs_value, "relax.dequantize")):
        return None
    q, sa, za = lhs_value.args
    w_expr, sw, zw = rhs_value.args
    sa, za, w, sw, zw = _const(sa), _const(za), _const(w_expr), _const(sw), _const(zw)
    if any(v is None for v in (sa, za, w, sw, zw)):
        return None
    q_shape = _static_shape(q)
    if q_shape is None or len(q_shape) < 2 or str(q.ty.dtype) != "uint8":
        return None
    if str(lhs_value.attrs.out_dtype) != "float32" or str(rhs_value.attrs.out_dtype) != "float32":
        return None
    if sa.size != 1 or za.size != 1 or w.dtype != np.int8 or w.ndim != 2 or w.shape[0] != q_shape[-1]:
        return None
    if np.any(zw != 0):
        return None
    n = w.shape[1]
    if sw.size != 1:
        if int(rhs_value.attrs.axis) not in (1, -1) or sw.size != n:
            return None
    if sa.dtype != np.float32 or sw.dtype != np.float32:
        return None
    return q, int(za.reshape(())), np.float32(sa.reshape(())), w, sw.reshape(-1)


class _Rewriter:
    """Rewrites the matched matmul bindings of main's dataflow blocks; every other binding object is
    kept as it is, so its variable (and the ONNX provenance relax_import keys by Var.id_) survives.
    A rewritten matmul's last binding keeps the matmul's own variable; the bindings before it are new
    (relax_import._carry gives them the provenance of the next known one: the matmul's)."""

    def __init__(self, mod):
        self.bb = relax.BlockBuilder(mod)
        self.count = 0
        self.out: list = []

    def _bind(self, expr, name):
        e = self.bb.normalize(expr)
        v = relax.DataflowVar(name, e.ty)
        self.out.append(relax.VarBinding(v, e))
        return v

    def binding(self, b, values) -> None:
        value = b.value
        if isinstance(b, relax.VarBinding) and _is_op(value, "relax.matmul") and len(value.args) == 2:
            lhs, rhs = (values.get(a, a) if isinstance(a, relax.Var) else a for a in value.args)
            found = match(lhs, rhs)
            if found is not None:
                self._weight_matmul(b, *found)
                return
            act = match_act(lhs, rhs)
            if act is not None:
                self._act_matmul(b, *act)
                return
        if isinstance(b, relax.VarBinding) and _is_op(value, "relax.nn.conv1d") and len(value.args) == 2:
            lhs, rhs = (values.get(a, a) if isinstance(a, relax.Var) else a for a in value.args)
            conv = match_conv1d(value, lhs, rhs)
            if conv is not None:
                self._conv1d(b, *conv)
                return
        self.out.append(b)

    def _finish(self, b, acc, scale) -> None:
        f = self._bind(relax.op.astype(acc, "float32"), f"{b.var.name}_f")
        y = self.bb.normalize(relax.op.multiply(f, relax.const(scale, "float32")))
        self.out.append(relax.VarBinding(b.var, y))
        self.count += 1

    def _weight_matmul(self, b, q, za, sa, w, sw) -> None:
        n = w.shape[1]
        name = b.var.name
        wp = relax.const(pack_weight(w), "int8")
        acc = self._bind(self.bb.call_te(int8_matmul_te, q, wp, n, primfunc_name_hint="int8_matmul"), f"{name}_acc")
        if za:
            corr = (za * w.astype(np.int64).sum(axis=0)).astype(np.int32)
            acc = self._bind(relax.op.subtract(acc, relax.const(corr, "int32")), f"{name}_zp")
        scale = (np.float32(sa) * sw.astype(np.float32)).astype(np.float32)
        self._finish(b, acc, scale.reshape(()) if scale.size == 1 else scale)

    def _conv1d(self, b, q, za, sa, w, sw, stride, pad, kw, l_out) -> None:
        """The conv1d as an int8 matmul of its im2col rows ([1, L_out, C*kw]) by W as [C*kw, O],
        then the transpose back to NCW on the float result."""
        name = b.var.name
        cols = self._bind(self.bb.call_te(im2col_te, q, za, stride, pad, kw, l_out, primfunc_name_hint="int8_im2col"),
                          f"{name}_cols")
        n = w.shape[1]
        acc = self._bind(self.bb.call_te(int8_matmul_te, cols, relax.const(pack_weight(w), "int8"), n,
                                         primfunc_name_hint="int8_matmul"), f"{name}_acc")
        if za:
            corr = (za * w.astype(np.int64).sum(axis=0)).astype(np.int32)
            acc = self._bind(relax.op.subtract(acc, relax.const(corr, "int32")), f"{name}_zp")
        scale = (np.float32(sa) * sw.astype(np.float32)).astype(np.float32)
        f = self._bind(relax.op.astype(acc, "float32"), f"{name}_f")
        y = self._bind(relax.op.multiply(f, relax.const(scale.reshape(()) if scale.size == 1 else scale, "float32")),
                       f"{name}_nwc")
        self.out.append(relax.VarBinding(b.var, self.bb.normalize(relax.op.permute_dims(y, [0, 2, 1]))))
        self.count += 1

    def _act_matmul(self, b, qa, za, sa, qb, zb, sb) -> None:
        """sum_k (a - za)(b - zb) with b' = b - 128 in int8 (b uint8) and zb' = zb - 128:
        sum a*b' - zb' * rowsum(a) - za * colsum(b') + K * za * zb', all int32, times sa * sb."""
        name = b.var.name
        k_ext, n = _static_shape(qb)[-2:]
        shift = 128 if str(qb.ty.dtype) == "uint8" else 0
        zb_s = zb - shift
        bp = self._bind(self.bb.call_te(pack_act_te, qb, primfunc_name_hint="int8_pack"), f"{name}_packed")
        acc = self._bind(self.bb.call_te(int8_matmul_te, qa, bp, n, primfunc_name_hint="int8_matmul"), f"{name}_acc")
        if zb_s:
            a32 = self._bind(relax.op.astype(qa, "int32"), f"{name}_a32")
            rows = self._bind(relax.op.sum(a32, axis=[-1], keepdims=True), f"{name}_rows")
            corr = self._bind(relax.op.multiply(rows, relax.const(zb_s, "int32")), f"{name}_rowcorr")
            acc = self._bind(relax.op.subtract(acc, corr), f"{name}_zb")
        if za:
            b32 = self._bind(relax.op.astype(qb, "int32"), f"{name}_b32")
            cols = self._bind(relax.op.sum(b32, axis=[-2], keepdims=True), f"{name}_cols")
            # za * colsum(b') = za * (colsum(b) - K * shift)
            corr = self._bind(relax.op.multiply(cols, relax.const(za, "int32")), f"{name}_colcorr")
            acc = self._bind(relax.op.subtract(acc, corr), f"{name}_za")
        const = za * shift * k_ext + k_ext * za * zb_s
        if const:
            acc = self._bind(relax.op.add(acc, relax.const(const, "int32")), f"{name}_k")
        self._finish(b, acc, np.float32(np.float32(sa) * np.float32(sb)))


def apply(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` with every QDQ matmul of `main` this pass takes written as an int8 matmul (see the
    module doc); other functions and every other binding are kept (the same objects)."""
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        return mod
    main = mod["main"]
    body = main.body
    if not isinstance(body, relax.SeqExpr):
        return mod
    r = _Rewriter(mod)
    blocks = []
    for blk in body.blocks:
        if not isinstance(blk, relax.DataflowBlock):
            blocks.append(blk)
            continue
        values = {b.var: b.value for b in blk.bindings if isinstance(b, relax.VarBinding)}
        r.out = []
        for b in blk.bindings:
            r.binding(b, values)
        blocks.append(relax.DataflowBlock(r.out))
    if not r.count:
        return mod
    out = r.bb.get()
    out["main"] = relax.Function(main.params, relax.SeqExpr(blocks, body.body), main.ret_ty, main.is_pure, main.attrs)
    return relax.transform.DeadCodeElimination(["main"])(out)
