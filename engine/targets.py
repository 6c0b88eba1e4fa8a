"""Where a benchmark runs: `cpu`, `cuda` / `cuda:N`, `rpc://HOST:PORT` (a TVM RPC server) or
`rpc://HOST:PORT/KEY` (a device registered with a TVM RPC tracker). `?device=rpi4b` (or a tracker key
named like a board) ties an RPC device to a board's profile (engine/boards.py): what kernels are built
for, how they are scheduled and the cost model the planner uses."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from .cache_dir import cache_dir
from .errors import TargetError

_RPC = re.compile(r"^rpc://(?P<host>[^:/]+):(?P<port>\d+)(?:/(?P<key>[^/?]+))?(?:\?(?P<query>.+))?$")


@dataclass(frozen=True)
class Target:
    spec: str
    kind: str            # "cpu" | "cuda" | "rpc"
    index: int = 0
    host: str = ""
    port: int = 0
    key: str = ""        # tracker key (empty: a direct RPC server)
    build_for: str = "cpu"  # what to compile for: "cpu" | "cuda:sm_XX" | a board ("rpi4b", engine/boards.py)
    device: str = ""        # the device profile (assets/hardware.json) when the spec names one

    @property
    def is_cross(self) -> bool:
        """Built for another machine's CPU (a board): linked by its cross compiler, checked against the host."""
        from . import boards

        return boards.get(self.build_for) is not None

    @property
    def hardware(self) -> str:
        """The cost-model profile that follows this device: the board's own, this host's for the CPU
        (and a remote host-like CPU), T4 for a GPU with no profile of its own."""
        if self.device:
            return self.device
        return "t4" if self.is_gpu else "host"

    @property
    def is_gpu(self) -> bool:
        return self.build_for.startswith("cuda")


def parse(spec: str) -> Target:
    s = spec.strip()
    if s in ("cpu", "llvm", "host"):
        return Target("cpu", "cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", s)
    if m:
        return Target(s, "cuda", int(m.group(1) or 0), build_for="cuda")
    m = re.fullmatch(r"cuda:(sm_\d+)", s)
    if m:  # a CUDA architecture: builds for it on any machine; runs on GPU 0 where there is one
        return Target(s, "cuda", 0, build_for=s)
    m = _RPC.match(s)
    if m:
        return _rpc(s, m)
    raise TargetError(f"unknown target {spec!r}; use cpu, cuda, cuda:N, cuda:sm_XX, rpc://HOST:PORT or "
                      f"rpc://HOST:PORT/KEY, optionally ?device=BOARD")


def _rpc(s: str, m) -> Target:
    """rpc://HOST:PORT[/KEY][?device=BOARD | ?target=cuda:sm_XX]. A tracker key named like a board
    ("rpi4b") means that board unless ?device= says otherwise; ?device=host builds for this CPU."""
    from urllib.parse import parse_qs

    from . import boards

    try:
        q = {k: v[-1] for k, v in parse_qs(m["query"] or "", strict_parsing=bool(m["query"])).items()}
    except ValueError:
        raise TargetError(f"{s}: cannot read the query {m['query']!r}; use ?device=BOARD") from None
    unknown = set(q) - {"device", "target"}
    if unknown:
        raise TargetError(f"{s}: unknown option {sorted(unknown)[0]!r}; use ?device=BOARD (boards: {', '.join(boards.names())})")
    key = m["key"] or ""
    device = q.get("device") or (key if boards.get(key) else "")
    build_for = q.get("target") or "cpu"
    if device and device not in ("host", "cpu"):
        b = boards.get(device)
        if b is None:
            raise TargetError(f"{s}: unknown device profile {device!r}; boards: {', '.join(boards.names())}, or host")
        device, build_for = b.name, b.name
    else:
        device = ""
    if not (build_for == "cpu" or re.fullmatch(r"cuda(:sm_\d+)?", build_for) or boards.get(build_for)):
        raise TargetError(f"{s}: unknown target {build_for!r}; use ?target=cpu or cuda:sm_XX")
    return Target(s, "rpc", host=m["host"], port=int(m["port"]), key=key, build_for=build_for, device=device)


def cuda_arch(index: int = 0) -> str:
    import tvm

    dev = tvm.cuda(index)
    return "sm_" + str(dev.compute_version).replace(".", "") if dev.exist else "sm_75"


def check(t: Target) -> None:
    """Raise TargetError with one clear line when the target is not there."""
    if t.kind == "cuda":
        import tvm

        if not tvm.cuda(t.index).exist:
            raise TargetError(f"{t.spec}: no CUDA device {t.index} on this machine")
    elif t.kind == "rpc":
        if t.is_cross:
            from . import boards

            boards.cross_cc(t.build_for)   # before the device is asked for: nothing could load without it
        session(t)


def session(t: Target, timeout: int = 10):
    from tvm import rpc

    what = f"tracker {t.host}:{t.port} key {t.key!r}" if t.key else f"RPC server {t.host}:{t.port}"
    try:
        if t.key:
            return connect_tracker(t.host, t.port).request(t.key, priority=1, session_timeout=0)
        return rpc.connect(t.host, t.port, session_timeout=0)
    except TargetError as e:
        raise TargetError(f"{t.spec}: cannot reach {what} ({e})") from None
    except Exception as e:  # noqa: BLE001 - TVM raises TVMError/RuntimeError variants
        raise TargetError(f"{t.spec}: cannot reach {what} ({str(e).strip().splitlines()[-1][:160]})") from None


TRACKER_CONNECT_S = 3.0  # how long to wait for a tracker to accept the connection


def connect_tracker(host: str, port: int, timeout_s: float = TRACKER_CONNECT_S):
    """tvm.rpc.connect_tracker, bounded: TVM's retries a refused connection for 60 s with a warning
    every 5 s. A plain socket probe first gives up after `timeout_s` with one TargetError line; the
    RPC logger's retry warnings are silenced while TVM connects."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except socket.timeout:
        raise TargetError(f"no answer within {timeout_s:g} s") from None
    except OSError as e:
        raise TargetError(e.strerror or str(e) or type(e).__name__) from None
    from tvm import rpc

    with _quiet_rpc_log():
        return rpc.connect_tracker(host, port)


class _quiet_rpc_log:
    """TVM's RPC client warns on its logger "RPCServer" at every retry; keep only errors meanwhile."""

    def __enter__(self):
        import logging

        self.log = logging.getLogger("RPCServer")
        self.level = self.log.level
        self.log.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self.log.setLevel(self.level)


def free_devices(t: Target) -> int:
    """How many devices of a tracker key are free now (1 for anything else, or when the tracker
    cannot say): work over a key can go to that many devices at once."""
    if t.kind != "rpc" or not t.key:
        return 1
    try:
        q = connect_tracker(t.host, t.port).summary().get("queue_info", {}).get(t.key, {})
        return max(1, int(q.get("free", 1)))
    except Exception:  # noqa: BLE001
        return 1


def configured_rpc() -> list[str]:
    """RPC devices the user configured: $FUSELENS_RPC (comma separated) and devices.json in the cache folder."""
    out = [s for s in os.environ.get("FUSELENS_RPC", "").split(",") if s.strip()]
    f = cache_dir() / "devices.json"
    try:
        rpc = json.loads(f.read_text()).get("rpc", [])
    except (OSError, ValueError, AttributeError, RecursionError):
        rpc = []
    # a hand-edited file may hold anything: only a list of strings names devices
    out += [s for s in (rpc if isinstance(rpc, list) else []) if isinstance(s, str) and s not in out]
    return out


def devices(probe_rpc: bool = True) -> list[dict]:
    """What is reachable now: this CPU, each CUDA GPU, configured RPC servers and tracker keys."""
    import tvm

    from .hardware import cpu_facts

    f = cpu_facts()
    out = [{"name": "cpu", "kind": "cpu", "description": f"{f['model']}, {f['cores']} cores (LLVM)", "profile": "host"}]
    for i in range(8):
        dev = tvm.cuda(i)
        if not dev.exist:
            break
        out.append({"name": f"cuda:{i}", "kind": "cuda", "profile": gpu_profile(dev.device_name),
                    "description": f"{dev.device_name} (compute {dev.compute_version})"})
    for spec in configured_rpc():
        try:
            t = parse(spec)
        except TargetError as e:
            out.append({"name": spec, "kind": "rpc", "description": str(e), "reachable": False})
            continue
        entry = {"name": spec, "kind": "rpc", "description": "TVM RPC", "reachable": None, "profile": t.hardware}
        out.append(entry)
        if probe_rpc:
            try:
                if t.key or not t.key and _is_tracker(t):
                    summary = connect_tracker(t.host, t.port).summary()
                    keys = sorted(summary.get("queue_info", {}))
                    entry.update(description=f"tracker; keys: {', '.join(keys) or 'none'}", reachable=True)
                    if not t.key:
                        entry["profile"] = None   # a tracker: its keys are the devices
                        out += [{"name": f"{spec}/{k}", "kind": "rpc", "description": "tracker device",
                                 "reachable": True, "profile": parse(f"{spec}/{k}").hardware} for k in keys]
                else:
                    session(t)
                    entry.update(description="RPC server", reachable=True)
            except Exception as e:  # noqa: BLE001
                entry.update(description=f"unreachable: {e}", reachable=False)
    return out


def gpu_profile(device_name: str) -> str:
    """The cost-model profile of a GPU by its name ("NVIDIA H200" -> h200); t4 when none matches."""
    from .hardware import names

    low = device_name.lower()
    return next((n for n in names() if n not in ("host", "rpi4b") and n in low.replace(" ", "")), "t4")


def boards_summary() -> list[dict]:
    """The boards kernels can be cross-compiled for, and whether their cross compiler is here."""
    import shutil

    from . import boards

    return [{"name": b.name, "title": b.title, "arch": b.arch, "mcpu": b.target.get("mcpu", ""), "cc": b.cc,
             "cc_installed": shutil.which(b.cc) is not None, "cc_package": b.cc_package} for b in map(boards.require, boards.names())]


def _is_tracker(t: Target) -> bool:
    try:
        connect_tracker(t.host, t.port).summary()
        return True
    except Exception:  # noqa: BLE001
        return False
