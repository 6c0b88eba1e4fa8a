"""The CLI's plan table names each group as the app does (engine/report/group_names.py): its ONNX block, kind
and ops, not TVM's function name."""
from engine.planner.setup import Setup
from engine.devices import hardware
from engine.report import text as report
from engine.report.group_names import group_title


def test_plan_table_names_groups_by_block_and_ops():
    from engine.model import loader
    from engine.planner import make_plan

    g = loader.load("zoo:mobilenetv2@32")
    p = make_plan(g, "greedy", Setup(hardware.get("t4")))
    text = report.plan_summary(g, p, hardware.get("t4"))
    head = next(ln for ln in text.splitlines() if ln.lstrip().startswith("group "))
    assert "name" in head.split()
    big = max(range(len(p.groups)), key=lambda i: p.group_us[i])
    row = next(ln for ln in text.splitlines() if ln.split() and ln.split()[0] == str(big))
    assert group_title(g, p.groups[big], p.group_kinds[big]["kind"]) in row
    assert "features." in text and "fused_" not in text
