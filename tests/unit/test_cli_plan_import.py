"""Plans into the command line (issue 22): `plan MODEL --from PLAN.json` re-validates a plan file (exported
by the app or `plan --out`, perhaps edited by hand) against the model and prints or writes it as
`plan` does; `bench MODEL --plan FILE` (repeatable) builds and times the plan(s) with any
--strategies, round-robin. A plan for another model, an illegal partition, a bad file or an
oversized string is one line, exit 2 (a bad file before any work).

Every command runs as a subprocess with a timeout and a private cache (tests/test_hardening2.cli)."""
from __future__ import annotations

import pytest


def test_an_empty_plan_path_is_named_as_such(tmp_path):
    from engine.planner import plan_json
    from engine.util.errors import PlanError

    with pytest.raises(PlanError, match="an empty path is not a plan file"):
        plan_json.read("")

