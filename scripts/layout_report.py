"""What the blocked channel layout pass (engine/model/blocked_layout.py) leaves NCHW, per model and block.

    .venv/bin/python scripts/layout_report.py                       # every zoo model at 224, every /work/models model
    .venv/bin/python scripts/layout_report.py --blocks 16 --models zoo:efficientnet_b0 --detail

For each model (zoo models at 224, the /work/models files at the shapes of their README) and each
block (16 and 8): the graph's ops, its layout transforms (how many, and the bytes they write), the
convolutions and how many stayed NCHW (with the pass's reason for each), and the kernels of the
greedy plan (FuseOps' rules) on the NCHW graph and on the blocked one. `--detail` also lists, per
model and block, the ops each transform out of the block was made for (the ops with no blocked form
that the real models have) and the convs left NCHW with their shapes.

Graphs are imported afresh (no cache read or written), so the figures are the pass's as it is now.
No timing is taken: every figure is a count, the same on a busy machine as on a quiet one.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ZOO = ["zoo:mobilenetv2", "zoo:resnet50", "zoo:efficientnet_b0", "zoo:vgg16", "zoo:yolov4_tiny"]
MODELS_DIR = Path("/work/models")
# input shapes from /work/models/README.md
SHAPES = {"ppocrv4_det.onnx": {"x": [1, 3, 640, 640]},
          "ppocrv4_rec.onnx": {"x": [1, 3, 48, 320]},
          "ppocrv6_rec_small.onnx": {"x": [1, 3, 48, 320]},
          "picodet_layout_cdla.onnx": {"image": [1, 3, 800, 608]},
          "pplcnet_orientation.onnx": {"x": [1, 3, 224, 224]},
          "ddddocr_yolox_det.onnx": {"images": [1, 3, 416, 416]}}


def default_models() -> list[tuple[str, dict | None]]:
    out = [(m, None) for m in ZOO]
    for f in sorted(SHAPES):
        if (MODELS_DIR / f).exists():
            out.append((str(MODELS_DIR / f), SHAPES[f]))
    return out


def load_with_report(spec, shapes, block):
    """(graph, the pass's report) for `spec` in NCHW{block}c (None: NCHW, no report), imported afresh."""
    from engine.model import blocked_layout, loader

    report: dict = {}
    orig = blocked_layout.apply

    def apply(mod, blk, provenance=None):  # the pass as relax_import calls it, with a report
        return orig(mod, blk, provenance, report=report)

    blocked_layout.apply = apply
    try:
        g = loader.load(spec, shapes, use_cache=False, block=block)
    finally:
        blocked_layout.apply = orig
    return g, (report if block is not None else None)


def greedy_kernels(g) -> int:
    from engine.devices import hardware
    from engine.planner import Setup, make_plan

    return make_plan(g, "greedy", Setup(hardware.get("host"))).kernel_count


def row(spec, shapes, block, nchw_kernels):
    from engine.model import blocked_layout

    g, rep = load_with_report(spec, shapes, block)
    transforms = [n for n in g.nodes if n.op.startswith("layout_transform")]
    convs = [n for n in g.nodes if n.op.startswith("conv2d")]
    blocked = [n for n in convs if n.op.startswith(blocked_layout.DENSE_NAME)]
    reasons = Counter(c["reason"] for c in rep["convs"])
    n_t = sum(n.op.startswith("conv2d_transpose") for n in convs)  # the pass has no blocked form of these
    if n_t:
        reasons["conv2d_transpose: no blocked form"] = n_t
    return {"model": Path(spec).stem if spec.startswith("/") else spec, "block": block, "ops": len(g.nodes),
            "transforms": len(transforms), "transform_mb": sum(n.bytes_written for n in transforms) / 1e6,
            "convs": len(convs), "nchw_convs": len(convs) - len(blocked), "reasons": dict(reasons),
            "kernels_nchw": nchw_kernels, "kernels_blocked": greedy_kernels(g), "report": rep}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", help="specs (zoo:x, a path); default: the zoo at 224 and /work/models")
    ap.add_argument("--blocks", nargs="*", type=int, default=[16, 8])
    ap.add_argument("--detail", action="store_true", help="the ops each transform was made for, the NCHW convs")
    args = ap.parse_args(argv)
    os.environ.setdefault("TVM_NUM_THREADS", "2")
    models = ([(m, SHAPES.get(Path(m).name)) for m in args.models] if args.models else default_models())
    rows = []
    for spec, shapes in models:
        g, _ = load_with_report(spec, shapes, None)
        k_nchw = greedy_kernels(g)
        for b in args.blocks:
            r = row(spec, shapes, b, k_nchw)
            rows.append(r)
            print(f"  {r['model']} x{b}: done", file=sys.stderr, flush=True)
    head = (f"{'model':24} {'blk':>3} {'ops':>5} {'LT':>4} {'LT MB':>7} {'convs':>5} {'NCHW':>4} "
            f"{'greedy NCHW':>11} {'blocked':>7} {'diff':>5}  NCHW convs by reason")
    print(head)
    print("-" * len(head))
    for r in rows:
        why = ", ".join(f"{k}: {v}" for k, v in sorted(r["reasons"].items())) or "-"
        print(f"{r['model']:24} {r['block']:>3} {r['ops']:>5} {r['transforms']:>4} {r['transform_mb']:>7.2f} "
              f"{r['convs']:>5} {r['nchw_convs']:>4} {r['kernels_nchw']:>11} {r['kernels_blocked']:>7} "
              f"{r['kernels_blocked'] - r['kernels_nchw']:>+5}  {why}")
    if args.detail:
        for r in rows:
            rep = r["report"]
            print(f"\n{r['model']} x{r['block']}:")
            exits = Counter(e["op"] for e in rep["exits"])
            entries = Counter(e["op"] for e in rep["entries"])
            print("  out of the block for:", ", ".join(f"{k} x{v}" for k, v in exits.most_common()) or "-")
            print("  into the block for:  ", ", ".join(f"{k} x{v}" for k, v in entries.most_common()) or "-")
            for c in rep["convs"]:
                print(f"  NCHW conv {c['input']} -> {c['shape']} (groups {c['groups']}): {c['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
