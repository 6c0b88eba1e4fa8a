"""How busy the machine was while timing (engine/util/machine_load.py), recorded with every result and said
wherever a figure or verdict from a busy run is shown: the bench table, its verdicts, --json, table rows,
the measured recommendation. (The app's panels: tests/gui/test_gui_labels.py.)"""

import json
import statistics
import time
import pytest
from engine.devices import targets
from engine.planner.setup import Setup
from engine.devices import hardware

from engine.measure import benchmark, runner
from engine.measure.runner import BenchResult

from engine.planner import make_plan
from engine.report import text as report
from engine.report.recommend import recommend
from engine.util import machine_load
from tests.support.synthetic import chain
from tests.support.machine_load import LINUX, window  # noqa: F401


BIG = chain(120)


def res(strategy, samples, busy_share=None, when="2026-01-01 00:00:00", **kw):
    lat = {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}
    return BenchResult(model="m", strategy=strategy, target="cpu", latency_ms=lat, samples=list(samples),
                       build_s=10.0, planning_ms=10.0, correct=True, repeat=len(samples), when=when,
                       busy_share=busy_share, **kw)


def run(busy_share, dp_busy=None):
    """The issue's run: greedy far slower than dp and none, every strategy sampled together."""
    d = busy_share if dp_busy is None else dp_busy
    return {"none": res("none", [6.8, 6.9, 6.7, 7.0, 6.8], busy_share),
            "greedy": res("greedy", [113.0, 120.0, 98.0, 130.0, 110.0], busy_share),
            "dp": res("dp", [3.9, 4.0, 3.8, 4.1, 3.9], d)}


def bench(results):
    return {"model": "mobilenetv2@64", "ops": 66, "results": results, "ort": None, "target": "cpu"}


@pytest.mark.skipif(not LINUX, reason="/proc/stat is Linux's")
def test_a_share_of_the_machine_in_0_1_without_this_process():
    share = window(0.3)
    assert isinstance(share, float) and 0.0 <= share <= 1.0
    # this process's own work is not "other processes": spinning here does not raise the share to 1
    t = machine_load.start()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pass
    own = machine_load.stop(t)
    assert isinstance(own, float) and 0.0 <= own <= 1.0
    # a window too short for /proc/stat's clock ticks says nothing
    assert machine_load.stop(machine_load.start()) is None


def test_none_where_proc_stat_cannot_be_read(monkeypatch, tmp_path):
    monkeypatch.setattr(machine_load, "STAT", str(tmp_path / "missing"))
    assert machine_load.start() is None and machine_load.stop(None) is None
    garbled = tmp_path / "stat"
    for text in ("", "intr 1 2 3\n", "cpu  a b c\n", "cpu  1 2\n"):
        garbled.write_text(text)
        monkeypatch.setattr(machine_load, "STAT", str(garbled))
        assert machine_load.start() is None
    # readable at the start, not at the end: None, no exception
    token = (time.monotonic() - 1.0, 0.0, 0.0, 2)
    assert machine_load.stop(token) is None
    assert machine_load.stop("not a token") is None


def test_the_threshold():
    assert machine_load.BUSY_SHARE == 0.25
    assert machine_load.is_busy(0.26) and machine_load.is_busy(1.0)
    assert not any(machine_load.is_busy(v) for v in (None, 0.0, 0.25, 0.1, True, "0.9"))


def test_the_bench_table_says_the_machine_was_busy_and_caveats_every_verdict():
    text = report.bench_table(bench(run(0.85)))
    lines = text.splitlines()
    busy = [ln for ln in lines if ln.startswith("the machine was busy")]
    assert busy == [("the machine was busy while timing: other processes used 85% of its CPU time; "
                     "figures and verdicts may be distorted: re-run on a quiet machine")]
    verdicts = [ln for ln in lines if " vs greedy: " in ln]
    assert len(verdicts) == 1 and all(ln.endswith(f"({machine_load.CAVEAT})") for ln in verdicts)
    assert any(ln.startswith("dp vs greedy: ") and "faster" in ln for ln in verdicts)   # figures not suppressed
    assert "113.00" in text and "3.90" in text


@pytest.mark.parametrize("share", [None, 0.0, 0.1, 0.25])
def test_a_quiet_run_has_no_busy_line_and_no_caveat(share):
    text = report.bench_table(bench(run(share)))
    assert "busy" not in text and machine_load.CAVEAT not in text
    assert all(not ln.endswith(")") for ln in report.verdict_lines(run(share)) if " vs " in ln)


def test_only_the_busy_strategies_are_named_and_only_their_verdicts_caveated():
    results = run(0.05, dp_busy=0.6)   # dp timed (alone) on a busy machine
    text = report.bench_table(bench(results))
    assert "the machine was busy while timing dp: other processes used 60% of its CPU time" in text
    lines = report.verdict_lines(results)
    assert [ln for ln in lines if ln.endswith(f"({machine_load.CAVEAT})")] == \
        [ln for ln in lines if ln.startswith("dp vs greedy")]
    # a busy result from the cache: --force measures it again
    results["dp"].cached = True
    assert "(cached: dp; --force measures again)" in report.bench_table(bench(results))


def test_json_and_table_rows_carry_the_share():
    js = benchmark.bench_json(bench(run(0.85)))
    assert js["busy_share"] == 0.85 and js["machine_busy"] is True and "busy while timing" in js["busy_note"]
    assert all(s["busy_share"] == 0.85 and s["machine_busy"] for s in js["strategies"])
    json.dumps(js)
    quiet = benchmark.bench_json(bench(run(0.02)))
    assert quiet["busy_share"] == 0.02 and quiet["machine_busy"] is False and quiet["busy_note"] is None
    unknown = benchmark.bench_json(bench(run(None)))
    assert unknown["busy_share"] is None and not unknown["machine_busy"]
    row = benchmark.table_row(bench(run(0.85)))
    assert row["busy_share"] == 0.85 and row["machine_busy"] is True
    assert "busy_share" in report.rows_csv([row]).splitlines()[0]
    md = report.published_table_md([row], "cpu")
    assert "mobilenetv2@64: the machine was busy while timing: other processes used 85% of its CPU time" in md
    assert benchmark.table_row(bench(run(0.1)))["machine_busy"] is False


def test_the_measured_recommendation_says_so():
    hw = hardware.get("t4")
    rec = recommend(BIG, hw, 100.0, run(0.85))
    assert rec.measured_verdict == "dp" and rec.busy_note
    assert rec.measured_detail.endswith("the machine was busy while timing: other processes used 85% of its CPU "
                                        "time; figures and this verdict may be distorted: re-run on a quiet machine")
    assert rec.to_dict()["busy_note"] == rec.busy_note
    quiet = recommend(BIG, hw, 100.0, run(0.1))
    assert quiet.measured_verdict == "dp" and quiet.busy_note is None and "busy" not in quiet.measured_detail


def test_results_cached_with_and_without_the_share_load(private_cache):
    plan = make_plan(BIG, "greedy", Setup(hardware.get("t4")))
    r = res("greedy", [5.0, 5.1, 5.2], busy_share=0.7)
    f = runner.result_file(BIG.sha256, plan.groups, targets.HOST, True, False)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(r.to_dict()))
    got = runner.cached_result(BIG, plan, targets.HOST, tuned=False)
    assert got is not None and got.cached and got.busy_share == 0.7
    old = r.to_dict()
    del old["busy_share"]   # written before the field existed
    f.write_text(json.dumps(old))
    got = runner.cached_result(BIG, plan, targets.HOST, tuned=False)
    assert got is not None and got.busy_share is None and got.latency_ms == r.latency_ms
    assert benchmark.valid_cached(got, 3)
    for wrong in ("busy", [0.5], True, float("inf")):
        d = r.to_dict()
        d["busy_share"] = wrong
        assert not runner.valid_result(json.loads(json.dumps(d))), wrong

