"""The CLI's plan table (issue 21): a group's operators that do not fit its column end in '...'
after a whole name, never a name cut mid-word."""
from engine.devices import hardware
from engine.planner.plan import Plan
from engine.report import text as report
from tests.support.synthetic import chain


def test_a_long_operator_list_ends_in_an_ellipsis_after_whole_names():
    g = chain(30)   # conv2d, bias_add, multiply, add, relu, conv2d, ...: one group of all 30
    p = Plan("dp", [[n.id for n in g.nodes]], group_us=[1.0], estimated_us=1.0)
    text = report.plan_summary(g, p, hardware.get("t4"))
    row = next(ln for ln in text.splitlines() if ln.lstrip().startswith("0 "))
    ops = row.split()[-1]
    assert ops.endswith("+...") and len(ops) <= 70, ops
    names = ops[:-len("+...")].split("+")
    assert names == [n.op for n in g.nodes][:len(names)] and len(names) >= 5, names


def test_fit_keeps_whole_words_and_short_text():
    assert report.fit(["a", "b"], 70, "+") == "a+b"
    words = ("TVM could not build the kernel because the schedule does not fit the shared memory "
             "of this device by a wide margin").split()
    cut = report.fit(words, 40)
    assert cut.endswith(" ...") and len(cut) <= 40 and cut[:-4].split() == words[:len(cut[:-4].split())]
