"""The channel layout through loader, CLI, plan files and the app (issue 20, part 2).

The blocked layout (NCHW[x]c, engine/model/blocked_layout.py) is applied before LegalizeOps, so the
prepared module and the OpGraph depend on it: the loader's cache entry, its in-process memo and the
graph's hash are per layout; a plan file records its layout and is refused on a graph of another; every
command that loads a model takes --layout {auto,blocked,nchw}; the app reopens the model when the
chosen device has another layout. These tests run the real pass."""
from __future__ import annotations

import json
import pytest
from engine.devices import targets
from engine.model import loader, opgraph
from tests.support.cli_hardening import no_work_done
from tests.support.hardening2 import run_cli, one_line
from tests.support.channel_layout_plumbing import BLOCK, COMMANDS, cnn  # noqa: F401


def test_two_layouts_two_entries_and_memo_not_mixed(cnn, private_cache):
    nchw = loader.load(str(cnn))
    blocked = loader.load(str(cnn), block=BLOCK)
    assert (nchw.layout, blocked.layout) == ("NCHW", f"NCHW{BLOCK}c") and blocked.block == BLOCK
    assert nchw.sha256 != blocked.sha256          # every cache keyed by the graph's hash is per layout
    entries = sorted(p.name for p in (private_cache / "models").iterdir() if not p.name.startswith("."))
    assert len(entries) == 2 and all(f"-v{loader.CACHE_VERSION}." in e for e in entries)
    # the memo answers each layout with its own graph
    assert loader.load(str(cnn)) is nchw and loader.load(str(cnn), block=BLOCK) is blocked
    assert "layout_transform" in {n.op for n in blocked.nodes} or len(blocked) != len(nchw)
    # and so does the disk cache, after the memo is gone
    loader.clear_memo()
    again = loader.load(str(cnn), block=BLOCK)
    assert again is not blocked and again.layout == blocked.layout and again.sha256 == blocked.sha256
    assert [n.id for n in again.nodes] == [n.id for n in blocked.nodes]
    assert opgraph.to_json(again)["layout"] == again.summary()["layout"] == f"NCHW{BLOCK}c"
    assert again.mod is not None                  # module.npz of the blocked entry


@pytest.mark.parametrize("command", ["plan", "bench", "tune", "fidelity"])
def test_blocked_on_cuda_is_one_line(command, cnn, tmp_path):
    cache = tmp_path / "cache"
    args = COMMANDS[command](cnn) + ["--layout", "blocked", "--target", "cuda:sm_80" if command in ("plan", "tune")
                                     else "cuda"]
    # bench and fidelity check that the device is there first: without a GPU that is their one line
    line = one_line(run_cli(*args, cache=cache))
    assert "no blocked channel layout" in line or command in ("bench", "fidelity")
    no_work_done(cache)


def test_inspect_and_plan_follow_layout(cnn, tmp_path):
    cache = tmp_path / "cache"
    r = run_cli("inspect", cnn, "--json", "--layout", "nchw", cache=cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layout"] == "NCHW"
    r = run_cli("inspect", cnn, "--json", cache=cache)   # auto: the cpu's, blocked
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layout"] == opgraph.layout_name(loader.block_for_target(targets.HOST))
    out = tmp_path / "p.json"
    r = run_cli("plan", cnn, "--cost", "roofline", "--out", out, cache=cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["model"]["layout"] != "NCHW"
    r = run_cli("plan", cnn, "--from", out, "--layout", "nchw", cache=cache)
    assert "channel layout" in one_line(r)


def test_the_app_reopens_the_model_when_the_device_has_another_layout(new_window, qtbot, cnn):
    from tests.support.gui_helpers import loaded, open_model, settle

    w = new_window()
    settle(qtbot, w)
    doc = open_model(qtbot, w, cnn)
    cpu = opgraph.layout_name(w.model.setup.block)
    assert doc.graph.layout == cpu != "NCHW"
    assert f"{cpu} layout" in w.props.topLevelItem(0).text(0)      # the properties say which layout the graph is in
    gpu = loaded(qtbot, w, lambda: w.bench.choose_device("cuda:0"))   # reopened, in the background
    assert gpu is not doc and gpu.graph.layout == "NCHW" and gpu.spec == doc.spec
    assert w.files.needs_reopen("cpu") and not w.files.needs_reopen("cuda:0")
    assert "NCHW layout" in w.props.topLevelItem(0).text(0)
    back = loaded(qtbot, w, lambda: w.bench.choose_device("cpu"))
    assert back.graph.layout == cpu and back.graph.sha256 == doc.graph.sha256

