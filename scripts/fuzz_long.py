"""The long fuzzing run: tests/{integration,unit}/test_fuzz.py's targets and strategies (tests/fuzzing.py), for minutes
or hours instead of a few hundred cases.

    python scripts/fuzz_long.py --minutes 30 [--seed 1] [--targets onnx,onnx_cli,plan_json,cli,env_cache,...] [--out DIR]

The env_ targets fault the environment instead of the input (tests/fuzzing_env.py): env_cache
(special and damaged files in a filled cache folder), env_net (silent, garbage, dripping and
hanging-up RPC peers on loopback, and peers that answer TVM's handshake and then drip a byte every 2 s
or stream a 2 GB message), env_signal (SIGINT, SIGTERM, SIGHUP at a drawn moment; no process may be
left), env_memory (address-space limits from 256 MB), env_stop (the command's workers stopped by
SIGSTOP at a drawn moment: ended in one line within FUSELENS_WORKER_STALL_S) and env_closed (stdin,
stdout, stderr or all three closed for any command).

Each target runs in a worker process (so a crash of TVM or ONNX in the in-process targets is
caught as a crash too, and the worker restarts with the next seed) for its share of the time.
Before each case a worker writes the case to OUT/current-TARGET; a case that breaks the property
(tests/fuzzing.py: an exception other than a FuseLensError, a traceback, an exit code other than
0 or 2, a signal, a hang, an error that is not one line) is saved in OUT/crashes/ with what
happened: case.txt (the case as Hypothesis drew it, to paste into an @example), the input file
(model.onnx, plan.json or argv.json) and error.txt.

Prints the cases tried per target and the crashes found (distinct signatures, at most 3 saved per
signature). Exit code 1 if any crash was found, else 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# share of the time; the env_ targets fault the environment (tests/fuzzing_env.py)
TARGETS = {"onnx": 0.25, "onnx_cli": 0.1, "plan_json": 0.1, "cli": 0.25,
           "env_cache": 0.1, "env_net": 0.06, "env_signal": 0.07, "env_memory": 0.07,
           "env_stop": 0.04, "env_closed": 0.04}
SAVE_PER_SIGNATURE = 3


class TimeUp(BaseException):
    """Ends a worker's Hypothesis loop without it counting as a failing example."""


def signature(target: str, kind: str, detail: str) -> str:
    """Crashes that differ only in numbers, paths or quoted values count once."""
    first = next((ln for ln in detail.splitlines()[::-1] if ln.strip()), "") if kind == "traceback" else \
        detail.splitlines()[0] if detail else ""
    first = re.sub(r"'[^']*'|\"[^\"]*\"|/\S+|\d+", "_", first)[:160]
    return f"{target}|{kind}|{first}"


# ---- the worker ---------------------------------------------------------------------------------------

def worker(target: str, seed: int, until: float, out: Path) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from tests.support import fuzzing as F

    work = Path(tempfile.mkdtemp(prefix=f"fuzz-{target}-"))
    stats = {"cases": 0, "ok": 0, "error": 0, "crashes": {}}
    stats_file = out / f"stats-{target}-{os.getpid()}.json"
    current = out / f"current-{target}"
    current.mkdir(parents=True, exist_ok=True)

    def save_stats():
        stats_file.write_text(json.dumps(stats))

    def record(case_repr: str, files: dict, e: F.FuzzFailure):
        sig = signature(target, e.kind, e.detail)
        n = stats["crashes"].get(sig, 0)
        stats["crashes"][sig] = n + 1
        if n < SAVE_PER_SIGNATURE:
            d = out / "crashes" / f"{target}-{len(list((out / 'crashes').glob(f'{target}-*')))}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "case.txt").write_text(case_repr + "\n")
            (d / "error.txt").write_text(f"{e.kind}\n{e.detail}\n")
            for name, src in files.items():
                if isinstance(src, Path) and src.exists():
                    shutil.copy(src, d / name)
                elif isinstance(src, (bytes, str)):
                    (d / name).write_bytes(src if isinstance(src, bytes) else src.encode("utf-8", "surrogateescape"))

    def begin(case_repr: str, files: dict):
        if time.time() > until:
            raise TimeUp
        (current / "case.txt").write_text(case_repr + "\n")
        for name, data in files.items():
            (current / name).write_bytes(data)

    def done(outcome):
        stats["cases"] += 1
        for o in outcome if isinstance(outcome, list) else [outcome]:
            stats[o if o in ("ok", "error") else "other"] = stats.get(o if o in ("ok", "error") else "other", 0) + 1
        save_stats()

    run_settings = settings(max_examples=10 ** 9, deadline=None, database=None, phases=[Phase.generate],
                            suppress_health_check=list(HealthCheck))
    cache = work / "cache"
    if target in ("onnx", "onnx_cli"):
        @run_settings
        @given(F.onnx_cases(cli=target == "onnx_cli"))
        def loop(case):
            path, shapes = F.write_onnx_case(case, work / "case")
            begin(repr(case), {"model.onnx": path.read_bytes()})
            try:
                if target == "onnx":
                    with F.private_env(cache):
                        outcome = F.check_loader(path, shapes)
                else:
                    outcome = F.check_onnx_cli(path, shapes, cache)
            except F.FuzzFailure as e:
                record(repr(case), {"model.onnx": path}, e)
                outcome = "crash"
            done(outcome)
            _trim(cache)
    elif target == "plan_json":
        seeds = F.plan_seeds(str(work / "plan-cache"))
        plans = {k: v[1] for k, v in seeds.items()}
        other = {"tiny": "mobilenetv2@32[:25]/greedy", "mobilenetv2@32[:25]": "tiny/greedy"}

        @run_settings
        @given(F.plan_cases())
        def loop(case):
            seed_name, against, muts = case
            data = F.apply_plan_mutations(plans[seed_name], plans, muts)
            graph = seeds[seed_name if against == "own" else other[seed_name.split("/")[0]]][0]
            begin(repr(case), {"plan.json": data})
            try:
                outcome = F.check_plan(data, graph, work / "case")
            except F.FuzzFailure as e:
                record(repr(case), {"plan.json": data}, e)
                outcome = "crash"
            done(outcome)
    elif target == "cli":
        fixtures = F.make_fixtures(work / "fixtures")
        commands = F.CLI_COMMANDS
        # bench lines build and time a model: a few of them, among many cheap ones
        weights = {"zoo": 3, "inspect": 4, "plan": 4, "bench": 1, "table": 2, "tune": 2, "misc": 4, "cache_files": 2}
        lines = st.one_of(*[commands[c]() for c, w in weights.items() for _ in range(w)])

        @run_settings
        @given(lines)
        def loop(argv):
            begin(repr(argv), {"argv.json": json.dumps(argv).encode()})
            try:
                outcome = F.check_cli_args(argv, fixtures, cache, timeout=180)
            except F.FuzzFailure as e:
                record(repr(argv), {"argv.json": json.dumps(F.fill_argv(argv, fixtures))}, e)
                outcome = "crash"
            done(outcome)
            _trim(cache)
    elif target.startswith("env_"):
        from tests.support import fuzzing_env as E

        fixtures = F.make_fixtures(work / "fixtures")
        seed_cache = E.seed_cache(str(work / "seed-cache"), fixtures["{TINY}"]) if target == "env_cache" else None
        cases, check = {"env_cache": (E.special_cache_cases, lambda c: E.check_special_cache(c, fixtures, seed_cache,
                                                                                               work)[1]),
                        "env_net": (E.network_cases, lambda c: E.check_network(c, fixtures, work)),
                        "env_signal": (E.signal_cases, lambda c: E.check_signal(c, fixtures, work)),
                        "env_memory": (E.memory_cases, lambda c: E.check_memory(c, fixtures, work)),
                        "env_stop": (E.stop_cases, lambda c: E.check_stopped_worker(c, fixtures, work)),
                        "env_closed": (E.closed_stream_cases, lambda c: E.check_closed_streams(c, fixtures, work))}[target]

        @run_settings
        @given(cases())
        def loop(case):
            begin(repr(case), {})
            try:
                outcome = check(case)
            except F.FuzzFailure as e:
                record(repr(case), {}, e)
                outcome = "crash"
            done(outcome)
    else:
        raise SystemExit(f"unknown target {target}")
    save_stats()
    try:
        hseed(seed)(loop)()
    except TimeUp:
        pass
    save_stats()
    shutil.rmtree(work, ignore_errors=True)


def _trim(cache: Path, limit: int = 500 << 20) -> None:
    """Keep the fuzzing cache small: every mutated model is an entry of its own."""
    models = cache / "models"
    if models.is_dir():
        size = sum(f.stat().st_size for f in models.rglob("*") if f.is_file())
        if size > limit:
            shutil.rmtree(models, ignore_errors=True)


# ---- the driver ---------------------------------------------------------------------------------------

def run_target(target: str, seconds: float, seed: int, out: Path) -> dict:
    """Workers for `target` until `seconds` are spent; a worker that dies (a crash of the process
    itself) is recorded as a crash of its current case and the next worker gets the next seed."""
    end = time.time() + seconds
    total = {"cases": 0, "ok": 0, "error": 0, "other": 0, "crashes": {}, "workers": 0}
    k = 0
    while time.time() < end - 5:
        before = set(out.glob(f"stats-{target}-*.json"))
        p = subprocess.Popen([sys.executable, __file__, "--worker", target, "--seed", str(seed + 1000 * k),
                              "--until", str(end), "--out", str(out)], cwd=str(ROOT))
        try:
            rc = p.wait(timeout=max(60.0, end - time.time() + 600))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        total["workers"] += 1
        k += 1
        for f in set(out.glob(f"stats-{target}-*.json")) - before:
            s = json.loads(f.read_text())
            for key in ("cases", "ok", "error", "other"):
                total[key] += s.get(key, 0)
            for sig, n in s["crashes"].items():
                total["crashes"][sig] = total["crashes"].get(sig, 0) + n
            f.unlink()
        if rc != 0:  # the worker died: its current case is the crash
            why = f"worker exit {rc}" + (f" (signal {-rc})" if rc < 0 else "")
            sig = f"{target}|process|{why}"
            total["crashes"][sig] = total["crashes"].get(sig, 0) + 1
            total["cases"] += 1
            cur = out / f"current-{target}"
            d = out / "crashes" / f"{target}-died-{k}"
            if cur.is_dir():
                shutil.copytree(cur, d, dirs_exist_ok=True)
                (d / "error.txt").write_text(f"process\n{why}\n")
    shutil.rmtree(out / f"current-{target}", ignore_errors=True)
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10, help="total time, shared by the targets (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="Hypothesis seed (the same seed draws the same cases)")
    ap.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated: {', '.join(TARGETS)}")
    ap.add_argument("--out", default=None, help="folder for the crashes found (default: fuzz-out-DATE here)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--until", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker, a.seed, a.until, Path(a.out))
        return 0
    names = [t.strip() for t in a.targets.split(",") if t.strip()]
    bad = [t for t in names if t not in TARGETS]
    if bad or not names:
        ap.error(f"unknown target(s) {', '.join(bad) or '(none)'}; choose from {', '.join(TARGETS)}")
    if not a.minutes > 0:
        ap.error("--minutes must be positive")
    out = Path(a.out or f"fuzz-out-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    (out / "crashes").mkdir(parents=True, exist_ok=True)
    share = sum(TARGETS[t] for t in names)
    results = {}
    print(f"fuzzing {', '.join(names)} for {a.minutes:g} min (seed {a.seed}); crashes go to {out / 'crashes'}",
          flush=True)
    for t in names:
        secs = a.minutes * 60 * TARGETS[t] / share
        t0 = time.time()
        results[t] = r = run_target(t, secs, a.seed, out)
        r["seconds"] = time.time() - t0
        print(f"  {t:<10} {r['cases']:>6} cases in {r['seconds']:5.0f} s  ({r['ok']} ok, {r['error']} refused with "
              f"one error, {sum(r['crashes'].values())} crashes, {len(r['crashes'])} distinct)", flush=True)
    (out / "summary.json").write_text(json.dumps(results, indent=1))
    crashes = {sig: n for r in results.values() for sig, n in r["crashes"].items()}
    print(f"\ncases tried: {sum(r['cases'] for r in results.values())}; "
          f"crashes: {sum(crashes.values())} ({len(crashes)} distinct)")
    for sig, n in sorted(crashes.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>5}x {sig}")
    if crashes:
        print(f"inputs saved under {out / 'crashes'} (case.txt, the input file, error.txt)")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
