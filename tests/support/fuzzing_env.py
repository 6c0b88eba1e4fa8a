"""Fuzzing what a user's machine can do to a command (issue 22): the strategies and properties that
tests/integration/test_fuzz_env.py runs CI-sized and scripts/fuzz_long.py runs for longer.

- special cache files: a cache folder that real commands filled, with one of its files (drawn) replaced
  by a FIFO, a link to /dev/zero, a folder, a sparse 8 GB file, an empty, truncated or garbage file, or
  a dangling link; then a command that reads it;
- network peers on loopback that accept and then stay silent, send garbage, drip a byte a second, or
  hang up; and peers that answer TVM's handshake (a tracker's or a server's) and then drip a byte every
  2 s or stream a 2 GB message at 1 MB/s (issue 31); named as an RPC device of bench, plan --cost
  measured, tune and devices;
- a stopped worker: a command whose worker is stopped (SIGSTOP) at a drawn moment ends within the
  worker's no-progress deadline, in one line, leaving no process;
- signals (SIGINT, SIGTERM, SIGHUP) delivered at a drawn moment of a running command;
- memory limits (RLIMIT_AS) from 256 MB up, on commands that load, plan and build.

The property is the command line's (tests/fuzzing.check_exit): exit 0 or 2 (1 where a benchmark
finds an incorrect result; 130 and 128 + the signal's number for a signal), one "error: ..." line on
stderr for exit 2, no traceback, no signal, no hang past the deadline; and, for signals, no process
of the command's left running after it exits.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from tests.support import fuzzing as F

NETWORK_TIMEOUT_S = 2       # FUSELENS_NETWORK_TIMEOUT_S for the network cases: a silent peer costs this
CASE_TIMEOUT_S = 150        # a command past this is a hang

# ==== special cache files =====================================================================================

# numbers:X: every number of a JSON cache file replaced by X (a damaged figure: issue 31); other files truncated
DAMAGED_NUMBERS = {"numbers:huge": 1e300, "numbers:denormal": 5e-324, "numbers:negative": -5,
                   "numbers:inf": float("inf"), "numbers:nan": float("nan"), "numbers:bool": True}
SPECIAL_KINDS = ("fifo", "dev_zero", "dir", "sparse", "empty", "truncated", "garbage", "dangling", *DAMAGED_NUMBERS)

# the commands that filled the seed cache, run again over the damaged one (the cheap ones more often)
_SEED_COMMANDS = (["plan", "{TINY}", "--strategy", "dp"],
                  ["bench", "{TINY}", "--strategies", "none", "--repeat", "1"],
                  ["plan", "zoo:mobilenetv2@32", "--strategy", "greedy"],
                  ["plan", "{TINY}", "--strategy", "greedy", "--hardware", "host"])
_READERS = _SEED_COMMANDS + (["inspect", "{TINY}"], ["inspect", "zoo:mobilenetv2@32"], ["devices"],
                             ["cache", "clear", "--what", "results"])


@lru_cache(maxsize=None)
def seed_cache(folder: str, tiny: str) -> Path:
    """A cache folder filled by real commands (models, results, references, the zoo, host.json,
    devices.json), made once per folder."""
    cache = Path(folder)
    if (cache / ".seeded").is_file():
        return cache
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    (cache / "devices.json").write_text(json.dumps({"rpc": []}))
    made = {"devices.json": ["devices"]}
    for argv in _SEED_COMMANDS:
        before = set(cache_files(cache))
        out = F.run_cli([a.replace("{TINY}", tiny) for a in argv], cache, allow=(0,), timeout=600)
        assert out == "ok", (argv, out)
        made.update({f: list(argv) for f in set(cache_files(cache)) - before})
    (cache / ".seeded").write_text(json.dumps(made))
    return cache


def maker(seed: Path, rel: str) -> list[str]:
    """The seed command that wrote the cache file `rel` (it reads it on its next run)."""
    return json.loads((seed / ".seeded").read_text())[rel]


def cache_files(cache: Path) -> list[str]:
    """The regular files a command may read, as paths relative to `cache` (sorted: a drawn index names
    the same file on every run). Logs are written, not read."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")
                  if p.is_file() and not p.is_symlink() and p.name != ".seeded" and p.parts[len(cache.parts)] != "logs")


def special_cache_cases():
    """(which file: an index into cache_files, the kind of damage, the command)."""
    return st.tuples(st.integers(0, 10 ** 6), st.sampled_from(SPECIAL_KINDS), st.sampled_from(_READERS))


def damage(path: Path, kind: str, data: bytes) -> None:
    """Put a special file of `kind` where the regular file `path` (which held `data`) was."""
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "dir":
        path.mkdir()
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(8 << 30)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif kind == "garbage":
        path.write_bytes(bytes((i * 131 + 7) % 256 for i in range(max(len(data), 64))))
    elif kind == "dangling":
        path.symlink_to(path.parent / "nothing-here")
    elif kind in DAMAGED_NUMBERS:
        try:
            d = json.loads(data)
        except ValueError:
            path.write_bytes(data[:len(data) // 2])
            return
        bad = DAMAGED_NUMBERS[kind]

        def swap(o):
            if isinstance(o, dict):
                return {k: swap(v) for k, v in o.items()}
            if isinstance(o, list):
                return [swap(v) for v in o]
            return bad if isinstance(o, (int, float)) and not isinstance(o, bool) else o
        path.write_text(json.dumps(swap(d)))
    else:
        raise ValueError(kind)


def check_special_cache(case, fixtures: dict, seed: Path, work: Path) -> tuple[str, str]:
    """The property on a copy of the seed cache with one file damaged. Returns (the file, the outcome)."""
    index, kind, argv = case
    files = cache_files(seed)
    rel = files[index % len(files)]
    cache = work / "damaged-cache"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(seed, cache, symlinks=True)
    target = cache / rel
    damage(target, kind, (seed / rel).read_bytes())
    allow = (0, 1, 2) if argv[0] == "bench" else (0, 2)
    try:
        out = F.run_cli([a.replace("{TINY}", fixtures["{TINY}"]) for a in argv], cache, allow=allow,
                        timeout=CASE_TIMEOUT_S, cwd=Path(fixtures["{DIR}"]))
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{rel} as {kind}, {' '.join(argv)}: {e.detail}") from None
    finally:
        _unblock(target)
    return rel, out


def _unblock(path: Path) -> None:
    """A FIFO left behind must not block the cleanup (rmtree does not open it; nothing to do) and a
    sparse file must not linger: remove what the case made."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_symlink() or path.exists():
            path.unlink()
    except OSError:
        pass


# ==== network peers ==============================================================================================

PEER_KINDS = ("silent", "garbage", "drip", "hangup", "handshake_drip", "handshake_stream")
RPC_MAGIC, TRACKER_MAGIC = 0xFF271, 0x2F271   # tvm.rpc.base's
STREAM_BYTES = 2 << 30       # what a streaming peer announces
STREAM_RATE = 1 << 20        # and how fast it sends it (bytes a second)


class Peer:
    """A loopback TCP server that misbehaves as `kind` says with every connection, in daemon threads."""

    def __init__(self, kind: str):
        self.kind = kind
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.ended: list[float] = []
        self.stream_bytes = STREAM_BYTES   # what a handshake_stream server announces (TVM's client takes it whole)
        self.closed = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.talk, args=(c,), daemon=True).start()

    def talk(self, c: socket.socket):
        try:
            if self.kind == "hangup":
                c.close()
            elif self.kind == "garbage":
                c.sendall(bytes((i * 37 + 11) % 256 for i in range(4096)))
            elif self.kind == "drip":
                while not self.closed:
                    c.sendall(b"\x01")
                    time.sleep(1.0)
            elif self.kind.startswith("handshake_"):
                tracker = self.handshake(c)
                if self.kind == "handshake_drip":   # then a byte every 2 s, forever
                    while not self.closed:
                        c.sendall(b"\x01")
                        time.sleep(2.0)
                else:                               # then a 2 GB message at 1 MB/s
                    import struct

                    # a tracker's message: an int32 length (2 GB - 1: above any cap); a server's packet: an int64
                    c.sendall(struct.pack("<i", 2 ** 31 - 1) if tracker else struct.pack("<q", self.stream_bytes))
                    chunk = b"\x00" * (STREAM_RATE // 10)
                    while not self.closed:
                        c.sendall(chunk)
                        time.sleep(0.1)
            # silent: hold the connection open, say nothing
        except OSError:
            pass
        self.ended.append(time.monotonic())   # when the peer saw its connection end (or stopped)

    @staticmethod
    def handshake(c: socket.socket) -> bool:
        """Answer TVM's handshake as a tracker or a server would, by the magic the client sends; True
        for a tracker's."""
        import struct

        magic = struct.unpack("<i", _recv(c, 4))[0]
        if magic == TRACKER_MAGIC:
            c.sendall(struct.pack("<i", TRACKER_MAGIC))
        elif magic == RPC_MAGIC:
            keylen = struct.unpack("<i", _recv(c, 4))[0]
            _recv(c, max(0, min(keylen, 4096)))
            key = b"server:fuzz"
            c.sendall(struct.pack("<i", RPC_MAGIC) + struct.pack("<i", len(key)) + key)
        return magic == TRACKER_MAGIC

    def close(self):
        self.closed = True
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


def _recv(c: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = c.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf


@lru_cache(maxsize=None)
def peer(kind: str) -> Peer:
    """One server of each kind per process (they serve every case)."""
    return Peer(kind)


_NET_COMMANDS = (["devices"],
                 ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--target", "{URL}"],
                 ["plan", "{TINY}", "--strategy", "dp", "--cost", "measured", "--target", "{URL}"],
                 ["tune", "{TINY}", "--trials", "2", "--target", "{URL}"])


def network_cases():
    """(the peer's kind, a tracker key or none, the command)."""
    return st.tuples(st.sampled_from(PEER_KINDS), st.sampled_from(["", "/board"]), st.sampled_from(_NET_COMMANDS))


def check_network(case, fixtures: dict, work: Path) -> str:
    """The property for a command whose RPC device is a misbehaving peer: it ends within the deadline,
    by exit 2 with one line that names the peer (or exit 0 where the command only lists devices)."""
    kind, key, argv = case
    p = peer(kind)
    url = f"rpc://127.0.0.1:{p.port}{key}"
    cache = work / "net-cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "devices.json").write_text(json.dumps({"rpc": [url]}))
    argv = [a.replace("{TINY}", fixtures["{TINY}"]).replace("{URL}", url) for a in argv]
    t0 = time.time()
    r = subprocess.run([sys.executable, str(F.MAIN), *argv], capture_output=True, timeout=CASE_TIMEOUT_S,
                       env=F.cli_env(cache, FUSELENS_NETWORK_TIMEOUT_S=str(NETWORK_TIMEOUT_S)),
                       cwd=fixtures["{DIR}"], stdin=subprocess.DEVNULL, preexec_fn=F.limit_memory())
    took = time.time() - t0
    where = f"{' '.join(argv)} against a {kind} peer"
    try:
        out = F.check_exit(r.returncode, r.stderr, (0, 2) if argv[0] == "devices" else (2,))
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{where}: {e.detail}") from None
    err = r.stderr.decode("utf-8", "replace")
    if out == "error" and f"127.0.0.1:{p.port}" not in err:
        raise F.FuzzFailure("peer not named", f"{where}: {err.strip()[:500]}")
    if argv[0] == "devices" and f"127.0.0.1:{p.port}" not in r.stdout.decode("utf-8", "replace") + err:
        raise F.FuzzFailure("peer not named", f"{where}: devices does not list it")
    # a deadline per network step: a few steps at most before the command gives up
    if took > 60:
        raise F.FuzzFailure("slow", f"{where}: took {took:.0f} s with a {NETWORK_TIMEOUT_S} s network deadline")
    return out


# ==== signals =====================================================================================================

_SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
_LONG_COMMANDS = (["bench", "{TINY}", "--strategies", "none,greedy,dp", "--repeat", "3", "--force"],
                  ["plan", "zoo:mobilenetv2@32", "--strategy", "dp", "--cost", "measured"],
                  ["fidelity", "{TINY}", "--strategy", "dp"],
                  ["inspect", "zoo:mobilenetv2@64"])


def signal_cases():
    """(the signal, tenths of a second after the start to send it, the command). From 0.5 s: a signal
    before main.py's first lines run ends Python the default way (no worker exists yet to be left)."""
    return st.tuples(st.sampled_from(sorted(_SIGNALS)), st.integers(5, 80), st.sampled_from(_LONG_COMMANDS))


def _descendants(pid: int) -> set[int]:
    import psutil

    try:
        return {c.pid for c in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def check_signal(case, fixtures: dict, work: Path) -> str:
    """Deliver the signal to the command's process group (as a terminal or a service manager does) at
    the drawn moment; it must end within 30 s of it, by a clean exit, and leave no process running."""
    import psutil

    name, tenths, argv = case
    sig = _SIGNALS[name]
    cache = work / "signal-cache"
    argv = [a.replace("{TINY}", fixtures["{TINY}"]) for a in argv]
    proc = subprocess.Popen([sys.executable, str(F.MAIN), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=F.cli_env(cache), cwd=fixtures["{DIR}"], stdin=subprocess.DEVNULL,
                            preexec_fn=F.limit_memory(), start_new_session=True)
    seen: set[int] = set()
    end = time.time() + tenths / 10
    while time.time() < end and proc.poll() is None:
        seen |= _descendants(proc.pid)
        time.sleep(0.05)
    seen |= _descendants(proc.pid)
    where = f"SIG{name} after {tenths / 10:.1f} s to {' '.join(argv)}"
    if proc.poll() is None:
        # to the command only, as `kill PID` does (SIGINT: to the group, as Ctrl+C does)
        os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise F.FuzzFailure("hang", f"{where}: still running 30 s after the signal") from None
    time.sleep(1.0)
    left = []
    for pid in seen:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {' '.join(p.cmdline())[:120]}")
                p.kill()
        except psutil.Error:
            pass
    if left:
        raise F.FuzzFailure("stray process", f"{where}: left running: {'; '.join(left)}")
    allow = (0, 1, 2, 130, 128 + int(sig)) if argv[0] == "bench" else (0, 2, 130, 128 + int(sig))
    try:
        return F.check_exit(proc.returncode, err, allow)
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{where}: {e.detail}") from None


# ==== memory limits ==================================================================================================

_MEM_COMMANDS = (["inspect", "zoo:mobilenetv2@32"],
                 ["plan", "{TINY}", "--strategy", "dp"],
                 ["plan", "zoo:mobilenetv2@64", "--strategy", "greedy"],
                 ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--force"],
                 ["zoo", "export", "mobilenetv2", "{DIR}/m.onnx", "--resolution", "32"])


def memory_cases():
    """(the address-space limit in MB, the command)."""
    return st.tuples(st.sampled_from([256, 384, 512, 768, 1024, 1536, 2048, 3072]), st.sampled_from(_MEM_COMMANDS))


def check_memory(case, fixtures: dict, work: Path) -> str:
    """The command-line property under a memory limit: it works or says it ran out, in one line."""
    mb, argv = case
    argv = [a.replace("{TINY}", fixtures["{TINY}"]).replace("{DIR}", fixtures["{DIR}"]) for a in argv]
    try:
        return F.run_cli(argv, work / "mem-cache", allow=(0, 1, 2) if argv[0] == "bench" else (0, 2),
                         timeout=CASE_TIMEOUT_S, cwd=Path(fixtures["{DIR}"]), mem_limit=mb << 20)
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{' '.join(argv)} under {mb} MB: {e.detail}") from None


# ==== a stopped worker (issue 31) ==================================================================================

STALL_S = 3                  # FUSELENS_WORKER_STALL_S for the stopped-worker cases
_WORKER_COMMANDS = (["bench", "{TINY}", "--strategies", "none,greedy", "--repeat", "3", "--force"],
                    ["plan", "{TINY}", "--strategy", "dp", "--cost", "measured"],
                    ["fidelity", "{TINY}", "--strategy", "greedy"],
                    ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--force", "--kernels"])


def stop_cases():
    """(tenths of a second after the start to stop the command's workers, the command)."""
    return st.tuples(st.integers(10, 120), st.sampled_from(_WORKER_COMMANDS))


def _workers(pid: int) -> list:
    """The command's worker processes (multiprocessing's spawned children; not its resource tracker)."""
    import psutil

    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for k in kids:
        try:
            if "multiprocessing.spawn" in " ".join(k.cmdline()) or "--multiprocessing-fork" in k.cmdline():
                out.append(k)
        except psutil.Error:
            pass
    return out


def check_stopped_worker(case, fixtures: dict, work: Path) -> str:
    """SIGSTOP every worker of the command from the drawn moment on (one that starts later too): the
    command must end within the no-progress deadline (FUSELENS_WORKER_STALL_S) and a margin, by exit 0
    (its work was done before) or 2 with one line naming the stopped worker, and leave no process."""
    import psutil

    tenths, argv = case
    argv = [a.replace("{TINY}", fixtures["{TINY}"]) for a in argv]
    proc = subprocess.Popen([sys.executable, str(F.MAIN), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=F.cli_env(work / "stop-cache", FUSELENS_WORKER_STALL_S=str(STALL_S)),
                            cwd=fixtures["{DIR}"], stdin=subprocess.DEVNULL, preexec_fn=F.limit_memory(),
                            start_new_session=True)
    where = f"workers stopped from {tenths / 10:.1f} s on, {' '.join(argv)}"
    err_chunks: list[bytes] = []
    threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True).start()
    start = time.time()
    stopped: dict[int, object] = {}
    last_stop = None
    while proc.poll() is None and time.time() - start < CASE_TIMEOUT_S:
        if time.time() - start >= tenths / 10:
            for w in _workers(proc.pid):
                if w.pid not in stopped:
                    try:
                        w.suspend()
                        stopped[w.pid], last_stop = w, time.time()
                    except psutil.Error:
                        pass
        time.sleep(0.05)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise F.FuzzFailure("hang", f"{where}: still running after {CASE_TIMEOUT_S} s")
    ended = time.time()
    time.sleep(0.3)
    err = b"".join(err_chunks)
    left = []
    for w in stopped.values():
        try:
            if w.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{w.pid}")
                w.kill()
        except psutil.Error:
            pass
    if left:
        raise F.FuzzFailure("stray process", f"{where}: stopped workers left behind: {', '.join(left)}")
    # one stall deadline per worker stopped, and a margin for the command's own work
    if last_stop is not None and ended - last_stop > STALL_S + 30:
        raise F.FuzzFailure("slow", f"{where}: ended {ended - last_stop:.0f} s after the last stop "
                                    f"(deadline {STALL_S} s)")
    try:
        out = F.check_exit(proc.returncode, err, (0, 1, 2) if argv[0] == "bench" else (0, 2))
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{where}: {e.detail}") from None
    text = err.decode("utf-8", "replace")
    if out == "error" and "no progress" not in text:
        raise F.FuzzFailure("cause not named", f"{where}: {text.strip()[:500]}")
    return out


# ==== closed standard streams (issue 31) ============================================================================

_CLOSED_COMMANDS = (["zoo", "list"],
                    ["zoo", "export", "mobilenetv2", "{DIR}/closed-export.onnx", "--resolution", "32"],
                    ["inspect", "{TINY}"],
                    ["inspect", "/nonexistent.onnx"],
                    ["plan", "{TINY}", "--strategy", "greedy", "--out", "{DIR}/closed-plan.json"],
                    ["plan", "{TINY}", "--strategy", "bogus"],
                    ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--json", "{DIR}/closed-bench.json"],
                    ["fidelity", "{TINY}", "--strategy", "greedy"],
                    ["calibrate", "{TINY}"],
                    ["tune", "{TINY}", "--trials", "0"],
                    ["table", "--models", "nosuchmodel"],
                    ["devices"],
                    ["cache", "clear", "--what", "results"],
                    ["{TINY}"])   # the app: no display here, exit 3


def closed_stream_cases():
    """(the streams closed: a key of fuzzing.CLOSE, the command)."""
    return st.tuples(st.sampled_from(sorted(F.CLOSE)), st.sampled_from(_CLOSED_COMMANDS))


def check_closed_streams(case, fixtures: dict, work: Path) -> str:
    """The command-line property with the drawn streams closed by the shell: the documented exit code
    (0, 2; 1 for a bench that finds an incorrect result, 3 for the app with no display), the one line
    where stderr is open, and every output file written on exit 0."""
    close, argv = case
    argv = [a.replace("{TINY}", fixtures["{TINY}"]).replace("{DIR}", fixtures["{DIR}"]) for a in argv]
    outs = [Path(a) for a in argv if a.startswith(fixtures["{DIR}"] + "/closed-")]
    for o in outs:
        o.unlink(missing_ok=True)
    allow = (0, 1, 2) if argv[0] in ("bench", "tune") else (3,) if argv[0] == fixtures["{TINY}"] else (0, 2)
    try:
        out = F.run_cli(argv, work / "closed-cache", allow=allow, timeout=CASE_TIMEOUT_S,
                        cwd=Path(fixtures["{DIR}"]), close=close)
    except F.FuzzFailure as e:
        raise F.FuzzFailure(e.kind, f"{' '.join(argv)} with {close} closed: {e.detail}") from None
    if out == "ok":
        missing = [str(o) for o in outs if not o.is_file() or o.stat().st_size == 0]
        if missing:
            raise F.FuzzFailure("lost output", f"{' '.join(argv)} with {close} closed: exit 0 but no {missing}")
    return out
