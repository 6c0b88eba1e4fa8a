"""Fuzzing what a user's machine can do to a command (issue 22): the strategies and properties that
tests/test_fuzz_env.py runs CI-sized and scripts/fuzz_long.py runs for longer.

- special cache files: a cache folder that real commands filled, with one of its files (drawn) replaced
  by a FIFO, a link to /dev/zero, a folder, a sparse 8 GB file, an empty, truncated or garbage file, or
  a dangling link; then a command that reads it;
- network peers on loopback that accept and then stay silent, send garbage, drip a byte a second, or
  hang up, named as an RPC device of bench, plan --cost measured, tune and devices;
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

from tests import fuzzing as F

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

PEER_KINDS = ("silent", "garbage", "drip", "hangup")


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
            # silent: hold the connection open, say nothing
        except OSError:
            pass

    def close(self):
        self.closed = True
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


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
