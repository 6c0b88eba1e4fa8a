"""A kernel too small to pay for a fork/join runs on one thread.

Every CPU rule parallelises its outer loop whenever it has two iterations or more; what a parallel
loop costs is a launch of TVM's thread pool and a wait for the slowest worker (a few microseconds
when the workers spin, tens when they sleep or the machine is busy). Recurrent models and small
transformers are made of such kernels: an unrolled LSTM step is a [1, H] x [H, 4H] product and a
dozen gate operations on 4H values, and hundreds of them run one after another.

`serial_when_small(func, min_work)` counts the work of a scheduled PrimFunc (the iterations of every
block, a vector loop counting its lanes) and, below `min_work`, turns its parallel loops serial.
Only the loop kind changes, so the result is the same value for value.
"""
from __future__ import annotations

import tvm_ffi
from tvm import s_tir, tirx

# iterations below which a kernel runs on one thread. BlockedConv's own threshold is 150 K multiply-
# adds, Stages' 64 K loop iterations. Measured with scripts/bench_serial_small.py (2-core AVX-512,
# 40 of 40 rounds quiet), the same plans with the pass off / at 256 K / 1 M / 4 M iterations:
#   a BiLSTM text encoder (g2pid_encoder, 24 steps)  greedy 0.76 / 0.30 / 0.30 / -    ms
#                                                    dp     0.43 / 0.37 / 0.25 / -    ms
#   a small BERT (g2pid_bert, 32 tokens)             greedy 0.36 / 0.22 / 0.17 / 0.18 ms
#                                                    dp     0.31 / 0.27 / 0.26 / 0.23 ms
# and MobileNetV2 at 224 greedy 12.5 / 12.5 / 12.4 / 12.1 ms (its kernels are bigger). 1 M iterations
# is about 20 us of vector work on one core: a fork/join of TVM's pool (waking its worker) costs
# about what the second core would save there.
SERIAL_WORK = 1 << 20

# the rules whose kernels it applies to, each with its threshold. Not the convolution rules
# (BlockedConv and BlockedChain have their own measured threshold, 150 K multiply-adds). Elementwise
# kernels are memory-bound: a CNN's unfused batch-norm on a 112x112 map (400 K iterations) streams at
# two cores' bandwidth, while an unrolled LSTM's gate ops (128-512 values each) are all launch cost.
# With every rule's kernels under 1 M iterations serial, MobileNetV2@224 (blocked) ran 11.7 ms unfused
# and 4.2 ms greedy against 7.7 and 3.9 with the pass off (scripts/bench_schedules.py, quiet).
ELEMENTWISE_WORK = 1 << 14
RULES = {"cpu.Anchor": SERIAL_WORK, "cpu.Stages": SERIAL_WORK, "cpu.RowReduction": SERIAL_WORK,
         "cpu.Reduction": SERIAL_WORK, "cpu.Elementwise": ELEMENTWISE_WORK, "cpu.Fallback": ELEMENTWISE_WORK}


def _extent(loop) -> int | None:
    e = loop.extent
    return int(e) if isinstance(e, tirx.IntImm) else None


def work_of(func) -> int | None:
    """Block iterations summed over every block of `func` (None when a loop extent is not constant)."""
    total = 0
    unknown = False

    def visit(stmt, mult):
        nonlocal total, unknown
        if isinstance(stmt, tirx.For):
            e = _extent(stmt)
            if e is None:
                unknown = True
                return
            visit(stmt.body, mult * e)
        elif isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                visit(s, mult)
        elif isinstance(stmt, s_tir.SBlockRealize):
            body = stmt.block.body
            if isinstance(body, (tirx.For, tirx.SeqStmt, s_tir.SBlockRealize, tirx.IfThenElse, tirx.LetStmt,
                                 tirx.AttrStmt)) and not isinstance(body, tirx.BufferStore):
                visit(body, mult)
                if stmt.block.init is not None:
                    visit(stmt.block.init, mult)
            else:
                total += mult
        elif isinstance(stmt, tirx.IfThenElse):
            visit(stmt.then_case, mult)
            if stmt.else_case is not None:
                visit(stmt.else_case, mult)
        elif isinstance(stmt, (tirx.LetStmt, tirx.AttrStmt)):
            visit(stmt.body, mult)
        elif isinstance(stmt, tirx.BufferStore):
            total += mult
        elif hasattr(stmt, "body"):
            visit(stmt.body, mult)

    visit(func.body, 1)
    return None if unknown else total


def serial_when_small(func, min_work: int = SERIAL_WORK):
    """(func with its parallel loops serial when its work is under min_work, whether it changed)."""
    work = work_of(func)
    if work is None or work >= min_work:
        return func, False
    changed = False

    def cb(loop):
        nonlocal changed
        if loop.kind == tirx.ForKind.PARALLEL:
            changed = True
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                            loop.thread_binding, loop.annotations)
        return loop

    new = tvm_ffi.structural_map(func, (tirx.For, cb))
    return (new, True) if changed else (func, False)
