"""Faults outside the model never change a verdict: a lost worker's job runs again, one that never gets a verdict
is an infra_error (counted apart, scored by the next run, refused by the leaderboard), a service that dies under a
job is the machine's failure, a full disk stops the run in one line, and nothing of a killed worker is left.

The killers here are bounded so that no verdict depends on timing: either every worker of a run dies (every job
is lost, whatever the timing), or one named job's worker or service is killed while that job runs (found by the
name the job gives its own process), or at most `RETRIES` kills land anywhere (no job can be lost on every try).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from core.records import load_tasks
from core.sandbox.harness import RETRIES, Job, Limits, Sandbox
from evaluate.leaderboard.submission import SubmissionError, submit
from evaluate.leaderboard.validation import validate
from evaluate.scoring import judge_case
from scenarios import get_scenario

ROOT = Path(__file__).resolve().parents[2]
DEATH_WAIT_S = 60  # a bound on how long killed processes take to go, not a speed check


def _bench():
    spec = importlib.util.spec_from_file_location("bench_faults", ROOT / "scripts" / "bench_faults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.fixture
def run_tmp():
    """A temporary directory of the test's own for the processes it starts (their TMPDIR), checked empty after."""
    path = tempfile.mkdtemp(prefix="sef-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def evaluate(*args, tmp: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=tmp)
    return subprocess.run([sys.executable, "-m", "evaluate", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def nothing_left(root: str) -> None:
    deadline = time.monotonic() + DEATH_WAIT_S
    while (left := bench.leftovers(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left


def samples_file(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"task_id": t, "code": c}) + "\n" for t, c in rows))
    return path


@pytest.fixture(scope="module")
def session_tasks(tmp_path_factory):
    out = tmp_path_factory.mktemp("session") / "ds"
    build(BuildConfig(out=str(out), scenarios=["session"], n=3, seed=5, created_at="2026-11-24", workers=2,
                      world_mutants=False))
    return out, load_tasks(str(out))[0]


# ---------------------------------------------------------------------------------------- every worker dies


def test_a_worker_that_always_dies_leaves_samples_without_a_verdict_counted_apart_and_refused(
        small_dataset, small_tasks, run_tmp, tmp_path):
    samples = samples_file(tmp_path / "refs.jsonl", [(t.task_id, t.reference_program) for t in small_tasks])
    out = tmp_path / "results"
    killer = bench.Killer(run_tmp, (bench.WORKERS,), every=0.01)  # every worker of the run, as soon as it exists
    killer.start()
    try:
        proc = evaluate("--samples", samples, "--dataset", small_dataset, "--out", out, "--workers", 2, tmp=run_tmp)
    finally:
        kills = killer.stop()
    assert proc.returncode == 3, proc.stderr[-3000:]  # written, but incomplete: run it again
    assert kills[bench.WORKERS] >= len(small_tasks)
    report = json.loads((out / "refs" / "local" / "results.json").read_text())
    rows = report["samples"]
    assert {r["status"] for r in rows} == {"infra_error"}, {r["status"] for r in rows}
    assert all("no verdict" in r["error"] and r["diagnosis"] is None for r in rows)
    overall = report["summary"]["overall"]
    assert overall["infra_error"] == len(small_tasks)
    assert overall["pass@1"] is None and overall["success@1"] is None  # no verdict, no rate: never 0%
    assert set(overall["statuses"].values()) == {0}
    assert set(overall["diagnosis"]["causes"].values()) == {0}  # nothing blamed on the model
    assert report["sandbox"]["retried"] == RETRIES * sum(len(t.test_cases) for t in small_tasks)
    assert "infra_error" in proc.stdout.splitlines()[0]
    assert f"{len(small_tasks)} sample(s) have no verdict" in proc.stdout
    nothing_left(run_tmp)

    with pytest.raises(SubmissionError, match="no verdict"):
        submit(out / "refs" / "local", "refs", dataset_version="v1.0.0", samples=samples, dataset=str(small_dataset),
               root=tmp_path / "board")

    again = evaluate("--samples", samples, "--dataset", small_dataset, "--out", out, "--workers", 2, tmp=run_tmp)
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads((out / "refs" / "local" / "results.json").read_text())
    assert {r["status"] for r in report["samples"]} == {"pass"}
    assert report["summary"]["overall"]["pass@1"] == 1.0 and report["summary"]["overall"]["infra_error"] == 0
    assert "infra_error" not in again.stdout


def test_validation_refuses_a_submission_with_a_sample_without_a_verdict(small_dataset, small_tasks, run_tmp,
                                                                         tmp_path):
    samples = samples_file(tmp_path / "refs.jsonl", [(t.task_id, t.reference_program) for t in small_tasks])
    out = tmp_path / "results"
    assert evaluate("--samples", samples, "--dataset", small_dataset, "--out", out, tmp=run_tmp).returncode == 0
    folder = submit(out / "refs" / "local", "refs", dataset_version="v1.0.0", samples=samples,
                    dataset=str(small_dataset), root=tmp_path / "board")
    results = folder / "results.json"
    report = json.loads(results.read_text())
    report["samples"][0].update(status="infra_error", error="no verdict: its sandbox worker was lost 3 time(s)")
    results.write_text(json.dumps(report))
    refused = validate(folder, dataset=str(small_dataset))
    assert not refused.ok
    assert any("1 sample(s)" in p and "no verdict" in p for p in refused.problems), refused.problems


# ------------------------------------------------------------------------------------ scoring only the rest


def test_the_same_command_again_scores_only_the_samples_left_without_a_verdict(small_dataset, small_tasks, run_tmp,
                                                                              tmp_path):
    tasks = small_tasks[:4]
    samples = samples_file(tmp_path / "s.jsonl", [(t.task_id, t.reference_program) for t in tasks])
    out = tmp_path / "results"
    args = ("--samples", samples, "--dataset", small_dataset, "--out", out, "--limit", len(tasks))
    assert evaluate(*args, tmp=run_tmp).returncode == 0
    path = out / "s" / "local" / "results.json"
    report = json.loads(path.read_text())
    rows = {r["task_id"]: r for r in report["samples"]}
    # As a run that lost tasks[0] would have left it; tasks[1] carries a verdict a re-run would not give, so that
    # keeping it shows it was not run again; tasks[2]'s answer changes before the next run.
    rows[tasks[0].task_id].update(status="infra_error", error="no verdict", diagnosis=None)
    rows[tasks[1].task_id].update(status="result_error", error="kept from the last run")
    report["summary"]["overall"]["infra_error"] = 1
    path.write_text(json.dumps(report))
    samples_file(samples, [(t.task_id, "RESULT = None\n" if t is tasks[2] else t.reference_program) for t in tasks])

    again = evaluate(*args, tmp=run_tmp)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming: 2 sample(s) keep the verdict the last run gave them" in again.stderr
    rows = {r["task_id"]: r for r in json.loads(path.read_text())["samples"]}
    assert rows[tasks[0].task_id]["status"] == "pass"  # scored now
    assert (rows[tasks[1].task_id]["status"], rows[tasks[1].task_id]["error"]) == ("result_error",
                                                                                  "kept from the last run")
    assert rows[tasks[2].task_id]["status"] == "result_error"  # another answer: scored afresh
    assert rows[tasks[3].task_id]["status"] == "pass"

    third = evaluate(*args, tmp=run_tmp)  # nothing left without a verdict: the whole run is scored again
    assert "resuming" not in third.stderr
    rows = {r["task_id"]: r for r in json.loads(path.read_text())["samples"]}
    assert rows[tasks[1].task_id]["status"] == "pass"


# ------------------------------------------------------------------------------- one job's worker or service


def _named(name: str) -> int:
    deadline = time.monotonic() + 120
    while True:
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and open(f"/proc/{pid}/comm").read().strip() == name:
                    return int(pid)
            except OSError:
                pass
        assert time.monotonic() < deadline, f"no process called {name} started"
        time.sleep(0.01)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rpartition(")")[2].split()[1])


def _slow(reference: str, name: str, seconds: float = 1.5) -> str:
    return (f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)  # PR_SET_NAME\n"
            f"time.sleep({seconds})\n{reference}")


def test_a_session_service_killed_under_a_job_makes_that_job_run_again(session_tasks, run_tmp, monkeypatch):
    monkeypatch.setenv("TMPDIR", run_tmp)
    monkeypatch.setattr(tempfile, "tempdir", None)
    _, tasks = session_tasks
    task, case = tasks[0], tasks[0].test_cases[0]
    with Sandbox(1, Limits(timeout_s=30)) as sandbox:
        outcomes: list = []
        runner = threading.Thread(target=lambda: outcomes.extend(
            sandbox.run_untrusted([Job("slow", "session", _slow(task.reference_program, "stateeval-svc"), case)])))
        runner.start()
        try:
            worker = _parent(_named("stateeval-svc"))
            (service,) = [p for p in bench.processes(bench.SERVICES, run_tmp) if _parent(p) == worker]
            os.kill(service, signal.SIGKILL)
        finally:
            runner.join()
        (o,) = outcomes
        assert o.extra.get("retried") == 1, (o.status, o.error)
        assert judge_case(get_scenario("session"), case, o) == ("pass", "")
    nothing_left(run_tmp)


@pytest.mark.e2e  # the executor runs a killed episode job again as it does a program job (above, default run)
def test_the_session_service_killed_during_a_tools_mode_episode_changes_no_verdict(session_tasks, run_tmp,
                                                                                   tmp_path):
    dataset, tasks = session_tasks
    args = ("--model", "reference", "--mode", "tools", "--dataset", dataset, "--workers", 2)
    calm = evaluate(*args, "--out", tmp_path / "calm", tmp=run_tmp)
    assert calm.returncode == 0, calm.stderr[-3000:]
    killer = bench.Killer(run_tmp, (bench.SERVICES,), every=0.05, limit=RETRIES)  # never every try of one job
    killer.start()
    try:
        hit = evaluate(*args, "--out", tmp_path / "hit", tmp=run_tmp)
    finally:
        kills = killer.stop()
    assert hit.returncode == 0, hit.stderr[-3000:]
    assert kills[bench.SERVICES] >= 1
    read = [json.loads((tmp_path / k / "reference" / "local" / "results_tools.json").read_text())
            for k in ("calm", "hit")]
    assert bench.verdicts(read[0]) == bench.verdicts(read[1])
    assert read[1]["summary"]["overall"]["pass@1"] == 1.0
    nothing_left(run_tmp)


# ---------------------------------------------------------------------------------------------- a full disk


def _can_mount() -> str | None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare(1) to mount a small tmpfs in a mount namespace of its own"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return None if probe.returncode == 0 else f"unshare -m is refused here ({probe.stderr.decode().strip()})"


@pytest.mark.skipif(_can_mount() is not None, reason=str(_can_mount()))
def test_a_full_temporary_directory_stops_the_run_in_one_line_and_records_nothing(small_dataset, small_tasks,
                                                                                  tmp_path):
    """TMPDIR on a 16 MB tmpfs (in a mount namespace of the command's own) with 4 MB left: less than a worker
    needs (`core.sandbox.worker.FREE_SPACE_MB`), so the first job's verdict is not trusted and the run stops."""
    samples = samples_file(tmp_path / "s.jsonl", [(t.task_id, t.reference_program) for t in small_tasks[:2]])
    out, full = tmp_path / "results", tmp_path / "full"
    full.mkdir()
    script = (f"mount -t tmpfs -o size=16m tmpfs {full} && "
              f"dd if=/dev/zero of={full}/fill bs=1M count=12 status=none && "
              f"exec {sys.executable} -m evaluate --samples {samples} --dataset {small_dataset} --out {out} "
              f"--limit 2 --workers 1")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(full))
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, (proc.stdout, proc.stderr[-3000:])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left" in errors[0] and str(full) in errors[0], proc.stderr[-3000:]
    assert not (out / "s" / "local" / "results.json").exists()
