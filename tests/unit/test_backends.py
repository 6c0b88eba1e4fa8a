"""The backend table (engine/devices/targets.BACKENDS, BUILDS): each runtime kind's row answers what the
engine asks of a target, parse and dispatch read the rows, and a new runtime kind is one row."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from engine.devices import device_session, targets
from engine.planner import profiles
from engine.util.errors import TargetError


def test_rows_answer_what_the_engine_asks():
    cpu, cuda, rpc = (targets.BACKENDS[k] for k in ("cpu", "cuda", "rpc"))
    assert list(targets.BACKENDS)[:3] == ["cpu", "cuda", "rpc"]
    assert (cpu.local, cpu.host_cpu, cpu.round_robin, cpu.tracker_to_tune) == (True, True, True, False)
    assert (cuda.local, cuda.host_cpu, cuda.round_robin, cuda.tracker_to_tune) == (True, False, True, False)
    assert (rpc.local, rpc.host_cpu, rpc.round_robin, rpc.tracker_to_tune) == (False, False, False, True)
    for spec, kind in [("cpu", "cpu"), ("llvm", "cpu"), ("cuda:1", "cuda"), ("cuda:sm_80", "cuda"),
                       ("rpc://h:9190/k", "rpc")]:
        t = targets.parse(spec)
        assert t.backend is targets.BACKENDS[kind] and t.backend.name == kind
    # no session for a local device; resolve keeps what is not a bare `cuda`
    assert cpu.connect(targets.HOST) is None and cuda.connect(targets.parse("cuda")) is None
    assert cpu.resolve(targets.HOST) is targets.HOST
    assert cuda.resolve(targets.parse("cuda:sm_80")).build_for == "cuda:sm_80"
    assert rpc.resolve(targets.parse("rpc://h:9/k")).build_for == "cpu"
    assert cpu.available(targets.HOST) and cpu.describe(targets.HOST, None) is None
    cpu.check(targets.HOST)   # nothing to check for this machine's CPU


def test_cuda_resolve_and_describe(monkeypatch):
    monkeypatch.setattr(targets, "cuda_arch", lambda index=0: "sm_90")
    t = targets.BACKENDS["cuda"].resolve(targets.parse("cuda:1"))
    assert (t.spec, t.kind, t.index, t.build_for) == ("cuda:1", "cuda", 1, "cuda:sm_90")

    class Dev:
        exist, device_name, compute_version = True, "NVIDIA H200", "9.0"

    assert targets.BACKENDS["cuda"].describe(t, Dev()) == "NVIDIA H200 (cuda:1, compute 9.0)"
    Dev.exist = False
    assert targets.BACKENDS["cuda"].describe(t, Dev()) is None


def test_build_rows():
    assert targets.build_row("cpu").name == "cpu" and targets.build_row("cuda:sm_75").name == "cuda"
    assert targets.build_row("rpi4b").name == "board"
    cpu, gpu, board = targets.parse("cpu"), targets.parse("cuda:sm_80"), targets.parse("rpc://h:9/rpi4b")
    assert (cpu.is_gpu, cpu.is_cross, cpu.build.blocked_layout, cpu.hardware) == (False, False, True, "host")
    assert (gpu.is_gpu, gpu.is_cross, gpu.build.blocked_layout, gpu.hardware) == (True, False, False, "t4")
    assert (board.is_gpu, board.is_cross, board.build.blocked_layout, board.hardware) == (False, True, True, "rpi4b")
    remote_gpu = targets.parse("rpc://h:9?target=cuda:sm_80")
    assert remote_gpu.backend.name == "rpc" and remote_gpu.is_gpu and remote_gpu.hardware == "t4"


def test_rpc_device_is_asked_of_the_session():
    class Session:
        def cpu(self):
            return "remote cpu"

        def cuda(self):
            return "remote cuda"

    rpc = targets.BACKENDS["rpc"]
    assert rpc.device(targets.parse("rpc://h:9/k"), Session()) == "remote cpu"
    assert rpc.device(targets.parse("rpc://h:9?target=cuda:sm_80"), Session()) == "remote cuda"


def test_parse():
    t = targets.parse("cuda:1")
    assert targets.as_target(t) is t and targets.as_target("cuda:1") == t
    assert targets.parse("cpu") is targets.HOST
    with pytest.raises(TargetError, match="unknown target 'vulkan'"):
        targets.parse("vulkan")


class FakeDev:
    def __init__(self, index):
        self.index = index


@pytest.fixture
def vulkan(monkeypatch):
    """A fake runtime kind `vulkan[:N]`: one row added to the table (a GPU build, a local device)."""
    opened = []

    def match(s):
        m = re.fullmatch(r"vulkan(?::(\d+))?", s)
        return targets.Target(s, "vulkan", int(m.group(1) or 0), build_for="cuda:sm_75") if m else None

    def device(t, remote):
        opened.append(t.spec)
        return FakeDev(t.index)

    row = replace(targets.BACKENDS["cuda"], name="vulkan", match=match, device=device,
                  available=lambda t: True, check=lambda t: None, resolve=lambda t: t,
                  describe=lambda t, dev: f"fake vulkan {dev.index}")
    monkeypatch.setitem(targets.BACKENDS, "vulkan", row)
    return opened


def test_a_new_kind_is_one_row(vulkan):
    t = targets.parse("vulkan:2")
    assert t.kind == "vulkan" and t.backend.name == "vulkan" and t.index == 2
    assert targets.as_target("vulkan:2") == t
    targets.check(t)                              # dispatched to the row's check: nothing raised
    assert targets.free_devices(t) == 1           # a local device: no tracker asked
    ds = device_session.open_device(t)   # opened through the row
    assert isinstance(ds.dev, FakeDev) and ds.dev.index == 2 and ds.remote is None and ds.target == t
    assert vulkan == ["vulkan:2"]
    assert ds.load("an executable") == "an executable"   # a local device runs the build as it is
    assert t.backend.describe(t, ds.dev) == "fake vulkan 2"
    from engine.report import text as report

    assert report.measured_on(t.spec, "the device") == f"the device; host {report.machine()}"
    from engine.planner import learned

    assert learned.target_kind(t) is None and learned.applies(profiles.get("t4"), t)


def test_open_device_remote(monkeypatch):
    """An RPC target's session comes from the row's connect; load uploads there."""
    uploaded = []

    class Session:
        def cpu(self):
            return "remote cpu"

        def upload(self, path):
            uploaded.append(path)

        def load_module(self, name):
            return f"loaded {name}"

    monkeypatch.setitem(targets.BACKENDS, "rpc", replace(targets.BACKENDS["rpc"], connect=lambda t: Session()))
    from engine.devices import boards

    monkeypatch.setattr(boards, "export", lambda exe, path, build_for: None)
    ds = device_session.open_device(targets.parse("rpc://h:9/k"))
    assert ds.dev == "remote cpu" and isinstance(ds.remote, Session)
    out = ds.load(object(), prefix="fuselens-k-")
    assert out.startswith("loaded fuselens-k-") and uploaded[0].endswith(".so")


def test_workers_use_only_public_names_of_runner_and_open_the_device_in_one_place():
    """roundrobin and kernel_report reach runner through its public names; the device is opened by
    device_session.open_device alone (no worker builds its own tvm.cpu()/tvm.cuda()/RPC session)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "engine"
    for name in ("measure/roundrobin.py", "report/kernel_report.py", "measure/runner.py", "planner/kernel_timing.py",
                 "measure/tuning.py", "kernels/batch.py", "kernels/timing.py"):
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                where = f"{name}: {node.value.id}.{node.attr}"
                assert not (node.value.id == "runner" and node.attr.startswith("_")), where
                assert not (node.value.id == "tvm" and node.attr in ("cpu", "cuda")), where
                assert not (node.value.id == "targets" and node.attr == "session"), where


@pytest.mark.parametrize("spec", ["cpu", "cuda:1", "rpc://h:9/k", "rpc://h:9/rpi4b"])
def test_a_target_object_keys_caches_as_its_spec(spec):
    from engine.measure import runner
    from engine.planner import kernel_timing as measure

    t = targets.parse(spec)
    groups = [[1, 2], [3]]
    again = targets.parse(spec)   # the same words parsed again: the same key (the key is the spec's)
    assert runner.result_file("abc", groups, t, False, False) == runner.result_file("abc", groups, again, False, False)
    assert measure.target_key(t) == measure.target_key(t.spec)
