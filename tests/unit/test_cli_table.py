"""The command line is built from a table (cli.commands.ROWS): every row is a subcommand, shared arguments are
declared once, values are parsed once at the edge (validate: a Target, a Hardware), and the benchmark's
options travel in one frozen engine.measure.benchmark.BenchRequest."""
from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import cli
import main
from cli import commands
from cli.parser import build_parser
from engine.devices import hardware, targets
from engine.measure import benchmark
from engine.util.errors import FuseLensError

SRC = "\n".join(p.read_text() for p in sorted(Path(cli.__file__).parent.rglob("*.py")))


def _help(*argv) -> str:
    """What `main.py [ARGV] --help` prints (argparse's own text: its public face)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return out.getvalue()


def test_every_row_is_a_subcommand_in_order():
    names = [c.name for c in commands.ROWS]
    assert tuple(names) == commands.COMMANDS and len(set(names)) == len(names)
    assert re.search(r"\{([a-z,]+)\}", _help()).group(1).split(",") == names
    assert all(c.run is not None for c in commands.ROWS)


@pytest.mark.parametrize("flag", ["--target", "--hardware", "--repeat", "--force", "--cost", "--layout",
                                  "--input-shape", "--strategy"])
def test_a_shared_argument_is_declared_in_one_place(flag):
    assert len(re.findall(rf'\barg\("{flag}"', SRC)) == 1
    assert f'add_argument("{flag}"' not in SRC
    subcommands = [c.name for c in commands.ROWS if c.name not in ("zoo", "cache")]
    assert sum(re.search(rf"(^|[\s\[]){flag}\b", _help(c)) is not None for c in subcommands) >= 2   # and shared


def _check(argv):
    a = build_parser().parse_args(argv)
    cli.validate(a)
    return a


def test_values_are_parsed_once_into_a_setup(monkeypatch):
    """--target, --hardware, --cost and --layout become one Setup (engine/planner/setup.py), parsed once;
    the arguments keep the words given."""
    from engine.planner.setup import Setup

    calls = []
    parse = targets.parse
    monkeypatch.setattr(targets, "parse", lambda s: calls.append(s) or parse(s))
    a = _check(["plan", "zoo:mobilenetv2", "--target", "cuda:sm_80", "--hardware", "a100"])
    assert calls == ["cuda:sm_80"]
    assert isinstance(a.setup, Setup) and a.target == "cuda:sm_80" and a.hardware == "a100"
    assert isinstance(a.setup.target, targets.Target) and a.setup.target.spec == "cuda:sm_80"
    assert isinstance(a.setup.hardware, hardware.Hardware) and a.setup.hardware.name == "a100"
    assert a.setup.cost == "model" and a.setup.block is None          # plan's default; CUDA stays NCHW
    a = _check(["tune", "zoo:mobilenetv2", "--target", "cuda:sm_80"])
    assert a.setup.hardware.name == "t4"            # no --hardware: the target's own profile
    a = _check(["bench", "zoo:mobilenetv2", "--layout", "nchw"])
    assert a.setup.cost == "measured" and a.setup.block is None     # bench's default on the CPU: measured


@pytest.mark.parametrize("argv, match", [
    (["bench", "zoo:mobilenetv2", "--target", "bogus"], r"^unknown target 'bogus'; use cpu"),
    (["bench", "zoo:nope", "--target", "bogus"], r"^zoo:nope: unknown zoo model"),   # the first bad one
    (["bench", "zoo:mobilenetv2", "--hardware", "zz", "--target", "bogus"], r"^unknown hardware profile 'zz'"),
    (["fidelity", "zoo:mobilenetv2", "--target", "bogus", "--hardware", "zz"], r"^unknown hardware profile 'zz'"),
])
def test_checks_run_in_order_and_a_bad_value_is_reported_once(argv, match):
    with pytest.raises(FuseLensError, match=match):
        _check(argv)


def test_a_bad_target_is_one_line_with_the_parsers_message(capsys):
    with pytest.raises(FuseLensError) as e:
        targets.parse("bogus")
    assert main.main(["tune", "zoo:mobilenetv2", "--target", "bogus"]) == cli.USAGE
    err = capsys.readouterr().err
    assert err == f"error: {e.value}\n"


def test_bench_request_is_frozen_and_takes_a_setup():
    from engine.planner import setup
    from engine.planner.setup import Setup

    s = setup.resolve("cuda:1", cost=None)
    r = benchmark.BenchRequest("zoo:mobilenetv2", None, s, repeat=3)
    assert r.setup is s and r.target is s.target and r.target.index == 1
    assert s.hardware.name == "t4" and s.cost == "model"           # the target's own profile and default cost
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.repeat = 5
    assert dataclasses.replace(r, tuned=False).tuned is False and r.tuned is True
    with pytest.raises(TypeError, match="Setup"):
        benchmark.BenchRequest("m", None, "cpu")                   # words are resolved at the edge, not here
    hw = hardware.get("t4")
    assert benchmark.BenchRequest("m", None, Setup(hw)).setup.hardware is hw


def test_the_benchmark_entry_points_take_a_request():
    assert list(inspect.signature(benchmark.measure_plans).parameters) == ["req", "plans"]
    assert list(inspect.signature(benchmark.bench_model).parameters) == ["req", "strategies", "imported"]
