"""Fuzzing, CI-sized (issue 11): Hypothesis draws mutated ONNX models, mutated plan files and random
command lines (tests/fuzzing.py: the strategies and the properties), a few hundred cases in all,
derandomized so that every run draws the same ones. scripts/fuzz_long.py runs the same targets for
as long as one likes.

The properties: the ONNX loader (and the planning `plan` does after it) returns a graph or raises a
FuseLensError; the plan importer returns a legal Plan or raises a PlanError; every command exits 0
or 2 (1 where a benchmark finds an incorrect result), with no traceback, no signal, and exactly one
line on stderr when it exits 2.

The @examples are cases a fuzzer found before their fix (commented; the commit that fixed each names
it) and edge cases worth trying on every run."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from tests.support import fuzzing as F
from tests.support.fuzz import CI, fixtures, plan_seeds, work  # noqa: F401


_OTHER = {"tiny": "mobilenetv2@32[:25]/greedy", "mobilenetv2@32[:25]": "tiny/greedy"}


def _cli(argv, fixtures, work):
    F.check_cli_args(argv, fixtures, work / "cli-cache")


def test_onnx_seeds_load(work):
    """Every seed loads and plans as it is: the fuzzer mutates working models."""
    with F.private_env(work / "seed-cache"):
        for name in F.SEED_NAMES:
            path, shapes = F.write_onnx_case((name, [], None), work / "seeds" / name)
            assert F.check_loader(path, shapes) == "ok", name


@settings(max_examples=200, **CI)
@given(case=F.onnx_cases())
# a flipped byte made a node name invalid UTF-8: protobuf returned bytes, storing graph.json raised TypeError
@example(case=("tiny", [("flip", [(184348399, 247), (547121625, 56)])], None))
# onnx warned "Ignoring unknown external data key(s)"; onnxsim printed "WARNING: failed to run" and a
# Python traceback on stderr while folding a Gemm of constants (found by fuzz_long)
@example(case=("tiny", [("init_external", 0, "model.onnx", [("junk", "1")])], None))
@example(case=("head", [("node_input", 8, 0, "fc_b")], None))
@example(case=("tiny", [("init_external", 0, "../x.bin", [])], None))
@example(case=("yolov4_tiny@32[:22]", [("attr_ints", 9, 0, -1)], None))
@example(case=("mobilenetv2@32[:25]", [("attr", 3, 0, 2 ** 62)], {"input": [1, 3, 32, 32]}))
# a Conv's strides [1, 0]: onnxsim's shape inference died of SIGFPE (found by fuzz_long)
@example(case=("head", [("attr_ints", 302120, 1173, 0)], None))
def test_fuzz_onnx_loader(case, work):
    path, shapes = F.write_onnx_case(case, work / "onnx-case")
    with F.private_env(work / "onnx-cache"):
        F.check_loader(path, shapes)


@settings(max_examples=5, **CI)
@given(case=F.onnx_cases(cli=True))
# onnx warned "Ignoring unknown external data key(s)" on stderr: three lines, not one; onnxsim printed a traceback
@example(case=("tiny", [("init_external", 0, "model.onnx", [("junk", "1")])], None))
@example(case=("head", [("node_input", 8, 0, "fc_b")], None))
def test_fuzz_onnx_cli(case, work):
    path, shapes = F.write_onnx_case(case, work / "onnx-cli-case")
    F.check_onnx_cli(path, shapes, work / "cli-cache")


@settings(max_examples=400, **CI)
@given(case=F.plan_cases())
# json's int() refused a 5000-digit number with a ValueError; float() of a 400-digit int: OverflowError
@example(case=("tiny/greedy", "own", [("number", 5, "1" * 5000)]))
@example(case=("tiny/greedy", "own", [("number", 0, "-" + "9" * 4400)]))
@example(case=("tiny/dp", "own", [("number", 75, "1" + "0" * 400)]))  # 75: estimated_us (the test below finds them all)
@example(case=("tiny/greedy", "other", [("graft", "mobilenetv2@32[:25]/greedy", "model.sha256")]))
@example(case=("tiny/greedy", "own", [("nest", 3, 200000)]))
def test_fuzz_plan_json(case, plan_seeds, work):
    seed, against, muts = case
    plans = {k: v[1] for k, v in plan_seeds.items()}
    data = F.apply_plan_mutations(plans[seed], plans, muts)
    graph = plan_seeds[seed if against == "own" else _OTHER[seed.split("/")[0]]][0]
    F.check_plan(data, graph, work / "plan-case")


@settings(max_examples=15, **CI)
@given(argv=F.cli_zoo())
@example(argv=["zoo", "export", "mobilenetv2", "{DIR}/" + "d" * 245, "--resolution", "32"])  # temp name too long: exit 70
@example(argv=["zoo", "export", "mobilenetv2", "{NULL_LINK}"])
def test_fuzz_cli_zoo(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=20, **CI)
@given(argv=F.cli_inspect())
@example(argv=["inspect", "/dev/zero"])            # read to the end of /dev/zero: MemoryError, exit 70
@example(argv=["inspect", "{FIFO}"])               # blocked forever reading a pipe
@example(argv=["inspect", "~nosuchuser-fuzz/x.onnx"])  # expanduser's RuntimeError: exit 70
@example(argv=["inspect", "{DIR}/" + "a" * 300 + ".onnx"])  # stat's "file name too long": exit 70
def test_fuzz_cli_inspect(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=15, **CI)
@given(argv=F.cli_plan())
@example(argv=["plan", "{TINY}", "--out", "{DIR}/" + "c" * 255])  # the temp file's name too long: exit 70
@example(argv=["plan", "{TINY}", "--out", "/proc/version"])      # root may "write" in /proc, mkstemp may not: exit 70
@example(argv=["plan", "{TINY}", "--out", "~nosuchuser-fuzz/out"])
@example(argv=["plan", "{TINY}", "--out", "{NULL_LINK}"])        # os.replace put a file where a device was
def test_fuzz_cli_plan(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=3, **CI)
@given(argv=F.cli_bench())
def test_fuzz_cli_bench(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=10, **CI)
@given(argv=F.cli_table())
@example(argv=["table", "--out", "{DIR}/" + "e" * 300, "--target", "gpu"])  # stat's "file name too long": exit 70
def test_fuzz_cli_table(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=10, **CI)
@given(argv=F.cli_tune())
def test_fuzz_cli_tune(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=20, **CI)
@given(argv=F.cli_misc())
@example(argv=["devices"])
@example(argv=["cache", "clear", "--what", "nosuch"])
def test_fuzz_cli_misc(argv, fixtures, work):
    _cli(argv, fixtures, work)


@settings(max_examples=6, **CI)
@given(argv=F.cli_cache_files())
# devices.json naming non-strings: AttributeError; host.json with a dict for a rate: TypeError planning (exit 70)
@example(argv=['@cache:devices.json={"rpc": [null]}', "devices"])
@example(argv=['@cache:devices.json={"rpc": 5}', "devices"])
@example(argv=['@cache:host.json={"facts": {HOST_FACTS}, "hardware": ' + json.dumps({**F._T4, "bandwidth_efficiency": {}})
               + "}", "plan", "{TINY}", "--hardware", "host", "--strategy", "greedy"])
def test_fuzz_cli_cache_files(argv, fixtures, work):
    """Damaged cache files a command reads (devices.json, host.json): a miss or a clear error, never exit 70."""
    _cli(argv, fixtures, work)


def test_harness_catches_what_it_should(fixtures, work, monkeypatch):
    """The command-line property passes a clean exit and argparse's usage errors (one "error: ..." line, no
    usage block), and fails an exit code it does not allow (the app without a display: 3)."""
    cache = work / "harness-cache"
    assert F.run_cli(["inspect", fixtures["{TINY}"]], cache) == "ok"
    assert F.run_cli(["plan", "--strategy"], cache) == "error"  # argparse: one error line, nothing more
    with pytest.raises(F.FuzzFailure, match="exit 3"):
        F.run_cli(["gui", fixtures["{TINY}"]], cache)
    with pytest.raises(F.FuzzFailure, match="exit 0"):
        F.run_cli(["inspect", fixtures["{TINY}"]], cache, allow=(2,))
    # no exception for argparse: a stock parser's usage line before its "main.py plan: error:" line fails
    stock = work / "stock_argparse.py"
    stock.write_text("import argparse\np = argparse.ArgumentParser(prog='main.py plan')\n"
                     "p.add_argument('--strategy')\np.parse_args()\n")
    monkeypatch.setattr(F, "MAIN", stock)
    with pytest.raises(F.FuzzFailure, match=r"exit 2 with 2 lines on stderr \(want one\)"):
        F.run_cli(["--strategy"], cache)

