"""engine/schedules/base/serial_small.py: a kernel too small for a fork/join runs on one thread."""
import numpy as np
import tvm
import tvm_ffi
from tvm import relax, tirx

from engine import schedules
from engine.devices import tvm_target as target_mod
from engine.schedules.base.serial_small import SERIAL_WORK, serial_when_small, work_of


def _matmul_gelu(m, k, n):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((m, k), "float32"))
    w = relax.Var("w", relax.TensorType((k, n), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, w))
            out = bb.emit_output(relax.op.nn.gelu(y))
        bb.emit_func_output(out)
    mod = relax.transform.LegalizeOps()(bb.get())
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(mod))
    return tvm.IRModule({gv: f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)})


def _kinds(func):
    kinds = []
    tvm_ffi.structural_walk(func.body, (tirx.For, lambda f: kinds.append(f.kind)), order="post")
    return kinds


def test_small_kernel_runs_on_one_thread_and_big_one_stays_parallel():
    small = _matmul_gelu(2, 128, 512)         # two rows of an LSTM step's gate product: 131 K multiply-adds
    big = _matmul_gelu(256, 256, 512)         # 33 M multiply-adds
    s_small, rep_small = schedules.schedule(small, "cpu")
    s_big, rep_big = schedules.schedule(big, "cpu")
    (_, f_small), = s_small.functions_items()
    (_, f_big), = s_big.functions_items()
    assert work_of(f_small) < SERIAL_WORK <= work_of(f_big)
    assert tirx.ForKind.PARALLEL not in _kinds(f_small) and rep_small.serial
    assert tirx.ForKind.PARALLEL in _kinds(f_big) and not rep_big.serial
    # the pass off: the rule's parallel loop is there
    s_par, _ = schedules.schedule(small, "cpu", serial_work=0)
    (_, f_par), = s_par.functions_items()
    assert tirx.ForKind.PARALLEL in _kinds(f_par)
    # same values, serial or parallel
    tgt = target_mod.host_target()
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 128)).astype("float32"), rng.standard_normal((128, 512)).astype("float32")
    outs = []
    for f in (f_small, f_par):
        lib = tvm.compile(tvm.IRModule({"main": f.with_attr("global_symbol", "main")}), target=tgt).jit()
        args = [tvm.runtime.tensor(a, tvm.cpu()) for a in (x, w, np.zeros((2, 512), "float32"))]
        lib["main"](*args)
        outs.append(args[-1].numpy())
    assert np.array_equal(outs[0], outs[1])


def test_work_counts_every_block_iteration():
    mod = _matmul_gelu(4, 32, 64)
    (_, f), = mod.functions_items()
    # the matmul's 4*64*32 updates, its 4*64 inits and the epilogue's blocks of 4*64 each
    assert 4 * 64 * 32 + 4 * 64 <= work_of(f) <= 4 * 64 * 32 + 8 * 4 * 64  # GELU is several blocks
    same, changed = serial_when_small(f, 0)
    assert same is f and not changed
