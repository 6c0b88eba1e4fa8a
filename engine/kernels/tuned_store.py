"""The tuned-schedule store: the best MetaSchedule schedule found for each fused kernel, per target.

A kernel is keyed by its structure (the PrimFunc after FuseTIR, normalised the way MetaSchedule
normalises a task, weights are parameters), so a kernel tuned for one model or strategy is used by
every other model or strategy that has the same kernel. One folder per target:

    <cache>/tuning/<target slug>/<structural hash>.json   {"trace", "workload", "run_us", "rules_us", ...}

A record holds the schedule's trace (data: JSON, never code) and the kernel it was tuned for, which
is compared structurally before a record is used, so a hash collision cannot apply a wrong schedule.
Writes are atomic (temp file, rename); a record that does not parse or does not replay is a miss
and is deleted.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from engine.util.cache_dir import MAX_JSON_BYTES, cache_dir, read_file, write_atomic

STORE_VERSION = 1


def normalize(func):
    """The kernel as MetaSchedule sees a task: IRModule({"main": func}) with noalias."""
    from tvm.s_tir.meta_schedule.tune_context import _normalize_mod

    return _normalize_mod(func.without_attr("global_symbol") if func.attrs and "global_symbol" in func.attrs
                          else func)


def kernel_key(mod) -> str:
    """Structural hash of a normalised kernel module (the same kernel -> the same key in any model)."""
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(mod) & (2 ** 64 - 1):016x}"


def target_slug(target, device_key: str = "") -> str:
    """A folder name for a TVM target (and, for a device behind an RPC tracker, its key): readable
    prefix, plus a hash of the full target so every attribute that changes code separates stores."""
    d = target.export() if hasattr(target, "export") else {"target": str(target)}
    raw = json.dumps(d, sort_keys=True, default=str) + "|" + device_key
    kind = str(d.get("kind", "target"))
    cpu = str(d.get("mcpu") or d.get("arch") or "")
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(p for p in (device_key, kind, cpu) if p))
    return f"{prefix}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"


def build_for(t) -> str:
    """What a parsed target (engine.devices.targets.Target) builds for, with a CUDA device's own architecture
    (its row's resolve)."""
    return t.backend.resolve(t).build_for


def store_for(t) -> "Store":
    """The store for a parsed target (engine.devices.targets.Target): one per target, and per tracker key."""
    from engine.devices.tvm_target import make_target

    return Store(make_target(build_for(t)), t.key)   # a tracker key: RPC targets' only


class Store:
    def __init__(self, target, device_key: str = ""):
        self.target = target
        self.dir: Path = cache_dir("tuning", f"v{STORE_VERSION}", target_slug(target, device_key))

    def path(self, key: str) -> Path:
        """The record file of the kernel key `key` (kernel_key(mod))."""
        return self.dir / f"{key}.json"

    def get(self, mod) -> dict | None:
        """The record for this normalised kernel, or None (missing, unreadable or another kernel)."""
        import tvm
        import tvm_ffi

        f = self.path(kernel_key(mod))
        try:
            rec = json.loads(read_file(f, MAX_JSON_BYTES))   # a regular file of a bounded size only
            if not isinstance(rec, dict) or not isinstance(rec.get("trace"), list):
                raise ValueError("not a record")
            if not tvm_ffi.structural_equal(tvm.ir.load_json(rec["workload"]), mod):
                return None  # a different kernel with the same hash: leave its record alone
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a bad record is a miss, and goes
            self._drop(f)
            return None
        return rec

    def put(self, mod, trace_json, run_us: float, rules_us: float | None, name: str, trials: int) -> None:
        import tvm

        rec = {"version": STORE_VERSION, "trace": trace_json, "workload": tvm.ir.save_json(mod),
               "run_us": run_us, "rules_us": rules_us, "name": name, "trials": trials,
               "target": str(self.target), "when": time.strftime("%Y-%m-%d %H:%M:%S")}
        write_atomic(self.path(kernel_key(mod)), json.dumps(rec))

    def schedule(self, mod):
        """The kernel scheduled by its record (a PrimFunc marked scheduled), or None."""
        rec = self.get(mod)
        if rec is None:
            return None
        from tvm import s_tir
        from tvm.s_tir.schedule import Trace

        try:
            sch = s_tir.Schedule(mod)
            Trace.apply_json_to_schedule(rec["trace"], sch)
        except Exception:  # noqa: BLE001 - a record that no longer replays (TVM changed) is a miss
            self._drop(self.path(kernel_key(mod)))
            return None
        return sch.mod["main"].with_attr("tirx.is_scheduled", True)

    def generation(self) -> str:
        """Changes whenever a record is added or replaced: benchmark caches put it in their key."""
        try:
            items = sorted((p.name, p.stat().st_mtime_ns) for p in self.dir.glob("*.json"))
        except OSError:
            items = []
        return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:12] if items else "none"

    def __len__(self) -> int:
        return sum(1 for _ in self.dir.glob("*.json"))

    def clear(self) -> int:
        n = 0
        for p in self.dir.glob("*.json*"):
            self._drop(p)
            n += 1
        return n

    @staticmethod
    def _drop(f: Path) -> None:
        try:
            f.unlink()
        except OSError:
            pass


def tuning_form(func, target):
    """The kernel in the form that is tuned and looked up: on CPU, exp/sigmoid rewritten to the
    vectorisable polynomial first, as the rules' build does (schedules/base/fastmath.py)."""
    if "gpu" not in target.keys:
        from engine.schedules.base import fastmath

        func = fastmath.rewrite_exp(func)[0]
    return normalize(func)


def apply_tuned(mod, target, store: Store | None = None):
    """Replace every not-yet-scheduled PrimFunc that has a record by its tuned schedule.
    Returns (module, names of tuned functions, number of kernels). The rest stay for the rules."""
    from tvm import tirx

    store = store or Store(target)
    tuned, total, updates = [], 0, {}
    with target:
        for gv, func in mod.functions_items():
            if not isinstance(func, tirx.PrimFunc):
                continue
            total += 1
            if func.attrs is not None and int(func.attrs.get("tirx.is_scheduled", 0) or 0):
                continue
            new = store.schedule(tuning_form(func, target))
            if new is not None:
                sym = func.attrs.get("global_symbol") if func.attrs is not None else None
                updates[gv] = new.with_attr("global_symbol", sym) if sym else new.without_attr("global_symbol")
                tuned.append(gv.name_hint)
    if updates:
        mod = mod.clone()
        for gv, f in updates.items():
            mod.update_func(gv, f)
    return mod, tuned, total


def schedule_kind(tuned: int, total: int) -> str:
    return "rules" if tuned == 0 else "tuned" if tuned >= total else "mixed"
