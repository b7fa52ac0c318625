"""The benchmark of a service file's test cases on a warm worker (`scripts/bench_rest.py`), on the tests' fake
service: it times every test case it was asked for, says where the time goes, and refuses an unusable file in one
line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.scenarios.rest.conftest import write_service

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_rest.py"


def bench(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "STATEEVAL_SERVICES"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_it_times_each_test_case_and_says_where_the_time_goes(tmp_path):
    done = bench("--service", str(write_service(tmp_path)), "--cases", "6", "--programs", "3", "--profile")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"fake: reset \+ population \+ run \+ snapshot .*: 6 test cases, median [\d.]+ ms, "
                     r"p90 [\d.]+ ms", out), out
    assert re.search(r"CPU per test case: worker [\d.]+ ms, programs [\d.]+ ms, service [\d.]+ ms", out), out
    assert re.search(r"target: median at most 50 ms per test case: (within|over)", out), out
    assert re.search(r"reset \+ population: 6 calls", out) and re.search(r"snapshot: 6 calls", out), out


def test_help_and_a_file_that_cannot_be_used(tmp_path):
    assert bench("--help").returncode == 0
    done = bench("--service", str(tmp_path / "nowhere.toml"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot be read" in done.stderr
