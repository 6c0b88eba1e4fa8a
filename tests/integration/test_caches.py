"""Caches that cannot poison later runs (issue 11): every kind of cache file, truncated, filled with
random bytes or with the wrong JSON, is a miss that the next run repairs; writes are atomic; results
that were not correct are not reused; the runtime loads the content-addressed frozen ONNX, not the
path a model was opened from; `force` bypasses the caches; `cache clear`; no pickles."""

import json
import os
import numpy as np
from engine.devices import targets
from engine.planner.setup import Setup

from engine.measure import ort_check, runner
from engine.model import loader
from tests.support.caches import DAMAGE, SHAPES, _no_temp_files, _truncate, _wrong_fields, model, _every_test_in_a_private_cache  # noqa: F401


def _greedy(graph):
    from engine.devices import hardware
    from engine.planner import make_plan

    return make_plan(graph, "greedy", Setup(hardware.get("host")))


def _result_file(graph, plan):
    return runner.result_file(graph.sha256, plan.groups, targets.HOST, True, True)


def _ref_file(private_cache):
    refs = sorted((private_cache / "results").glob("ref-*.npz"))
    assert len(refs) == 1
    return refs[0]


RESULT_WRONG = {
    "incorrect": lambda d: d.update(correct=False),
    "correct unknown": lambda d: d.update(correct=None),
    "an error": lambda d: d.update(error="TVMError: boom"),
    "latency a list": lambda d: d.update(latency_ms=[1, 2, 3]),
    "median a string": lambda d: d["latency_ms"].update(median="fast"),
    "repeat a string": lambda d: d.update(repeat="10"),
    "kernel times of another plan": lambda d: d.update(kernel_us=[1.0] * 7),
    "an unknown field": lambda d: d.update(evil=1),
    "busy share a string": lambda d: d.update(busy_share="busy"),
}


def test_results_and_references_survive_damage_and_force(model, private_cache):
    spec = str(model)
    g = loader.load(spec, SHAPES)
    plan = _greedy(g)
    r = runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2)
    assert r.error is None and r.correct and not r.cached
    rf, ref = _result_file(g, plan), _ref_file(private_cache)
    good = json.loads(rf.read_text())
    # how busy the machine was while timing is stored with the result (None: window too short to say)
    assert "busy_share" in good and (good["busy_share"] is None or 0.0 <= good["busy_share"] <= 1.0)
    assert runner.cached_result(g, plan, targets.HOST).cached

    # a result file that does not parse, or holds the wrong JSON, or a failed run: a miss, deleted
    for name, damage in {**DAMAGE, **{k: (lambda p, e=e: _wrong_fields(p, e)) for k, e in RESULT_WRONG.items()}}.items():
        rf.write_text(json.dumps(good))
        damage(rf)
        assert runner.cached_result(g, plan, targets.HOST) is None, name
        assert not rf.exists(), name

    # a truncated result and a truncated reference: the next run measures again and succeeds
    rf.write_text(json.dumps(good))
    _truncate(rf)
    _truncate(ref)
    r2 = runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2)
    assert r2.error is None and r2.correct and not r2.cached
    assert runner.load_reference(ref) is not None and runner.cached_result(g, plan, targets.HOST) is not None

    # a reference that loads but is wrong (other values, count or shapes): the plan is checked
    # against a fresh one, which replaces it
    arrays = runner.load_reference(ref)
    for wrong in ([np.zeros_like(a) + 7 for a in arrays], arrays + arrays, [np.ones((2, 2), "float32")]):
        np.savez(ref, *wrong)
        rf.unlink()
        r3 = runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2)
        assert r3.error is None and r3.correct and not r3.cached
        assert len(runner.load_reference(ref)) == 1
        np.testing.assert_array_equal(runner.load_reference(ref)[0], arrays[0])
    # force rebuilds the reference too
    np.savez(ref, *[np.zeros_like(a) + 7 for a in arrays])
    r3 = runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2, force=True)
    assert r3.error is None and r3.correct and not r3.cached
    np.testing.assert_array_equal(runner.load_reference(ref)[0], arrays[0])

    # a stored incorrect result is not reused: measured again
    _wrong_fields(rf, lambda d: d.update(correct=False, latency_ms={"median": 1e-9, "min": 1e-9, "max": 1e-9}))
    r4 = runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2)
    assert not r4.cached and r4.correct and r4.latency_ms["median"] > 1e-9
    # force: measured again even with a good cached result
    assert runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2).cached
    assert not runner.benchmark(spec, SHAPES, plan, targets.HOST, repeat=2, force=True).cached
    assert _no_temp_files(private_cache) == []


def test_kernel_time_files_survive_damage(model, tmp_path):
    from engine.devices import hardware
    from engine.planner import kernel_timing as measure

    g = loader.load(str(model), SHAPES)
    hw = hardware.get("host")
    folder = tmp_path / "k"
    first = measure.measured_costs(g, hw, "cpu", cache=folder, max_len=3, max_kernels=None)
    assert first.stats["error"] is None and first.stats["built"] > 0 and first.stats["no_figure"] == 0
    times, segments = next(folder.glob("times-*.json")), next(folder.glob("segments-*.json"))
    kc = measure.KernelCache(folder, measure.target_key("cpu"), g.sha256)
    good_times, n = json.loads(times.read_text()), len(kc.times())

    # wrong record types: those kernels are a miss (timed again), the others stay
    d = json.loads(times.read_text())
    hs = sorted(d["kernels"])
    d["kernels"][hs[0]] = {"us": "fast"}
    d["kernels"][hs[1]] = [1, 2]
    d["kernels"][hs[2]] = {"us": -1.0}
    times.write_text(json.dumps(d))
    assert set(kc.times()) == set(hs[3:])
    for name, damage in DAMAGE.items():
        times.write_text(json.dumps(good_times))
        damage(times)
        assert kc.times() == {}, name
        assert not times.exists(), name
    segments.write_bytes(os.urandom(512))
    assert kc.segments() == {} and not segments.exists()
    again = measure.measured_costs(g, hw, "cpu", cache=folder, max_len=3, max_kernels=None)
    assert again.stats["error"] is None and again.stats["no_figure"] == 0 and len(kc.times()) == n
    # force: every candidate timed again, though all are cached
    forced = measure.measured_costs(g, hw, "cpu", cache=folder, max_len=3, max_kernels=None, force=True)
    assert forced.stats["error"] is None and forced.stats["built"] == first.stats["built"]
    assert _no_temp_files(folder) == []

