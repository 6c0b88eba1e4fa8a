"""AVX-512 VNNI for int8 kernels: the 16x4 u8 x s8 -> int32 dot product as a tensor intrinsic, and
whether a target has it.

TVM's own `dot_16x4_vnni` (tvm.s_tir.tensor_intrin.x86) cannot be used here, for two reasons:
- it calls `llvm.x86.avx512.vpdpbusd.512` with <16 x i32> operands, and the LLVM 22 TVM 0.27 is
  built with declares them <64 x i8> (the module then fails LLVM's verifier: "Call parameter type does not match function
  signature");
- its accumulator is a global buffer, while our kernels accumulate in a `local` register tile.
So the same description is registered with a `local` accumulator, and the implementation passes
the operands as the LLVM it is built with declares them.

`INTRIN` computes C[i] += sum_k int32(A[k]) * int32(B[i, k]) for i < 16, k < 4: A is 4 consecutive
uint8 of one row (broadcast to every lane), B one [16, 4] block of the packed weight
(engine/model/int8_matmul.py), C 16 int32 accumulators: one `vpdpbusd zmm`.
"""
from __future__ import annotations

from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T

INTRIN = "fuselens_dot_16x4_u8i8i32_vnni_local"
LANES, GROUP = 16, 4   # int32 lanes of one zmm, bytes per lane of one vpdpbusd


def _bytes_operands() -> bool:
    """Does the LLVM TVM is built with declare vpdpbusd's multiplicands as <64 x i8> (LLVM 22 does;
    older ones <16 x i32>)? Probed once by building a one-instruction function each way."""
    import tvm

    for bytes_operands in (True, False):
        try:
            tvm.compile(tvm.IRModule({"main": _impl(bytes_operands).with_attr("global_symbol", "main")}),
                        target=tvm.target.Target({"kind": "llvm", "mcpu": "icelake-server"}))
            return bytes_operands
        except Exception:  # noqa: BLE001 - LLVM's verifier refused this signature
            continue
    return True


def _desc():
    @T.prim_func(s_tir=True)
    def desc(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
             C: T.Buffer((16,), "int32", offset_factor=1, scope="local")) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            for i in T.serial(0, 16):
                for k in T.serial(0, 4):
                    with T.sblock("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.cast(A[vk], "int32") * T.cast(B[vi, vk], "int32")
    return desc


def _impl(bytes_operands: bool):
    """vpdpbusd; `bytes_operands`: the two multiplicands as <64 x i8> (LLVM 22), else <16 x i32>."""
    if bytes_operands:
        @T.prim_func(s_tir=True)
        def impl(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                 C: T.Buffer((16,), "int32", offset_factor=1, scope="local")) -> None:
            with T.sblock("root"):
                T.reads(C[0:16], A[0:4], B[0:16, 0:4])
                T.writes(C[0:16])
                a = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
                C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                    T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
                    C.vload([0], dtype="int32x16"), T.reinterpret(T.broadcast(a, 16), dtype="int8x64"),
                    B.vload([0, 0], dtype="int8x64"), dtype="int32x16")
        return impl

    @T.prim_func(s_tir=True)
    def impl_old(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                 C: T.Buffer((16,), "int32", offset_factor=1, scope="local")) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            a = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
            C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
                C.vload([0], dtype="int32x16"), T.broadcast(a, 16),
                T.reinterpret(B.vload([0, 0], dtype="int8x64"), dtype="int32x16"), dtype="int32x16")
    return impl_old


_registered = False


def register() -> str:
    """Register INTRIN once (per process); returns its name."""
    global _registered
    if not _registered:
        try:
            TensorIntrin.register(INTRIN, _desc(), _impl(_bytes_operands()))
        except Exception:  # noqa: BLE001 - TVMError "already registered" (another import of this module)
            pass
        _registered = True
    return INTRIN


def has_vnni(target) -> bool:
    """Does the LLVM target have AVX-512 VNNI (its mcpu's features; for the host, make_target's mcpu
    is LLVM's host CPU, and vector_lanes is capped by /proc/cpuinfo, so a zmm target is real)?"""
    from tvm.target import codegen

    from engine.devices.tvm_target import vector_lanes

    try:
        return bool(codegen.target_has_features("avx512vnni", target)) and vector_lanes(target) >= 16
    except Exception:  # noqa: BLE001 - not an LLVM target, or an mcpu LLVM does not know
        return False
