"""engine/layout/graph.py (no Qt): what goes to graphviz, parsing its -Tjson, the built-in layered layout, group
boxes; running graphviz (engine/layout/dot.py) and the layout job's time limit, provisional answer, fallback
and disk cache (engine/jobs/layout.py, engine/layout/cache.py: a damaged file is a miss and is deleted)."""
from __future__ import annotations

import shutil

import pytest

from engine.layout import graph as L
from engine.model.opgraph import OpGraph, OpNode
from tests.support import synthetic


def fan_graph(n_consumers: int = 20) -> OpGraph:
    """One producer read by many consumers (the pattern that makes dot slow), then a join."""
    def node(i, inputs, op="relu"):
        return OpNode(id=f"n{i}", var=f"v{i}", kind="call_tir", func=op, op=op, pattern="ElemWise",
                      shape=[1, 8], dtype="float32", inputs=inputs)

    nodes = [node(0, [])] + [node(i, ["n0"]) for i in range(1, n_consumers + 1)]
    nodes.append(node(n_consumers + 1, [f"n{i}" for i in range(1, n_consumers + 1)], "concat"))
    return OpGraph(name="fan", sha256="fan", input_shapes={}, nodes=nodes, outputs=[nodes[-1].id])


def test_dot_source_has_speed_flags_clusters_and_no_newrank():
    g = synthetic.branching(60)
    groups = [[n.id] for n in g.nodes]
    groups = [groups[0] + groups[1]] + groups[2:]
    inp = L.build_input(g, groups)
    src = L.to_dot(inp)
    for k in ("nslimit", "mclimit", "remincross", "searchsize", "splines"):
        assert f"{k}=" in src
    assert "newrank" not in src  # present at all, it is on, and it is slow with clusters
    assert "subgraph cluster_0" in src and src.count("->") == len(inp.edges)
    assert inp.clusters == [groups[0]]


def test_high_fanout_edges_stay_out_of_the_layout():
    g = fan_graph(20)
    inp = L.build_input(g)
    assert all(a != "n0" for a, _ in inp.edges)
    assert len(inp.loose_edges) == 20 and all(a == "n0" for a, _ in inp.loose_edges)
    lay = L.layered(inp)
    assert all(lay.pos[b][1] > lay.pos[a][1] for a, b in inp.edges + inp.loose_edges)  # still drawn downwards


def test_collapsed_groups_become_one_node():
    g = synthetic.chain(30)
    groups = [[f"n{i}" for i in range(0, 5)]] + [[f"n{i}"] for i in range(5, 30)]
    inp = L.build_input(g, groups, collapsed={0})
    assert "g0" in inp.sizes and not any(f"n{i}" in inp.sizes for i in range(5))
    assert ("g0", "n5") in inp.edges and inp.clusters == []
    assert L.collapsed_label(g, groups[0]).endswith(", 5 ops")


def test_builtin_layered_layout_is_layered_and_non_overlapping():
    g = synthetic.branching(400)
    inp = L.build_input(g)
    lay = L.layered(inp)
    assert set(lay.pos) == set(inp.sizes) and lay.engine == "builtin"
    assert all(lay.pos[b][1] > lay.pos[a][1] for a, b in inp.edges)
    rows: dict[float, list[tuple[float, float]]] = {}
    for n, (x, y) in lay.pos.items():
        rows.setdefault(y, []).append((x - inp.sizes[n][0] / 2, x + inp.sizes[n][0] / 2))
    for spans in rows.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in zip(spans, spans[1:]))


def test_builtin_layout_of_5000_ops_is_quick():
    import time

    g = synthetic.branching(5000)
    t = time.perf_counter()
    L.layered(L.build_input(g))
    assert time.perf_counter() - t < 10  # ~0.3 s here; generous for a loaded CI machine


def test_dirty_groups_and_relayout_rule():
    g = synthetic.chain(40)
    lay = L.layered(L.build_input(g))
    chain_groups = [[f"n{i}", f"n{i + 1}"] for i in range(0, 40, 2)]
    assert L.dirty_groups(lay, chain_groups) == 0 and L.boxes_clean(lay, chain_groups)
    skip = [["n0", "n2"], ["n1"]] + [[f"n{i}"] for i in range(3, 40)]  # a box around n0 and n2 covers n1
    assert L.dirty_groups(lay, skip) == 1 and not L.boxes_clean(lay, skip)
    assert L.needs_relayout(lay, skip, len(g)) and not L.needs_relayout(lay, chain_groups, len(g))


def test_group_hue_is_stable_and_names_are_the_ops_not_tvm_functions():
    from engine.report.group_names import op_word

    g = synthetic.chain(10)
    assert L.group_hue(["n3", "n4"]) == L.group_hue(["n4", "n3"]) != L.group_hue(["n5", "n6"])
    name = L.group_name(g, ["n0", "n1", "n2"])
    assert not name.startswith("fused_") and op_word(g.by_id["n0"]) in name
    assert L.group_name(g, ["n1"]) == op_word(g.by_id["n1"])


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")
def test_dot_json_parses_to_y_down_positions():
    from engine.layout.dot import run_dot

    g = synthetic.branching(80)
    groups = [[n.id] for n in g.nodes]
    inp = L.build_input(g, groups)
    lay = run_dot(inp, 60)
    assert lay.engine == "dot" and set(lay.pos) == set(inp.sizes)
    assert all(lay.pos[b][1] > lay.pos[a][1] for a, b in inp.edges)
    assert all(0 <= x <= lay.width and 0 <= y <= lay.height for x, y in lay.pos.values())


def test_layout_job_falls_back_past_its_time_limit(monkeypatch, tmp_path):
    from engine.jobs import layout as job
    from engine.layout import cache as layout_cache
    from engine.layout import dot as layout_dot

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path))
    g = synthetic.chain(50)
    inp = L.build_input(g)
    seen = []

    def slow_dot(inp, limit, cancel=None):
        raise layout_dot.DotTimeout(f"graphviz dot ran past its {limit:.0f} s limit")

    monkeypatch.setattr(layout_dot, "run_dot", slow_dot)
    monkeypatch.setattr(layout_dot, "dot_path", lambda: "/usr/bin/dot")
    lay = job.compute("k1", inp, 3, on_provisional=seen.append)
    assert lay.engine == "builtin" and "past its 3 s limit" in lay.note
    monkeypatch.setattr(layout_dot, "dot_path", lambda: None)
    lay = job.compute("k2", inp, 3)
    assert lay.engine == "builtin" and "not found" in lay.note
    layout_cache.forget_in_memory()
    assert layout_cache.cached("k2") is not None  # kept on disk: no second wait for a dot that gives up


def test_a_slow_dot_answers_with_the_builtin_layout_first(monkeypatch, tmp_path):
    """`dot` past PROVISIONAL_AFTER_S: the built-in layout is handed out at once, then dot's."""
    import threading

    from engine.jobs import layout as job
    from engine.layout import cache as layout_cache
    from engine.layout import dot as layout_dot

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path))
    layout_cache.forget_in_memory()
    g = synthetic.chain(20)
    inp = L.build_input(g)
    release = threading.Event()

    def slow_dot(inp, limit, cancel=None):
        release.wait(30)
        lay = L.layered(inp)
        lay.engine, lay.seconds = "dot", 2.0
        return lay

    seen = []
    monkeypatch.setattr(job, "PROVISIONAL_AFTER_S", 0.05)
    monkeypatch.setattr(layout_dot, "run_dot", slow_dot)
    monkeypatch.setattr(layout_dot, "dot_path", lambda: "/usr/bin/dot")
    key = layout_cache.cache_key(g.sha256, "none", inp)
    lay = job.lay_out(lambda: (key, inp), 10, on_provisional=lambda b: (seen.append(b), release.set()))
    assert [b.engine for b in seen] == ["builtin"] and "while graphviz dot works" in seen[0].note
    assert lay.engine == "dot" and lay.note == "graphviz dot, 2.0 s"
    # asked again: the cached layout, no provisional answer
    seen.clear()
    assert job.lay_out(lambda: (key, inp), 10, on_provisional=seen.append) is lay and not seen


@pytest.mark.parametrize("damage", ["truncated", "random bytes", "a list", "wrong fields", "missing nodes",
                                    "empty"])
def test_a_damaged_layout_cache_file_is_a_miss_and_is_deleted(monkeypatch, tmp_path, damage):
    import json
    import os

    from engine.jobs import layout as job
    from engine.layout import cache as layout_cache
    from engine.layout import dot as layout_dot

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(layout_dot, "dot_path", lambda: None)  # the built-in layout: quick and deterministic
    layout_cache.forget_in_memory()
    g = synthetic.chain(30)
    inp = L.build_input(g)
    key = layout_cache.cache_key(g.sha256, "greedy", inp)
    good = job.compute(key, inp, 5)
    f = layout_cache.cache_file(key)
    text = f.read_text()
    assert json.loads(text)["engine"] == "builtin"
    assert [p.name for p in f.parent.iterdir()] == [f.name]  # written atomically: no temp file left
    d = json.loads(text)
    bad = {"truncated": text[: len(text) // 2].encode(),
           "random bytes": os.urandom(300),
           "a list": b"[1, 2, 3]",
           "wrong fields": json.dumps(dict(d, pos={"n0": ["x", 1]}, width="wide")).encode(),
           "missing nodes": json.dumps(dict(d, pos={"n0": [1.0, 2.0]})).encode(),
           "empty": b""}[damage]
    f.write_bytes(bad)
    layout_cache.forget_in_memory()
    assert layout_cache.cached(key, inp) is None and not f.exists()  # a miss, and the bad file is gone
    again = job.compute(key, inp, 5)  # the next run lays out again and stores a good file
    assert again.pos == good.pos and f.exists()
    layout_cache.forget_in_memory()
    assert layout_cache.cached(key, inp).pos == good.pos
    layout_cache.forget_in_memory()
