"""One Setup (engine/planner/setup.py): the run settings resolved once at each front end's edge. A bad
target, profile, cost or layout is one clear line there; the command line and the app resolve the same
words to equal Setups; the engine takes a Setup and never a word."""
from __future__ import annotations

import pytest

import cli
import main
from cli.parser import build_parser
from engine.devices import hardware, targets
from engine.planner import make_plan, setup
from engine.planner.setup import Setup
from engine.util.errors import FuseLensError, PlanError, TargetError
from gui.workspace import Workspace
from tests.support import synthetic


def _cli(argv):
    a = build_parser().parse_args(argv)
    cli.validate(a)
    return a


@pytest.mark.parametrize("words, error, match", [
    ({"target": "tpu:0"}, TargetError, r"^unknown target 'tpu:0'; use cpu"),
    ({"hardware": "z80"}, FuseLensError, r"^unknown hardware profile 'z80'; choose from"),
    ({"cost": "guess"}, PlanError, r"^unknown cost 'guess'; choose from model, roofline, learned, measured$"),
    ({"layout": "NCHWc"}, FuseLensError, r"^--layout 'NCHWc': choose one of auto, blocked, nchw$"),
    ({"target": "cuda:0", "layout": "blocked"}, FuseLensError, r"^--layout blocked: cuda:0 has no blocked"),
])
def test_a_bad_word_is_one_line_at_the_edge(words, error, match):
    with pytest.raises(error, match=match) as e:
        setup.resolve(**words)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("argv, match", [
    (["plan", "zoo:mobilenetv2", "--target", "tpu:0"], "unknown target 'tpu:0'"),
    (["plan", "zoo:mobilenetv2", "--hardware", "z80"], "unknown hardware profile 'z80'"),
    (["bench", "zoo:mobilenetv2", "--target", "cuda:0", "--layout", "blocked"], "--layout blocked: cuda:0"),
])
def test_the_command_line_reports_it_as_one_line_before_any_work(argv, match, capsys):
    assert main.main(argv) == cli.USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and match in err and err.count("\n") == 1


def test_the_app_reports_it_as_one_line_too():
    ws = Workspace(profile="z80")
    with pytest.raises(FuseLensError, match=r"^unknown hardware profile 'z80'"):
        ws.setup
    ws = Workspace(profile="t4")
    ws.set_device("tpu:0")
    with pytest.raises(TargetError, match=r"^unknown target 'tpu:0'"):
        ws.setup


@pytest.mark.parametrize("target, profile, cost", [("cpu", "t4", "learned"), ("cpu", "host", "measured"),
                                                   ("cuda:sm_80", "a100", "roofline")])
def test_the_command_line_and_the_app_resolve_the_same_words_to_equal_setups(target, profile, cost):
    cli = _cli(["plan", "zoo:mobilenetv2", "--target", target, "--hardware", profile, "--cost", cost]).setup
    ws = Workspace(profile=profile, cost=cost)
    ws.set_device(target)
    assert ws.setup == cli == setup.resolve(target, profile, cost)
    assert isinstance(cli.target, targets.Target) and isinstance(cli.hardware, hardware.Hardware)
    assert cli.target.spec == target and cli.hardware.name == profile and cli.cost == cost
    assert ws.setup is ws.setup                         # resolved once per choice
    assert (cli.block is None) == target.startswith("cuda")      # the channel layout is the target's


def test_the_defaults_follow_the_target():
    s = setup.resolve("cuda:sm_80", cost=None)
    assert s.hardware.name == "t4" and s.cost == "model" and s.block is None   # a GPU: its profile, the model
    s = setup.resolve("cpu", cost=None, layout="nchw")
    assert s.hardware.name == "host" and s.cost == "measured" and s.block is None
    assert setup.resolve("cpu").block in (4, 8, 16)                           # the CPU's vector lanes


def test_the_engine_takes_a_setup_never_a_word():
    hw = hardware.get("t4")
    for bad in ({"hardware": "t4"}, {"hardware": hw, "target": "cpu"}, {"hardware": hw, "block": 0}):
        with pytest.raises(TypeError):
            Setup(**bad)
    with pytest.raises(PlanError, match="unknown cost"):
        Setup(hw, cost="guess")
    g = synthetic.chain(6)
    with pytest.raises(TypeError, match="Setup"):
        make_plan(g, "greedy", hw)
    assert make_plan(g, "greedy", Setup(hw)).hardware == "t4"
