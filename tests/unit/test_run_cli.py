"""The one way tests run the command line (tests/support/cli.py, the `run_cli` fixture)."""
from __future__ import annotations

from tests.support.cli import DROPPED, cli_env, one_line


def test_the_fixture_runs_main_in_a_clean_environment_with_the_tests_cache(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_DEBUG", "1")      # would turn every error line into a traceback
    monkeypatch.setenv("DISPLAY", ":99")
    r = run_cli("inspect", tmp_path / "missing.onnx")
    assert one_line(r, 2, r"^error: .*missing\.onnx: file not found$")
    e = cli_env(tmp_path / "c", FUSELENS_RPC="127.0.0.1:9190")
    assert not set(DROPPED) - {"FUSELENS_RPC"} & set(e) and e["FUSELENS_RPC"] == "127.0.0.1:9190"
    assert e["FUSELENS_CACHE_DIR"] == str(tmp_path / "c")
