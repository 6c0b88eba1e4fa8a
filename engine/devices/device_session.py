"""Opening a device for timing: the one set-up every timing worker shares (engine/measure/runner.py,
roundrobin.py, tuning.py, engine/report/kernel_report.py, engine/kernels/batch.py).

    ds = open_device(t)               # t: an engine.devices.targets.Target (parsed once, at the edge)
    run = ds.runner(inputs)           # run(exe) -> (vm, args, outputs) on ds.dev
    vm, args, out = run(exe)

open_device asks the target's row (engine/devices/targets.BACKENDS) for its session and device: a local
device (tvm.cpu(), tvm.cuda(i)) has no session; an RPC device's session comes from
targets.session (every network step with its deadline). The thread settings are the worker's
(engine/util/child.py sets TVM_NUM_THREADS before TVM starts its pool); nothing here changes them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DeviceSession:
    target: object          # the engine.devices.targets.Target, resolved (a CUDA GPU's own architecture) when asked
    dev: object             # the TVM device kernels run and are timed on
    remote: object = None   # the RPC session; None for a device of this machine

    def load(self, exe, prefix: str = "fuselens-"):
        """The module that runs `exe` on the device: `exe` itself on a local device; for a remote one
        exported (a board's build linked by its cross compiler), uploaded and loaded there."""
        if self.remote is None:
            return exe
        import os
        import tempfile
        import uuid

        from . import boards

        name = f"{prefix}{uuid.uuid4().hex[:12]}.so"  # the server may keep an earlier upload loaded
        path = os.path.join(tempfile.mkdtemp(), name)
        boards.export(exe, path, self.target.build_for)   # a board's build is linked by its cross compiler
        self.remote.upload(path)
        return self.remote.load_module(name)

    def runner(self, inputs):
        """run(exe) -> (vm, args, outputs): a Relax VirtualMachine of `exe` on the device, `inputs`
        (numpy arrays) copied there, and its outputs of one call (flattened to numpy)."""
        import tvm
        from tvm import relax

        def run(exe):
            vm = relax.VirtualMachine(self.load(exe), self.dev)
            args = [tvm.runtime.tensor(a, self.dev) for a in inputs]
            return vm, args, flatten(vm["main"](*args))

        return run


def flatten(out) -> list:
    """A VM call's outputs (a tensor, or tuples of them, nested) as a flat list of numpy arrays."""
    if hasattr(out, "numpy"):
        return [out.numpy()]
    res = []
    for o in out:
        res += flatten(o)
    return res


def kernel_calls():
    """(instrument, calls): a Relax VM instrument (`vm.set_instrument`) that appends each kernel call's
    wall time in us to `calls`, in call order. The VM's own builtins are not kernels and are skipped,
    except vm.builtin.reshape, which RewriteDataflowReshape puts in a reshape kernel's place."""
    import time

    calls: list[float] = []
    mark = {"t": 0.0}

    def instrument(func, name, before, ret, *a):
        name = str(name)
        if (name.startswith("vm.builtin") and name != "vm.builtin.reshape") or name.startswith("__"):
            return 0
        if before:
            mark["t"] = time.perf_counter()
        else:
            calls.append((time.perf_counter() - mark["t"]) * 1e6)
        return 0

    return instrument, calls


def open_device(t, resolve: bool = True) -> DeviceSession:
    """The device of the Target `t` opened for timing: its session (RPC) and TVM device. resolve=True
    builds a `cuda` / `cuda:N` target for the GPU's own architecture (targets.Backend.resolve);
    resolve=False keeps the target as it is."""
    if resolve:
        t = t.backend.resolve(t)
    dev, remote = t.backend.open(t)
    return DeviceSession(t, dev, remote)


def host_runner(inputs):
    """run(exe) -> (vm, args, outputs) on this host's CPU with `inputs` (a board's reference)."""
    from . import targets

    return open_device(targets.HOST).runner(inputs)
