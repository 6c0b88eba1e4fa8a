"""Issue 22, hardening round two: no hang, no crash, and exit 2 (not "internal error", 70) for every
fault of the user's environment.

1. network peers that accept the connection and never answer: every network step has a deadline
   (FUSELENS_NETWORK_TIMEOUT_S), one line naming the peer, exit 2;
2. special files (a FIFO, /dev/zero) as devices.json, as an ONNX model's external data, as a plan
   file imported in the app: refused at once, never read;
3. small inputs that crashed: 1,000 inputs to one op or a tensor of rank 4,000 (tir_stats' walks,
   now iterative), 10,000 inputs to one op (a segfault in TVM's importer: refused up front);
4. imported plans with a 1 MB node id, or a string in `notes` where the app reads a number;
5. a truncated zoo file in the cache: a miss, rebuilt;
6. the cache folder read-only, a file, or with a file for one of its folders; FUSELENS_MAX_TENSOR_BYTES=inf.

Every command line runs as a subprocess with a timeout and a private cache, so a regression fails
instead of hanging; in-process reads that could block run under `deadline` (SIGALRM)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.support.hardening2 import _mutated, _special, deadline, memory_cap  # noqa: F401


@pytest.fixture
def win(new_window, qtbot):
    pytest.importorskip("pytestqt")
    from tests.support import synthetic
    from tests.support.gui_helpers import open_graph

    w = new_window(profile="t4", strategy="greedy")
    open_graph(qtbot, w, synthetic.residual(24))
    return w


@pytest.mark.parametrize("how", ["fifo", "zero", "long id", "note string for number"])
def test_the_app_refuses_a_bad_plan_at_once_with_a_short_message(how, win, qtbot, tmp_path):
    from tests.support.gui_helpers import settle

    f = tmp_path / "p.json"
    if how in ("fifo", "zero"):
        _special(how, f)
    else:
        d = json.loads(Path(win.export_plan(tmp_path / "x.json", strategy="greedy")).read_text())
        f.write_text(json.dumps(_mutated(d, how)))
    before = win.doc.plans.get("custom")
    t0 = time.monotonic()
    with deadline(30), memory_cap():
        assert win.import_plan(f) is None
    assert time.monotonic() - t0 < 5             # the UI thread was never blocked
    text = win.area.banner_text.text()
    assert win.area.banner.isVisible() and "Import plan" in text and len(text) <= 2000, text[:300]
    assert {"fifo": "not a regular file", "zero": "not a regular file", "long id": "node id of 1,048,576",
            "note string for number": "notes.measured_group_us"}[how] in text, text[:300]
    assert win.doc.plans.get("custom") is before
    settle(qtbot, win)

