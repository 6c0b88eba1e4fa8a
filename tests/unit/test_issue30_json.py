"""Issue 30 (7): exported plans and bench results are strict JSON (no Infinity or NaN, which other
languages' parsers reject); an infinite value is written as the string "Infinity" and read back as inf."""
import json
import math
from pathlib import Path

import pytest

from engine.planner.setup import Setup
from engine.devices import hardware
from engine.planner import make_plan, plan_json
from tests.support.synthetic import chain

ROOT = Path(__file__).resolve().parents[2]


def strict_loads(text: str):
    def refuse(word):
        raise ValueError(f"not strict JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def test_a_plan_with_an_infinite_cutoff_is_strict_json_and_reads_back(tmp_path):
    g, hw = chain(30), hardware.get("t4")
    p = make_plan(g, "dp", Setup(hw, cost="roofline"))
    p.notes["cutoff"] = math.inf          # as dp plans with measured costs (engine/planner/dp.py)
    p.notes["dp"] = {**(p.notes.get("dp") or {}), "worst": -math.inf, "unknown": math.nan}
    path = tmp_path / "plan.json"
    plan_json.save(path, p, g, hw)
    d = strict_loads(path.read_text())
    assert d["notes"]["cutoff"] == "Infinity" and d["notes"]["dp"]["worst"] == "-Infinity"
    back = plan_json.load(path, g)
    assert back.notes["cutoff"] == math.inf and back.notes["dp"]["worst"] == -math.inf
    assert math.isnan(back.notes["dp"]["unknown"])
    assert back.groups == p.groups


def test_strict_dumps_refuses_nothing_and_writes_no_constant():
    text = plan_json.dumps({"a": [1.0, math.inf, {"b": -math.inf, "c": math.nan}], "d": (1, 2)}, indent=1)
    assert strict_loads(text) == {"a": [1.0, "Infinity", {"b": "-Infinity", "c": "NaN"}], "d": [1, 2]}


def test_bench_json_with_an_infinite_figure_is_strict():
    from engine.measure import benchmark
    from engine.measure.runner import BenchResult

    r = BenchResult(model="m", strategy="greedy", target="cpu", latency_ms={"median": 1.0, "min": 1.0,
                                                                            "max": math.inf},
                    samples=[1.0, 1.0, 1.0], correct=True)
    b = {"model": "m", "ops": 3, "results": {"greedy": r}, "ort": None, "costs": {}}
    text = plan_json.dumps(benchmark.bench_json(b), indent=1)
    assert strict_loads(text)["strategies"][0]["latency_ms"]["max"] == "Infinity"


@pytest.mark.parametrize("path", ["main.py", "cli/commands/bench.py", "cli/commands/fidelity.py", "cli/commands/plan.py",
                                  "engine/report/published_table.py", "gui/file_io.py", "engine/planner/plan_json.py"])
def test_plans_and_benches_are_written_through_the_strict_writer(path):
    """Every JSON main.py writes (bench --json, table.json, fidelity --json, plan --out) goes through
    plan_json.dumps (allow_nan=False): a plain json.dumps/json.dump there could write Infinity."""
    src = (ROOT / path).read_text()
    plain = [ln.strip() for ln in src.splitlines() if ("json.dumps(" in ln or "json.dump(" in ln)
             and "allow_nan=False" not in ln and "plan_json.dumps(" not in ln and not ln.strip().startswith("#")
             and "[:40]" not in ln]
    assert not plain, plain


def test_numpy_scalars_are_written_as_python_numbers():
    """A figure computed with numpy (a bootstrap bound, a significance test) is a numpy scalar: the writer
    takes it as the number or bool it holds, and a non-finite one as its NONFINITE string (found when
    `bench --json` on a fresh cache ended in 'internal error: TypeError: bool')."""
    import numpy as np

    from engine.measure import stats

    text = plan_json.dumps({"b": np.bool_(True), "f": np.float32(1.5), "i": np.int64(3), "n": np.float32("nan"),
                            "inf": np.float64("inf")})
    assert strict_loads(text) == {"b": True, "f": 1.5, "i": 3, "n": "NaN", "inf": "Infinity"}
    s = stats.speedup_of_samples(np.array([2.0, 2.1, 2.2, 2.0]), np.array([1.0, 1.1, 1.0, 1.05]))
    assert type(s.significant) is bool and s.significant
    assert strict_loads(plan_json.dumps({"significant": s.significant}))["significant"] is True
