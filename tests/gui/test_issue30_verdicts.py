"""Issue 30 (3, 4, 5, 6): honest verdicts and one figure per plan.

3: the measured verdict says what decided it (hybrid over a dp with a lower median: dp vs hybrid), and
   names the other plans measured (optimal, tvm, custom); 4: with one usable plan there is no verdict to
   agree or disagree with; 5: a strategy whose plan is another's is measured once, under that one, and
   named "same plan as greedy" (bench table, JSON, verdict), never given the other's samples, from a run or
   from the cache; 6: one plan, one estimate (`plan --from` prices as the app does), `none` and imported
   plans show no planning time that is not planning. No TVM here: the worker and the cache are faked."""

import pytest
from engine.report.recommend import recommend
from tests.support.synthetic import chain
from tests.support.issue30_verdicts import hw, res  # noqa: F401


def test_the_panel_never_says_agree_with_one_plan(qtbot):
    pytest.importorskip("pytestqt")
    from gui.panels.recommendation import RecommendationPanel

    pan = RecommendationPanel()
    qtbot.addWidget(pan)
    bad = res("dp", 1.5)
    bad.correct = False
    rec = recommend(chain(30), hw(), 40, {"greedy": res("greedy", 1.80), "dp": bad})   # the rule says greedy
    pan.show_recommendation(rec, "ctx", ["greedy", "dp"])
    text = pan.headline.text() + pan.measured.text()
    assert "agree" not in text and "only greedy" in text, text

