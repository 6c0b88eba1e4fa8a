#!/usr/bin/env python3
"""FuseLens over a folder of real ONNX models: does each open, plan, build and match ONNX Runtime?

    python scripts/coverage.py fetch [--cache DIR]
        download every package of scripts/corpus.json (`pip download --no-deps NAME==VERSION`), extract each
        entry's `member` to CACHE/models/NAME.onnx and check its sha256
    python scripts/coverage.py run corpus|FOLDER [--cache DIR] [--out table.md] [--build] [--jobs 1]
        per model, each command in its own process with a timeout (its process group is killed past it):
        `main.py inspect`, then `main.py plan --strategy tvm|greedy|dp`, and with --build
        `main.py bench --strategies none,greedy,dp --cost model --repeat 3 --json` (each build's outputs are
        checked against ONNX Runtime);
        then a Markdown table and the line "opens X of N, builds and matches ONNX Runtime Y of N"

`corpus` runs the corpus's entries with their `args`; a FOLDER runs every *.onnx under it (a file named like a
corpus entry, NAME.onnx, gets that entry's args). The cache is $FUSELENS_CORPUS_DIR, else ~/.cache/fuselens-corpus;
models never go into the repository. Each model's logs and plan files are left in CACHE/runs/NAME/.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().with_name("corpus.json")
STRATEGIES = ("tvm", "greedy", "dp")


def default_cache() -> Path:
    return Path(os.environ.get("FUSELENS_CORPUS_DIR") or Path.home() / ".cache" / "fuselens-corpus")


def load_corpus() -> list[dict]:
    return json.loads(CORPUS.read_text())["models"]


def sha256(path: Path) -> str:
    sys.path.insert(0, str(ROOT))
    from engine.util.cache_dir import file_sha256

    return file_sha256(path)


# ---- fetch ----------------------------------------------------------------------------------------------

def _norm(s: str) -> str:
    return re.sub(r"[-_.]+", "_", s.lower())


def _archives(wheels: Path, package: str, version: str) -> list[Path]:
    prefix = f"{_norm(package)}_{_norm(version)}_"
    return sorted(p for p in wheels.iterdir() if _norm(p.name).startswith(prefix)) if wheels.is_dir() else []


def _read_member(archive: Path, member: str) -> bytes | None:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            return z.read(member) if member in z.namelist() else None
    if archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as t:
            try:
                f = t.extractfile(member)
            except KeyError:
                return None
            return f.read() if f else None
    return None


def _download(wheels: Path, package: str, version: str) -> str | None:
    """None when done, else the reason (pip's last line)."""
    wheels.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                            f"{package}=={version}", "-d", str(wheels)], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return "pip download timed out"
    if r.returncode:
        lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
        return lines[-1] if lines else f"pip exited {r.returncode}"
    return None


def cmd_fetch(a) -> int:
    cache = Path(a.cache)
    wheels, models = cache / "wheels", cache / "models"
    models.mkdir(parents=True, exist_ok=True)
    failed = 0
    for e in load_corpus():
        dest = models / f"{e['name']}.onnx"
        if dest.is_file() and sha256(dest) == e["sha256"]:
            print(f"ok      {e['name']} (cached)")
            continue
        if not _archives(wheels, e["package"], e["version"]):
            why = _download(wheels, e["package"], e["version"])
            if why:
                print(f"FAILED  {e['name']}: {e['package']}=={e['version']}: {why}")
                failed += 1
                continue
        data = next((d for d in (_read_member(p, e["member"]) for p in _archives(wheels, e["package"], e["version"]))
                     if d is not None), None)
        if data is None:
            print(f"FAILED  {e['name']}: {e['member']} is not in {e['package']}=={e['version']}")
            failed += 1
            continue
        got = hashlib.sha256(data).hexdigest()
        if got != e["sha256"]:
            print(f"FAILED  {e['name']}: sha256 {got[:16]}... is not the corpus's {e['sha256'][:16]}...")
            failed += 1
            continue
        tmp = dest.with_suffix(".part")
        tmp.write_bytes(data)
        os.replace(tmp, dest)
        print(f"ok      {e['name']} ({len(data) / 1e6:.1f} MB from {e['package']}=={e['version']})")
    print(f"{len(load_corpus()) - failed} of {len(load_corpus())} models in {models}")
    return 1 if failed else 0


# ---- run ------------------------------------------------------------------------------------------------

def run_cmd(argv: list[str], timeout: float, log: Path) -> tuple[int | None, str]:
    """(exit code or None on a timeout, the combined output); the output is also written to `log`."""
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)
    try:
        out, rc = p.communicate(timeout=timeout)[0], p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, rc = p.communicate()[0] + f"\ntimeout after {timeout:.0f} s\n", None
    log.write_text(f"$ {' '.join(argv)}\n{out}")
    return rc, out


def error_line(rc: int | None, out: str, timeout: float) -> str:
    if rc is None:
        return f"timeout after {timeout:.0f} s"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith(("error:", "internal error:"))]
    return (errs or lines or [f"exit code {rc}"])[-1]


def partition(plan: dict) -> set[frozenset]:
    return {frozenset(g["nodes"]) for g in plan["groups"]}


def check_model(m: dict, a, work: Path) -> dict:
    """One model through inspect, the three plans and (with --build) bench; a row for the table."""
    wd = work / m["name"]
    wd.mkdir(parents=True, exist_ok=True)
    main = [sys.executable, str(ROOT / "main.py")]
    row = {"name": m["name"], "family": m.get("family", ""), "opens": False, "error": "", "same": "",
           "correct": "", "kernels": {}}
    rc, out = run_cmd(main + ["inspect", m["path"], *m["args"]], a.timeout, wd / "inspect.log")
    if rc != 0:
        row["error"] = error_line(rc, out, a.timeout)
        return row
    row["opens"] = True
    plans = {}
    for s in STRATEGIES:
        pf = wd / f"plan_{s}.json"
        pf.unlink(missing_ok=True)
        rc, out = run_cmd(main + ["plan", m["path"], "--strategy", s, "--out", str(pf), *m["args"]], a.timeout,
                          wd / f"plan_{s}.log")
        if rc == 0 and pf.is_file():
            plans[s] = json.loads(pf.read_text())
            row["kernels"][s] = plans[s].get("kernels", len(plans[s]["groups"]))
        elif not row["error"]:
            row["error"] = f"plan {s}: {error_line(rc, out, a.timeout)}"
    if "tvm" in plans and "greedy" in plans:
        t, g = partition(plans["tvm"]), partition(plans["greedy"])
        row["same"] = "yes" if t == g else f"no ({len(t - g)} of {len(t)} tvm groups differ)"
    if a.build:
        bf = wd / "bench.json"
        bf.unlink(missing_ok=True)
        rc, out = run_cmd(main + ["bench", m["path"], "--strategies", "none,greedy,dp", "--cost", "model",
                                  "--repeat", "3", "--json", str(bf), *m["args"]], a.timeout, wd / "bench.log")
        if bf.is_file():
            res = {r["strategy"]: r for r in json.loads(bf.read_text())["strategies"]}
            for s, r in res.items():
                row["kernels"].setdefault(s, r.get("kernels"))
            row["correct"] = correctness(res)
        else:
            row["correct"] = "no"
            if not row["error"]:
                row["error"] = f"bench: {error_line(rc, out, a.timeout)}"
    return row


def correctness(res: dict) -> str:
    """The correct-vs-ORT cell from bench's JSON strategies: "yes" only where every build's check is a
    plain yes; a weak or ill-conditioned check is named ("yes, weak check"); else "no (...)". A plan
    that is another's (bench's `same_plan_as`: built and checked once, under its owner) takes its check."""
    res = {s: res.get(r["same_plan_as"], r) if r.get("same_plan_as") else r for s, r in res.items()}
    bad = [s for s, r in res.items() if r.get("correct") is not True]
    if not res or bad:
        return "no (" + ", ".join(f"{s}: {res[s].get('error') or res[s].get('check') or 'incorrect'}" for s in bad) + ")"
    caveats = sorted({(r.get("check") or "").replace("yes (", "").rstrip(")") for r in res.values()} - {"yes"})
    return "yes" + "".join(f", {c}" for c in caveats)


def _models(target: str, cache: Path) -> list[dict]:
    corpus = {e["name"]: e for e in load_corpus()}
    if target == "corpus" or target.endswith(".json"):
        entries = list(corpus.values()) if target == "corpus" else json.loads(Path(target).read_text())["models"]
        return [{**e, "path": str(cache / "models" / f"{e['name']}.onnx")} for e in entries]
    folder = Path(target)
    return [{"name": p.stem, "family": corpus.get(p.stem, {}).get("family", ""),
             "args": corpus.get(p.stem, {}).get("args", []), "path": str(p)}
            for p in sorted(folder.rglob("*.onnx"))]


def _cell(s) -> str:
    s = str(s if s is not None else "")
    s = s if len(s) <= 400 else s[:397] + "..."
    return s.replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict], build: bool) -> str:
    head = "| model | family | opens | failing line | greedy == tvm | correct vs ORT | kernels |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        k = ", ".join(f"{s} {n}" for s, n in r["kernels"].items())
        lines.append("| " + " | ".join(_cell(x) for x in (
            r["name"], r["family"], "yes" if r["opens"] else "no", r["error"], r["same"],
            r["correct"] if build else "(no --build)", k)) + " |")
    n = len(rows)
    opens = sum(r["opens"] for r in rows)
    ok = [r["correct"] for r in rows if r["correct"].startswith("yes")]
    caveat = ", ".join(f"{sum(c in x for x in ok)} with a {c}" for c in ("weak check", "ill-conditioned")
                       if any(c in x for x in ok))
    lines += ["", f"opens {opens} of {n}, builds and matches ONNX Runtime "
              + (f"{len(ok)} of {n}" + (f" ({caveat})" if caveat else "") if build else f"- of {n} (run with --build)")]
    return "\n".join(lines) + "\n"


def cmd_run(a) -> int:
    cache = Path(a.cache)
    models = _models(a.target, cache)
    if a.target == "corpus" or a.target.endswith(".json"):
        missing = [m["name"] for m in models if not Path(m["path"]).is_file()]
        if len(missing) == len(models):
            print(f"error: no corpus models in {cache / 'models'}: run `python scripts/coverage.py fetch"
                  f"{'' if a.cache == str(default_cache()) else ' --cache ' + a.cache}` first", file=sys.stderr)
            return 2
        if missing:
            print(f"note: {len(missing)} corpus models not fetched, skipped: {', '.join(missing)}", file=sys.stderr)
        models = [m for m in models if m["name"] not in missing]
    elif not models:
        print(f"error: no *.onnx under {a.target}", file=sys.stderr)
        return 2
    if a.only:
        models = [m for m in models if m["name"] in a.only.split(",")]
    work = Path(a.work) if a.work else cache / "runs"
    done = 0

    def one(m):
        nonlocal done
        r = check_model(m, a, work)
        done += 1
        print(f"[{done}/{len(models)}] {m['name']}: {'opens' if r['opens'] else 'fails'}"
              f"{' - ' + r['error'] if r['error'] else ''}", file=sys.stderr, flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        rows = list(pool.map(one, models))
    text = table(rows, a.build)
    if a.out:
        Path(a.out).write_text(text)
        print(f"wrote {a.out}")
    print(text.splitlines()[-1] if a.out else text, end="\n" if a.out else "")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="download the corpus into the cache and check it")
    r = sub.add_parser("run", help="run FuseLens over `corpus` or a folder of *.onnx")
    for p in (f, r):
        p.add_argument("--cache", default=str(default_cache()),
                       help="cache folder (default $FUSELENS_CORPUS_DIR or ~/.cache/fuselens-corpus)")
    r.add_argument("target", help="`corpus` (scripts/corpus.json), another corpus .json, or a folder of *.onnx")
    r.add_argument("--out", help="write the Markdown table here (default: print it)")
    r.add_argument("--build", action="store_true", help="also bench none,greedy,dp (builds; checks each against ORT)")
    r.add_argument("--jobs", type=int, default=1, help="models at once (default 1)")
    r.add_argument("--timeout", type=float, default=900, help="seconds per command (default 900)")
    r.add_argument("--only", help="comma-separated model names")
    r.add_argument("--work", help="logs and plan files (default CACHE/runs)")
    a = ap.parse_args(argv)
    return cmd_fetch(a) if a.cmd == "fetch" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
