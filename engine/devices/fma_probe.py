"""This machine's FP32 FMA peak, measured: what a kernel's "share of FMA peak" is taken against.

A derived peak (cores x clock x FMA lanes x 2) needs the clock, and /proc/cpuinfo gives the nominal
one: on the 2-core AMD EPYC (Zen 4) VM this was written on it says 2.60 GHz, while FMA chains run at
115 GFLOP/s per core, i.e. 32 FLOP per cycle at 3.6 GHz (boost): a derived peak there is 0.72x
the real one and every share 1.39x too high.

The probe: 24 independent FMA chains of the vector width (AVX-512 or AVX2+FMA; compiled by the C
compiler TVM's builds already need), one copy per core at once, each timed on its own thread CPU
time, so load from other processes does not lower it, and cores that share FMA units show it.
About 1 s; the result is cached per CPU (model, cores, vector width) in <cache>/fma-peak.json.

    flops, source = fma_probe.peak(cores, vector_bits)     # None where it cannot run (no gcc, not x86)
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

SOURCE = r"""
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
#if defined(__AVX512F__)
typedef __m512 V; enum { L = 16 };
#define SET _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#else
typedef __m256 V; enum { L = 8 };
#define SET _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#endif
int main(void) {
    V acc[24], a = SET(1.0000001f), b = SET(0.9999999f);
    for (int i = 0; i < 24; i++) acc[i] = SET((float)i);
    long n = 60000000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (long k = 0; k < n; k++) {
        #pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = FMA(acc[i], a, b);   /* all 24 in registers */
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    float o[16], sum = 0;
    for (int i = 0; i < 24; i++) { *(V *)o = acc[i]; sum += o[0]; }
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("%.6g %g\n", (double)n * 24 * L * 2 / s, sum);
    return 0;
}
"""
TIMEOUT_S = 30
VERSION = 2   # of the probe: part of the cached result's key


def measure(cores: int, vector_bits: int) -> float | None:
    """FLOP/s of `cores` copies of the probe at once (their sum), or None where it cannot run."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or vector_bits < 256 or os.uname().machine not in ("x86_64", "AMD64"):
        return None
    flags = ["-mavx512f"] if vector_bits >= 512 else ["-mavx2", "-mfma"]
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "fma.c"), os.path.join(d, "fma")
        with open(src, "w") as f:
            f.write(SOURCE)
        try:
            if subprocess.run([cc, "-O2", *flags, src, "-o", exe], capture_output=True, timeout=TIMEOUT_S).returncode:
                return None
            procs = [subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                     for _ in range(max(1, cores))]
            try:
                outs = [p.communicate(timeout=TIMEOUT_S)[0] for p in procs]
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            rates = [float(o.split()[0]) for o in outs]
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return None
    return sum(rates) if rates and all(r > 0 for r in rates) else None


def peak(cores: int, vector_bits: int, model: str = "") -> tuple[float, str] | None:
    """(FLOP/s, where it comes from) for this machine, measured once and cached; None where the
    probe cannot run here (the caller derives a peak and says so)."""
    from engine.util.cache_dir import cache_dir, drop, read_json, write_atomic
    from engine.util.numbers import finite
    from engine.util.errors import CacheError

    key = {"model": model, "cores": cores, "vector_bits": vector_bits, "probe": VERSION}
    try:
        path = cache_dir() / "fma-peak.json"
        d = read_json(path, numbers=True)
    except CacheError:
        path, d = None, None
    if isinstance(d, dict) and d.get("key") == key and finite(d.get("flops"), 1e6, 1e18):   # not true, Infinity, 5e-324
        flops = float(d["flops"])
    else:
        if isinstance(d, dict) and path is not None:
            drop(path)   # another machine's key or a damaged figure: measured again below
        flops = measure(cores, vector_bits)
        if flops is None:
            return None
        if path is not None:
            try:
                write_atomic(path, json.dumps({"key": key, "flops": flops}))
            except OSError:
                pass
    return flops, (f"measured: {vector_bits}-bit FMA chains on {cores} cores at once, "
                   f"{flops / cores / 1e9:.0f} GFLOP/s per core")
