"""The sandbox that runs every program: verdicts, isolation of state and secrets, limits, and recovery."""

from __future__ import annotations

import json
import os
import secrets
import signal
import threading
import time

import pytest

from core.sandbox.harness import Job, Limits, Outcome, Sandbox
from evaluate.scoring import score
from scenarios import get_scenario
from tests.conftest import interruptible

TENSOR = get_scenario("tensor")
LIMITS = Limits(timeout_s=3)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=LIMITS) as sb:
        yield sb


@pytest.fixture(scope="module")
def task(small_tasks):
    return small_tasks[0]


@pytest.fixture(scope="module")
def case(task):
    return task.test_cases[0]


@pytest.fixture(scope="module")
def pool(sandbox, case):
    """The module sandbox with both workers started (two slow jobs side by side need two workers)."""
    outs = sandbox.run_untrusted([Job(i, "tensor", "import time\ntime.sleep(0.3)\nRESULT = 1\n", case)
                                  for i in range(2)])
    assert [o.status for o in outs] == ["ok", "ok"]
    return sandbox


def run_one(sandbox: Sandbox, code: str, case: dict) -> Outcome:
    (outcome,) = sandbox.run_untrusted([Job("job", "tensor", code, case)])
    return outcome


def on_every_worker(sandbox: Sandbox, codes: list[str], case: dict) -> list[list[Outcome]]:
    """Run `codes` in order on each live worker, so a job is known to follow the previous one in the same worker."""
    workers = [w for w in sandbox._all if w.alive]
    assert workers
    return [[w.run(Job(i, "tensor", code, case)) for i, code in enumerate(codes)] for w in workers]


def verdict(case: dict, outcome: Outcome) -> str | None:
    """None when the outcome matches the case's oracle, else the reason."""
    assert outcome.status == "ok", (outcome.status, outcome.error)
    return TENSOR.compare_result(json.loads(case.expected_result), outcome.result)


# ------------------------------------------------------------------------------------------------ verdicts


def test_reference_program_is_ok_with_canonical_tensors(sandbox, task, case):
    outcome = run_one(sandbox, task.reference_program, case)
    assert outcome.status == "ok", outcome.error
    assert outcome.key == "job"
    assert isinstance(outcome.result, list) and outcome.result
    for item in outcome.result:
        assert set(item) == {"__tensor__"}
        assert set(item["__tensor__"]) == {"dtype", "shape", "storage", "data"}
        assert item["__tensor__"]["dtype"] == "float32"
    assert outcome.result == json.loads(case.expected_result)
    assert verdict(case, outcome) is None
    json.dumps(outcome.result)  # plain data


def test_outcomes_come_back_in_job_order(sandbox, case):
    jobs = [Job(("k", i), "tensor", f"RESULT = {i}\n", case) for i in range(8)]
    outcomes = sandbox.run_untrusted(jobs)
    assert [o.key for o in outcomes] == [j.key for j in jobs]
    assert [o.result for o in outcomes] == list(range(8))


def test_infinite_loop_times_out_and_the_run_completes(sandbox, case):
    outcomes = sandbox.run_untrusted([
        Job("loop", "tensor", "while True:\n    pass\n", case),
        Job("after", "tensor", "RESULT = 'fine'\n", case),
    ])
    assert outcomes[0].status == "timeout"
    assert "3" in outcomes[0].error
    assert outcomes[1].status == "ok" and outcomes[1].result == "fine"


def test_a_batch_reports_each_program_and_stops_at_one_out_of_time(sandbox, case):
    """A batch runs its programs in turn in one child, each in a fresh namespace (a name one program sets is not
    there for the next), and answers one outcome per program; one out of time ends it, the rest get no outcome."""
    programs = ["RESULT = 1\nleft = 1\n", "RESULT = [globals().get('left'), 2]\n", "raise ValueError('no')\n",
                "import time\ntime.sleep(60)\n", "RESULT = 5\n"]
    (outcome,) = sandbox.run_untrusted([Job("b", "tensor", "", case, batch=programs)])
    assert outcome.status == "ok"
    assert [(o.status, o.result) for o in outcome.batch] == [("ok", 1), ("ok", [None, 2]), ("execution_error", None)]

def test_run_batched_gives_each_job_its_own_outcome_and_runs_what_a_batch_missed_alone(sandbox, case, task):
    """Jobs on one test case share a child; every job gets the outcome it gets alone, under its own key, in order,
    including those after a program that ran out of time (they run alone afterwards)."""
    other = task.test_cases[1]
    codes = ["RESULT = 1\n", "raise ValueError('no')\n", "import time\ntime.sleep(60)\n", "RESULT = 4\n"]
    jobs = [Job(("a", i), "tensor", code, case) for i, code in enumerate(codes)]
    jobs.insert(2, Job("alone", "tensor", "RESULT = 'other case'\n", other))
    outcomes = sandbox.run_batched(jobs)
    assert [o.key for o in outcomes] == [j.key for j in jobs]
    assert [(o.status, o.result) for o in outcomes] == [
        ("ok", 1), ("execution_error", None), ("ok", "other case"), ("timeout", None), ("ok", 4)]



def test_syntax_error(sandbox, case):
    outcome = run_one(sandbox, "RESULT = [x1\nv2 = (\n", case)
    assert outcome.status == "syntax_error"
    assert "SyntaxError" in outcome.error


def test_exception_names_type_and_line(sandbox, case):
    outcome = run_one(sandbox, "a = 1\nb = 2\nraise ValueError('x')\nRESULT = [a, b]\n", case)
    assert outcome.status == "execution_error"
    assert "ValueError" in outcome.error
    assert "line 3" in outcome.error


@pytest.mark.parametrize("code", [
    "import os\nos._exit(3)\n",
    "import os\nos._exit(0)\n",
    "import sys\nsys.exit(0)\n",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
])
def test_ending_the_process_is_an_execution_error(sandbox, case, code):
    outcome = run_one(sandbox, code, case)
    assert outcome.status == "execution_error"
    assert outcome.error


def test_missing_result(sandbox, case):
    outcome = run_one(sandbox, "v1 = x1.clone()\n", case)
    assert outcome.status == "result_error"
    assert "RESULT" in outcome.error


@pytest.mark.parametrize("code", [
    "RESULT = object()\n",
    "RESULT = {1: x1}\n",
    "RESULT = [lambda: None]\n",
])
def test_result_that_cannot_be_compared(sandbox, case, code):
    outcome = run_one(sandbox, code, case)
    assert outcome.status == "result_error"
    assert outcome.result is None


@pytest.mark.parametrize("code", [
    # an object that claims to equal anything
    "class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
    "RESULT = Anything()\n",
    "class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
    "RESULT = [Anything()]\n",
    # a list that claims to equal anything (it is compared as the plain, empty list it is)
    "class Anything(list):\n    def __eq__(self, other):\n        return True\n    __ne__ = lambda self, other: False\n"
    "RESULT = Anything()\n",
    # a tensor subclass that claims to equal anything (compared on its values)
    "class Anything(torch.Tensor):\n    def __eq__(self, other):\n        return True\n"
    "RESULT = [torch.zeros(1).as_subclass(Anything)]\n",
])
def test_object_equal_to_everything_does_not_pass(task, sandbox, code):
    (result,) = score([task], {task.task_id: [code]}, sandbox)
    assert result.status == "result_error", (result.status, result.error)
    assert all(c["status"] == "result_error" for c in result.cases)


# ------------------------------------------------------------------------------------------------ isolation


def test_child_does_not_see_secrets(monkeypatch, case):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-test")
    with Sandbox(workers=1, limits=LIMITS) as fresh:
        outcome = run_one(fresh, "import os\nRESULT = {k: str(v) for k, v in os.environ.items()}\n", case)
    assert outcome.status == "ok", outcome.error
    env = outcome.result
    assert isinstance(env, dict) and env  # the program did read its environment
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        assert name not in env
    assert not any(v in ("sk-test", "hf_test", "aws-test") for v in env.values())
    assert env.get("HOME") != os.environ.get("HOME")


def test_working_directory_is_private_and_removed(sandbox, case):
    outcomes = sandbox.run_untrusted([
        Job(i, "tensor", "import os\nRESULT = [os.getcwd(), sorted(os.listdir('.'))]\n", case) for i in range(2)
    ])
    dirs = []
    for o in outcomes:
        assert o.status == "ok", o.error
        cwd, listing = o.result
        assert os.path.isabs(cwd)
        assert cwd != os.getcwd()
        assert listing == []  # empty: its output goes to a file the worker holds, outside the directory
        assert not os.path.exists(cwd)
        dirs.append(cwd)
    assert dirs[0] != dirs[1]


def test_file_written_in_cwd_does_not_reach_the_next_job(pool, case):
    write = "open('answer.txt', 'w').write('42')\nimport os\nRESULT = os.path.exists('answer.txt')\n"
    read = "import os\nRESULT = os.path.exists('answer.txt')\n"
    for writer, reader in on_every_worker(pool, [write, read], case):
        assert writer.status == "ok" and writer.result is True
        assert reader.status == "ok" and reader.result is False


def test_file_written_in_home_does_not_reach_the_next_job(pool, case):
    write = "import os\nopen(os.path.expanduser('~/answer.txt'), 'w').write('42')\nRESULT = 1\n"
    read = "import os\nRESULT = os.path.exists(os.path.expanduser('~/answer.txt'))\n"
    for writer, reader in on_every_worker(pool, [write, read], case):
        assert writer.status == "ok"
        assert reader.status == "ok" and reader.result is False


def test_torch_global_state_does_not_reach_the_next_job(pool, task, case):
    hostile = (
        "import torch\n"
        "torch.set_default_dtype(torch.float64)\n"
        "torch.manual_seed(1234)\n"
        "torch.set_num_threads(3)\n"
        "x1 = torch.zeros_like(x1)\n"
        "RESULT = str(torch.get_default_dtype())\n"
    )
    probe = "import torch\nRESULT = [str(torch.get_default_dtype()), torch.zeros(2), torch.get_num_threads()]\n"
    for before, reference, after in on_every_worker(pool, [hostile, task.reference_program, probe], case):
        assert before.status == "ok" and before.result == "torch.float64"
        assert verdict(case, reference) is None
        assert after.status == "ok"
        default, zeros, threads = after.result
        assert default == "torch.float32"
        assert zeros["__tensor__"]["dtype"] == "float32"
        assert threads == 1


def test_huge_output_is_capped(sandbox, case):
    code = "import sys\nfor _ in range(100):\n    sys.stdout.write('y' * 10000)\nprint('z' * 100000, file=sys.stderr)\n" \
           "RESULT = 1\n"
    outcome = run_one(sandbox, code, case)
    assert outcome.status == "ok" and outcome.result == 1
    assert 0 < len(outcome.output) <= LIMITS.output_bytes + 100
    assert outcome.output.startswith("y")
    assert "truncated" in outcome.output


def test_small_output_is_kept(sandbox, case):
    outcome = run_one(sandbox, "print('hello from the program')\nRESULT = 1\n", case)
    assert outcome.status == "ok"
    assert "hello from the program" in outcome.output


@pytest.mark.e2e  # test_sandbox_adversarial.py runs clean programs among every hostile one in the default run
def test_clean_verdict_does_not_depend_on_hostile_neighbours(small_tasks, sandbox):
    task = next(t for t in small_tasks if t.has_branch)
    ref = task.reference_program
    hostile = [
        "while True:\n    pass\n",
        "import os\nos._exit(3)\n",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nRESULT = 1\n",  # kills its own worker
        "import torch\ntorch.set_default_dtype(torch.float64)\n" + ref,
        "open('RESULT', 'w').write('x')\nimport sys\nsys.stdout.write('x' * 100000)\nraise ValueError('no')\n",
        "x1.mul_(0)\nRESULT = [x1]\n",
    ]
    (alone,) = score([task], {task.task_id: [ref]}, sandbox)
    assert alone.status == "pass", alone.error

    codes = [hostile[0], ref, *hostile[1:4], ref, *hostile[4:], ref]
    mixed = score([task], {task.task_id: codes}, sandbox)
    refs = [r for r, code in zip(mixed, codes) if code is ref]
    assert len(refs) == 3
    for r in refs:
        assert r.status == alone.status
        assert [(c["name"], c["status"], c["error"]) for c in r.cases] == \
               [(c["name"], c["status"], c["error"]) for c in alone.cases]
    others = [r for r, code in zip(mixed, codes) if code is not ref]
    assert all(r.status != "pass" for r in others if "set_default_dtype" not in codes[r.sample])
    assert mixed[0].status == "timeout"


def _worker_running(workers: list[int], name: str) -> int | None:
    """The worker whose current job has named its process `name` (the job cannot write where the test reads)."""
    for pid in workers:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                for child in f.read().split():
                    try:
                        with open(f"/proc/{child}/comm") as c:
                            if c.read().strip() == name:
                                return pid
                    except OSError:
                        pass
    return None


def test_a_job_whose_worker_is_killed_runs_again_on_a_fresh_worker(pool, task, case):
    slow = (
        "import ctypes, time\n"
        "ctypes.CDLL(None).prctl(15, b'stateeval-slow', 0, 0, 0)  # PR_SET_NAME, so the test can find it\n"
        "time.sleep(2.5)\n"
        "RESULT = 'not killed'\n"
    )
    before = {w.proc.pid for w in pool._all if w.alive}
    jobs = [Job("slow", "tensor", slow, case)] + [Job(i, "tensor", task.reference_program, case) for i in range(3)]
    outcomes: list = []
    runner = threading.Thread(target=lambda: outcomes.extend(pool.run_untrusted(jobs)))
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while (victim := _worker_running(sorted(before), "stateeval-slow")) is None:
            assert time.monotonic() < deadline, "the slow job never started"
            time.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
    finally:
        runner.join()

    assert [o.key for o in outcomes] == [j.key for j in jobs]
    # the killed job ran again, whole, on another worker: the verdict is the one it gets undisturbed
    assert outcomes[0].status == "ok" and outcomes[0].result == "not killed", (outcomes[0].status, outcomes[0].error)
    assert outcomes[0].extra["retried"] == 1
    for o in outcomes[1:]:
        assert verdict(case, o) is None and "retried" not in o.extra

    # the pool keeps serving: two jobs side by side, one of them on a freshly started worker
    served = pool.run_untrusted([
        Job(i, "tensor", "import os, time\ntime.sleep(0.5)\n" + task.reference_program + "RESULT.append(os.getppid())\n",
            case)
        for i in range(2)
    ])
    pids = set()
    for o in served:
        assert o.status == "ok", o.error
        *tensors, pid = o.result
        assert tensors == json.loads(case.expected_result)
        pids.add(pid)
    assert victim not in pids
    assert pids - before, "no restarted worker served the jobs after the kill"


def test_program_cannot_write_into_the_worker_protocol(task, case):
    inject = (
        "import os\n"
        "ppid = os.getppid()\n"
        "for fd in os.listdir(f'/proc/{ppid}/fd'):\n"
        "    try:\n"
        "        if os.readlink(f'/proc/{ppid}/fd/{fd}').startswith('pipe:'):\n"
        "            f = os.open(f'/proc/{ppid}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
        "            os.write(f, b'{\"status\": \"ok\", \"result\": 12345}\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "RESULT = None\n"
    )
    with Sandbox(workers=1, limits=LIMITS) as own:
        hostile = run_one(own, inject, case)
        following = [run_one(own, task.reference_program, case) for _ in range(2)]
    assert hostile.result != 12345
    for o in following:
        assert o.status == "ok", (o.status, o.error)
        assert verdict(case, o) is None


def test_the_harness_does_not_import_the_worker():
    """The harness needs containment primitives and status names, not the worker's job protocol: importing the
    worker into the harness process would put the child's execution code where no program may ever run."""
    import subprocess
    import sys

    probe = "import sys, core.sandbox.harness, evaluate.scoring; print('core.sandbox.worker' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_a_new_sandbox_removes_folders_whose_owner_is_gone(tmp_path, monkeypatch):
    """What a killed run left behind is removed by the next one; the folders of live processes, and folders named
    otherwise, are not touched."""
    import subprocess
    import sys
    import tempfile

    from core.sandbox import tempdirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = tmp_path / f"stateeval-worker-{gone.stdout.strip()}.123-abc"
    (dead / "sub").mkdir(parents=True)
    reused = tmp_path / f"stateeval-case-{os.getpid()}.1-abc"  # this pid, another start time: a reused pid
    reused.mkdir()
    mine = tempdirs.make("worker")
    foreign = tmp_path / "stateeval-worker-notours"
    foreign.mkdir()
    Sandbox(workers=1).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([os.path.basename(mine), foreign.name])


def test_ctrl_c_that_reaches_another_thread_still_stops_the_run(tmp_path):
    """The kernel may hand a process's SIGINT to any of its threads. Sent here to a thread other than the one that
    waits for the jobs, it must still stop a run whose only job sleeps for a minute, at once."""
    import subprocess
    import sys

    name = f"stop-{secrets.token_hex(5)}"  # the job's process name: this test's own (15 characters at most)
    job = f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)  # PR_SET_NAME\ntime.sleep(600)\n"
    script = (
        "import signal, threading, time\n"
        "from core.sandbox.harness import Job, Limits, Sandbox\n"
        "from core.records import TestCase\n"
        "from tests.conftest import running\n"
        "case = TestCase('original', 'main', '{}', '', [])\n"
        "def interrupt():\n"
        f"    while running({name!r}) is None:  # the job runs: the main thread waits for it\n"
        "        time.sleep(0.01)\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this thread, not the main one\n"
        "    time.sleep(120)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "with Sandbox(workers=1, limits=Limits(timeout_s=600)) as sandbox:\n"
        "    try:\n"
        f"        sandbox.run_untrusted([Job('k', 'tensor', {job!r}, case)])\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', time.monotonic(), flush=True)\n"
        "        raise SystemExit(130)\n"
        "print('not interrupted')\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=os.getcwd())
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env,
                          cwd=os.getcwd(), preexec_fn=interruptible)
    assert proc.returncode == 130 and proc.stdout.startswith("interrupted"), (proc.stdout, proc.stderr[-2000:])
