"""Boards: device profiles that compile for another CPU (engine/devices/boards.py), reached over TVM RPC.

The first tests need no board: profiles, target specs, schedules and cross-compilation on this host.
The `boards` tests run on an emulated Raspberry Pi 4B (tests/boards.py: an arm64 Debian root whose
Python runs TVM's RPC server under qemu-user, behind a loopback tracker under the key `rpi4b`). They
check the flow and the numerics only: times under emulation mean nothing and are not asserted.
`make test-boards` builds the root (about a minute) and runs them; `make test` runs them when it is there.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.planner import setup
from engine.planner.setup import Setup
from engine.devices import boards, hardware, targets
from engine.util.errors import TargetError
from tests.support import boards as emulated
from tests.support.loopback import stop_all

ROOT = Path(__file__).resolve().parents[2]
MODEL = "zoo:mobilenetv2@32"
needs_cross_cc = pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None,
                                    reason="gcc-aarch64-linux-gnu is not installed (make setup installs it)")


def _vector_extents(mod) -> dict[str, list[int]]:
    import tvm_ffi
    from tvm import tirx

    out = {}
    for gv, f in mod.functions_items():
        if isinstance(f, tirx.PrimFunc):
            ext = []
            tvm_ffi.structural_walk(f.body, (tirx.For, lambda n: ext.append(int(n.extent))
                                             if n.kind == tirx.ForKind.VECTORIZED else None), order="post")
            out[gv.name_hint] = ext
    return out


# ---- profiles and specs -------------------------------------------------------------------------

def test_rpi4b_profile_says_what_to_compile_for():
    b = boards.require("rpi4b")
    assert b.target == {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72", "mattr": ["+neon"],
                        "num-cores": 4}
    assert b.cc == "aarch64-linux-gnu-gcc" and b.cc_package == "gcc-aarch64-linux-gnu"
    assert (b.vector_bits, b.cores, b.l2_per_core, b.l3) == (128, 4, 256 * 1024, 0)
    t = boards.tvm_target("rpi4b")
    assert str(t.attrs["mtriple"]) == "aarch64-linux-gnu" and "arm_cpu" in [str(k) for k in t.keys]
    assert boards.for_target(t) == b
    assert boards.for_target(targets_host()) is None
    assert "jetson-orin-nano-cpu" in boards.names()
    # the cost model reads the same profile (its compile section is not a cost-model field)
    hw = hardware.get("rpi4b")
    assert hw.name == "rpi4b" and hw.units == 4 and hw.kind == "cpu"
    assert hardware.get("jetson-orin-nano-cpu").units == 6


def targets_host():
    from engine.devices.tvm_target import host_target

    return host_target()


@pytest.mark.parametrize("spec,build_for,device,hw", [
    ("rpc://127.0.0.1:9190/rpi4b", "rpi4b", "rpi4b", "rpi4b"),                 # a key named like a board
    ("rpc://10.0.0.5:9190/pi-lab?device=rpi4b", "rpi4b", "rpi4b", "rpi4b"),     # any key, the profile named
    ("rpc://10.0.0.5:9090?device=jetson-orin-nano-cpu", "jetson-orin-nano-cpu", "jetson-orin-nano-cpu",
     "jetson-orin-nano-cpu"),                                                   # a direct server
    ("rpc://127.0.0.1:9190/rpi4b?device=host", "cpu", "", "host"),             # explicitly this host's CPU
    ("rpc://127.0.0.1:9190/loopback", "cpu", "", "host"),
    ("rpc://127.0.0.1:9190/gpu?target=cuda:sm_80", "cuda:sm_80", "", "t4"),
    ("cpu", "cpu", "", "host"),
])
def test_target_specs_tie_devices_to_profiles(spec, build_for, device, hw):
    t = targets.parse(spec)
    assert (t.build_for, t.device, t.hardware) == (build_for, device, hw)
    assert t.is_cross == (build_for in boards.names())


@pytest.mark.parametrize("spec,words", [
    ("rpc://h:1/k?device=pi5", "unknown device profile 'pi5'"),
    ("rpc://h:1/k?colour=red", "unknown option 'colour'"),
    ("rpc://h:1/k?device", "cannot read the query"),
    ("rpc://h:1/k?target=riscv", "unknown target 'riscv'"),
])
def test_bad_target_specs_say_what_is_wrong(spec, words):
    with pytest.raises(TargetError, match=words):
        targets.parse(spec)


def test_devices_json_entry_ties_a_device_to_a_profile(private_cache):
    private_cache.mkdir(parents=True, exist_ok=True)
    (private_cache / "devices.json").write_text(json.dumps({"rpc": ["rpc://127.0.0.1:1/lab?device=rpi4b"]}))
    d = next(d for d in targets.devices(probe_rpc=False) if d["kind"] == "rpc")
    assert d["name"] == "rpc://127.0.0.1:1/lab?device=rpi4b" and d["profile"] == "rpi4b"
    cpu = next(d for d in targets.devices(probe_rpc=False) if d["name"] == "cpu")
    assert cpu["profile"] == "host"


def test_devices_command_shows_profiles_and_boards(private_cache):
    env = {**os.environ, "FUSELENS_RPC": "rpc://127.0.0.1:1/lab?device=rpi4b"}
    r = subprocess.run([sys.executable, "main.py", "devices"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("rpc://127.0.0.1:1/lab"))
    assert " rpi4b " in row and "unreachable" in row
    assert "rpi4b" in r.stdout.split("boards")[1] and "aarch64 cortex-a72" in r.stdout


# ---- schedules and builds follow the profile ----------------------------------------------------

@pytest.fixture(scope="module")
def tiny_mod(tmp_path_factory):
    import onnx

    from engine.model import loader
    from engine.planner import make_plan
    from engine.planner.apply import apply
    from tests.support.models import tiny_onnx

    p = tmp_path_factory.mktemp("m") / "tiny.onnx"
    onnx.save(tiny_onnx(hw=16), p)
    g = loader.load(str(p), None)
    return g, apply(g, make_plan(g, "greedy", Setup(hardware.get("rpi4b"))).groups)


def test_schedule_rules_read_the_boards_vector_width_and_caches_not_the_hosts(tiny_mod):
    from engine import schedules
    from engine.schedules.cpu import Chain
    from engine.devices.tvm_target import l2_per_core, num_cores, vector_lanes

    board, host = boards.tvm_target("rpi4b"), targets_host()
    assert (vector_lanes(board), num_cores(board), l2_per_core(board)) == (4, 4, 256 * 1024)
    assert Chain()._l2(board) == 256 * 1024 and Chain(l2_bytes=4096)._l2(board) == 4096
    _, mod = tiny_mod
    on_board = _vector_extents(schedules.schedule(mod, "rpi4b")[0])
    on_host = _vector_extents(schedules.schedule(mod, "cpu")[0])
    ew = next(n for n in on_board if "split" in n)   # the elementwise kernel: one vector of lanes
    assert max(on_board[ew]) == 4
    assert max(on_host[ew]) == vector_lanes(host)
    if vector_lanes(host) != 4:
        assert on_board != on_host


@needs_cross_cc
def test_a_board_build_is_an_aarch64_shared_library(tiny_mod, tmp_path):
    from engine.kernels import build

    _, mod = tiny_mod
    from engine import schedules

    exe = build.build(schedules.schedule(mod, "rpi4b")[0], "rpi4b")
    path = tmp_path / "m.so"
    boards.export(exe, str(path), "rpi4b")
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183   # EM_AARCH64


def test_a_missing_cross_compiler_is_one_line_naming_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # nothing on it
    with pytest.raises(TargetError) as e:
        targets.check(targets.parse("rpc://127.0.0.1:1/rpi4b"))
    msg = str(e.value)
    assert "\n" not in msg and "aarch64-linux-gnu-gcc" in msg and "apt-get install gcc-aarch64-linux-gnu" in msg
    env = {**os.environ, "PATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "main.py", "bench", MODEL, "--target", "rpc://127.0.0.1:1/rpi4b"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "gcc-aarch64-linux-gnu" in r.stderr, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


# ---- the emulated board -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def board():
    why = emulated.why_not_ready()
    if why:
        pytest.skip(why)
    port, procs = emulated.start("rpi4b")
    yield f"rpc://127.0.0.1:{port}/rpi4b"
    stop_all(procs)


@pytest.mark.boards
def test_bench_on_the_emulated_pi_is_correct(board, private_cache):
    """Cross-compiled for the Pi, run on the aarch64 RPC server through the tracker, checked against
    outputs computed on this host. No timings are asserted: times under emulation mean nothing."""
    from engine.measure import benchmark

    b = benchmark.bench_model(benchmark.BenchRequest(MODEL, None, setup.resolve(board, cost=None, layout="nchw"), repeat=1),
                                                ["none", "greedy"])
    for s in ("none", "greedy"):
        r = b["results"][s]
        assert r.error is None, r.error
        assert r.correct is True and r.max_abs_err is not None and r.max_abs_err < 1e-3, (s, r.max_abs_err)
    assert b["results"]["greedy"].kernels < b["results"]["none"].kernels
    ref = list((private_cache / "results").glob("ref-*.npz"))
    assert ref and all("-cpu-" in p.name for p in ref)   # the reference was computed on the host


@pytest.mark.boards
def test_cli_bench_and_measured_planning_take_the_board(board, private_cache, tiny_model, tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, "main.py", "bench", str(tiny_model), "--strategies", "none,dp",
                        "--target", board, "--repeat", "1", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(out.read_text())
    assert d["hardware"]["name"] == "rpi4b"     # the cost model follows the device
    assert all(x["correct"] for x in d["strategies"]) and len(d["strategies"]) == 2
    assert "kernels built for rpi4b" in r.stdout
    plan = tmp_path / "plan.json"
    r = subprocess.run([sys.executable, "main.py", "plan", str(tiny_model), "--strategy", "dp", "--cost", "measured",
                        "--target", board, "--out", str(plan)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "decided by measured kernel times on " + board in r.stdout
    assert json.loads(plan.read_text())["hardware"]["name"] == "rpi4b"
    times = list((private_cache / "kernels").glob("times-*.json"))
    assert times and any("rpi4b" in p.name for p in times)


@pytest.mark.boards
def test_tuning_over_the_board_then_a_correct_tuned_build(board, private_cache):
    from engine.measure import benchmark, tuning

    rep = tuning.tune(MODEL, None, "greedy", setup.resolve(board, layout="nchw"), trials=8)
    assert rep.error is None, rep.error
    assert "rpi4b" in rep.store and rep.trials >= 8
    b = benchmark.bench_model(benchmark.BenchRequest(MODEL, None, setup.resolve(board, "rpi4b", None, "nchw"), repeat=1),
                             ["greedy"])
    r = b["results"]["greedy"]
    assert r.error is None and r.correct is True
    tuned = [k for k in rep.kernels if k.status == "tuned"]
    assert r.tuned_kernels == len(tuned) and r.schedule == ("mixed" if tuned else "rules")


@pytest.mark.boards
def test_the_emulated_pi_runs_the_blocked_neon_layout_correctly(board, private_cache):
    """The Pi's default layout is the blocked one with its NEON width (NCHW4c): the graph is blocked,
    every convolution kernel (dense and depthwise, alone and fused with its epilogue) is BlockedConv's
    register-blocked micro-kernel built for the board, and the board's outputs match the unfused NCHW
    model run on this host. Skipped without the board root (`make test-boards` builds it)."""
    from engine.measure import benchmark
    from engine.model import blocked_layout, loader

    s = setup.resolve(board, cost=None)              # --layout auto: the target's
    assert s.block == 4 == loader.block_for_target(targets.parse(board)) == blocked_layout.block_for(targets.parse(board))
    b = benchmark.bench_model(benchmark.BenchRequest(MODEL, None, s, repeat=1), ["none", "greedy"])
    g = b["graph"]
    assert g.layout == "NCHW4c" and g.block == 4
    convs = [n for n in g.nodes if n.func.startswith(blocked_layout.DENSE_NAME)]
    assert any(n.func.startswith(blocked_layout.DEPTHWISE_NAME) for n in convs)
    assert any(not n.func.startswith(blocked_layout.DEPTHWISE_NAME) for n in convs)
    assert all(len(n.shape) == 5 and n.shape[-1] == 4 for n in convs)   # [N, C/4, H, W, 4]
    for s in ("none", "greedy"):
        r = b["results"][s]
        assert r.error is None, r.error
        assert r.correct is True and r.max_abs_err is not None and r.max_abs_err < 1e-3, (s, r.max_abs_err)
        rep = r.schedule_report
        assert rep.get("target") == "rpi4b", rep.get("target")   # scheduled for the board, not the host
        handled = rep.get("handled", {})
        taken = handled.get("cpu.BlockedConv", [])
        conv_kernels = {f for fs in handled.values() for f in fs if blocked_layout.DENSE_NAME in f}
        conv_kernels |= {f for f in rep.get("fallback", []) + rep.get("unscheduled", [])
                         if blocked_layout.DENSE_NAME in f}
        assert conv_kernels and conv_kernels <= set(taken), (s, sorted(conv_kernels - set(taken)))
        assert any(blocked_layout.DEPTHWISE_NAME in f for f in taken) and \
            any(blocked_layout.DEPTHWISE_NAME not in f for f in taken), (s, taken)
        assert not [k for k in rep.get("errors", {}) if blocked_layout.DENSE_NAME in k], (s, rep.get("errors"))
    assert b["results"]["greedy"].kernels < b["results"]["none"].kernels
    ref = list((private_cache / "results").glob("ref-*.npz"))
    assert ref and all("-cpu-" in p.name for p in ref)   # the reference was computed on the host
