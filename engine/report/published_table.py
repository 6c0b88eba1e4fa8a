"""The published comparison measured here (`main.py table`): each model benchmarked with none, greedy, dp
and hybrid (engine/measure/benchmark.py), one row a model, written as table.md, table.csv, table.json and
a bar chart, table.png.

A tracker key with several free devices takes the models in parallel. What the run has to say while it
goes (the model it starts, the devices it spreads over, a chart it could not draw) goes to `note`; the
chart is drawn by `chart(rows, path)` (the app's, handed over by the front end; engine/ draws none)."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

STRATEGIES = ["none", "greedy", "dp", "hybrid"]
FILES = ("table.md", "table.csv", "table.json", "table.png")


@dataclass(frozen=True)
class Table:
    markdown: str   # table.md's text
    folder: Path    # where the files were written


def make(models: list[str], setup, out: str, *, target_word: str, repeat: int, force: bool,
         progress: Callable | None = None, note: Callable[[str], None] = lambda line: None,
         chart: Callable | None = None) -> Table:
    """Benchmark the zoo `models` on setup's target and write the table's files into the folder `out`
    (checked again before writing: it may have changed during the benchmarks). `target_word`: --target as
    the user gave it (what the table and the notes say); `progress` is passed on when the models run one
    at a time."""
    from engine.devices import targets
    from engine.measure import benchmark
    from engine.planner import plan_json
    from engine.util import outpath

    from . import text as report

    # a tracker key with several free devices: the models go to them in parallel
    parallel = min(len(models), targets.free_devices(setup.target))

    def one(m):
        note(f"{m} ...")
        req = benchmark.BenchRequest(f"zoo:{m}", None, setup, repeat, force,
                                     progress=progress if parallel == 1 else None)
        return benchmark.bench_model(req, STRATEGIES)

    if parallel > 1:
        from concurrent.futures import ThreadPoolExecutor

        note(f"{parallel} free devices of {target_word}: models in parallel")
        with ThreadPoolExecutor(parallel) as pool:
            benches = list(pool.map(one, models))
    else:
        benches = [one(m) for m in models]
    rows = [benchmark.table_row(b) for b in benches]
    raw = [benchmark.bench_json(b) for b in benches]
    folder = outpath.check_folder(out, "--out")  # again: the folder may have changed during the benchmarks
    folder.mkdir(exist_ok=True)
    md = report.published_table_md(rows, target_word)
    outpath.write(folder / "table.md", md)
    outpath.write(folder / "table.csv", report.rows_csv(rows))
    outpath.write(folder / "table.json", plan_json.dumps({"rows": rows, "runs": raw, "machine": report.machine()},
                                                         indent=1))
    tmp = outpath.temp_path(folder / "table.png")
    try:
        if chart is None:
            raise RuntimeError("no chart drawer was given")
        chart(rows, tmp)
        os.replace(tmp, folder / "table.png")
    except Exception as e:  # noqa: BLE001 - the chart is a bonus; the table stands without it
        note(f"(no PNG chart: {e})")
    finally:
        tmp.unlink(missing_ok=True)
    return Table(md, folder)
