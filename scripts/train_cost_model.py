"""Train the shipped learned cost model on this machine's measured kernels, and print how it
predicts models it has not seen (leave one model family out).

    python scripts/train_cost_model.py zoo:mobilenetv2 zoo:mobilenetv2@64 zoo:efficientnet_b0 ... \
        [--out assets/costmodel/KIND.json] [--extra path.onnx=NAME=1,3,H,W ...]

The kernels must be in the measure cache first (`python main.py calibrate MODEL ...`, or
measure.measured_costs(..., max_kernels=None)). Only figures taken while the machine was quiet are
used. For each family held out: the learned model trained on the others, the roofline as it is,
the roofline calibrated on the others (calibrate.fit_params), and ridge regression on the same
features; the figures are Spearman and p10/p50/p90 of measured / estimated on the held-out
family's kernels. --extra models (ONNX files nobody here wrote) are only ever held out.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import calibrate, features, learned
    from engine.planner.fidelity import family
    from engine.util.cache_dir import write_json

    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--extra", nargs="*", default=[], help="SPEC[=INPUT=1,3,H,W] held out only")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args()

    hw = hardware.get("host")
    per: dict[str, learned.Samples] = {}

    def load(spec):
        path, _, shape = spec.partition("=")
        shapes = None
        if shape:
            name, _, dims = shape.partition("=")
            shapes = {name: [int(x) for x in dims.split(",")]}
        return loader.load(path, shapes)

    for spec in a.models:
        g = load(spec)
        per[g.name] = learned.samples_from_cache(g, hw)
        print(f"{g.name}: {len(per[g.name])} quiet kernels", flush=True)
    extra = {}
    for spec in a.extra:
        g = load(spec)
        extra[g.name] = learned.samples_from_cache(g, hw)
        print(f"{g.name} (held out only): {len(extra[g.name])} quiet kernels", flush=True)

    all_s = learned.Samples()
    for s in per.values():
        all_s = all_s.merged(s)
    fams = sorted({family(m) for m in per})
    print(f"\n{len(all_s)} distinct kernels from {len(per)} models, {len(fams)} families\n")

    def figures(est, meas):
        f = calibrate.fidelity(est, meas)
        return f"Spearman {f['spearman']:.3f}  p10 {f['p10']:.2f} p50 {f['p50']:.2f} p90 {f['p90']:.2f}", f

    def ridge(Xtr, ytr, Xte, lam=1.0):
        mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-9
        A = (Xtr - mu) / sd
        w = np.linalg.solve(A.T @ A + lam * np.eye(A.shape[1]), A.T @ (ytr - ytr.mean()))
        return ((Xte - mu) / sd) @ w + ytr.mean()

    lomo_rms, report = [], {}
    held = [(f, {m for m in per if family(m) == f}) for f in fams] + [(n, {n}) for n in extra]
    for fam, names in held:
        test = learned.Samples()
        for n in names:
            test = test.merged(per[n] if n in per else extra[n])
        keys = set(test.keys)
        train = all_s.subset(lambda k: family(all_s.models[k]) != fam and all_s.keys[k] not in keys)
        if len(test) < 3 or len(train) < 10:
            continue
        m = learned.train(train, residual=0.0)
        Xte = np.asarray(test.X)
        meas = np.exp(Xte[:, 0] + np.asarray(test.y))
        roof = np.exp(Xte[:, 0])
        pred, _ = m.predict(Xte)
        lomo_rms.append(float(np.sqrt(np.mean((np.log(pred) - np.log(meas)) ** 2))))
        Xtr = np.asarray(train.X)
        # the roofline calibrated on the training families: launch + max(c F, b B) in the roofline's terms
        c_us, m_us = np.exp(Xtr[:, 1]), np.exp(Xtr[:, 2])
        t_tr = np.exp(Xtr[:, 0] + np.asarray(train.y))
        L, c, b = calibrate.fit_params(c_us, m_us, t_tr, 1.0, 1.0, 1.0)
        cal = L + np.maximum(c * np.exp(Xte[:, 1]), b * np.exp(Xte[:, 2]))
        rid = np.exp(Xte[:, 0] + ridge(Xtr, np.asarray(train.y), Xte))
        lines = {}
        for name, est in (("learned", pred), ("roofline", roof), ("calibrated roofline", cal), ("ridge", rid)):
            txt, f = figures(est, meas)
            lines[name] = f
            print(f"{fam:<28} {len(test):>5} kernels  {name:<20} {txt}")
        report[fam] = lines
        print()
    residual = float(np.sqrt(np.mean(np.square(lomo_rms)))) if lomo_rms else 0.5
    print(f"held-out RMS log error of the learned model: {residual:.3f}")
    if a.no_save:
        return 0
    kind = learned.cpu_kind()
    model = learned.train(all_s, residual=residual,
                          meta={"kind": kind, "source": "shipped", "n": len(all_s), "models": sorted(per),
                                "machine": hardware.cpu_facts()["model"], "lomo": report})
    out = Path(a.out) if a.out else learned.shipped_file(kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    from engine.planner.kernel_timing import schedule_version

    write_json(out, {"format": learned.FORMAT, "feature_version": features.FEATURE_VERSION, "kind": kind,
                     "schedule_version": schedule_version(), "model": model.to_json(), "samples": all_s.to_json()})
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {len(all_s)} kernels, residual {residual:.3f}")
    json.dumps(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
