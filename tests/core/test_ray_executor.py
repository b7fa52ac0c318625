"""`--executor ray`: the same shards and scores as the local executor, actors replaced when they die, Ctrl-C.

The Ray tests start one local Ray instance for the module (`ray.init(num_cpus=2)`: two actors, as the local pool
has two workers here). They run wherever ray is importable; `.ci/run` installs the `ray` extra and sets
STATEEVAL_REQUIRE_RAY=1, under which a missing ray fails them instead of skipping.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from core.records import load_tasks
from core.sandbox.executor import ExecutorError, make_executor
from core.sandbox.harness import Job, Limits
from evaluate.run import EvalConfig, run
from core.sandbox.harness import Job, Limits
from tests.conftest import interruptible, running

HAVE_RAY = importlib.util.find_spec("ray") is not None
if not HAVE_RAY and os.environ.get("STATEEVAL_REQUIRE_RAY") == "1":
    raise ImportError("STATEEVAL_REQUIRE_RAY=1 but ray is not installed: pip install -e '.[ray]'")
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install -e '.[ray]')")

BUILD = dict(scenarios=["tensor", "session", "voice"], n=3, seed=5, created_at="2026-01-01", workers=2)
# The name a slow job gives itself, so a test can find the processes running it: one of this test process's own
# (15 characters at most, the kernel's limit), so that a second copy of the suite running beside this one is
# never mistaken for it.
SLOW = f"slow-{secrets.token_hex(5)}"


@pytest.fixture(scope="module")
def ray_instance():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def builds(ray_instance, tmp_path_factory):
    """The same small build of all three scenarios, once on each executor."""
    root = tmp_path_factory.mktemp("builds")
    for executor in ("local", "ray"):
        build(BuildConfig(out=str(root / executor), executor=executor, **BUILD))
    return root / "local", root / "ray"


def shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "data").iterdir())}


@needs_ray
@pytest.mark.e2e  # two builds of three scenarios; by default, jobs run on Ray's actors in the restarted-workers test
def test_a_build_on_ray_writes_the_same_shards_byte_for_byte(builds):
    local, on_ray = builds
    assert len(shards(local)) == 3
    assert shards(on_ray) == shards(local)
    manifests = [json.loads((f / "MANIFEST.json").read_text()) for f in builds]
    assert manifests[0]["content_hash"] == manifests[1]["content_hash"]
    reports = [json.loads((f / "build_report.json").read_text()) for f in builds]
    assert reports[0]["mutation"] == reports[1]["mutation"] and reports[0]["mutation"]  # mutation analysis ran


def scored(dataset: Path, out: Path, executor: str, samples: str | None = None) -> dict:
    model = None if samples else "reference"
    report = run(EvalConfig(model=model, samples=samples, dataset=str(dataset), out=str(out / executor),
                            workers=2, executor=executor))
    assert report["sandbox"]["executor"] == executor
    for row in report["samples"]:  # how long a test case took is the only thing allowed to differ
        for case in row["cases"]:
            case.pop("seconds", None)
    return {"summary": report["summary"], "samples": report["samples"]}


@needs_ray
@pytest.mark.e2e  # the same Ray executor as the byte-for-byte build above, under evaluate
def test_the_reference_scores_the_same_on_ray(builds, tmp_path):
    dataset = builds[1]
    local, on_ray = scored(dataset, tmp_path, "local"), scored(dataset, tmp_path, "ray")
    assert local["summary"]["overall"]["pass@1"] == 1.0
    assert on_ray == local


@pytest.mark.e2e  # verdicts are made in the worker on either executor; the reference above scores on Ray
@needs_ray
def test_samples_with_wrong_answers_score_the_same_on_ray(builds, tmp_path):
    dataset = builds[1]
    tasks, _ = load_tasks(str(dataset))
    wrong = ["RESULT = None\n", "def broken(:\n", "raise RuntimeError('no')\n"]
    lines = []
    for n, t in enumerate(tasks):
        lines.append({"task_id": t.task_id, "code": t.reference_program if n % 2 else wrong[n // 2 % len(wrong)]})
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    local, on_ray = scored(dataset, tmp_path, "local", str(path)), scored(dataset, tmp_path, "ray", str(path))
    statuses = {r["status"] for r in local["samples"]}
    assert {"pass", "result_error", "syntax_error", "execution_error"} <= statuses, statuses
    assert 0 < local["summary"]["overall"]["pass@1"] < 1
    assert on_ray == local


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rpartition(")")[2].split()[1])


def _kill_actor_running(name: str, besides: set[int]) -> int:
    """SIGKILL the Ray actor process whose worker runs the job called `name`; return that job's pid."""
    deadline = time.monotonic() + 300
    while (child := running(name, besides)) is None:
        assert time.monotonic() < deadline, "the slow job never started"
        time.sleep(0.01)
    actor = _ppid(_ppid(child))  # the job's child -> the worker -> the actor that started it
    with open(f"/proc/{actor}/cmdline", "rb") as f:
        assert b"ray::" in f.read(), "the worker's parent is not a Ray actor"
    os.kill(actor, signal.SIGKILL)
    return child


def _slow(seconds: float, name: str = SLOW) -> str:
    return (f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)  # PR_SET_NAME\n"
            f"time.sleep({seconds})\nRESULT = 'finished'\n")


@pytest.mark.e2e  # a worker killed inside an actor (below) covers the rerun in the default run
@needs_ray
def test_a_dead_actor_is_replaced_and_its_jobs_run_again_then_have_no_verdict(ray_instance, small_tasks):
    task = small_tasks[0]
    case = task.test_cases[0]
    expected = json.loads(case.expected_result)
    # A dead actor's worker finishes the job it was running (its time limit ends a slow one) before it sees the
    # actor gone and exits; the limit is kept short so that those jobs are gone before the next test.
    with make_executor("ray", workers=2, limits=Limits(timeout_s=10)) as executor:
        # the actor dies once: its jobs in flight (the slow one, and any queued behind it) run on its replacement
        jobs = [Job("slow", "tensor", _slow(3), case)] + [Job(i, "tensor", task.reference_program, case)
                                                           for i in range(3)]
        outcomes: list = []
        runner = threading.Thread(target=lambda: outcomes.extend(executor.run_untrusted(jobs)))
        runner.start()
        try:
            _kill_actor_running(SLOW, set())
        finally:
            runner.join()
        assert [o.key for o in outcomes] == [j.key for j in jobs]
        assert (outcomes[0].status, outcomes[0].result) == ("ok", "finished"), outcomes[0].error
        for o in outcomes[1:]:
            assert o.status == "ok" and o.result == expected, (o.status, o.error)

        # the actor dies on every try (once and twice more on retry): that job has no verdict, the run goes on
        outcomes.clear()
        runner = threading.Thread(target=lambda: outcomes.extend(executor.run_untrusted([Job("slow", "tensor",
                                                                                             _slow(600), case)])))
        runner.start()
        try:
            seen: set = set()
            for _ in range(3):
                seen.add(_kill_actor_running(SLOW, seen))
        finally:
            runner.join()
        (lost,) = outcomes
        assert lost.status == "infra_error" and "died 3 times" in lost.error, (lost.status, lost.error)
        assert lost.extra["retried"] == 2

        served = executor.run_untrusted([Job(i, "tensor", task.reference_program, case) for i in range(3)])
        assert [(o.status, o.result) for o in served] == [("ok", expected)] * 3
    _wait_until_gone(SLOW)


@pytest.mark.e2e  # a killed local worker's job (test_sandbox.py) runs by default
@needs_ray
def test_a_worker_killed_inside_an_actor_runs_its_job_again_on_a_fresh_one(ray_instance, small_tasks):
    case = small_tasks[0].test_cases[0]
    name = "stateeval-wkill"
    with make_executor("ray", workers=1, limits=Limits(timeout_s=10)) as executor:
        outcomes: list = []
        runner = threading.Thread(target=lambda: outcomes.extend(
            executor.run_untrusted([Job("slow", "tensor", _slow(1.5, name), case)])))
        runner.start()
        try:
            deadline = time.monotonic() + 300
            while (child := running(name)) is None:
                assert time.monotonic() < deadline, "the slow job never started"
                time.sleep(0.01)
            worker = _ppid(child)
            with open(f"/proc/{worker}/cmdline", "rb") as f:
                assert b"core.sandbox.worker" in f.read()
            os.kill(worker, signal.SIGKILL)
        finally:
            runner.join()
        (o,) = outcomes
        assert (o.status, o.result, o.extra.get("retried")) == ("ok", "finished", 1), (o.status, o.error)
        assert executor.retried == 1
    _wait_until_gone(name)


def _wait_until_gone(name: str) -> None:
    deadline = time.monotonic() + 120  # a bound on how long a process takes to end, not a speed check
    while running(name) is not None:
        assert time.monotonic() < deadline, f"a process called {name} is still running"
        time.sleep(0.1)


def test_executor_options_are_checked_before_any_work(monkeypatch, capsys):
    from builder.__main__ import parse_args as builder_args
    from evaluate.__main__ import parse_args as evaluate_args

    for parse in (builder_args, lambda argv: evaluate_args(["--model", "reference", *argv])):
        with pytest.raises(SystemExit) as exit_:
            parse(["--ray-address", "auto"])
        assert exit_.value.code == 2
        assert "--ray-address is for --executor ray" in capsys.readouterr().err

    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    for parse in (builder_args, lambda argv: evaluate_args(["--model", "reference", *argv])):
        with pytest.raises(SystemExit):
            parse(["--executor", "ray"])
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pip install -e '.[ray]'" in err, err
    with pytest.raises(ExecutorError, match=r"pip install -e '\.\[ray\]'"):
        make_executor("ray")
    with pytest.raises(ExecutorError, match="unknown executor"):
        make_executor("dask")


@needs_ray
def test_an_address_where_nothing_answers_is_named_at_once(small_dataset, tmp_path, capsys):
    """`ray.init` retries an unreachable address for minutes; the executor tries it once and names it, and
    `python -m evaluate` says so in one line. The port is held by a socket that does not listen: the connection is
    refused, and no other process can take the port meanwhile."""
    from evaluate.__main__ import main

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            with pytest.raises(ExecutorError, match=f"nothing answers at --ray-address {address} .*ray start --head"):
                make_executor("ray", address)
        code = main(["--model", "reference", "--dataset", str(small_dataset), "--out", str(tmp_path), "--executor", "ray",
                     "--ray-address", f"127.0.0.1:{port}"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"nothing answers at --ray-address 127.0.0.1:{port}" in err, err


@pytest.mark.e2e  # the local executor's Ctrl-C (tests/evaluate/test_cli.py) runs by default
@needs_ray
def test_ctrl_c_stops_a_ray_run_and_its_jobs():
    """SIGINT, sent to a thread other than the one waiting for the batches, stops a run whose only job sleeps for
    ten minutes: the command ends with the interrupt, and the job's process is gone with its worker."""
    script = (
        "import os, signal, threading, time\n"
        "from core.records import TestCase\n"
        "from core.sandbox.executor import make_executor\n"
        "from core.sandbox.harness import Job, Limits\n"
        "from tests.conftest import running\n"
        "from tests.core.test_ray_executor import _slow\n"
        f"SLOW = {SLOW!r}\n"
        "def interrupt():\n"
        "    while (pid := running(SLOW)) is None:\n"
        "        time.sleep(0.01)\n"
        "    print('job', pid, flush=True)\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this thread, not the main one\n"
        "    time.sleep(600)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "case = TestCase('original', 'main', '{}', '', [])\n"
        "with make_executor('ray', limits=Limits(timeout_s=900)) as executor:\n"
        "    try:\n"
        "        executor.run_untrusted([Job('k', 'tensor', _slow(600, SLOW), case)])\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', flush=True)\n"
        "        raise SystemExit(130)\n"
        "print('not interrupted')\n"
    )
    _wait_until_gone(SLOW)  # the job to interrupt is found by name
    env = dict(os.environ, PYTHONPATH=os.getcwd())  # (Ray's sockets live under TMPDIR: a pytest one is too long)
    env.pop("RAY_ADDRESS", None)  # a Ray instance of its own, as `python -m evaluate --executor ray` starts
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=400, env=env,
                          cwd=os.getcwd(), preexec_fn=interruptible)
    assert proc.returncode == 130 and "interrupted" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.startswith("job ")
    _wait_until_gone(SLOW)  # killed with its worker, not left to sleep out its ten minutes


@pytest.mark.parametrize("executor", ["local", pytest.param("ray", marks=needs_ray)])
def test_restarted_workers_hold_none_of_the_worlds_loaded_before(executor, request, small_tasks):
    """What the build does between scenarios: after `restart_workers` the next jobs run in fresh workers, which
    fork without the torch that a tensor job loaded (a control run shows the worker held it until then)."""
    if executor == "ray":
        request.getfixturevalue("ray_instance")
    from builder.fuzz import CoverageRecorder
    from builder.pipeline import make_cases
    from builder.program import generate_program
    from scenarios import get_scenario

    voice = generate_program(get_scenario("voice"), random.Random(0), CoverageRecorder())
    case = {"tensor": small_tasks[0].test_cases[0],
            "voice": make_cases(voice, BuildConfig(scenarios=["voice"], n=1, created_at="2026-01-01"), 0)[0]}
    probe = "import sys\nRESULT = 'torch' in sys.modules\n"
    with make_executor(executor, workers=1, limits=Limits(timeout_s=60)) as ex:
        # One job at a time, so that the voice job before the restart meets the worker the tensor job loaded (a
        # Ray actor runs two batches at once, each on a worker of its own)
        runs = ex.run_untrusted([Job(0, "tensor", probe, case["tensor"])])
        runs += ex.run_untrusted([Job(1, "voice", probe, case["voice"])])
        ex.restart_workers()
        runs += ex.run_untrusted([Job(2, "voice", probe, case["voice"])])
    assert [(o.status, o.result) for o in runs] == [("ok", True), ("ok", True), ("ok", False)], [o.error for o in runs]
