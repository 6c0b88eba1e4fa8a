"""TVM's thread-pool cost on this machine: the fork/join of one parallel kernel launch, and when a
small kernel is better off on one thread.

    .venv/bin/python scripts/bench_threads.py [--rounds 3] [--json out.json]

What it does. One module of tiny kernels is built once (the host target, engine/schedules/target.py)
and exported; then each thread setting runs in its own process (TVM reads TVM_NUM_THREADS,
TVM_BIND_THREADS and TVM_THREAD_POOL_SPIN_COUNT once, when its pool starts), round-robin: every
setting once per round, `--rounds` rounds, so that load from other processes hits all alike. A
sample is TVM's time_evaluator over `number` calls (us per call); a setting's figure is the median
over its rounds' samples.

  - fork/join cost: `par_empty` (a parallel loop of extent 2 over 16 floats: nothing but the
    launch) minus `ser_empty` (the same loop, serial): the pool's cost per kernel launch.
  - small kernels: `add_N` (y = a + b, N floats: memory-bound) and `fma_N` (64 dependent FMAs per
    element: compute-bound), each parallel over 2 chunks and serial; the threshold is the smallest
    N where the parallel kernel on 2 threads beats the serial one.

Settings: TVM_NUM_THREADS=1 and 2; TVM's defaults (nothing else set: what engine/util/child.py's workers
run with), TVM_BIND_THREADS=1 (TVM's default: workers pinned to cores) and
0, and TVM_THREAD_POOL_SPIN_COUNT=0 (workers sleep at once instead of spinning between launches).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (256, 1024, 4096, 16384, 65536, 262144, 1048576)
FMAS = 64
SETTINGS = {   # name -> environment
    "1 thread, bound": {"TVM_NUM_THREADS": "1", "TVM_BIND_THREADS": "1"},
    "1 thread, unbound": {"TVM_NUM_THREADS": "1", "TVM_BIND_THREADS": "0"},
    "2 threads, TVM defaults": {"TVM_NUM_THREADS": "2"},
    "2 threads, bound": {"TVM_NUM_THREADS": "2", "TVM_BIND_THREADS": "1"},
    "2 threads, unbound": {"TVM_NUM_THREADS": "2", "TVM_BIND_THREADS": "0"},
    "2 threads, bound, no spin": {"TVM_NUM_THREADS": "2", "TVM_BIND_THREADS": "1", "TVM_THREAD_POOL_SPIN_COUNT": "0"},
}


def _kernels():
    """name -> (PrimFunc, number of calls per sample, argument shapes)."""
    import tvm
    from tvm import te

    out = {}

    def add(n, parallel):
        a = te.placeholder((n,), name="a")
        b = te.placeholder((n,), name="b")
        c = te.compute((n,), lambda i: a[i] + b[i], name="c")
        return _sched(te.create_prim_func([a, b, c]), "c", n, parallel), [(n,)] * 3

    def fma(n, parallel):
        a = te.placeholder((n,), name="a")

        def body(i):
            v = a[i]
            for _ in range(FMAS):
                v = v * tvm.tirx.const(0.999, "float32") + tvm.tirx.const(0.001, "float32")
            return v
        c = te.compute((n,), body, name="c")
        return _sched(te.create_prim_func([a, c]), "c", n, parallel), [(n,)] * 2

    def _sched(f, block, n, parallel):
        s = tvm.s_tir.Schedule(f)
        (i,) = s.get_loops(s.get_sblock(block))
        outer, inner = s.split(i, factors=[2, None])
        vec = 16 if n // 2 >= 16 else None
        if vec:
            io, ii = s.split(inner, factors=[None, vec])
            s.vectorize(ii)
        if parallel:
            s.parallel(outer)
        return s.mod["main"]

    for par in (True, False):
        tag = "par" if par else "ser"
        f, shapes = add(16, par)
        out[f"{tag}_empty"] = (f, 20000, shapes)
        for n in SIZES:
            f, shapes = add(n, par)
            out[f"{tag}_add_{n}"] = (f, max(20, 4_000_000 // n), shapes)
            f, shapes = fma(n, par)
            out[f"{tag}_fma_{n}"] = (f, max(10, 200_000 // n), shapes)
    return out


def build(folder: Path) -> Path:
    import tvm

    sys.path.insert(0, str(ROOT))
    from engine.devices.tvm_target import host_target

    ks = _kernels()
    mod = tvm.IRModule({k: f.with_attr("global_symbol", k) for k, (f, _, _) in ks.items()})
    lib = tvm.compile(mod, target=host_target())
    path = folder / "kernels.so"
    lib.export_library(str(path))
    (folder / "kernels.json").write_text(json.dumps({k: [n, s] for k, (_, n, s) in ks.items()}))
    return path


def child(folder: str) -> None:
    """One sample of every kernel under the environment's settings: prints {name: us per call}."""
    import numpy as np
    import tvm

    folder = Path(folder)
    lib = tvm.runtime.load_module(str(folder / "kernels.so"))
    meta = json.loads((folder / "kernels.json").read_text())
    dev = tvm.cpu()
    out = {"threads": tvm.runtime.num_threads()}
    for name, (number, shapes) in meta.items():
        args = [tvm.runtime.tensor(np.random.rand(*s).astype("float32"), dev) for s in shapes]
        f = lib[name]
        f(*args)   # warm: the pool starts on the first parallel call
        res = lib.time_evaluator(name, dev, number=number, repeat=3)(*args)
        out[name] = statistics.median(res.results) * 1e6
    print(json.dumps(out))


def _load() -> str:
    try:
        a, b, c = os.getloadavg()
        return f"load average {a:.2f} {b:.2f} {c:.2f} on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", dest="json_out", default=None, help="write the figures here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    load0 = _load()
    with tempfile.TemporaryDirectory(prefix="fuselens-threads-") as d:
        build(Path(d))
        samples: dict[str, dict[str, list]] = {s: {} for s in SETTINGS}
        for r in range(a.rounds):
            for s, env in SETTINGS.items():
                e = {**os.environ, **env}
                for k in ("TVM_BIND_THREADS", "TVM_THREAD_POOL_SPIN_COUNT", "TVM_EXCLUDE_WORKER0"):
                    if k not in env:
                        e.pop(k, None)
                p = subprocess.run([sys.executable, __file__, "--child", d], env=e, capture_output=True, text=True,
                                   timeout=600)
                if p.returncode != 0:
                    print(f"{s}: the timing process failed: {p.stderr.strip().splitlines()[-1:]}")
                    return 1
                for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items():
                    samples[s].setdefault(k, []).append(v)
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in samples.items()}
    print(f"TVM thread-pool cost, {a.rounds} rounds round-robin over the settings, median us per call; "
          f"{load0} before, {_load()} after (a shared machine: compare ratios within this run)")
    print(f"\n{'setting':28s} {'threads':>7s} {'serial empty':>12s} {'parallel empty':>14s} {'fork/join':>10s}")
    report = {"load_before": load0, "load_after": _load(), "rounds": a.rounds, "settings": {}}
    for s, m in med.items():
        fj = m["par_empty"] - m["ser_empty"]
        print(f"{s:28s} {int(m['threads']):7d} {m['ser_empty']:12.3f} {m['par_empty']:14.3f} {fj:10.3f}")
        report["settings"][s] = {"env": SETTINGS[s], "threads": int(m["threads"]), "fork_join_us": fj,
                                 "us": m, "spread": {k: [min(v), max(v)] for k, v in samples[s].items()}}
    for kind, what in (("add", "y = a + b (memory-bound)"), ("fma", f"{FMAS} FMAs per element (compute-bound)")):
        print(f"\n{what}: us per call, serial vs parallel over 2 chunks")
        print(f"{'N floats':>10s} " + " ".join(f"{s[:22]:>24s}" for s in SETTINGS))
        for n in SIZES:
            cells = [f"{m[f'ser_{kind}_{n}']:10.2f}/{m[f'par_{kind}_{n}']:<10.2f}" for m in med.values()]
            print(f"{n:10d} " + " ".join(f"{c:>24s}" for c in cells))
        for s in SETTINGS:
            m = med[s]
            if m["threads"] < 2:
                continue
            win = [n for n in SIZES if m[f"par_{kind}_{n}"] < m[f"ser_{kind}_{n}"]]
            first = next((n for n in SIZES if all(x in win for x in SIZES if x >= n)), None)
            line = (f"{s}: parallel wins from N = {first} floats ({first * 4 // 1024} KB per operand)"
                    if first else f"{s}: parallel never wins up to N = {SIZES[-1]}")
            print("  " + line)
            report["settings"][s][f"{kind}_threshold_floats"] = first
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
