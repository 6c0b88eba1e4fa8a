"""The channel layout through loader, CLI, plan files and the app (issue 20, part 2).

The blocked layout (NCHW[x]c, engine/model/blocked_layout.py) is applied before LegalizeOps, so the
prepared module and the OpGraph depend on it: the loader's cache entry, its in-process memo and the
graph's hash are per layout; a plan file records its layout and is refused on a graph of another; every
command that loads a model takes --layout {auto,blocked,nchw}; the app reopens the model when the
chosen device has another layout. These tests run the real pass.
"""
from __future__ import annotations

import json

import onnx
import pytest

from engine.devices import targets
from engine.planner.setup import Setup
from engine.model import loader, opgraph
from engine.util.errors import FuseLensError, PlanError
from tests.models import small_cnn_onnx
from tests.test_cli_hardening import no_work_done
from tests.test_hardening2 import cli, one_line

BLOCK = 8   # small_cnn_onnx's channels (8, 16) divide by it


@pytest.fixture
def cnn(tmp_path):
    p = tmp_path / "cnn.onnx"
    onnx.save(small_cnn_onnx(hw=16), p)
    return p


def test_layout_names():
    assert opgraph.layout_name(None) == "NCHW" and opgraph.layout_name(16) == "NCHW16c"
    assert opgraph.layout_block("NCHW16c") == 16 and opgraph.layout_block("NCHW") is None
    for bad in ("NHWC", "NCHW0c", "nchw16c", ""):
        with pytest.raises(ValueError):
            opgraph.layout_block(bad)


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


def test_an_entry_of_another_layout_is_a_miss(cnn, private_cache):
    g = loader.load(str(cnn), block=BLOCK)
    entry = loader.entry_dir(g.sha256)
    d = json.loads((entry / "graph.json").read_text())
    d["layout"] = "NCHW"                           # a graph.json that says another layout than its key
    (entry / "graph.json").write_text(json.dumps(d))
    loader.clear_memo()
    assert loader.load_cached(g.sha256, g.input_shapes, g.layout) is None and not entry.exists()


def test_bad_block_is_one_clear_error(cnn, private_cache):
    for bad in (0, -4, "16", 2.0, True):
        with pytest.raises(FuseLensError, match="bad channel block"):
            loader.load(str(cnn), block=bad)


def test_block_for_target():
    assert loader.block_for_target(targets.HOST, "nchw") is None
    assert loader.block_for_target(targets.parse("cuda:0")) is None            # auto on CUDA: NCHW
    cpu = loader.block_for_target(targets.HOST)
    assert cpu in (4, 8, 16) and loader.block_for_target(targets.HOST, "blocked") == cpu
    assert loader.block_for_target(targets.parse("rpc://127.0.0.1:9190/rpi4b")) == 4   # a board over RPC: NEON, 128 bits
    with pytest.raises(FuseLensError, match="no blocked channel layout"):
        loader.block_for_target(targets.parse("cuda:0"), "blocked")
    with pytest.raises(FuseLensError, match="choose one of auto, blocked, nchw"):
        loader.block_for_target(targets.HOST, "NCHWc")


def test_plan_json_carries_the_layout_and_refuses_another(cnn, private_cache):
    from engine.planner import make_plan, plan_json, profiles

    hw = profiles.get("host")
    nchw, blocked = loader.load(str(cnn)), loader.load(str(cnn), block=BLOCK)
    d = plan_json.to_dict(make_plan(blocked, "greedy", Setup(hw, cost="roofline")), blocked, hw)
    assert d["model"]["layout"] == f"NCHW{BLOCK}c"
    assert plan_json.from_dict(json.loads(json.dumps(d)), blocked).groups
    with pytest.raises(PlanError, match=rf"for the NCHW{BLOCK}c channel layout, but the loaded .* is in NCHW;") as e:
        plan_json.from_dict(d, nchw, "p.json")
    assert "\n" not in str(e.value) and "--layout blocked" in str(e.value)
    old = plan_json.to_dict(make_plan(nchw, "greedy", Setup(hw, cost="roofline")), nchw, hw)
    del old["model"]["layout"]                      # a plan file from before layouts: NCHW
    assert plan_json.from_dict(old, nchw).groups
    with pytest.raises(PlanError, match="--layout nchw"):
        plan_json.from_dict(old, blocked)
    old["model"]["layout"] = 16
    with pytest.raises(PlanError, match="model.layout"):
        plan_json.from_dict(old, nchw)


COMMANDS = {   # every command that loads a model, with what it needs besides --layout
    "inspect": lambda m: ["inspect", m],
    "plan": lambda m: ["plan", m, "--cost", "roofline"],
    "bench": lambda m: ["bench", m, "--strategies", "none", "--repeat", "1"],
    "table": lambda m: ["table", "--models", "mobilenetv2"],
    "tune": lambda m: ["tune", m, "--trials", "1"],
    "calibrate": lambda m: ["calibrate", m],
    "fidelity": lambda m: ["fidelity", m],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_layout_is_one_line_before_any_work(command, cnn, tmp_path):
    cache = tmp_path / "cache"
    line = one_line(cli(*COMMANDS[command](cnn), "--layout", "NHWC", cache=cache), match="--layout")
    assert "auto" in line and "nchw" in line
    no_work_done(cache)


@pytest.mark.parametrize("command", ["plan", "bench", "tune", "fidelity"])
def test_blocked_on_cuda_is_one_line(command, cnn, tmp_path):
    cache = tmp_path / "cache"
    args = COMMANDS[command](cnn) + ["--layout", "blocked", "--target", "cuda:sm_80" if command in ("plan", "tune")
                                     else "cuda"]
    # bench and fidelity check that the device is there first: without a GPU that is their one line
    line = one_line(cli(*args, cache=cache))
    assert "no blocked channel layout" in line or command in ("bench", "fidelity")
    no_work_done(cache)


def test_inspect_and_plan_follow_layout(cnn, tmp_path):
    cache = tmp_path / "cache"
    r = cli("inspect", cnn, "--json", "--layout", "nchw", cache=cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layout"] == "NCHW"
    r = cli("inspect", cnn, "--json", cache=cache)   # auto: the cpu's, blocked
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layout"] == opgraph.layout_name(loader.block_for_target(targets.HOST))
    out = tmp_path / "p.json"
    r = cli("plan", cnn, "--cost", "roofline", "--out", out, cache=cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["model"]["layout"] != "NCHW"
    r = cli("plan", cnn, "--from", out, "--layout", "nchw", cache=cache)
    assert "channel layout" in one_line(r)


def test_the_app_reopens_the_model_when_the_device_has_another_layout(new_window, qtbot, cnn):
    from tests.gui_helpers import loaded, open_model, settle

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
