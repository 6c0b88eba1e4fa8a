"""Issue 31, hardening round three (the terminal's side of classes 1-3).

1. closed standard streams: every command exits as documented and writes its files whichever of
   stdin, stdout and stderr the caller closed (`<&- >&- 2>&-`; engine/util/stdio.py setup);
2. damaged numbers in files: a number of the wrong type (true), not finite (Infinity, NaN) or out of
   range (1e300, a denormal 5e-324, -5) in a cache, profile, learned model or FMA-peak file is a miss
   (the file deleted, the figure worked out again); in a plan file one line (engine/util/numbers.py);
3. hostile text: ESC sequences, BEL, NUL, U+202E, lone surrogates and newlines from files, names,
   paths and targets reach the terminal escaped (engine/util/stdio.py for_terminal), never forge a
   line, and never crash the encoder (PYTHONIOENCODING=ascii)."""
from __future__ import annotations

import json
import re

import sys

from pathlib import Path
import pytest
from engine.planner.setup import Setup
from engine.util import numbers, stdio
from tests.conftest import ROOT
from tests.support.cli import run_cli
from tests.support.hardening3 import CLI_TIMEOUT, CLOSE, closed  # noqa: F401


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x00\x7f\x9b\u202e\u2066\ud800"


def _plan(strategy: str, detail: str):
    from engine.devices import hardware
    from engine.planner import make_plan
    from tests.support import synthetic

    g = synthetic.residual(12)
    hw = hardware.get("t4")
    p = make_plan(g, "greedy", Setup(hw, cost="roofline"))
    p.strategy = strategy
    if p.explanations:
        p.explanations[0] = {**p.explanations[0], "detail": detail}
    return g, p, hw


@pytest.mark.parametrize("close", list(CLOSE))
@pytest.mark.parametrize("args,code,line", [
    (("inspect", "/nonexistent.onnx"), 2, r"^error: /nonexistent\.onnx: file not found$"),
    (("plan", "--bogus"), 2, r"^error: .*\(see main.py plan --help\)$"),
    (("cache", "clear"), 0, None),
])
def test_cheap_commands_exit_as_documented_with_streams_closed(close, args, code, line, tmp_path):
    r = closed(close, *args, cache=tmp_path / "cache")
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    if close in ("stdin", "stdout") and line:   # stderr still open: the one line is there
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and re.search(line, lines[0]), r.stderr
    if close == "stdin" and code == 0:
        assert "cleared " in r.stdout


def test_setup_fills_closed_fds_and_none_streams(monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    stdio.setup()
    assert sys.stdout is not None and sys.stderr is not None
    stdio.write(None, "quiet")                         # a None stream: nothing, no error
    assert not stdio.isatty(None)

    class Broken:
        def isatty(self):
            raise ValueError("I/O operation on closed file")
    assert not stdio.isatty(Broken())


def test_the_number_checks():
    assert numbers.is_number(1) and numbers.is_number(2.5)
    for bad in (True, False, None, "1", float("inf"), float("nan"), [1]):
        assert not numbers.is_number(bad)
    assert numbers.finite(5, 0, 10) and not numbers.finite(-5, 0, 10) and not numbers.finite(1e300, 0, 1e12)
    assert not numbers.positive(5e-324) and numbers.positive(1e9)
    assert numbers.sane({"a": [1, 2.5, 0.0, -3e20, {"b": 1e-12}], "s": "x", "t": True})
    for bad in (1e300, 5e-324, -1e31, 2 ** 64):
        assert not numbers.sane({"a": [bad]})
    for text in ('{"a": Infinity}', '{"a": NaN}', '{"a": -Infinity}', '{"a": 1e300}', '{"a": 5e-324}'):
        with pytest.raises(ValueError):
            numbers.loads(text)


@pytest.mark.parametrize("value", ["Infinity", "NaN", "1e300", "5e-324", "-1e999"])
def test_a_cache_file_of_figures_with_a_damaged_number_is_a_miss_and_deleted(value, tmp_path):
    from engine.util.cache_dir import read_json

    f = tmp_path / "x.json"
    f.write_text('{"rate": %s}' % value)
    assert read_json(f, numbers=True) is None and not f.exists()
    f.write_text('{"max": 3.4028234663852886e+38, "min": -Infinity}')   # an ONNX attribute in graph.json
    assert read_json(f) is not None and f.exists()


@pytest.mark.parametrize("flops", ["Infinity", "true", "5e-324", "1e300", "-3", '"7e10"'])
def test_a_damaged_fma_peak_is_measured_again(flops, private_cache, monkeypatch):
    from engine.devices import fma_probe
    from engine.util.cache_dir import cache_dir

    key = {"model": "m", "cores": 2, "vector_bits": 512, "probe": fma_probe.VERSION}
    (cache_dir() / "fma-peak.json").write_text('{"key": %s, "flops": %s}' % (json.dumps(key), flops))
    monkeypatch.setattr(fma_probe, "measure", lambda *a: 7.0e10)
    got, src = fma_probe.peak(2, 512, "m")
    assert got == 7.0e10 and "inf" not in src
    assert json.loads((cache_dir() / "fma-peak.json").read_text())["flops"] == 7.0e10


@pytest.mark.parametrize("field,value", [("peak_flops", 5e-324), ("peak_flops", True), ("bandwidth", 1e300),
                                         ("compute_efficiency", 5e-324), ("launch_us", -5), ("units", 10 ** 12)])
def test_a_damaged_host_profile_is_detected_again(field, value, private_cache, monkeypatch):
    from engine.devices import hardware
    from engine.util.cache_dir import cache_dir

    monkeypatch.setattr(hardware, "measure_bandwidth", lambda *a, **k: 2.0e10)
    good = hardware.host(refresh=True)
    f = cache_dir() / "host.json"
    d = json.loads(f.read_text())
    d["hardware"][field] = value
    f.write_text(json.dumps(d))
    again = hardware.host()
    assert again.peak_flops == good.peak_flops and again.bandwidth == 2.0e10 and again.compute_efficiency > 0
    assert json.loads(f.read_text())["hardware"][field] != value      # detected again and written back


@pytest.mark.parametrize("rate", [5e-324, True, 1e300, "1e10", -1.0])
def test_a_damaged_calibration_is_none(rate, private_cache):
    from engine.devices import hardware
    from engine.planner import calibrate, kernel_timing

    hw = hardware.get("t4")
    tkey = kernel_timing.target_key("cpu")
    f = calibrate._file(tkey)
    prof = {"launch_us": 5.0, "compute_rate": 1e12, "byte_rate": 1e11, "n": 10}
    f.write_text(json.dumps({"format": calibrate.FORMAT, "target": tkey, "profiles": {hw.name: prof}}))
    assert calibrate.calibrated(hw, "cpu").compute_efficiency == pytest.approx(1e12 / hw.peak_flops)
    f.write_text(json.dumps({"format": calibrate.FORMAT, "target": tkey,
                             "profiles": {hw.name: {**prof, "compute_rate": rate}}}))
    assert calibrate.calibrated(hw, "cpu") is None


@pytest.mark.parametrize("residual", [1e300, True, -1.0, "0.3", float("inf")])
def test_a_learned_model_with_a_damaged_residual_is_refused(residual):
    from engine.planner import learned

    files = sorted(learned.SHIPPED.glob("*.json"))
    if not files:
        pytest.skip("no shipped learned model")
    d = json.loads(files[0].read_text())["model"]
    assert learned.LearnedModel.from_json(d) is not None
    assert learned.LearnedModel.from_json({**d, "residual": residual}) is None


def test_a_local_learned_model_with_a_residual_of_1e300_is_a_miss_and_deleted(tmp_path):
    from engine.planner import features, learned
    from engine.planner.kernel_timing import schedule_version

    files = sorted(learned.SHIPPED.glob("*.json"))
    if not files:
        pytest.skip("no shipped learned model")
    store = learned.LocalStore("cpu-test", cache=tmp_path)
    doc = {"format": learned.FORMAT, "target": "cpu-test", "feature_version": features.FEATURE_VERSION,
           "schedule_version": schedule_version(), "samples": [], "model_local": 3,
           "model": json.loads(files[0].read_text())["model"]}
    store.path.write_text(json.dumps(doc))
    assert store.model()[0] is not None
    store.path.write_text(json.dumps({**doc, "model": {**doc["model"], "residual": 1e300}}))
    assert store.model() == (None, 0) and not store.path.exists()    # gone: the next run is not broken too


@pytest.mark.parametrize("key,value", [("planning_ms", -5), ("planning_ms", 1e300), ("estimated_us", True),
                                       ("planning_ms", 1e13)])
def test_a_plan_file_with_a_damaged_figure_is_one_line(key, value):
    from engine.planner import plan_json
    from engine.util.errors import PlanError

    d = {"schema": plan_json.SCHEMA, "model": {"sha256": "x"}, "groups": [], key: value}
    with pytest.raises(PlanError, match=re.escape(repr(key))):
        plan_json.check_schema(d, "p.json")
    plan_json.check_schema({**d, key: 12.5}, "p.json")


def test_for_terminal_escapes_what_a_terminal_acts_on():
    out = stdio.for_terminal("a\n\tb" + HOSTILE)
    assert out == "a\n\tb\\x1b]0;pwned\\x07\\x1b[2J\\x00\\x7f\\x9b\\u202e\\u2066\\ud800"
    assert stdio.one_value("x\nerror: y\r") == "x\\x0aerror: y\\x0d"
    assert stdio.for_terminal("plain: é ü 中") == "plain: é ü 中"
    out.encode("utf-8")                                # no lone surrogate left


def test_reports_escape_data_so_no_line_is_forged():
    from engine.report import text

    g, p, hw = _plan("greedy" + HOSTILE + "\nerror: forged", "why\nerror: forged too\x1b[31m")
    out = text.plan_summary(g, p, hw, explain=True)
    assert not any(ln.startswith("error:") for ln in out.splitlines())
    assert "\x1b" not in out and "\u202e" not in out and "\x00" not in out
    assert "\\x1b]0;pwned" in out and "\\x0aerror: forged" in out
    out.encode("utf-8")
    t = text.table([["a\nerror: b", 1]], ["name\x1b[2J", "n"])
    assert len(t.splitlines()) == 3 and "\x1b" not in t


def test_the_error_line_is_one_escaped_line(capsys, tmp_path, monkeypatch):
    import main

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    code = main.main(["inspect", f"/nonexistent{HOSTILE}\nerror: forged.onnx"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: /nonexistent\\x1b]0;pwned"), err
    assert "\x1b" not in err and "\u202e" not in err and "\\ud800" in err


def test_print_escapes_and_survives_an_encoding_that_cannot_hold_a_character(capsys):
    import io

    from cli.output import say

    say("a" + HOSTILE, "b\nc")
    assert capsys.readouterr().out == "a\\x1b]0;pwned\\x07\\x1b[2J\\x00\\x7f\\x9b\\u202e\\u2066\\ud800 b\\x0ac\n"
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii")   # errors="strict", as PYTHONIOENCODING=ascii had it
    say("é → ok", file=ascii_out)
    ascii_out.flush()
    assert raw.getvalue() == b"\\xe9 \\u2192 ok\n"


@pytest.mark.parametrize("env", [{}, {"PYTHONIOENCODING": "ascii"}])
def test_hostile_paths_and_targets_on_the_command_line(env, tmp_path):
    cache = tmp_path / "cache"
    path = b"/tmp/na\xff\x1b]0;t\x07\xe2\x80\xae\xc3\xa9.onnx"     # a byte that is no UTF-8: a lone surrogate
    r = run_cli("inspect", path, cache=cache, env=env, text=False, timeout=CLI_TIMEOUT)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.count(b"\n") == 1 and b"\x1b" not in r.stderr and b"\xe2\x80\xae" not in r.stderr, r.stderr
    assert b"\\udcff\\x1b]0;t\\x07\\u202e" in r.stderr and b"Traceback" not in r.stderr
    r = run_cli("bench", "zoo:mobilenetv2", "--target", "cpu\x1b[2J\u202e\nerror: forged", cache=cache, env=env, text=False,
                timeout=CLI_TIMEOUT)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"\x1b" not in r.stderr, r.stderr


def test_an_internal_error_with_hostile_text_is_one_escaped_line_and_a_log(capsys, tmp_path, monkeypatch,
                                                                            tiny_model):
    import cli.commands.inspect
    import main

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m\udcff.onnx"          # a file name of a byte that is no UTF-8
    model.write_bytes(Path(tiny_model).read_bytes())

    def boom(a):
        raise RuntimeError("boom\x1b[2J\ud800\nerror: forged")
    monkeypatch.setattr(cli.commands.inspect, "run", boom)
    code = main.main(["inspect", str(model)])
    err = capsys.readouterr().err
    assert code == cli.INTERNAL and err.count("\n") == 1, err
    assert err.startswith("internal error: RuntimeError: boom\\x1b[2J\\ud800 error: forged (details in "), err
    log = Path(err.rsplit("(details in ", 1)[1].rstrip(")\n"))
    assert "m\\udcff.onnx" in log.read_text()

