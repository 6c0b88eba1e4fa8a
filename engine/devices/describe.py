"""What a device is, in words: this host, and what a benchmark on a target ran on (the labels of
every table, JSON and app panel)."""
from __future__ import annotations


def machine() -> str:
    """This host: CPU model, cores, OS, Python."""
    import platform

    from .hardware import cpu_facts

    f = cpu_facts()
    return f"{f['model']}, {f['cores']} cores, {platform.system()} {platform.release()}, python {platform.python_version()}"


def measured_on(spec: str = "cpu", device: str | None = None) -> str:
    """What a benchmark on the target `spec` ran on (the spec a result records: a bench dict's,
    a table row's): this host's CPU for `cpu`; the GPU's name for `cuda` (`device`, as the worker
    saw it, else asked of TVM here); the RPC server or tracker key for `rpc://` (with what the
    kernels were built for)."""
    from . import targets

    target = spec
    try:
        t = targets.parse(spec)
    except Exception:  # noqa: BLE001 - a label only
        return f"{target} (host: {machine()})"
    if t.backend.host_cpu:
        return machine()
    if t.backend.local:   # a GPU of this machine
        if not device:
            try:
                device = t.backend.describe(t, t.backend.device(t, None))
            except Exception:  # noqa: BLE001
                device = None
        return f"{device or t.spec + ' (no CUDA device here)'}; host {machine()}"
    where = f"tracker {t.host}:{t.port}, key {t.key!r}" if t.key else f"RPC server {t.host}:{t.port}"
    if not device and t.device:
        from . import boards

        device = f"a {boards.require(t.device).title} ({t.device} profile)"
    return f"{device or 'a remote device'} via {where}, kernels built for {t.build_for}"
