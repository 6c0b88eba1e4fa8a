"""Where a benchmark runs: `cpu`, `cuda` / `cuda:N`, `rpc://HOST:PORT` (a TVM RPC server) or
`rpc://HOST:PORT/KEY` (a device registered with a TVM RPC tracker). `?device=rpi4b` (or a tracker key
named like a board) ties an RPC device to a board's profile (engine/devices/boards.py): what kernels are built
for, how they are scheduled and the cost model the planner uses.

Parse once, at the edge: `parse` gives a Target; engine/planner/setup.resolve parses a front end's
--target (or the app's device) into a Setup's, and the engine passes that object down. What a
target is asked is one table (the end of this module): BACKENDS, a row per runtime kind (cpu,
cuda, rpc: how a spec parses, how its device is opened, checked and timed), and BUILDS, a row per
kind of build (cpu, cuda, a board). `t.backend` and `t.build` are the rows; a new runtime kind
(ROCm, Vulkan, Metal) is a row of each."""
from __future__ import annotations

import json
import os
import re
import socket
import struct
import time
from dataclasses import dataclass
from typing import Callable

from engine.util.cache_dir import cache_dir
from engine.util.errors import TargetError

_RPC = re.compile(r"^rpc://(?P<host>[^:/]+):(?P<port>\d+)(?:/(?P<key>[^/?]+))?(?:\?(?P<query>.+))?$")


@dataclass(frozen=True)
class Target:
    spec: str
    kind: str            # a runtime kind: a row of BACKENDS ("cpu" | "cuda" | "rpc")
    index: int = 0
    host: str = ""
    port: int = 0
    key: str = ""        # tracker key (empty: a direct RPC server)
    build_for: str = "cpu"  # what to compile for: "cpu" | "cuda:sm_XX" | a board ("rpi4b", engine/devices/boards.py)
    device: str = ""        # the device profile (assets/hardware.json) when the spec names one

    @property
    def backend(self) -> "Backend":
        """The row of BACKENDS for this target's runtime kind: how its device is opened and timed."""
        return BACKENDS[self.kind]

    @property
    def build(self) -> "Build":
        """The row of BUILDS for what this target compiles for (a CPU, a GPU, a board)."""
        return build_row(self.build_for)

    @property
    def is_cross(self) -> bool:
        """Built for another machine's CPU (a board): linked by its cross compiler, checked against the host."""
        return self.build.cross

    @property
    def hardware(self) -> str:
        """The cost-model profile that follows this device: the board's own, this host's for the CPU
        (and a remote host-like CPU), T4 for a GPU with no profile of its own."""
        return self.device or self.build.hardware

    @property
    def is_gpu(self) -> bool:
        return self.build.gpu


HOST = Target("cpu", "cpu")   # this machine's CPU: what parse("cpu") gives


def as_target(t: "Target | str") -> Target:
    """`t` itself when it is already a Target (parsed once, at the edge), else the parsed spec."""
    return t if isinstance(t, Target) else parse(t)


def parse(spec: str) -> Target:
    """The Target a spec names: the first row of BACKENDS whose `match` takes it."""
    s = spec.strip()
    for row in BACKENDS.values():
        t = row.match(s)
        if t is not None:
            return t
    raise TargetError(f"unknown target {spec!r}; use cpu, cuda, cuda:N, cuda:sm_XX, rpc://HOST:PORT or "
                      f"rpc://HOST:PORT/KEY, optionally ?device=BOARD")


def _match_cpu(s: str) -> Target | None:
    return HOST if s in ("cpu", "llvm", "host") else None


def _match_cuda(s: str) -> Target | None:
    m = re.fullmatch(r"cuda(?::(\d+))?", s)
    if m:
        return Target(s, "cuda", int(m.group(1) or 0), build_for="cuda")
    m = re.fullmatch(r"cuda:(sm_\d+)", s)
    if m:  # a CUDA architecture: builds for it on any machine; runs on GPU 0 where there is one
        return Target(s, "cuda", 0, build_for=s)
    return None


def _match_rpc(s: str) -> Target | None:
    m = _RPC.match(s)
    return _rpc(s, m) if m else None


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
    """Raise TargetError with one clear line when the target is not there (its row's `check`)."""
    t.backend.check(t)


def session(t: Target, timeout_s: float | None = None):
    """An RPC session on the device: from the tracker (a free device of the key) or the server.
    Every step has a total deadline (network_timeout_s: $FUSELENS_NETWORK_TIMEOUT_S, default 10 s),
    not one per read; a peer that accepts the connection and then says nothing, or drips its answer,
    or streams a huge one, is one TargetError line naming it."""
    timeout_s = network_timeout_s() if timeout_s is None else timeout_s
    what = f"tracker {t.host}:{t.port} key {t.key!r}" if t.key else f"RPC server {t.host}:{t.port}"
    try:
        if t.key:
            return _request(connect_tracker(t.host, t.port, timeout_s), t, timeout_s)
        return _connect_server(t.host, t.port, "", timeout_s)
    except TargetError as e:
        raise TargetError(f"{t.spec}{_UNREACHABLE}{what} ({e})") from None
    except Exception as e:  # noqa: BLE001 - TVM raises TVMError/RuntimeError variants
        raise TargetError(f"{t.spec}{_UNREACHABLE}{what} ({str(e).strip().splitlines()[-1][:160]})") from None


_UNREACHABLE = ": cannot reach "


def network_fault(text: str) -> str | None:
    """session()'s line for a device it could not reach, found in `text` (another process's error
    message, e.g. a MetaSchedule runner's), else None."""
    for ln in str(text).splitlines():   # "TargetError: rpc://...: cannot reach ..." in a traceback
        at = ln.find("rpc://")
        if at >= 0 and _UNREACHABLE in ln[at:]:
            return ln[at:].strip()
    return None


DEFAULT_NETWORK_TIMEOUT_S = 10.0
QUEUE_WAIT = 6   # a tracker's queue (a free device of a key) is waited on this many deadlines


def network_timeout_s() -> float:
    """The deadline of every network step (connecting, a tracker's answer, an RPC server's handshake):
    $FUSELENS_NETWORK_TIMEOUT_S seconds, else 10; TargetError for a value that is not a positive number."""
    from engine.util.numbers import env_seconds

    return env_seconds("FUSELENS_NETWORK_TIMEOUT_S", DEFAULT_NETWORK_TIMEOUT_S, 1e6, TargetError)


class _Silent(TargetError):
    """A peer that took the connection and then did not answer in time."""


class _Slow(_Silent):
    """A peer that began an answer and did not finish it in time (a byte every few seconds, a stream)."""


def _silent(what: str, timeout_s: float) -> TargetError:
    return _Silent(f"{what} did not answer within {timeout_s:g} s; FUSELENS_NETWORK_TIMEOUT_S sets the deadline")


MAX_TRACKER_MESSAGE_BYTES = 1 << 20   # a tracker's answer (its summary of every key and server) is a few kB


def _recv_exact(sock, n: int, end: float, what: str, timeout_s: float) -> bytes:
    """`n` bytes from `sock` by the monotonic time `end`: a total deadline for the whole answer, not one
    per read, so a peer that drips a byte at a time or streams slowly cannot stretch it. _Silent when
    nothing came, _Slow when part of it did, TargetError when the peer closed the connection."""
    buf = bytearray()
    while len(buf) < n:
        left = end - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(min(n - len(buf), 1 << 16))
        except TimeoutError:
            if buf:
                raise _Slow(f"{what} sent {len(buf)} of {n} bytes of its answer within {timeout_s:g} s and was cut "
                            "off; FUSELENS_NETWORK_TIMEOUT_S sets the deadline") from None
            raise _silent(what, timeout_s) from None
        if not chunk:
            raise TargetError(f"{what} closed the connection")
        buf += chunk
    return bytes(buf)


def _recv_json(sock, end: float, what: str, timeout_s: float):
    """TVM's tracker message (a little-endian int32 length, then that many bytes of JSON) by the monotonic
    time `end`; a length above MAX_TRACKER_MESSAGE_BYTES (or below 0) is refused at once, unread."""
    size = struct.unpack("<i", _recv_exact(sock, 4, end, what, timeout_s))[0]
    if not 0 <= size <= MAX_TRACKER_MESSAGE_BYTES:
        raise TargetError(f"{what} announced an answer of {size:,} bytes; a tracker's answer is at most "
                          f"{MAX_TRACKER_MESSAGE_BYTES >> 20} MB, so it was refused")
    try:
        return json.loads(_recv_exact(sock, size, end, what, timeout_s).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TargetError(f"{what} sent an answer that is not JSON") from None


def _request(tracker, t: Target, timeout_s: float):
    """A session on a free device of `t.key`, asked of `tracker` (a BoundedTrackerSession): a device
    within QUEUE_WAIT x `timeout_s` (one may be finishing another session, and a board re-registers
    slowly), then its handshake within `timeout_s`."""
    from tvm.rpc import base

    wait = QUEUE_WAIT * timeout_s
    try:
        tracker._sock.settimeout(timeout_s)
        base.sendjson(tracker._sock, [base.TrackerCode.REQUEST, t.key, "", 1])
        value = _recv_json(tracker._sock, time.monotonic() + wait, "the tracker", wait)
    except _Slow:
        raise
    except _Silent:
        raise _Silent(f"no device of key {t.key!r} was free within {wait:g} s: the tracker did not answer, "
                      "or every device is busy or none is registered; FUSELENS_NETWORK_TIMEOUT_S sets the "
                      "deadline") from None
    except TimeoutError:
        raise _silent("the tracker", timeout_s) from None
    except (OSError, ValueError, struct.error) as e:
        raise TargetError(f"the tracker broke off ({e})") from None
    finally:
        tracker.close()
    if not (isinstance(value, list) and len(value) > 1 and value[0] == base.TrackerCode.SUCCESS
            and isinstance(value[1], list) and len(value[1]) == 3):
        raise TargetError(f"the tracker sent an answer it should not have: {str(value)[:80]}")
    host, port, matchkey = value[1]
    return _connect_server(str(host), int(port), str(matchkey), timeout_s, f"the device the tracker gave, at {host}:{port},")


def _connect_server(host: str, port: int, key: str, timeout_s: float, who: str = "the server"):
    """tvm.rpc.connect with a total deadline: TVM's native client waits forever on a server that accepts
    and never answers (or drips a byte at a time, or streams a huge first message, which it buffers
    whole), so it runs in a daemon thread given `timeout_s`. Past it, the connection the thread opened
    (found in /proc/self/fd) is shut down under it, so its read returns and the thread ends, given
    SHUT_GRACE_S (native_threads_left says if one did not). No probe connection comes first: TVM's server, taking a connection that closes unannounced for a dropped tracker, would
    register again under a new match key and refuse the one the tracker just gave."""
    import threading

    from tvm import rpc

    out: dict = {}
    before = _sockets_to(port)

    def run():
        try:
            out["session"] = rpc.connect(host, port, key, session_timeout=0)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out["error"] = e

    th = threading.Thread(target=run, name=f"rpc-connect {host}:{port}", daemon=True)
    th.start()
    th.join(timeout_s)
    if th.is_alive():
        # TVM's native client reads on in the thread (a peer dripping bytes, or streaming a huge
        # message it would buffer): shut the connection down under it, so the thread ends too
        _shut(_sockets_to(port) - before)
        th.join(min(timeout_s, SHUT_GRACE_S))   # a thread woken in native code must not meet the exit
        if th.is_alive():
            _LEFT.append(th)
        raise _silent(who, timeout_s)
    if "error" in out:
        raise out["error"]
    return out["session"]


SHUT_GRACE_S = 3.0   # how long a connecting thread is given to end once its connection is shut down
_LEFT: list = []     # connecting threads still in TVM's native code after that


def native_threads_left() -> bool:
    """Whether a thread of _connect_server is still running in TVM's native client (it was still busy,
    e.g. taking memory for a streamed message, when the deadline shut its connection): the process
    should then end by os._exit, as a native thread woken while Python finalizes aborts it."""
    return any(t.is_alive() for t in _LEFT)


def _sockets_to(port: int) -> set[int]:
    """The file descriptors of this process's TCP sockets connected to `port` (any host), read from
    /proc/self/fd (empty elsewhere): the connection TVM's native client opened is among those that
    appear while it connects."""
    found = set()
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return found
    for fd in fds:
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            peer = s.getpeername()
            if s.type == socket.SOCK_STREAM and isinstance(peer, tuple) and len(peer) >= 2 and peer[1] == port:
                found.add(fd)
        except OSError:
            pass
        finally:
            s.close()   # the duplicate only
    return found


def _shut(fds: set[int]) -> None:
    """Shut down the connections on `fds` (both ways): a read blocked on them returns at once. The
    descriptors themselves stay open for their owner to close."""
    for fd in fds:
        try:
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            s.close()


TRACKER_CONNECT_S = 3.0  # how long to wait for a tracker to accept the connection


def connect_tracker(host: str, port: int, timeout_s: float | None = None):
    """tvm.rpc.connect_tracker, bounded: TVM's retries a refused connection for 60 s with a warning
    every 5 s, and then waits forever for a peer that accepts and never answers. Here connecting
    gives up after TRACKER_CONNECT_S (or `timeout_s` if shorter), and each answer of the tracker
    (its handshake, a summary, a request) after `timeout_s` (network_timeout_s()), each with one
    TargetError line."""
    timeout_s = network_timeout_s() if timeout_s is None else timeout_s
    return _tracker_session_class()((host, port), timeout_s)


_TRACKER_SESSION = None


def _tracker_session_class():
    """tvm.rpc.client.TrackerSession on a socket with a deadline (made on first use: TVM loads then)."""
    global _TRACKER_SESSION
    if _TRACKER_SESSION is not None:
        return _TRACKER_SESSION
    from tvm.rpc import base
    from tvm.rpc.client import TrackerSession

    class BoundedTrackerSession(TrackerSession):
        def __init__(self, addr, timeout_s: float):
            self._timeout_s = timeout_s
            super().__init__(addr)      # connects (_connect below)

        def _connect(self):
            host, port = self._addr
            wait = min(TRACKER_CONNECT_S, self._timeout_s)
            try:
                self._sock = socket.create_connection((host, port), timeout=wait)
            except TimeoutError:
                raise TargetError(f"no answer within {wait:g} s") from None
            except OSError as e:
                raise TargetError(e.strerror or str(e) or type(e).__name__) from None
            self._sock.settimeout(self._timeout_s)   # every later answer too
            try:
                self._sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
                magic = struct.unpack("<i", _recv_exact(self._sock, 4, time.monotonic() + self._timeout_s,
                                                        f"the tracker at {host}:{port}", self._timeout_s))[0]
            except TimeoutError:
                self.close()
                raise _silent(f"the tracker at {host}:{port}", self._timeout_s) from None
            except TargetError as e:
                self.close()
                if isinstance(e, _Silent):
                    raise
                raise TargetError(f"{host}:{port} is not an RPC tracker ({e})") from None
            except OSError as e:
                self.close()
                raise TargetError(f"{host}:{port} is not an RPC tracker (it broke off: {e.strerror or e})") from None
            if magic != base.RPC_TRACKER_MAGIC:
                self.close()
                raise TargetError(f"{host}:{port} is not an RPC tracker")

        def summary(self):
            """The tracker's summary, its whole answer within the deadline (TVM's reads wait per read)."""
            host, port = self._addr
            what = f"the tracker at {host}:{port}"
            try:
                self._sock.settimeout(self._timeout_s)
                base.sendjson(self._sock, [base.TrackerCode.SUMMARY])
                value = _recv_json(self._sock, time.monotonic() + self._timeout_s, what, self._timeout_s)
            except TimeoutError:
                raise _silent(what, self._timeout_s) from None
            except (OSError, ValueError, struct.error) as e:
                raise TargetError(f"tracker {host}:{port} broke off ({e})") from None
            if not (isinstance(value, list) and len(value) > 1 and value[0] == base.TrackerCode.SUCCESS
                    and isinstance(value[1], dict)):
                raise TargetError(f"{what} sent an answer it should not have: {str(value)[:80]}")
            return value[1]

    _TRACKER_SESSION = BoundedTrackerSession
    return _TRACKER_SESSION


def free_devices(t: Target) -> int:
    """How many devices of a tracker key are free now (1 for anything else, or when the tracker
    cannot say): work over a key can go to that many devices at once."""
    if t.backend.local or not t.key:
        return 1
    try:
        q = connect_tracker(t.host, t.port).summary().get("queue_info", {}).get(t.key, {})
        return max(1, int(q.get("free", 1)))
    except Exception:  # noqa: BLE001
        return 1


MAX_DEVICES_JSON_BYTES = 1 << 20


def configured_rpc() -> list[str]:
    """RPC devices the user configured: $FUSELENS_RPC (comma separated) and devices.json in the cache folder."""
    from engine.util.cache_dir import FileTooLargeError, NotRegularFileError, read_file

    out = [s for s in os.environ.get("FUSELENS_RPC", "").split(",") if s.strip()]
    f = cache_dir() / "devices.json"
    try:
        rpc = json.loads(read_file(f, MAX_DEVICES_JSON_BYTES).decode("utf-8")).get("rpc", [])
    except (NotRegularFileError, FileTooLargeError) as e:   # a FIFO would block, /dev/zero fill the memory
        raise TargetError(f"{f}: {e.strerror}; devices.json must be a JSON file like "
                          '{"rpc": ["rpc://HOST:9190/KEY"]}') from None
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
    """Whether rpc://HOST:PORT is a tracker (else it may be a server); a peer that does not answer
    at all raises (TargetError), so that it is not waited for twice."""
    try:
        connect_tracker(t.host, t.port).summary()
        return True
    except _Silent:
        raise
    except Exception:  # noqa: BLE001
        return False


# ---- the backend table: one row per runtime kind (tinygrad's Device[dev]) -----------------------
# A runtime kind (ROCm, Vulkan, Metal) is one Backend row: how a spec of its kind parses, how its
# device is opened and checked, what it times. What a target compiles for (a CPU, a GPU, a board)
# is one Build row. Every engine branch on the kind of a target reads one of the two rows.


@dataclass(frozen=True)
class Backend:
    name: str
    match: Callable[[str], "Target | None"]   # parse: the Target of a spec of this kind, else None
    local: bool          # the device is this machine: its load is watched while timing (busy_share), kernels
                         # are profiled by the VM's hook, MetaSchedule runs here; else a remote (RPC) device
    host_cpu: bool       # the device is this host's CPU: timings keyed by this machine, caches flushed,
                         # kernels compiled on every core, ORT beside it (bench --kernels), the shipped model
    round_robin: bool    # plans are timed together in one worker (engine/measure/roundrobin.py), else one worker each
    tracker_to_tune: bool  # tuning needs a tracker key (MetaSchedule's runner asks it for devices)
    connect: Callable[["Target"], object]          # the session the device is reached through (None: local)
    device: Callable[["Target", object], object]   # the TVM device, given connect's session
    available: Callable[["Target"], bool]          # whether kernels can run here now (a CUDA GPU is there)
    check: Callable[["Target"], None]              # TargetError (one line) when the device is not there
    resolve: Callable[["Target"], "Target"]        # the target built for its device's own architecture
    describe: Callable[["Target", object], "str | None"]   # the device as a worker saw it, or None

    def open(self, t: "Target"):
        """(device, session) of `t`: session is None for a local device."""
        remote = self.connect(t)
        return self.device(t, remote), remote


def _no_session(t: Target):
    return None


def _always(t: Target) -> bool:
    return True


def _as_is(t: Target) -> Target:
    return t


def _nothing(t: Target, dev) -> None:
    return None


def _cpu_device(t: Target, remote):
    import tvm

    return tvm.cpu()


def _cuda_device(t: Target, remote):
    import tvm

    return tvm.cuda(t.index)


def _cuda_available(t: Target) -> bool:
    import tvm

    return bool(tvm.cuda(t.index).exist)


def _cuda_check(t: Target) -> None:
    if not _cuda_available(t):
        raise TargetError(f"{t.spec}: no CUDA device {t.index} on this machine")


def _cuda_resolve(t: Target) -> Target:
    """`cuda` / `cuda:N` builds for the GPU's own architecture (cuda:sm_XX is kept as it is)."""
    if t.build_for == "cuda":
        return Target(t.spec, t.kind, t.index, build_for="cuda:" + cuda_arch(t.index))
    return t


def _cuda_describe(t: Target, dev) -> str | None:
    try:
        return f"{dev.device_name} ({t.spec}, compute {dev.compute_version})" if dev.exist else None
    except Exception:  # noqa: BLE001 - a description only
        return None


def _rpc_device(t: Target, remote):
    return remote.cuda() if t.is_gpu else remote.cpu()


def _rpc_check(t: Target) -> None:
    if t.is_cross:
        from . import boards

        boards.cross_cc(t.build_for)   # before the device is asked for: nothing could load without it
    session(t)


BACKENDS: dict[str, Backend] = {
    "cpu": Backend("cpu", _match_cpu, local=True, host_cpu=True, round_robin=True, tracker_to_tune=False,
                   connect=_no_session, device=_cpu_device, available=_always, check=lambda t: None,
                   resolve=_as_is, describe=_nothing),
    "cuda": Backend("cuda", _match_cuda, local=True, host_cpu=False, round_robin=True, tracker_to_tune=False,
                    connect=_no_session, device=_cuda_device, available=_cuda_available, check=_cuda_check,
                    resolve=_cuda_resolve, describe=_cuda_describe),
    "rpc": Backend("rpc", _match_rpc, local=False, host_cpu=False, round_robin=False, tracker_to_tune=True,
                   connect=lambda t: session(t), device=_rpc_device, available=_always, check=_rpc_check,
                   resolve=_as_is, describe=_nothing),
}


@dataclass(frozen=True)
class Build:
    """What kernels are compiled for: a kind of processor (the target's build_for)."""
    name: str
    match: Callable[[str], bool]   # whether a build_for ("cpu", "cuda:sm_XX", "rpi4b") is of this row
    gpu: bool                      # GPU kernels (dlight's fallback schedule when unscheduled)
    cross: bool                    # another machine's CPU: linked by its cross compiler, checked on the host
    blocked_layout: bool           # the default channel layout is blocked, NCHW[x]c (else NCHW)
    hardware: str                  # the cost-model profile when the target names none


def _is_board(build_for: str) -> bool:
    from . import boards

    return boards.get(build_for) is not None


BUILDS: dict[str, Build] = {
    "cuda": Build("cuda", lambda b: b.startswith("cuda"), gpu=True, cross=False, blocked_layout=False, hardware="t4"),
    "board": Build("board", _is_board, gpu=False, cross=True, blocked_layout=True, hardware="host"),
    "cpu": Build("cpu", lambda b: True, gpu=False, cross=False, blocked_layout=True, hardware="host"),
}


def build_row(build_for: str) -> Build:
    """The first row of BUILDS that takes `build_for` (the CPU row takes everything else)."""
    return next(b for b in BUILDS.values() if b.match(build_for))
