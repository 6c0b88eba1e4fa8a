"""Several dynamic inputs (issue 21): one message names every unresolved input, with one
--input-shape per input, shared dims given one size, and the flags it prints work when pasted."""

import re
import shlex

from tests.conftest import ROOT
from tests.support.cli_hardening import one_line
from tests.support.input_shapes_cli import bert_like  # noqa: F401
from tests.support.cli import run_cli


def test_one_message_names_every_input_and_its_suggestion_works_as_printed(bert_like):
    line = one_line(run_cli("inspect", bert_like), match="unresolved dynamic input dims")
    assert "input_ids [batch,sequence]" in line and "attention_mask [batch,sequence]" in line
    flags = shlex.split(re.search(r"Give them with (.*?)(?: \(|$)", line)[1])
    assert flags == ["--input-shape", "input_ids=1,128", "--input-shape", "attention_mask=1,128"], flags
    r = run_cli("inspect", bert_like, *flags)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "input_ids [1, 128], attention_mask [1, 128]" in r.stdout

