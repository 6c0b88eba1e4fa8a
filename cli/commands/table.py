"""`main.py table`: reproduce the published four-model table (the workflow: engine/report/published_table.py)."""
from __future__ import annotations

import sys

from cli.arguments import (COST_HELP, REPEAT, arg, check_model, check_repeat, check_setup, cost, force, hardware,
                           layout, target)
from cli.output import progress, say

HELP = "reproduce the published four-model table"
ARGS = (arg("--models", default="vgg16,mobilenetv2,efficientnet_b0,yolov4_tiny"), target(), hardware(), REPEAT,
        arg("--out", default="results", help="folder for table.md, table.csv, table.json, table.png"), force(),
        cost(COST_HELP), layout())


def check(a) -> None:
    from engine.util import outpath
    from engine.model import zoo
    from engine.util.errors import UsageError

    a.model_list = [m.strip() for m in a.models.split(",")]
    if not a.models.strip() or any(not m for m in a.model_list):
        raise UsageError(f"--models {a.models!r}: give a comma-separated list of {', '.join(zoo.MODELS)}")
    for m in a.model_list:
        check_model(f"zoo:{m}")
    check_repeat(a)
    outpath.check_folder(a.out, "--out")
    check_setup(a, reach=True, cost=a.cost)


def run(a) -> int:
    from engine.report import published_table

    t = published_table.make(a.model_list, a.setup, a.out, target_word=a.target, repeat=a.repeat, force=a.force,
                             progress=progress, note=lambda line: say(line, file=sys.stderr),
                             chart=a.app.chart_png)
    say(t.markdown, lines=True)
    say(f"wrote {t.folder}/{', '.join(published_table.FILES)}")
    return 0
