"""The chaos benchmark's small version: a build and its scoring under kills of workers and services, compared with
undisturbed ones (`scripts/bench_faults.py`). At most `RETRIES` kills a run, so that no job can be lost on every
try whatever the timing: the verdicts and the bytes must then be the undisturbed ones, and nothing may be left.

The default run takes the session scenario alone, the one whose workers start a service, so that both kinds of
process are killed; `-m e2e` (run by `.ci/run`) takes all three scenarios."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from core.sandbox.harness import RETRIES

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_faults.py"


@pytest.mark.e2e  # the chaos benchmark; tests/evaluate/test_faults.py kills workers and services one way at a time
@pytest.mark.parametrize("scenarios", ["session", "tensor,session,voice"])
def test_bounded_kills_of_workers_and_services_change_no_verdict_and_no_byte(scenarios, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_faults", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up there
    spec.loader.exec_module(bench)
    code = bench.main(["--scenarios", scenarios, "--n", "3", "--seed", "31", "--n-samples", "2",
                       "--wrong-per-task", "2", "--every", "0.2", "--limit", str(RETRIES), "--workers", "2",
                       "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count("(the same)") == 2, out  # the build under worker kills, and under service kills
    assert "PROBLEM" not in out
