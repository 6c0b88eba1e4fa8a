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

import os

import pytest
from tests.support import fuzzing as F
from tests.support.fuzz import fixtures, plan_seeds, work  # noqa: F401


def _drawn_kinds() -> set[str]:
    """The ONNX mutation kinds the strategies draw (read from tests/fuzzing.py)."""
    import inspect
    import re

    src = inspect.getsource(F)
    return set(re.findall(r'st\.just\("([a-z_]+)"\)', src[src.index("_byte_mutations ="):src.index("onnx_mutation =")]))


def test_plan_number_cases_hit_the_fields(plan_seeds, work):
    """The @examples above reach number fields (estimated_us, planning_ms), so they test what they claim."""
    plans = {k: v[1] for k, v in plan_seeds.items()}
    paths = list(F._paths(plans["tiny/dp"]))
    hits = [i for i, p in enumerate(paths) if p and p[-1] in ("estimated_us", "planning_ms")]
    assert len(hits) >= 3
    for i in hits:
        data = F.apply_plan_mutations(plans["tiny/dp"], plans, [("number", i, "1" + "0" * 400)])
        assert F.check_plan(data, plan_seeds["tiny/dp"][0], work / "plan-hits") == "error"
        assert b"1" + b"0" * 400 in data


def test_outputs_that_are_not_regular_files_are_refused(fixtures, work):
    """Found running the cli fuzzer as root: `plan --out /dev/full` put a regular file where the device
    was (os.replace). A device, pipe or symlink to a device is now refused before any work, and left
    alone. (Checked in process for the real device: a regression must not replace it.)"""
    from engine.util import outpath
    from engine.util.errors import UsageError

    for p in (os.devnull, fixtures["{FIFO}"], fixtures["{NULL_LINK}"]):
        with pytest.raises(UsageError, match="not a regular file"):
            outpath.check_file(p, "--out")
    assert F.run_cli(["plan", fixtures["{TINY}"], "--out", fixtures["{NULL_LINK}"]], work / "cli-cache") == "error"
    assert os.readlink(fixtures["{NULL_LINK}"]) == os.devnull


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_output_where_no_file_can_be_made_is_refused_before_any_work():
    """Found by the cli fuzzer as root: os.access says root may write in /proc, mkstemp fails there
    (exit 70, after the work). Both checks now make and remove a temp file where the output goes."""
    from engine.util import outpath
    from engine.util.errors import UsageError

    with pytest.raises(UsageError, match="cannot write in folder /proc"):
        outpath.check_file("/proc/version", "--out")
    with pytest.raises(UsageError, match="cannot write"):
        outpath.check_folder("/proc/fuselens-new", "--out")


def test_every_mutation_kind_changes_the_model():
    """No mutation kind is silently a no-op: each one changes the bytes of the head model."""
    cases = [("flip", [(5, 1)]), ("truncate", 10), ("delete", 10, 4), ("insert", 10, b"xx"), ("duplicate", 10, 8),
             ("drop_node", 0), ("drop_initializer", 0), ("drop_input", 0), ("drop_output", 0), ("drop_value_info", 0),
             ("swap_nodes", 0, 1), ("op_type", 0, "Relu"), ("node_input", 0, 0, "q"), ("node_output", 0, 0, "q"),
             ("add_node_input", 0, "q"), ("drop_node_input", 0, 0), ("domain", 0, "x"), ("drop_attr", 0, 0),
             ("clear_attrs", 0), ("attr", 0, 0, [1]), ("add_attr", 0, "group", 7), ("attr_ints", 0, 0, -1),
             ("dim", "input", 0, 1, 99), ("add_dim", "input", 0, 2), ("clear_shape", "input", 0),
             ("elem_type", "input", 0, 7), ("init_dims", 0, [1]), ("init_dtype", 0, 7), ("init_raw", 0, b"x"),
             ("init_external", 0, "../x.bin", []), ("opset", 9999), ("opset_domain", "x"), ("add_opset", "x", 1),
             ("drop_opsets",), ("ir_version", 3)]
    assert {c[0] for c in cases} == _drawn_kinds()
    seed = F.onnx_seeds()["head"]
    for c in cases:
        assert F.apply_onnx_mutations(seed, [c]) != seed, c

