"""What tests/{integration,unit}/test_anchor_config.py shares between its tiers and with other test
modules (the area is described there)."""

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

