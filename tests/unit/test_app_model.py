"""The app's models without a window: the callback emitter, the evented Document and ViewState, and
the one stale-result check (Workspace.current)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gui.document import Document
from gui.events import EmitterGroup, EventEmitter
from gui.view_state import ViewState
from gui.workspace import Workspace


def plan(*groups, cost="model"):
    return SimpleNamespace(groups=[list(g) for g in groups], notes={"cost": cost})


def result(ms=1.0, schedule="rules", error=""):
    return SimpleNamespace(latency_ms={"median": ms}, error=error, schedule=schedule)


def doc():
    graph = SimpleNamespace(name="g", nodes=[SimpleNamespace(id=i) for i in "abc"])
    return Document(spec="x.onnx", shapes={}, graph=graph, hw=SimpleNamespace(name="t4", title="T4"),
                    plans={"greedy": plan("ab", "c")})


def recorder(emitter):
    got = []
    emitter.connect(got.append)
    return got


def test_an_emitter_calls_each_callback_once_in_order_and_disconnects():
    calls = []
    e = EventEmitter(source="src", type="thing")
    first = e.connect(lambda ev: calls.append(("first", ev.value)))
    e.connect(first)  # twice: still once
    e.connect(lambda ev: calls.append(("second", ev.type, ev.source)))
    e(value=3)
    assert calls == [("first", 3), ("second", "thing", "src")]
    e.disconnect(first)
    calls.clear()
    e(value=4)
    assert calls == [("second", "thing", "src")]
    e.disconnect()
    e(value=5)
    assert calls == [("second", "thing", "src")]


def test_an_emitter_group_names_its_emitters():
    g = EmitterGroup("src", "a", "b")
    assert g.names == ("a", "b") and g["a"] is g.a and g.b.type == "b"
    with pytest.raises(KeyError):
        g["c"]
    with pytest.raises(ValueError):
        EmitterGroup("src", "names")


def test_view_state_emits_each_change_once_and_only_changes():
    st = ViewState(strategy="dp")
    assert st.right_strategy == "greedy"
    got = {n: recorder(st.events[n]) for n in ViewState.FIELDS}
    st.strategy = "dp"          # no change
    st.strategy = "hybrid"
    st.heat = True
    st.side_by_side = True
    assert [(e.value, e.old) for e in got["strategy"]] == [("hybrid", "dp")]
    assert [e.value for e in got["heat"]] == [True] and [e.value for e in got["side_by_side"]] == [True]
    assert got["right_strategy"] == [] and got["heat_log"] == []
    assert (st.strategy, st.right_strategy, st.side_by_side, st.heat) == ("hybrid", "greedy", True, True)


def test_document_changes_emit_what_changed():
    d = doc()
    plans, results = recorder(d.events.plans), recorder(d.events.results)
    d.add_plans({"dp": plan("abc")}, {"tvm": "no module"})
    assert set(d.plans) == {"greedy", "dp"} and d.plan_errors == {"tvm": "no module"}
    assert plans[-1].strategies == ["dp"]
    d.note_plan_error("tvm", "another reason")   # the first reason stays, nothing to say
    assert d.plan_errors["tvm"] == "no module" and len(plans) == 1

    r = result(2.0)
    d.add_results("cpu", {"dp": r}, d.plans)
    assert d.result("cpu", "dp") is r and results[-1].target == "cpu" and results[-1].strategies == ["dp"]
    assert d.rules_for("cpu") == {"dp": r}      # measured with the rules: its plan's reference
    d.add_results("cpu", {"dp": result(9.0)}, d.plans, keep=True)  # a cached one does not replace it
    assert d.result("cpu", "dp") is r and len(results) == 1

    tuned, rules = result(1.0, schedule="tuned"), result(3.0)
    d.add_results("cpu", {"dp": tuned}, d.plans, rules={"dp": rules})
    assert d.result("cpu", "dp") is tuned and d.rules_for("cpu") == {"dp": rules}
    assert d.rules_for_all() == {("cpu", "dp"): rules}

    d.replace_plans({"dp": plan("ab", "c")}, {})
    assert set(d.plans) == {"dp"} and d.plan_errors == {} and d.rules_for("cpu") == {}  # other groups
    d.replace_plans({"dp": plan("abc")}, {}, hw=SimpleNamespace(name="host", title="Host"))
    assert d.hw.name == "host" and len(plans) == 3 and d.rules_for("cpu") == {"dp": rules}


def test_an_imported_plan_drops_what_was_measured_for_the_previous_one():
    d = doc()
    d.add_plans({"custom": plan("abc")})
    d.add_results("cpu", {"custom": result(), "greedy": result()}, d.plans)
    results = recorder(d.events.results)
    d.set_custom_plan(plan("a", "bc"))
    assert d.result("cpu", "custom") is None and d.result("cpu", "greedy") is not None
    assert [(e.target, e.strategies) for e in results] == [("cpu", ["custom"])]
    assert d.differences("greedy", "custom") == [(0, 0), (1, 1)]


def test_only_the_latest_request_for_the_open_document_is_current():
    ws = Workspace()
    opened = recorder(ws.events.document)
    first = ws.request("load")
    second = ws.request("load")
    assert not ws.current(first) and ws.current(second)   # asked again: the first answer is stale
    plan_req = ws.request("plan")
    d = doc()
    ws.set_document(d)
    assert opened[-1].value is d and opened[-1].old is None and ws.doc is d
    assert not ws.current(plan_req)                      # asked for the previous document
    bench = ws.request("bench")
    assert ws.current(bench) and ws.request("plan") and ws.current(bench)  # kinds do not interfere
    steps, more = ws.request(None), ws.request(None)     # only another document makes these stale
    assert ws.current(steps) and ws.current(more)
    ws.set_document(doc())
    assert not ws.current(steps) and not ws.current(bench)


def test_the_device_list_is_announced_once_known():
    ws = Workspace()
    got = recorder(ws.events.devices)
    assert ws.devices is None
    ws.set_devices([{"name": "cpu"}])
    assert ws.devices == [{"name": "cpu"}] and got[-1].value == [{"name": "cpu"}]
    chosen = recorder(ws.events.device)
    ws.set_device("cpu")      # already selected
    ws.set_device("cuda")
    assert ws.device == "cuda" and [e.value for e in chosen] == ["cuda"]
    budget = recorder(ws.events.budget)
    ws.set_budget(25)
    ws.set_budget(25)
    assert ws.budget == 25.0 and [e.value for e in budget] == [25.0]


def test_the_profile_and_the_cost_are_announced_on_a_change_only():
    ws = Workspace(profile="host")
    profiles, costs = recorder(ws.events.profile), recorder(ws.events.cost)
    assert ws.profile == "host" and ws.cost == "learned"           # the default
    assert Workspace.COSTS == ("roofline", "learned", "measured")
    ws.set_profile("host")
    ws.set_profile("t4")
    ws.set_cost("learned")
    ws.set_cost("model")                # the old name of the default: learned, no change
    ws.set_cost("measured")
    ws.set_cost("roofline")
    assert ws.profile == "t4" and [e.value for e in profiles] == ["t4"]
    assert ws.cost == "roofline" and [e.value for e in costs] == ["measured", "roofline"]
    with pytest.raises(ValueError):
        ws.set_cost("guess")
    assert ws.cost == "roofline" and len(costs) == 2
    assert Workspace(cost="model").cost == "learned"
    with pytest.raises(ValueError):
        Workspace(cost="guess")


def test_old_saved_costs_read_as_learned(tmp_path):
    from PySide6 import QtCore

    from gui.settings import Settings

    s = Settings(QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.IniFormat))
    assert s.cost == "learned"                                  # nothing saved: the default
    for saved, read in (("model", "learned"), ("measured", "measured"), ("roofline", "roofline"),
                        ("learned", "learned"), ("guess", "learned")):
        s.cost = saved
        assert s.cost == read, saved


def test_a_fidelity_result_follows_its_plan():
    d = doc()
    ws = Workspace()
    ws.set_document(d)
    got = recorder(ws.events.fidelity)
    greedy = d.plans["greedy"]
    assert d.fidelity_for("cpu", "greedy") is None
    d.set_fidelity("cpu", "greedy", greedy, "model", {"kernels": 2})
    assert [(e.target, e.strategy) for e in got] == [("cpu", "greedy")]        # relayed by the workspace
    f, why = d.fidelity_for("cpu", "greedy", "model")
    assert f.result == {"kernels": 2} and f.plan is greedy and f.hw_name == "t4" and why == ""
    assert d.fidelity_for("cuda", "greedy") is None
    assert "another cost" in d.fidelity_for("cpu", "greedy", "roofline")[1]
    d.replace_plans({"greedy": plan("ab", "c")}, {})             # the same groups: still its result
    assert d.fidelity_for("cpu", "greedy", "model")[1] == ""
    d.replace_plans({"greedy": plan("a", "bc")}, {})             # other groups: stale
    assert "plan changed" in d.fidelity_for("cpu", "greedy", "model")[1]
    d.replace_plans({"greedy": plan("ab", "c")}, {}, hw=SimpleNamespace(name="host", title="Host"))
    assert "profile host" in d.fidelity_for("cpu", "greedy", "model")[1]


def test_the_workspace_relays_the_open_documents_changes_only():
    ws, first, second = Workspace(), doc(), doc()
    plans, results = recorder(ws.events.plans), recorder(ws.events.results)
    ws.set_document(first)
    first.add_plans({"dp": plan("abc")}, {})
    first.add_results("cpu", {"dp": result()}, first.plans)
    assert [e.strategies for e in plans] == [["dp"]] and results[-1].target == "cpu"
    assert plans[-1].source is ws and plans[-1].type == "plans"
    ws.set_document(second)
    first.add_plans({"hybrid": plan("abc")}, {})      # the previous model: no longer heard
    assert len(plans) == 1
    second.add_plans({"hybrid": plan("abc")}, {})
    assert [e.strategies for e in plans] == [["dp"], ["hybrid"]] and len(results) == 1


def test_collapsed_groups_are_op_sets_found_in_any_plan():
    st = ViewState()
    got = recorder(st.events.collapsed)
    st.collapsed = frozenset({frozenset("ab")})
    st.collapsed = frozenset({frozenset("ab")})                   # the same: nothing to say
    assert len(got) == 1
    assert st.collapsed_in(plan("ab", "c")) == {0}
    assert st.collapsed_in(plan("c", "ab")) == {1}                  # another plan with the same group
    assert st.collapsed_in(plan("a", "bc")) == set() and st.collapsed_in(None) == set()


def test_a_selection_is_one_event_and_drops_group_indices_per_pane():
    from gui.view_state import Selected

    st = ViewState()
    got = recorder(st.events.selection)
    st.select(("group", 2), ("node", "x"), "right")
    st.select(("group", 2), ("node", "x"), "right")
    assert len(got) == 1 and got[0].value.shown == ("node", "x") and got[0].old == Selected()
    s = Selected(("group", 1), ("collapsed", 4), "left")
    assert s.without_groups("left") == Selected(None, ("collapsed", 4), "left")
    assert s.without_groups("right") == Selected(("group", 1), None, "left")
    assert s.without_groups() == Selected(None, None, "left")
    assert Selected(("node", "a")).without_groups() == Selected(("node", "a"))
