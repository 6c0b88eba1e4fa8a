"""A plan's provenance (issue 32, step 3): what decided a plan, what its estimates are and where it came
from is `plan.provenance` (engine/planner/plan.py's Provenance), and every label and result row made
of it is built once (engine/report/result_rows.py), read by `plan`'s summary, `bench`'s table, the
table CSV, the app's results CSV and its Latency, Properties and Cost model panels.

Before/after: tests/data/provenance_before.json holds what the code printed before Provenance existed,
for none, greedy, dp, hybrid and optimal plans decided by the roofline, the learned model (faked: a
fixed Estimates), measured close calls and every candidate measured, a plan priced elsewhere (tvm),
imported plans (the command line's and the app's), a plan file without notes (made before notes),
and a same-plan pair in `bench`'s table. It was written by this module run from a checkout of the
commit before the change:

    PYTHONDONTWRITEBYTECODE=1 QT_QPA_PLATFORM=offscreen .venv/bin/python tests/unit/test_plan_provenance.py \
        --root /tmp/sched-before --write tests/data/provenance_before.json

Nothing here reads a plan's notes by key except to make the fixed plans (fake estimates) the same way
both versions do; the scan at the end checks that engine/, gui/ and main.py read them only through
plan.py, plan_json.py and result_rows.py.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "data" / "provenance_before.json"
PROFILE = "t4"
STRATEGIES = ("none", "greedy", "dp", "hybrid", "optimal")


# ------------------------------------------------------------------------------------- fixed plans

class _Timed(dict):
    """The kernels timed while planning, by segment key: those of an odd-length key."""

    def get(self, key, default=None):
        return 4.0 + len(key) % 5 if len(key) % 2 else default


class FakeEstimates:
    """A learned model's Estimates with fixed figures (no model file, no timing): every group costs
    2 us per op plus 3 us; groups whose first op's index is even count as measured."""

    def __init__(self, cm_ids):
        self.ids = cm_ids
        self.stats = {"asked": 12, "timed": 3, "cached": 2, "measured": 5, "candidates": 40, "busy_left_out": 1}
        self.measured = _Timed()

    def _ids(self, seg):
        return [self.ids[v] if isinstance(v, int) else v for v in seg]

    def __call__(self, seg):
        return 3.0 + 2.0 * len(list(seg))

    def group_us(self, group):
        return self(group)

    def source(self, group):
        return "measured" if int(self._ids(group)[0].lstrip("n")) % 2 == 0 else "learned"

    def plan_us(self, groups):
        us = [self.group_us(g) for g in groups]
        return sum(us), us


class FakeCosts(FakeEstimates):
    """Every candidate timed (kernel_timing.measured_costs' stats), no learned model beside it."""

    def __init__(self, cm_ids):
        super().__init__(cm_ids)
        self.stats = {"candidates": 40, "unique_kernels": 20, "built": 4, "cached": 16, "busy": 2, "error": "boom"}

    def group_us(self, group):
        return None if len(group) == 1 else self(group)


@contextlib.contextmanager
def _source(graph, name, fake=None, note=""):
    """cost_source.resolve answering `name` with `fake` figures (None: the real roofline)."""
    from engine.planner import cost_source

    real = cost_source.resolve
    if fake is None:
        yield
        return
    ids = [n.id for n in graph.nodes]
    est = fake(ids)

    def resolve(g, *settings, costed=True, progress=None, cancel=None):   # (graph, hw, cost, target) or (graph, setup)
        if isinstance(est, FakeCosts):
            return cost_source.Source(name, costs=est, note=note, stats=dict(est.stats))
        return cost_source.Source(name, costs=est if costed else None, estimates=est, note=note, stats=dict(est.stats))

    cost_source.resolve = resolve
    try:
        yield
    finally:
        cost_source.resolve = real


def _fixed(p, planning_ms):
    """A plan's timings fixed (they vary from run to run): planning time, measuring seconds."""
    p.planning_ms = planning_ms
    m = (getattr(p, "notes", None) or {}).get("measure")
    if isinstance(m, dict) and "seconds" in m:
        m["seconds"] = 1.5
    o = (getattr(p, "notes", None) or {}).get("optimal")
    if isinstance(o, dict):
        o.update(seconds=0.25, candidates_s=0.125)
    return p


def graph_and_profile():
    from engine.planner import profiles
    from tests.support import synthetic

    return synthetic.branching(24), profiles.get(PROFILE)


def _call(f, *args, hw, cost="roofline"):
    """f(*args, hw, ...) in the settings it takes: a Setup (engine/planner/setup.py, issue 32 step 1) or
    the profile, cost and target one by one (before it)."""
    import inspect

    names = list(inspect.signature(f).parameters)
    if "setup" in names:
        from engine.planner.setup import Setup

        return f(*args, Setup(hw, cost=cost))
    kw = {k: v for k, v in (("cost", cost), ("target", "cpu")) if k in names}
    return f(*args, hw, **kw)


def live_plans(tmp: Path) -> dict:
    """name -> a plan made by the engine's writers (make_plan, plan_json.imported, the app's price and
    recost), its timings fixed."""
    from engine.planner import plan_json
    from engine.planner import make_plan as _make_plan
    from gui.planning import price as _price, recost

    def make_plan(g, s, hw, cost):
        return _call(_make_plan, g, s, hw=hw, cost=cost)

    def imported(plan, src, g, hw, cost):
        return _call(plan_json.imported, plan, src, g, hw=hw, cost=cost)

    def price(plan, g, hw, cost):
        return _call(_price, plan, g, hw=hw, cost=cost)

    g, hw = graph_and_profile()
    out = {}
    for k, s in enumerate(STRATEGIES):
        out[f"{s} roofline"] = _fixed(make_plan(g, s, hw, cost="roofline"), 1.25 * (k + 1))
    with _source(g, "learned", FakeEstimates, "learned model m1 (cpu)"):
        for s in ("greedy", "dp"):
            out[f"{s} learned"] = _fixed(make_plan(g, s, hw, cost="learned"), 2.5)
    with _source(g, "measured", FakeEstimates, "learned model m1 (cpu), close calls timed on cpu"):
        for s in ("dp", "hybrid", "greedy"):
            out[f"{s} measured close calls"] = _fixed(make_plan(g, s, hw, cost="measured"), 2345.0)
    with _source(g, "measured", FakeCosts, "every candidate kernel timed (no learned model)"):
        out["dp measured every candidate"] = _fixed(make_plan(g, "dp", hw, cost="measured"), 61234.5)
    path = tmp / "greedy.json"
    plan_json.save(path, out["greedy roofline"], g, hw)
    out["imported roofline"] = imported(plan_json.load(path, g), "/plans/greedy.json", g, hw, "roofline")
    with _source(g, "learned", FakeEstimates, "learned model m1 (cpu)"):
        out["imported learned"] = imported(plan_json.load(path, g), "/plans/greedy.json", g, hw, "model")
        tvm = plan_json.load(path, g)
        tvm.strategy = "tvm"
        out["tvm priced learned"] = price(tvm, g, hw, "learned")
    out["tvm priced roofline"] = price(out["tvm priced learned"], g, hw, "roofline")
    again = tmp / "imported.json"
    plan_json.save(again, out["imported learned"], g, hw)
    out["imported twice"] = imported(plan_json.load(again, g), "/plans/imported.json", g, hw, "roofline")
    custom = plan_json.load(path, g)
    _call(recost, custom, g, hw=hw)
    custom.strategy = "custom"
    out["recosted"] = custom
    return out


def plan_files(plans: dict) -> dict:
    """name -> the plan file of each plan (plan_json.to_dict, as parsed JSON: key order kept), and
    old files: one without notes, one with only its strategy's notes (before provenance was noted)."""
    from engine.planner import plan_json

    g, hw = graph_and_profile()
    out = {name: json.loads(plan_json.dumps(plan_json.to_dict(p, g, hw))) for name, p in plans.items()}
    old = dict(out["greedy roofline"])
    del old["notes"]
    out["old file without notes"] = old
    out["old file with its strategy's notes only"] = {**old, "notes": {"max_depth": 3}}
    return out


def file_bytes(d: dict) -> str:
    """A plan file's text as plan_json.save writes it."""
    from engine.planner import plan_json

    return plan_json.dumps(d, indent=1)


# ------------------------------------------------------------------------------------ what is shown

def _result(s, k, **kw):
    from engine.measure.runner import BenchResult

    med = 10.0 - k
    d = dict(model="branching24", strategy=s, target="cpu", latency_ms={"median": med, "min": med - 0.5,
                                                                        "max": med + 0.5},
             samples=[med - 0.2, med, med + 0.2] * 4, planning_ms=3.0 + k, build_s=1.0 + k, kernels=5 + k,
             correct=True, repeat=12, run_id="r1", when="2026-12-01 10:00")
    d.update(kw)
    return BenchResult(**d)


def _app():
    from PySide6 import QtWidgets

    return QtWidgets.QApplication.instance() or QtWidgets.QApplication([])


def shown(files: dict) -> dict:
    """What the command line and the app print for the plans of `files` (loaded as plan files are)."""
    from engine.measure import benchmark
    from engine.planner import plan_json
    from engine.report import text as report
    from gui import document as D
    from gui.panels.cost_model import benchmark_fidelity
    from gui.panels.latency import LatencyPanel
    from gui.panels.properties import PropertiesPanel

    _app()
    g, hw = graph_and_profile()
    plans = {name: plan_json.from_dict(json.loads(json.dumps(d)), g, f"/plans/{name}.json") for name, d in files.items()}
    out: dict = {"plans": {}}
    props = PropertiesPanel()
    for name, p in plans.items():
        labels = {"summary": report.plan_summary(g, p, hw),
                  "decided_by": D.decided_by(p), "estimate_source": D.estimate_source(p),
                  "estimate_label": D.estimate_label(p), "cost_tag": D.cost_tag(p),
                  "strategy_label": D.strategy_label(p.strategy, p), "as_dp": D.strategy_label("dp", p),
                  "group_estimate": [D.group_estimate(p, gi) for gi in range(len(p.groups) + 1)]}
        rows = []
        for gi in range(min(3, len(p.groups))):
            props.show_node(g, p.groups[gi][0], p, None)
            rows.append([[props.topLevelItem(i).text(0), props.topLevelItem(i).text(1),
                          props.topLevelItem(i).toolTip(1)] for i in range(props.topLevelItemCount())])
        labels["properties"] = rows
        out["plans"][name] = labels

    # bench's table, its JSON's costs, the table CSV: one bench of a set of plans, with a same plan and an import
    def bench(names: dict, same: dict) -> dict:
        ps = {s: plans[n] for s, n in names.items()}
        res = {s: _result(s, k) for k, s in enumerate(ps) if s not in same}
        res["dp"].schedule, res["dp"].tuned_kernels = "mixed", 2
        costs = {s: ("imported" if s == "mine" else files[n].get("notes", {}).get("cost", "model"))
                 for s, n in names.items()}
        return {"model": g.name, "ops": len(g), "results": res, "ort": None, "graph": g, "plans": ps,
                "costs": costs, "target": "cpu", "device": None, "round_robin": list(res), "sampled": list(res),
                "hardware": {"name": hw.name, "title": hw.title}, "same_plan": same}

    benches = {
        "roofline": bench({"none": "none roofline", "greedy": "greedy roofline", "dp": "dp roofline",
                           "hybrid": "hybrid roofline"}, {}),
        "measured": bench({"none": "none roofline", "greedy": "greedy measured close calls",
                           "dp": "dp measured close calls", "hybrid": "hybrid measured close calls",
                           "mine": "imported learned"}, {}),
        "same plan": bench({"none": "none roofline", "greedy": "greedy learned", "dp": "dp learned",
                            "hybrid": "greedy learned", "mine": "imported roofline"}, {"hybrid": "greedy"}),
    }
    out["bench"] = {}
    for k, b in benches.items():
        j = benchmark.bench_json(b)
        here = report.measured_on("cpu", None)   # this machine's words: not part of what is compared
        out["bench"][k] = {"table": report.bench_table(b).replace(here, "MACHINE"),
                           "json_costs": [(x["strategy"], x["cost"]) for x in j["strategies"]],
                           "table_csv": report.rows_csv([benchmark.table_row(b)]).replace(here, "MACHINE")}

    # the app: its results CSV, the Latency panel's rows, the Cost model panel's benchmark fidelity
    out["app"] = {}
    cases = {"roofline": {s: f"{s} roofline" for s in STRATEGIES},
             "measured": {"none": "none roofline", "greedy": "greedy learned", "dp": "dp measured close calls",
                          "hybrid": "hybrid measured close calls", "optimal": "optimal roofline",
                          "tvm": "tvm priced learned", "custom": "imported learned"},
             "every candidate": {"dp": "dp measured every candidate", "greedy": "greedy roofline",
                                 "custom": "recosted", "tvm": "tvm priced roofline"},
             "same plan": {"greedy": "greedy learned", "dp": "dp learned", "hybrid": "greedy learned",
                           "custom": "imported twice"}}
    for k, names in cases.items():
        doc = D.Document("generated:branching24", {}, g, hw)
        doc.plans = {s: plans[n] for s, n in names.items()}
        for i, s in enumerate(names):
            if s in ("hybrid", "tvm") and k != "measured":
                continue   # not yet measured
            r = _result(s, i, kernel_us=[1.0 + gi for gi in range(len(doc.plans[s].groups))])
            if s == "dp":
                r.schedule, r.tuned_kernels, r.schedule_report = "tuned", 4, {"kernels_total": 6}
            doc.results[("cpu", s)] = r
            doc.measured_plans[("cpu", s)] = doc.plans[s]
            if s == "dp":
                doc.rules_results[("cpu", s)] = (doc.plans[s], _result(s, i + 1))
        csv = Path(os.environ.get("TMPDIR", "/tmp")) / f"provenance-{os.getpid()}.csv"
        D.write_results_csv(doc, csv)
        text = csv.read_text()
        csv.unlink()
        panel = LatencyPanel()
        panel.update_data(doc.name, doc.strategies(), doc.plans, doc.results_for("cpu"), "cpu", hw.title,
                          rules=doc.rules_for("cpu"), input_shapes=g.input_shapes, same=doc.same_plans())
        rows = [{c: v for c, v in r.items() if c in ("strategy", "estimate", "title", "cost", "planning_s",
                                                       "imported", "same_as", "schedule", "schedule_kind")}
                for r in panel.rows]
        fid = {s: {c: v for c, v in (benchmark_fidelity(doc, "cpu", s) or {}).items()
                   if c in ("cost_model", "cost_model_title", "same_as")} for s in names}
        out["app"][k] = {"results_csv": text, "latency_rows": rows, "latency_note": panel.note.text(),
                         "fidelity": fid}
        panel.deleteLater()
    return json.loads(json.dumps(out))   # tuples as lists, as the file holds them


# ------------------------------------------------------------------------------------------- tests

def _expected() -> dict:
    return json.loads(EXPECTED.read_text())


def _planned_part(d: dict) -> dict:
    """A plan file without what other stages write into it: the profile (devices: its kinds' settings),
    the groups' kinds and the explanations (planner/kinds.py and explain.py, which new fusion kinds change)."""
    out = {k: v for k, v in d.items() if k not in ("hardware", "explanations")}
    out["groups"] = [{k: v for k, v in g.items() if k not in ("kind", "features")} for g in d["groups"]]
    return out


def test_plan_files_are_the_bytes_they_were(tmp_path):
    """make_plan, plan_json.imported and the app's price and recost write the plan files they wrote
    before Provenance: the notes byte for byte (the same keys, values and order), and the rest of the
    file but for what other stages write into it (_planned_part)."""
    files = plan_files(live_plans(tmp_path))
    want = _expected()["files"]
    assert sorted(files) == sorted(want)
    for name in want:
        assert file_bytes(files[name].get("notes")) == file_bytes(want[name].get("notes")), name
        assert file_bytes(_planned_part(files[name])) == file_bytes(_planned_part(want[name])), name


def test_labels_and_rows_are_what_they_were():
    """Every label and row made of a plan's provenance, loaded from the files written before, is what
    the code printed before: summaries, names, estimate labels, Properties rows, bench's table and JSON
    costs, the table CSV, the app's results CSV, Latency rows and note, the Cost model's titles."""
    exp = _expected()
    got = shown(exp["files"])
    for name, want in exp["shown"]["plans"].items():
        for key, v in want.items():
            assert got["plans"][name][key] == v, (name, key)
    for k, want in exp["shown"]["bench"].items():
        assert got["bench"][k] == want, k
    for k, want in exp["shown"]["app"].items():
        assert got["app"][k] == want, k
    assert got == exp["shown"]


def test_old_plan_files_load_and_round_trip():
    """A plan file is read back into a Provenance, its notes written again to the same bytes; one
    from before notes existed is the roofline's, decided by nothing recorded, not imported."""
    from engine.planner import plan_json
    from engine.planner.plan import Provenance

    g, hw = graph_and_profile()
    files = _expected()["files"]
    for name, d in files.items():
        p = plan_json.from_dict(json.loads(json.dumps(d)), g, name)
        assert isinstance(p.provenance, Provenance)
        if "notes" in d:   # the notes written again as read (a plan file keeps no group kinds: from_dict)
            assert plan_json.dumps(plan_json.to_dict(p, g, hw)["notes"], indent=1) == file_bytes(d["notes"]), name
    old = plan_json.from_dict(files["old file without notes"], g, "old")
    pv = old.provenance
    assert pv == Provenance() and pv.estimate_kind == "roofline" and not pv.imported and pv.cost is None
    assert "notes" in plan_json.to_dict(old, g, hw) and plan_json.to_dict(old, g, hw)["notes"] == {}


def test_provenance_is_typed_and_set_where_plans_are_made(tmp_path):
    from dataclasses import FrozenInstanceError

    import pytest

    from engine.planner.plan import Plan, Provenance

    plans = live_plans(tmp_path)
    dp = plans["dp measured close calls"].provenance
    assert dp.cost == "measured" and dp.estimate == "learned" and dp.measure["target"] == "cpu"
    assert isinstance(dp.group_source, tuple) and isinstance(dp.measured_group_us, tuple)
    assert len(dp.measured_group_us) == len(plans["dp measured close calls"].groups)
    with pytest.raises(FrozenInstanceError):
        dp.cost = "roofline"
    imp = plans["imported roofline"].provenance
    assert imp.imported and imp.imported_from == "/plans/greedy.json" and imp.imported_strategy == "greedy"
    assert imp.cost == "imported" and imp.estimate_kind == "roofline"
    # set_provenance: None removes a field, a field set again keeps its place, an unknown name is refused
    p = Plan("greedy", [["a"]], notes={"max_depth": 3})
    p.set_provenance(cost="roofline", cost_note="x")
    p.set_provenance(estimate="roofline")
    p.set_provenance(cost="learned", cost_note=None)
    assert list(p.notes) == ["max_depth", "cost", "estimate"] and p.provenance.cost == "learned"
    with pytest.raises(TypeError):
        p.set_provenance(costs="roofline")
    q = Plan("dp", [["a"]])
    shared = q.notes
    q.set_provenance(cost="roofline")   # a new dict: a shallow copy of the plan keeps its own
    assert shared == {} and q.provenance == Provenance(cost="roofline")


def test_labels_come_from_one_module():
    """The app's label functions are the engine's (gui/document.py re-exports them), and the command
    line's "dp (measured)" is the same function's."""
    from engine.report import result_rows
    from gui import document

    for name in ("decided_by", "estimate_source", "estimate_label", "group_estimate", "strategy_label",
                 "cost_tag", "schedule_of", "schedule_label", "ESTIMATE_TITLES"):
        assert getattr(document, name) is getattr(result_rows, name), name
    assert result_rows.tagged("dp", "measured") == "dp (measured)" and result_rows.tagged("greedy", "learned") == "greedy"
    assert result_rows.tagged("dp", "") == "dp"


# a plan's notes read by key: `notes[...]`, `notes.get(`, `(plan.notes or {}).get(` and the like
_READ = re.compile(r"""notes(?:\s+or\s+\{\}\))?\s*(?:\[\s*["']|\.get\(|\.pop\(|\.update\(|\.setdefault\()""")
_ALLOWED = {"engine/planner/plan.py", "engine/planner/plan_json.py", "engine/report/result_rows.py"}


def test_nothing_else_reads_notes_by_key():
    hits = []
    files = [ROOT / "main.py", *sorted((ROOT / "cli").rglob("*.py")), *sorted((ROOT / "engine").rglob("*.py")),
             *sorted((ROOT / "gui").rglob("*.py"))]
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        if rel in _ALLOWED:
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if _READ.search(line.split("#")[0]):
                hits.append(f"{rel}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_the_scan_finds_a_read_by_key():
    for line in ('est = p.notes.get("estimate", "roofline")', "x = (plan.notes or {}).get('cost')",
                 'plan.notes["cost"] = "imported"', 'notes.pop("group_source", None)'):
        assert _READ.search(line), line
    for line in ("notes.append(line)", "lines = [table(rows, head), *check.notes(res)]", "p.provenance.cost"):
        assert not _READ.search(line), line


def main(argv: list[str]) -> int:
    """--root DIR --write FILE: the expected values from the checkout at DIR (see the module's docstring)."""
    import tempfile

    root, dst = argv[argv.index("--root") + 1], argv[argv.index("--write") + 1]
    sys.path.insert(0, str(Path(root).resolve()))
    os.chdir(root)
    import engine

    assert Path(engine.__file__).resolve().is_relative_to(Path(root).resolve()), engine.__file__
    with tempfile.TemporaryDirectory() as tmp:
        files = plan_files(live_plans(Path(tmp)))
    # compact, key order kept (a plan file's order is what is compared)
    Path(dst).write_text(json.dumps({"files": files, "shown": shown(files)}, separators=(",", ":")) + "\n")
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
