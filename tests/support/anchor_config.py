"""Helpers of the test_anchor_config tests (shared by its tiers' halves and other test modules).

The CPU Anchor rule's knobs (engine/schedules/base/config.py) and its steps (base/anchor.py, cpu/anchor.py):
config_for reads the target, an explicit Config changes the tile, and each step returns what it
decided on a small 3x3 convolution. The Chain rule (cpu/chain.py) takes its knobs from the same
Config: its L2 budget, register tiles and unrolling follow it.
"""

import tvm



# an AVX-512 x86 target with 8 cores, whatever this host is
AVX512 = {"kind": "llvm", "mcpu": "skylake-avx512", "mtriple": "x86_64-pc-linux-gnu", "num-cores": 8}


def _unrolled(func) -> list[int]:
    """Extents of the unrolled loops of a scheduled PrimFunc, in program order."""
    out = []

    def visit(node):
        if isinstance(node, tvm.tirx.For) and node.kind == tvm.tirx.ForKind.UNROLLED:
            out.append(int(node.extent))
    import tvm_ffi
    tvm_ffi.structural_walk(func.body, (tvm.tirx.For, visit), order="pre")
    return out

