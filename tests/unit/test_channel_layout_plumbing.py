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

from engine.planner.setup import Setup
from engine.model import loader, opgraph

from engine.util.errors import FuseLensError, PlanError
from tests.support.cli_hardening import no_work_done
from tests.support.hardening2 import run_cli, one_line
from tests.support.channel_layout_plumbing import BLOCK, COMMANDS, cnn  # noqa: F401


def test_layout_names():
    assert opgraph.layout_name(None) == "NCHW" and opgraph.layout_name(16) == "NCHW16c"
    assert opgraph.layout_block("NCHW16c") == 16 and opgraph.layout_block("NCHW") is None
    for bad in ("NHWC", "NCHW0c", "nchw16c", ""):
        with pytest.raises(ValueError):
            opgraph.layout_block(bad)


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


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_layout_is_one_line_before_any_work(command, cnn, tmp_path):
    cache = tmp_path / "cache"
    line = one_line(run_cli(*COMMANDS[command](cnn), "--layout", "NHWC", cache=cache), match="--layout")
    assert "auto" in line and "nchw" in line
    no_work_done(cache)

