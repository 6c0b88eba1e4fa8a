"""Benchmark through TVM's own RPC on loopback: a direct server and a tracker-registered device."""

import subprocess
import sys
import time
import pytest

from engine.devices import targets
from engine.planner.setup import Setup
from engine.devices import hardware, targets
from engine.measure import runner
from engine.model import loader

from engine.planner import make_plan
from tests.support.loopback import free_port, stop_all, wait_port
from tests.support.rpc import MODEL  # noqa: F401


@pytest.fixture(scope="module")
def rpc_stack():
    tport, sport, dport = free_port(), free_port(), free_port()
    py = sys.executable
    procs = [subprocess.Popen([py, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tport),
                               "--port-end", str(tport + 1)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    wait_port(tport)
    procs.append(subprocess.Popen([py, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(sport),
                                   "--port-end", str(sport + 1), "--tracker", f"127.0.0.1:{tport}", "--key", "loopback"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    procs.append(subprocess.Popen([py, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(dport),
                                   "--port-end", str(dport + 1)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    wait_port(sport)
    wait_port(dport)
    time.sleep(2)  # registration with the tracker
    yield {"tracker": tport, "direct": dport}
    stop_all(procs)


@pytest.mark.parametrize("form", ["direct", "tracker"])
def test_benchmark_over_rpc(rpc_stack, form):
    g = loader.load(MODEL)
    p = make_plan(g, "greedy", Setup(hardware.get("host")))
    spec = (f"rpc://127.0.0.1:{rpc_stack['direct']}" if form == "direct"
            else f"rpc://127.0.0.1:{rpc_stack['tracker']}/loopback")
    r = runner.benchmark(MODEL, None, p, targets.parse(spec), repeat=3, force=True, scheduled=False)
    assert r.error is None, r.error
    assert r.correct and r.latency_ms["median"] > 0 and r.kernels == p.kernels and r.target == spec


def test_devices_lists_tracker_keys(rpc_stack, monkeypatch):
    monkeypatch.setenv("FUSELENS_RPC", f"rpc://127.0.0.1:{rpc_stack['tracker']}")
    names = [d["name"] for d in targets.devices()]
    assert "cpu" in names and f"rpc://127.0.0.1:{rpc_stack['tracker']}/loopback" in names

