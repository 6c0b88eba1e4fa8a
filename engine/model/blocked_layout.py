"""The blocked channel layout pass: NCHW convolutions -> NCHW[x]c, before fusion.

`apply(mod, block)` rewrites `main` of a Relax module as `relax_import.prepare` has it just before
LegalizeOps (decomposed batch norms, canonical bindings): every 2-D convolution it can block
becomes a `call_tir` of `blocked_compute.prim_func` (GlobalVar `conv2d_nchwc`, `conv2d_nchwc_dw`
for a depthwise one) with its weight repacked in numpy here, once (OIHW{ib}i{ob}o: a constant of
the module, not a per-call transform), and the blocked layout is carried through every op that
has a blocked form, so that tensors stay blocked from one convolution to the next:

- elementwise unary ops (relu, sigmoid, clip, leakyrelu, sqrt, ...) and the importer's Clip
  (`call_tir` of `maximum` / `minimum` with a scalar bound);
- elementwise binary ops (add, subtract, multiply, divide, maximum, minimum, power): a constant
  operand of shape [C,1,1] / [1,C,1,1] / [1,C,H,W] is repacked in numpy, a scalar stays, another
  tensor of the same channels is brought into the block (one layout_transform);
- max / avg / adaptive avg pooling (Relax's own ops with layout "NCHW{b}c", which topi legalizes);
  mean / sum / max / min over H, W (keepdims; without, the result is reshaped to [N, C]);
- concatenate and split on the channel axis, when every piece is a whole number of blocks;
- resize2d (topi computes it in NCHW{b}c).

Per tensor the channel block is the largest of block, block/2, ..., 4 that divides its channels
(`channel_block`); a tensor no such block divides and with at most WHOLE_MAX channels is one
block of all its channels, [N, 1, H, W, C] (`tensor_block`): the 3-channel image a convolution reads, the 6- and 10-channel squeeze-excite reduce convs (whose [1, C, 1, 1] results then stay
blocked through the SE branch), a detector's 1-, 18- or 42-channel convs. A tensor with more
channels than that and no block (255) stays NCHW. Grouped (not depthwise) convolutions, non-float32
ones and ones whose weight is not a constant stay NCHW.

Everything else (reshape, flatten, matmul, resize, the graph's outputs, ...) gets its operand back
in NCHW through one `layout_transform` per tensor, shared by all its NCHW consumers; transforms
appear only where the graph leaves or enters the blocked layout, so no cancelling pair is made.
Constant-only subexpressions (a batch norm's expand_dims / sqrt of its statistics) are folded in
numpy first, so their results can be repacked.

Relax's own legalization of layout_transform writes through the index map (a scatter), which
AnnotateTIROpPattern calls opaque and FuseOps then never fuses; `LEGALIZE` (pass it to
LegalizeOps, as prepare does) legalizes the two maps this pass makes as gathers, injective ops
that fuse into their producer or consumer.

Provenance: with `provenance` ({Var.id_: ONNX node}, relax_import's), every variable the pass
makes takes the ONNX node of the binding it was made for: a rewritten op keeps its node, a layout
transform takes the node of the op it was made for.
"""
from __future__ import annotations

import numpy as np

from . import blocked_compute

MIN_BLOCK = 4
WHOLE_MAX = 64  # a tensor no block divides is one block of all its channels up to this many (tensor_block)
VERSION = 2  # moves whenever this pass or engine/model/blocked_compute.py changes the module it makes: it is
#              part of a blocked graph's identity (loader.model_hash), so no cache answers with the old one
DENSE_NAME, DEPTHWISE_NAME = "conv2d_nchwc", "conv2d_nchwc_dw"

_UNARY = {"relax.nn.relu", "relax.sigmoid", "relax.tanh", "relax.sqrt", "relax.rsqrt", "relax.exp", "relax.log",
          "relax.negative", "relax.abs", "relax.nn.silu", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.erf",
          "relax.clip", "relax.nn.leakyrelu", "relax.nn.softplus", "relax.floor", "relax.ceil", "relax.round",
          "relax.square", "relax.sin", "relax.cos", "relax.nn.relu6", "relax.hard_sigmoid", "relax.sign"}
_BINARY = {"relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.maximum", "relax.minimum",
           "relax.power"}
_POOLS = {"relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d"}
_REDUCE = {"relax.mean", "relax.sum", "relax.max", "relax.min"}
# the importer's Clip: call_tir of a topi elementwise PrimFunc with a scalar bound
_TIR_BINARY = {"maximum": "relax.maximum", "minimum": "relax.minimum", "add": "relax.add",
               "subtract": "relax.subtract", "multiply": "relax.multiply", "divide": "relax.divide"}

# numpy for the constant-only subexpressions
_NP_UNARY = {"relax.sqrt": np.sqrt, "relax.isnan": np.isnan, "relax.negative": np.negative, "relax.exp": np.exp,
             "relax.abs": np.abs, "relax.rsqrt": lambda a: 1 / np.sqrt(a), "relax.log": np.log,
             "relax.square": np.square}
_NP_BINARY = {"relax.add": np.add, "relax.subtract": np.subtract, "relax.multiply": np.multiply,
              "relax.divide": np.divide, "relax.maximum": np.maximum, "relax.minimum": np.minimum,
              "relax.power": np.power}


def channel_block(channels: int, block: int) -> int | None:
    """The largest of block, block/2, ..., MIN_BLOCK that divides `channels`; None if none does
    (a block under MIN_BLOCK is tried alone)."""
    b = int(block)
    floor = min(b, MIN_BLOCK)
    while b >= floor:
        if channels % b == 0:
            return b
        b //= 2
    return None


def tensor_block(channels: int, block: int) -> int | None:
    """The block of a tensor of `channels` the pass makes blocked: `channel_block`, else the whole
    channel dim as one block ([N, 1, H, W, C]) when it has at most WHOLE_MAX channels (the
    6- and 10-channel squeeze-excite reduce convs, a detector's 1-, 18- or 42-channel heads); None
    for more (255: NCHW)."""
    b = channel_block(channels, block)
    if b is None and 0 < channels <= WHOLE_MAX:
        b = int(channels)
    return b


def block_for(target) -> int | None:
    """The channel block for a target: its vector width in fp32 lanes on a CPU (LLVM: 16 with
    AVX-512, 8 with AVX2, 4 with NEON), None on a GPU or when the width is under 4 lanes.
    `target`: a name ("cpu", "cuda", "rpi4b"), an engine.devices.targets.Target, a TVM target or its dict."""
    import tvm

    from engine.devices.tvm_target import make_target, vector_lanes

    if target is None:
        return None
    if hasattr(target, "build_for"):  # engine.devices.targets.Target
        target = target.build_for
    if isinstance(target, str):
        target = make_target("cpu" if target.partition(":")[0] == "llvm" else target)
    elif isinstance(target, dict):
        target = tvm.target.Target(target)
    if target.kind.name != "llvm":
        return None
    lanes = vector_lanes(target)
    return lanes if lanes >= MIN_BLOCK else None


def to_blocked_map(b: int):
    return lambda n, c, h, w: (n, c // b, h, w, c % b)


def to_nchw_map(b: int):
    return lambda n, c, h, w, i: (n, c * b + i, h, w)


def pack_weight(w: np.ndarray, ib: int, ob: int) -> np.ndarray:
    """OIHW -> OIHW{ib}i{ob}o: [O // ob, C // ib, KH, KW, ib, ob]."""
    o, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // ob, ob, c // ib, ib, kh, kw).transpose(0, 2, 4, 5, 3, 1))


def pack_depthwise_weight(w: np.ndarray, b: int) -> np.ndarray:
    """[C, 1, KH, KW] -> [C // b, 1, KH, KW, 1, b]."""
    c, _, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(c // b, b, kh, kw).transpose(0, 2, 3, 1)).reshape(c // b, 1, kh, kw, 1, b)


def pack_tensor(a: np.ndarray, b: int) -> np.ndarray:
    """[N, C, H, W] -> [N, C // b, H, W, b]."""
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def _shape(expr) -> list[int] | None:
    ty = getattr(expr, "ty", None)
    shape = getattr(ty, "shape", None)
    if shape is None or not hasattr(shape, "values"):
        return None
    try:
        return [int(d) for d in shape.values]
    except (TypeError, ValueError):
        return None


def _dtype(expr) -> str:
    return str(getattr(getattr(expr, "ty", None), "dtype", "") or "")


def _op_name(call) -> str:
    return str(getattr(call.op, "name", ""))


def _op_label(value) -> str:
    """A binding's op for the report: "conv2d", "call_tir maximum", "TupleGetItem"."""
    op = getattr(value, "op", None)
    if op is None:
        return type(value).__name__
    name = str(getattr(op, "name", ""))
    if name == "relax.call_tir":
        from .opgraph import readable_op

        return "call_tir " + readable_op(getattr(value.args[0], "name_hint", ""))
    return name.removeprefix("relax.")


def _ints(xs) -> list[int]:
    return [int(x) for x in xs]


class _Pass:
    def __init__(self, mod, block: int, provenance: dict | None):
        from tvm import relax

        import tvm

        self.relax = relax
        self.Const = tvm.ir.GenericConst
        self.mod = mod
        self.block = int(block)
        self.prov = provenance
        self.bb = relax.BlockBuilder(mod)
        self.env: dict = {}        # old var -> (new expr, block or None)
        self.consts: dict = {}     # old var -> np.ndarray (constant-only bindings)
        self.const_expr: dict = {}  # old var -> relax.Constant, made once
        self.nchw: dict = {}       # old var -> its NCHW transform
        self.blocked: dict = {}    # (old var, b) -> its blocked transform
        self.funcs: dict = {}      # PrimFunc key -> GlobalVar
        self.name = None           # the ONNX node of the binding being rewritten
        self.old_name = None
        self.op = None             # the op of the binding being rewritten (for `report`)
        self.report = None         # {"convs": [...], "exits": [...], "entries": [...]} when asked

    # -- emission and provenance
    def emit(self, expr, node=None):
        var = self.bb.emit(expr)
        self._name(var, node)
        return var

    def _name(self, var, node=None):
        if self.prov is not None:
            name = node if node is not None else self.name
            if name is not None:
                self.prov[var.id_] = name
            else:
                self.prov.pop(var.id_, None)

    # -- the report (what stays NCHW and why)
    def _note(self, what, v, reason=None, **more):
        if self.report is None:
            return
        shp = _shape(v)
        nbytes = int(np.prod(shp)) * 4 if shp is not None else 0
        self.report[what].append({"op": self.op, "shape": shp, "bytes": nbytes, "reason": reason, **more})

    def _refuse(self, var, value, reason):
        self._note("convs", var, reason, input=_shape(value.args[0]), groups=int(value.attrs.groups))
        return None

    # -- values
    def const_of(self, v):
        """The numpy value of an old expr that is constant, else None."""
        relax = self.relax
        if isinstance(v, self.Const):
            return v.value.numpy()
        if isinstance(v, relax.Var) and v in self.consts:
            return self.consts[v]
        return None

    def const_node(self, v):
        relax = self.relax
        if isinstance(v, self.Const):
            return v
        if v not in self.const_expr:
            a = self.consts[v]
            self.const_expr[v] = relax.const(a, str(a.dtype))
        return self.const_expr[v]

    def layout(self, v):
        """The block of an old var's new value (None: as it was)."""
        if isinstance(v, self.relax.Var) and v in self.env:
            return self.env[v][1]
        return None

    def as_nchw(self, v):
        """The new expr of old expr `v` in its original layout."""
        relax = self.relax
        if isinstance(v, self.Const):
            return v
        if isinstance(v, relax.Var):
            if v in self.consts:
                return self.const_node(v)
            if v not in self.env:
                return v  # a parameter
            expr, b = self.env[v]
            if b is None:
                return expr
            if v not in self.nchw:
                if isinstance(v.ty, relax.TupleType):
                    n = len(v.ty.fields)
                    items = [self.emit(relax.op.layout_transform(self.emit(relax.TupleGetItem(expr, i)),
                                                                 index_map=to_nchw_map(b))) for i in range(n)]
                    self.nchw[v] = self.emit(relax.Tuple(items))
                else:
                    self.nchw[v] = self.emit(relax.op.layout_transform(expr, index_map=to_nchw_map(b)))
                self._note("exits", v)
            return self.nchw[v]
        return self.subst(v)

    def as_blocked(self, v, b: int):
        """The new expr of old 4-D expr `v` (channels a multiple of b) in NCHW{b}c."""
        if self.layout(v) == b:
            return self.env[v][0]
        a = self.const_of(v)
        if a is not None:
            return self.relax.const(pack_tensor(a, b), str(a.dtype))
        key = (v, b)
        if key not in self.blocked:
            self.blocked[key] = self.emit(self.relax.op.layout_transform(self.as_nchw(v), index_map=to_blocked_map(b)))
            self._note("entries", v)
        return self.blocked[key]

    def subst(self, expr):
        """`expr` with every variable in NCHW (the fallback for an op with no blocked form)."""
        relax = self.relax
        if isinstance(expr, relax.Var):
            return self.as_nchw(expr)
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self.subst(f) for f in expr.fields])
        if isinstance(expr, relax.TupleGetItem):
            return relax.TupleGetItem(self.subst(expr.tuple_value), expr.index)
        if isinstance(expr, relax.Call):
            return relax.Call(expr.op, [self.subst(a) for a in expr.args], expr.attrs, expr.ty_args)
        return expr

    # -- constant folding in numpy
    def fold(self, value):
        relax = self.relax
        import tvm

        if not isinstance(value, relax.Call) or not isinstance(value.op, tvm.ir.Op):
            return None
        name = _op_name(value)
        tensors = [a for a in value.args if isinstance(a, (relax.Var, self.Const))]
        vals = [self.const_of(a) for a in tensors]
        if not tensors or any(x is None for x in vals):
            return None
        try:
            if name in _NP_UNARY:
                out = _NP_UNARY[name](vals[0])
            elif name in _NP_BINARY:
                out = _NP_BINARY[name](vals[0], vals[1])
            elif name == "relax.expand_dims":
                out = vals[0]
                nd = out.ndim + len(value.attrs.axis)
                for ax in sorted(int(a) % nd for a in value.attrs.axis):
                    out = np.expand_dims(out, ax)
            elif name in ("relax.reshape", "relax.squeeze", "relax.broadcast_to"):
                shp = _shape(value)
                if shp is None:
                    return None
                out = vals[0].reshape(shp) if name != "relax.broadcast_to" else np.broadcast_to(vals[0], shp).copy()
            elif name == "relax.where":
                out = np.where(vals[0], vals[1], vals[2])
            elif name == "relax.astype":
                out = vals[0].astype(str(value.attrs.dtype))
            else:
                return None
        except Exception:  # noqa: BLE001 - anything numpy cannot do stays a Relax op
            return None
        dtype = _dtype(value)
        out = np.asarray(out)
        if dtype and str(out.dtype) != dtype:
            out = out.astype(dtype)
        if _shape(value) is not None and list(out.shape) != _shape(value):
            return None
        return out

    # -- the rewrites; each returns (new expr, block) or None for the fallback
    def rewrite(self, var, value):
        relax = self.relax
        if isinstance(value, relax.TupleGetItem):
            t = value.tuple_value
            b = self.layout(t)
            if b is not None:
                return relax.TupleGetItem(self.env[t][0], value.index), b
            return None
        if not isinstance(value, relax.Call):
            return None
        name = _op_name(value)
        out = _shape(var)
        if name == "relax.nn.conv2d":
            return self.conv(var, value)
        if name == "relax.call_tir":
            return self.tir_binary(var, value)
        if out is None or len(out) != 4 or _dtype(var) not in ("float32", "float16"):
            return self.split(var, value) if name == "relax.split" else self.reduce(var, value)
        if name in _UNARY:
            x = value.args[0]
            b = self.layout(x)
            if b is None or _shape(x) != out:
                return None
            return relax.Call(value.op, [self.env[x][0], *value.args[1:]], value.attrs, value.ty_args), b
        if name in _BINARY:
            return self.binary(value.op, list(value.args), value.attrs, out)
        if name in _POOLS:
            return self.pool(value, name)
        if name in _REDUCE:
            return self.reduce(var, value)
        if name == "relax.concat":
            return self.concat(value)
        if name == "relax.image.resize2d":
            return self.resize(value)
        return None

    def resize(self, value):
        """resize2d of a blocked tensor in NCHW{b}c (topi's resize computes blocked layouts)."""
        relax = self.relax
        x, size = value.args[0], value.args[1]
        b, at = self.layout(x), value.attrs
        if b is None or str(at.layout) != "NCHW" or not isinstance(size, relax.ShapeExpr):
            return None
        roi = tuple(float(r) for r in at.roi) if at.roi is not None else None
        return relax.op.image.resize2d(
            self.env[x][0], size, roi, layout=f"NCHW{b}c", method=str(at.method),
            coordinate_transformation_mode=str(at.coordinate_transformation_mode),
            rounding_method=str(at.rounding_method), cubic_alpha=float(at.cubic_alpha),
            cubic_exclude=int(at.cubic_exclude), extrapolation_value=float(at.extrapolation_value),
            out_dtype=str(at.out_dtype) if str(at.out_dtype) not in ("", "void", "None") else None), b

    def binary(self, op, args, attrs, out):
        relax = self.relax
        c = out[1]
        blocks = {self.layout(a) for a in args if isinstance(a, relax.Var) and self.layout(a) is not None
                  and _shape(a) is not None and len(_shape(a)) == 4 and _shape(a)[1] == c}
        if len(blocks) != 1:
            return None
        b = blocks.pop()
        new = []
        for a in args:
            arr = self.const_of(a)
            shp = _shape(a)
            if arr is not None:
                if arr.size == 1:
                    new.append(self.as_nchw(a))
                    continue
                if arr.ndim > 4:
                    return None
                arr = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
                if arr.shape[1] == c:
                    new.append(relax.const(pack_tensor(arr, b), str(arr.dtype)))
                elif arr.shape[1] == 1:
                    new.append(relax.const(np.ascontiguousarray(arr[..., None]), str(arr.dtype)))
                else:
                    return None
                continue
            if shp is None:
                return None
            if self.layout(a) == b and len(shp) == 4 and shp[1] == c:
                new.append(self.env[a][0])
            elif int(np.prod(shp)) == 1:
                new.append(self.as_nchw(a))
            elif len(shp) == 4 and shp[1] == c and isinstance(a, relax.Var):
                new.append(self.as_blocked(a, b))
            else:
                return None
        return relax.Call(op, new, attrs), b

    def tir_binary(self, var, value):
        """The importer's Clip: call_tir(maximum | minimum, (x, scalar)) -> relax.maximum | minimum."""
        relax = self.relax
        gv = value.args[0]
        from .opgraph import readable_op

        op = _TIR_BINARY.get(readable_op(getattr(gv, "name_hint", "")))
        args = value.args[1]
        fields = list(args.fields) if isinstance(args, relax.Tuple) else [args]
        out = _shape(var)
        if op is None or len(value.args) > 2 or len(fields) != 2 or out is None or len(out) != 4:
            return None
        x, s = fields
        if self.layout(x) is None or _shape(x) != out:
            return None
        shp = _shape(s)
        if shp is None or int(np.prod(shp)) != 1 or _dtype(s) != _dtype(x):
            return None
        import tvm

        return relax.Call(tvm.ir.Op.get(op), [self.env[x][0], self.as_nchw(s)]), self.layout(x)

    def pool(self, value, name):
        relax = self.relax
        x = value.args[0]
        b = self.layout(x)
        at = value.attrs
        if b is None or str(at.layout) != "NCHW" or str(at.out_layout) != "NCHW":
            return None
        lay = f"NCHW{b}c"
        e = self.env[x][0]
        if name == "relax.nn.adaptive_avg_pool2d":
            size = None if at.output_size is None else _ints(at.output_size)
            return relax.op.nn.adaptive_avg_pool2d(e, size, layout=lay, out_layout=lay), b
        fn = relax.op.nn.max_pool2d if name == "relax.nn.max_pool2d" else relax.op.nn.avg_pool2d
        return fn(e, _ints(at.pool_size), _ints(at.strides), _ints(at.padding), _ints(at.dilation),
                  bool(at.ceil_mode), bool(at.count_include_pad), layout=lay, out_layout=lay), b

    def reduce(self, var, value):
        """mean / sum / max / min over H, W of a blocked tensor."""
        relax = self.relax
        name = _op_name(value)
        if name not in _REDUCE:
            return None
        x = value.args[0]
        b = self.layout(x)
        if b is None or value.attrs.axis is None:
            return None
        axes = sorted(int(a) % 4 for a in value.attrs.axis)
        if axes != [2, 3]:
            return None
        fn = {"relax.mean": relax.op.mean, "relax.sum": relax.op.sum, "relax.max": relax.op.max,
              "relax.min": relax.op.min}[name]
        e = self.env[x][0]
        if bool(value.attrs.keepdims):
            return fn(e, axis=[2, 3], keepdims=True), b
        n, c = _shape(x)[:2]
        r = self.emit(fn(e, axis=[2, 3], keepdims=False))  # [N, C // b, b]: C in order, row-major
        return relax.op.reshape(r, [n, c]), None

    def concat(self, value):
        relax = self.relax
        if int(value.attrs.axis) % 4 != 1 or not isinstance(value.args[0], relax.Tuple):
            return None
        fields = list(value.args[0].fields)
        blocks = {self.layout(f) if isinstance(f, relax.Var) else None for f in fields}
        if len(blocks) != 1 or None in blocks:
            return None
        b = blocks.pop()
        return relax.op.concat([self.env[f][0] for f in fields], axis=1), b

    def split(self, var, value):
        relax = self.relax
        x = value.args[0]
        b = self.layout(x)
        shp = _shape(x)
        if b is None or shp is None or int(value.attrs.axis) % 4 != 1:
            return None
        c = shp[1]
        ios = value.attrs.indices_or_sections
        if isinstance(ios, (int,)) or hasattr(ios, "value"):
            n = int(getattr(ios, "value", ios))
            if c % n or (c // n) % b:
                return None
            new = n
        else:
            idx = _ints(ios)
            if any(i % b for i in idx):
                return None
            new = [i // b for i in idx]
        return relax.op.split(self.env[x][0], new, axis=1), b

    def conv(self, var, value):
        relax = self.relax
        at = value.attrs
        x, w = value.args
        xs, out, wa = _shape(x), _shape(var), self.const_of(w)
        if wa is None:
            return self._refuse(var, value, "weight not a constant")
        if (xs is None or out is None or len(xs) != 4 or wa.ndim != 4
                or str(at.data_layout) != "NCHW" or str(at.kernel_layout) != "OIHW" or str(at.out_layout) != "NCHW"):
            return self._refuse(var, value, "not a static NCHW/OIHW conv")
        if (_dtype(x) != "float32" or str(wa.dtype) != "float32"
                or (str(at.out_dtype) not in ("", "float32", "void", "None"))):
            return self._refuse(var, value, "not float32")
        n, c, h, wd = xs
        o = out[1]
        groups = int(at.groups)
        cur = self.layout(x)
        if groups == 1:
            ib = cur if cur is not None else tensor_block(c, self.block)
            ob = tensor_block(o, self.block)
            if ob is None:
                return self._refuse(var, value, "output channels have no block")
            if ib is None:
                return self._refuse(var, value, "input channels have no block")
            kind, wp, name = "conv2d", pack_weight(wa, ib, ob), DENSE_NAME
        elif groups == c == o and wa.shape[1] == 1:
            ib = ob = cur if cur is not None else tensor_block(c, self.block)
            if ib is None:
                return self._refuse(var, value, "depthwise channels have no block")
            kind, wp, name = "depthwise_conv2d", pack_depthwise_weight(wa, ib), DEPTHWISE_NAME
        else:
            return self._refuse(var, value, "grouped (not depthwise)")
        data = self.as_blocked(x, ib)
        dshape = [n, c // ib, h, wd, ib]
        key = (kind, tuple(dshape), wp.shape, tuple(_ints(at.strides)), tuple(_ints(at.padding)),
               tuple(_ints(at.dilation)))
        if key not in self.funcs:
            f = blocked_compute.prim_func(kind, dshape, wp.shape, _ints(at.strides), _ints(at.padding),
                                          _ints(at.dilation))
            f = f.without_attr("global_symbol")
            self.funcs[key] = self.bb.add_func(f, name)
        out_ty = relax.TensorType([out[0], o // ob, out[2], out[3], ob], "float32")
        return relax.call_tir(self.funcs[key], [data, relax.const(wp, "float32")], out_ty), ob

    # -- the walk
    def run(self):
        relax = self.relax
        main = self.mod["main"]
        bb = self.bb
        blocks = []
        for blk in main.body.blocks:
            df = isinstance(blk, relax.DataflowBlock)
            bb._begin_dataflow_block() if df else bb._begin_binding_block()
            for bd in blk.bindings:
                self.binding(bd, df)
            blocks.append(bb._end_block())
        self.op = "(graph output)"
        ret = self.subst(main.body.body)
        new_main = relax.Function(main.params, relax.SeqExpr(blocks, ret), main.ret_ty, main.is_pure, main.attrs)
        out = bb.get()
        out["main"] = new_main
        return out

    def binding(self, bd, df):
        relax = self.relax
        var, value = bd.var, bd.value
        self.name = self.prov.get(var.id_) if self.prov is not None else None
        self.op = _op_label(value)
        if not isinstance(bd, relax.VarBinding):
            raise ValueError("blocked_layout: match_cast bindings are not supported")
        is_out = not isinstance(var, relax.DataflowVar)
        arr = self.fold(value) if not is_out else None
        if arr is not None:
            self.consts[var] = arr
            return
        got = self.rewrite(var, value) if df else None
        if got is not None:
            expr, b = got
            new = self.emit(expr)
            self.env[var] = (new, b)
            if is_out:
                self.op = "(graph output)"
                self.env[var] = (self.bb.emit_output(self.as_nchw(var)), None)
                self._name(self.env[var][0])
            return
        new_value = self.subst(value)
        if is_out and df:
            new = self.bb.emit_output(new_value)
        else:
            new = self.emit(new_value) if df else self.bb.emit(new_value)
        self._name(new)
        self.env[var] = (new, None)


def apply(mod, block: int | None, provenance: dict | None = None, report: dict | None = None):
    """`mod` with main rewritten into NCHW{x}c (x from `block`: 16, 8, 4, ...); `mod` itself for None.
    `provenance` ({Var.id_: ONNX node}) gets an entry for every variable the pass makes.
    `report` (a dict), when given, is filled with what stayed NCHW and why: "convs" (each conv left
    NCHW: its reason), "exits" and "entries" (each layout transform out of / into the block: the op
    it was made for, the tensor's shape and bytes); it does not change the module made."""
    if block is None:
        return mod
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or int(block) < 1:
        raise ValueError(f"bad channel block {block!r}: a positive number of channels, or None for NCHW")
    block = int(block)
    p = _Pass(mod, block, provenance)
    if report is not None:
        for k in ("convs", "exits", "entries"):
            report.setdefault(k, [])
        p.report = report
    return p.run()


def _legalize_layout_transform(bb, call):
    """A layout_transform this pass makes, as a gather (injective); any other, as Relax does it."""
    from tvm import te, tirx as tir
    from tvm.relax.transform.legalize_ops.manipulate import _layout_transform

    x = call.args[0]
    src, dst = _shape(x), _shape(call)
    if src is not None and dst is not None and call.attrs.pad_value is None:
        if len(src) == 4 and len(dst) == 5 and src[1] == dst[1] * dst[4] and [src[0], src[2], src[3]] == [dst[0], dst[2], dst[3]]:
            b = dst[4]
            probe = call.attrs.index_map.map_indices([tir.IntImm("int64", v) for v in (0, b + 1, 0, 0)])
            if [int(v) for v in probe] == [0, (b + 1) // b, 0, 0, (b + 1) % b]:
                return bb.call_te(lambda d: te.compute(dst, lambda n, c, h, w, i: d[n, c * b + i, h, w],
                                                       name="layout_transform"), x,
                                  primfunc_name_hint="layout_transform")
        if len(src) == 5 and len(dst) == 4 and dst[1] == src[1] * src[4]:
            b = src[4]
            probe = call.attrs.index_map.map_indices([tir.IntImm("int64", v) for v in (0, 1, 0, 0, 1)])
            if [int(v) for v in probe] == [0, b + 1, 0, 0]:
                return bb.call_te(lambda d: te.compute(dst, lambda n, c, h, w: d[n, c // b, h, w, c % b],
                                                       name="layout_transform"), x,
                                  primfunc_name_hint="layout_transform")
    return _layout_transform(bb, call)


LEGALIZE = {"relax.layout_transform": _legalize_layout_transform}
