"""What the LSTM, GRU and RNN rules (lstm.py, gru.py, rnn.py) share: reading a recurrent node (shapes,
directions, layout, activations, clip, sequence_lens, initial states), its weights per direction, the
unrolling loop with its masking, and the final outputs.

Every layer is unrolled the same way, at its fixed sequence length. Per direction one MatMul projects
the input of all steps ('input_proj': X @ W^T + biases); then each step ('step{k}', k counted in the
order the direction runs) gathers its row of the projection, adds its recurrent MatMul and updates the
state elementwise; the rule writes only the step itself. Bidirectional layers put each direction's
parts under 'forward/' and 'reverse/'; 'outputs' stacks Y, Y_h, Y_c.

sequence_lens becomes a mask at sequence time t (bool [batch, 1]): where t is past an item's length the
state is held and Y is 0. So the forward direction ends on the state of the item's last valid step, and
the reverse direction, run from the last time down, starts each item at its own last element, which is
how ONNX Runtime reverses each item within its own length. An item of length 0 has Y_h (Y_c) 0, as ONNX
Runtime gives, not its initial state.

A value here is None for zero (an absent bias, an absent initial state, the recurrent term of a first
step), a numpy array for a constant (made an initializer where an op reads it), or a value name. W, R, B
and P are almost always constants: their slices, transposes and sums are then computed with numpy, and
only when they are not are they written as Gather/Slice/Transpose/Add nodes (part 'weights').
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from . import Rewritten
from .base import Emitter, RewriteError, attrs, node_desc, scope_of

# Activation functions by lower-case name (as ONNX Runtime matches them): (default alpha, default beta,
# builder). A default of None means the function takes no such parameter, so activation_alpha/beta
# values go to the next function that does (ONNX Runtime consumes the lists in that order).
ACTIVATIONS = {
    "relu": (None, None, lambda L, x, a, b, p: L.em.op("Relu", [x], p)),
    "tanh": (None, None, lambda L, x, a, b, p: L.em.op("Tanh", [x], p)),
    "sigmoid": (None, None, lambda L, x, a, b, p: L.em.op("Sigmoid", [x], p)),
    "softsign": (None, None, lambda L, x, a, b, p: L.em.op("Softsign", [x], p)),
    "softplus": (None, None, lambda L, x, a, b, p: L.em.op("Softplus", [x], p)),
    "leakyrelu": (0.01, None, lambda L, x, a, b, p: L.em.op("LeakyRelu", [x], p, alpha=a)),
    "elu": (1.0, None, lambda L, x, a, b, p: L.em.op("Elu", [x], p, alpha=a)),
    "hardsigmoid": (0.2, 0.5, lambda L, x, a, b, p: L.em.op("HardSigmoid", [x], p, alpha=a, beta=b)),
    "thresholdedrelu": (0.0, None, lambda L, x, a, b, p: L.thresholded_relu(x, a, p)),
    "affine": (0.0, 0.0, lambda L, x, a, b, p: L.em.op("Add", [L.em.op("Mul", [x, L.scalar(a)], p), L.scalar(b)], p)),
    "scaledtanh": (0.0, 0.0, lambda L, x, a, b, p: L.em.op(
        "Mul", [L.em.op("Tanh", [L.em.op("Mul", [x, L.scalar(b)], p)], p), L.scalar(a)], p)),
}

X_IN, SEQ_LENS_IN, INITIAL_IN = 0, 4, 5  # input indices; the initial states are 5 (h) and 6 (c)


def read_activations(node: onnx.NodeProto, per_direction: tuple, n_dirs: int) -> list:
    """Per direction, the (name, alpha, beta) of each activation function, alpha/beta consumed in order
    by the functions that take them (defaults past the lists' ends), as ONNX Runtime reads them."""
    a = attrs(node)
    names = [n.lower() for n in a.get("activations") or list(per_direction) * n_dirs]
    if len(names) != len(per_direction) * n_dirs:
        raise RewriteError(f"activations lists {len(names)} functions, {len(per_direction) * n_dirs} expected "
                           f"({len(per_direction)} per direction)")
    alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
    out = []
    for name in names:
        if name not in ACTIVATIONS:
            raise RewriteError(f"activation {name!r} is none of {', '.join(sorted(ACTIVATIONS))}")
        da, db, _ = ACTIVATIONS[name]
        alpha = None if da is None else (alphas.pop(0) if alphas else da)
        beta = None if db is None else (betas.pop(0) if betas else db)
        out.append((name, alpha, beta))
    k = len(per_direction)
    return [out[d * k:(d + 1) * k] for d in range(n_dirs)]


class Layer:
    """One recurrent node being unrolled: what it reads (from the node and the Context) and the
    builders its rule writes a step with. `Layer.read` gives None while a shape is unknown."""

    def __init__(self, node, ctx, seq, batch, hidden, per_direction):
        a = attrs(node)
        self.node, self.ctx, self.seq, self.batch, self.hidden = node, ctx, seq, batch, hidden
        self.em = Emitter(ctx, scope_of(node, next((o for o in node.output if o), "")))
        self.layout = int(a.get("layout", 0))
        direction = a.get("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise RewriteError(f"direction {direction!r} is none of forward, reverse, bidirectional")
        self.directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        self.acts = read_activations(node, per_direction, len(self.directions))
        self.clip_at = a.get("clip")
        dtype = ctx.np_dtype(node.input[X_IN])
        self.dtype = np.dtype(np.float32) if dtype is None else dtype
        self.lens = self._lens()
        self._consts: dict = {}
        self._masks_all = None   # sequence_lens given as a graph input: the masks of every time
        self._started = None     # ... and the items of length > 0

    @classmethod
    def read(cls, node, ctx, per_direction: tuple) -> Layer | None:
        """The layer, or None while X's shape (or the hidden size, when not an attribute) is unknown."""
        shape = ctx.shape(node.input[X_IN])
        hidden = attrs(node).get("hidden_size") or (ctx.shape(node.input[2]) or [None])[-1]
        if shape is None or len(shape) != 3 or not hidden:
            return None
        seq, batch = (shape[0], shape[1]) if attrs(node).get("layout", 0) == 0 else (shape[1], shape[0])
        if seq == 0:
            raise RewriteError("the sequence is empty (length 0)")
        return cls(node, ctx, seq, batch, int(hidden), per_direction)

    # -- naming, inputs ------------------------------------------------------------------------------

    def part(self, d: int, name: str) -> str:
        """The sub-scope of a direction's part: 'step3', or 'reverse/step3' in a bidirectional layer."""
        return f"{self.directions[d]}/{name}" if len(self.directions) == 2 else name

    def input(self, k: int) -> str:
        return self.node.input[k] if len(self.node.input) > k else ""

    def scalar(self, v) -> str:
        """A scalar initializer in X's element type (one per value)."""
        return self._const(np.asarray(v, self.dtype), "scalar")

    def index(self, v) -> str:
        """An int64 initializer (a Gather index, a shape), one per value."""
        return self._const(np.asarray(v, np.int64), "index")

    def _const(self, arr: np.ndarray, hint: str) -> str:
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.em.const(arr, hint)
        return self._consts[key]

    def value(self, v, hint: str) -> str | None:
        """A value's name: a numpy array becomes an initializer. A rule names what every step reads
        (R^T, peepholes) once per direction, not once per step."""
        return self.em.const(v, hint) if isinstance(v, np.ndarray) else v

    def param(self, k: int, d: int):
        """Input k (W, R, B or P) of direction d: W, R as [rows, cols]; B, P as [1, n], 2-D so that
        their column slices line up with a step's [batch, n] rows. None when absent, or when B or P is
        a constant zero (it adds nothing)."""
        name, row = self.input(k), k in (3, 7)
        if not name:
            return None
        v = self.ctx.const(name)
        if v is not None:
            v = v[d:d + 1] if row else v[d]
            return None if row and not v.any() else v
        return self.em.op("Gather", [name, self.index([d] if row else d)], self.part(d, "weights"), axis=0)

    def cut(self, v, lo: int, hi: int, axis: int, d: int):
        """v[lo:hi] along axis (axis 0: rows of W or R; axis 1: columns of B or P). A Gather of the
        range rather than a Slice: one form in every opset (TVM's importer takes no Slice before 10)."""
        if v is None or isinstance(v, np.ndarray):
            return None if v is None else (v[lo:hi] if axis == 0 else v[:, lo:hi])
        return self.em.op("Gather", [v, self.index(np.arange(lo, hi))], self.part(d, "weights"), axis=axis)

    def transposed(self, v, d: int):
        """v^T of a 2-D weight: W^T, R^T as the MatMuls read them."""
        if isinstance(v, np.ndarray):
            return np.ascontiguousarray(v.T)
        return self.em.op("Transpose", [v], self.part(d, "weights"), perm=[1, 0])

    def plus(self, a, b, d: int):
        """a + b of two biases (numpy when both are constants)."""
        if a is None or b is None:
            return b if a is None else a
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a + b
        return self.em.op("Add", [self.value(a, "bias"), self.value(b, "bias")], self.part(d, "weights"))

    def initial(self, k: int, d: int):
        """Initial state k (INITIAL_IN: h, +1: c) of direction d as [batch, hidden]; None when absent or
        a constant zero."""
        name, axis = self.input(k), 0 if self.layout == 0 else 1
        if not name:
            return None
        v = self.ctx.const(name)
        if v is not None:
            v = np.take(v, d, axis=axis)
            return self.em.const(v, "initial") if v.any() else None
        return self.em.op("Gather", [name, self.index(d)], self.part(d, "initial"), axis=axis)

    def _lens(self):
        """sequence_lens: None when absent or every item is full length, else numpy when constant,
        else its name."""
        name = self.input(SEQ_LENS_IN)
        if not name:
            return None
        v = self.ctx.const(name)
        if v is None:
            return name
        v = np.asarray(v).reshape(-1)
        return None if (v >= self.seq).all() else v

    # -- step builders ---------------------------------------------------------------------------------

    def add(self, a, b, part: str):
        """a + b of two value names, None being zero."""
        if a is None or b is None:
            return b if a is None else a
        return self.em.op("Add", [a, b], part)

    def mul(self, a, b, part: str):
        """a * b of two value names, None being zero."""
        if a is None or b is None:
            return None
        return self.em.op("Mul", [a, b], part)

    def recur(self, h, rt: str, part: str):
        """h @ R^T (None for a zero state)."""
        return None if h is None else self.em.op("MatMul", [h, rt], part)

    def split(self, x: str, sizes: list, part: str) -> list:
        """x split along its last (second) axis into pieces of `sizes`."""
        if self.ctx.opset >= 13:
            return self.em.op("Split", [x, self.index(sizes)], part, n_out=len(sizes), axis=1)
        return self.em.op("Split", [x], part, n_out=len(sizes), axis=1, split=list(sizes))

    def clip(self, x: str, part: str) -> str:
        """x clipped to [-clip, clip] (the `clip` attribute; x itself when it has none)."""
        if self.clip_at is None:
            return x
        c = float(self.clip_at)
        if self.ctx.opset >= 11:
            return self.em.op("Clip", [x, self.scalar(-c), self.scalar(c)], part)
        return self.em.op("Clip", [x], part, min=-c, max=c)

    def act(self, d: int, k: int, x: str, part: str) -> str:
        """Activation function k (f, g, h) of direction d applied to x."""
        name, alpha, beta = self.acts[d][k]
        return ACTIVATIONS[name][2](self, x, alpha, beta, part)

    def thresholded_relu(self, x: str, alpha: float, part: str) -> str:
        """ThresholdedRelu (an ONNX op from opset 10; before it, x * (x > alpha))."""
        if self.ctx.opset >= 10:
            return self.em.op("ThresholdedRelu", [x], part, alpha=alpha)
        above = self.em.op("Greater", [x, self.scalar(alpha)], part)
        return self.em.op("Mul", [x, self.em.op("Cast", [above], part, to=self._elem_type())], part)

    def _elem_type(self) -> int:
        return helper.np_dtype_to_tensor_dtype(self.dtype)

    # -- unrolling -------------------------------------------------------------------------------------

    def times(self, d: int) -> list:
        """The sequence times in the order direction d runs them."""
        return list(range(self.seq))[::-1] if self.directions[d] == "reverse" else list(range(self.seq))

    def project(self, d: int, wt, bias) -> str:
        """X @ W^T (+ bias) for every step at once: [seq, batch, gates*hidden] ([batch, seq, ...] in
        layout 1)."""
        part = self.part(d, "input_proj")
        proj = self.em.op("MatMul", [self.node.input[X_IN], self.value(wt, "WT")], part)
        return self.add(proj, self.value(bias, "bias"), part)

    def row(self, proj: str, t: int, part: str) -> str:
        """The projection's row at sequence time t: [batch, gates*hidden]."""
        return self.em.op("Gather", [proj, self.index(t)], part, axis=0 if self.layout == 0 else 1)

    def mask(self, t: int, part: str) -> str | None:
        """Bool [batch, 1]: the items still within their length at time t; None when all are."""
        if self.lens is None:
            return None
        if isinstance(self.lens, np.ndarray):
            m = (t < self.lens).reshape(self.batch, 1)
            return None if m.all() else self._const(m, "mask")
        if self._masks_all is None:  # [seq, batch, 1], compared in X's type (Less takes it in every opset)
            lens = self.em.op("Cast", [self.lens], "sequence_lens", to=self._elem_type())
            lens = self.em.op("Reshape", [lens, self.index([1, self.batch, 1])], "sequence_lens")
            times = self._const(np.arange(self.seq, dtype=self.dtype).reshape(-1, 1, 1), "times")
            self._masks_all = self.em.op("Less", [times, lens], "sequence_lens")
        return self.em.op("Gather", [self._masks_all, self.index(t)], part, axis=0)

    def select(self, m: str, a: str, b, part: str) -> str:
        """Where(m, a, b), b None being zero (arithmetic before opset 9, which has no Where)."""
        if self.ctx.opset >= 9:
            return self.em.op("Where", [m, a, b if b is not None else self.scalar(0)], part)
        mf = self.em.op("Cast", [m], part, to=self._elem_type())
        if b is None:
            return self.em.op("Mul", [a, mf], part)
        diff = self.em.op("Sub", [a, b], part)
        return self.em.op("Add", [b, self.em.op("Mul", [mf, diff], part)], part)

    def unroll(self, direction, n_states: int) -> Rewritten:
        """The layer unrolled. `direction(d)` gives direction d's (W^T, bias for the projection, step),
        `step(x_row, states, part)` the new states (h first) from the old (None: zero)."""
        wants_y = bool(self.node.output) and bool(self.node.output[0])
        ys, finals = [], []
        for d in range(len(self.directions)):
            wt, bias, step = direction(d)
            proj = self.project(d, wt, bias)
            states = tuple(self.initial(INITIAL_IN + k, d) for k in range(n_states))
            y = {}
            for k, t in enumerate(self.times(d)):
                part = self.part(d, f"step{k}")
                new = step(self.row(proj, t, part), states, part)
                states, y[t] = self._masked(t, new, states, wants_y, part)
            ys.append(y)
            finals.append(states)
        self._outputs(ys, finals)
        name = node_desc(self.node)
        how = "bidirectional" if len(self.directions) == 2 else self.directions[0]
        return Rewritten(self.em.nodes, note=f"{name} unrolled: {self.seq} steps, {how}")

    def _masked(self, t: int, new: tuple, old: tuple, wants_y: bool, part: str):
        """(the states after time t, its Y row): the new states where the item is within its length,
        the old ones (Y: 0) past it."""
        m = self.mask(t, part)
        if m is None:
            return new, new[0]
        y = self.select(m, new[0], None, part) if wants_y or old[0] is None else None
        held = [y if k == 0 and p is None else self.select(m, n, p, part) for k, (n, p) in enumerate(zip(new, old))]
        return tuple(held), y

    def _outputs(self, ys: list, finals: list) -> None:
        """Y ([seq, dirs, batch, hidden]; layout 1: [batch, seq, dirs, hidden]) and Y_h, Y_c ([dirs,
        batch, hidden]; layout 1: [batch, dirs, hidden]), for those of the node's outputs that are named."""
        out, nd, b, hid = list(self.node.output), len(self.directions), self.batch, self.hidden
        if out and out[0]:
            pieces = [ys[d][t] for t in range(self.seq) for d in range(nd)]
            self._stack(pieces, [self.seq, nd, b, hid] if self.layout == 0 else [b, self.seq, nd, hid], out[0])
        for k in range(1, min(len(out), 1 + len(finals[0]))):
            if out[k]:
                pieces = [self._nonempty(f[k - 1]) for f in finals]
                self._stack(pieces, [nd, b, hid] if self.layout == 0 else [b, nd, hid], out[k])

    def _nonempty(self, state: str) -> str:
        """A final state, 0 for the items of length 0 (as ONNX Runtime gives, whatever the initial state)."""
        if self.lens is None or (isinstance(self.lens, np.ndarray) and self.lens.all()):
            return state
        if self._started is None:
            self._started = self.mask(0, "outputs")
        return self.select(self._started, state, None, "outputs")

    def _stack(self, pieces: list, shape: list, out: str) -> None:
        """[batch, hidden] pieces concatenated (along the batch axis in layout 0, the hidden one in
        layout 1) and reshaped to `shape`, written to output `out`."""
        axis = 0 if self.layout == 0 else 1
        x = pieces[0] if len(pieces) == 1 else self.em.op("Concat", pieces, "outputs", axis=axis)
        self.em.op("Reshape", [x, self.index(shape)], "outputs", outputs=[out])
