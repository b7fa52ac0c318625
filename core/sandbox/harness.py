"""The one way code from a task or a model is run: `Executor.run_untrusted` (`Sandbox` here, or Ray actors).

The harness process never executes a program. It hands jobs to warm worker processes (`core.sandbox.worker`),
started with a scrubbed environment (no API keys or tokens, a private HOME), which fork a contained child per
test case. What comes back is plain JSON; comparison happens here, in the harness, on that data only.

The same sandbox serves evaluate (model-written code) and the builder's oracle capture (reference programs):
trusted code gets the same isolation of state, so oracles are captured exactly the way answers are scored.

As root, each worker gets its own unprivileged uid for its jobs (see `core.sandbox.worker` for the jail); a worker
that dies is replaced, and the processes of its uid are killed from here. A reply that is not a well-formed
answer to the job (a worker that died mid-line, a desynchronised pipe) crashes that job only: the worker is
killed and replaced, and the run goes on.

`Executor` is what the builder and scoring hold: `Sandbox` is the local one; `core.sandbox.ray_executor` runs the same
`_Worker` inside Ray actors (`--executor ray`, see `core.sandbox.executor`).
"""

from __future__ import annotations

import errno
import os
import queue
import select
import shutil
import subprocess
import sys
import threading
import time
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from core.progress import progress
from core.records import TestCase
from core.sandbox import tempdirs
from core.sandbox.containment import PR_SET_DUMPABLE, job_uid, kill_uid, prctl
from core.sandbox.protocol import (BatchRequest, EpisodeRequest, Limits, ProgramRequest, Reply, Request, TraceRequest,
                                   WireCase, decode_reply, encode_request)
from core.statuses import CRASH, INFRA_ERROR

ROOT = Path(__file__).resolve().parents[2]  # the repository (or site-packages) holding core/ and scenarios/

# Environment variables a worker keeps; everything else (API keys, tokens, cloud credentials) is dropped.
# STATEEVAL_SERVICES: the service files whose scenarios the workers register, STATEEVAL_LEARNED the fields their
# services make up as the build learned them (`scenarios.rest.registration`, `scenarios.rest.learned`)
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "STATEEVAL_SERVICES", "STATEEVAL_LEARNED")


@dataclass
class Job:
    """One program run against one test case. `key` is the caller's label, returned unchanged.

    With `batch`, several programs run in turn on the test case (or each on its own, `cases`) in one child, the
    world reset between them (see `core.sandbox.worker`); `code` is then unused. For the builder's own programs
    only (references and their mutants, see `Sandbox.run_batched`): one program of a batch shares its child with the next, so untrusted answers always
    run alone."""

    key: Any
    scenario: str
    code: str
    case: TestCase | dict  # a task's TestCase, or just a setup: {"setup_code": str, "assets": [...]}
    batch: list[str] | None = None
    # A tool-calling episode instead of a program (`--mode tools`, `scenarios.calling`): the calls
    # ({"name", "arguments"}) applied in order, and submit_result's items (None: nothing submitted yet).
    calls: list[dict] | None = None
    submit: list | None = None
    trace: bool = False  # `code` is a trusted reference whose API calls come back as tool calls
    # Whether the program's API calls come back (`Outcome.trace`). The builder's mutants go without: a verdict
    # reads RESULT and the state only, and recording and reading the calls is a fifth of a session mutant's cost.
    record: bool = True
    # For a batch of programs that begin alike (a reference's mutants, with `record` off): how many top-level
    # statements this one has in common with the reference. The batch runs those once for all its programs that
    # share them (`core.sandbox.worker._run_batch`) where the world can be saved and restored.
    shared: int | list[int] = 0  # a batch's job: one per program
    # A batch's job: the test case of each program, when they are not all `case` (`run_batched` puts the runs of
    # one `group` on several test cases in one batch: a fork per task rather than per test case).
    cases: list | None = None
    # Jobs of one group (a task's reference runs) may share a child across test cases (`run_batched`); None: only
    # jobs on the same test case do.
    group: Any = None
    # The world mutant the program runs on (`scenarios.mutants.Mutant`; `--mode tests`), None: the correct world.
    # The reply's `extra["mutated"]` counts the calls the mutant changed.
    mutant: Any = None
    # A test (`--mode tests`): its EXPECTED, the test's own expectations, comes back as the test wrote it
    # (`extra["expected"]`), never renamed by the world as RESULT and the state are (`World.outcome`).
    test: bool = False

    def request(self, limits: Limits) -> Request:
        """What the worker is sent for this job (`core.sandbox.protocol`)."""
        if self.batch is not None:
            # Each distinct test case once, and which one each program runs on.
            together = self.cases if self.cases is not None else [self.case] * len(self.batch)
            distinct = {id(c): c for c in together}
            order = list(distinct)
            shared = list(self.shared) if self.shared and not self.record else [0] * len(self.batch)
            return BatchRequest(self.scenario, [WireCase.of(distinct[i]) for i in order], limits, list(self.batch),
                                [order.index(id(c)) for c in together], shared, self.record)
        case = WireCase.of(self.case)
        if self.calls is not None:
            return EpisodeRequest(self.scenario, case, limits, self.calls, self.submit)
        if self.trace:
            return TraceRequest(self.scenario, case, limits, self.code)
        return ProgramRequest(self.scenario, case, limits, self.code, self.record,
                              None if self.mutant is None else self.mutant.to_json(), self.test)


@dataclass
class Outcome:
    key: Any
    status: str  # one of core.statuses.REPLY_STATUSES
    result: Any = None  # canonical RESULT (plain data) when status == "ok"
    state: Any = None  # canonical side effects after the run
    error: str = ""
    output: str = ""
    seconds: float = 0.0
    # containment, leftovers, in_api (see core.sandbox.worker.execute); a tool-calling episode's setup, calls, submit
    extra: dict = field(default_factory=dict)
    # the program's API calls (`scenarios.trace`), when it compiled and its child reported; None otherwise
    trace: list | None = None
    # A batch's outcomes, one per program in order; fewer than its programs when it ended early (the rest have
    # no verdict and should run alone).
    batch: list["Outcome"] | None = None


def scrubbed_env(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    env.update({
        "HOME": home,
        "PYTHONPATH": str(ROOT),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    })
    return env


class _Worker:
    """One warm worker process and the pipe protocol to it."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.uid = job_uid() if os.geteuid() == 0 else None  # the uid its jobs run as (root only)
        try:
            self.home = tempdirs.make("worker")  # the worker keeps its files inside, and removes it if this dies
            self.stderr = open(os.path.join(self.home, "worker.log"), "wb")
        except OSError as exc:
            if exc.errno in DISK_FULL:
                raise DiskFull(tempdirs.root()) from None
            raise SandboxFault(f"cannot make a sandbox worker's folder in {tempdirs.root()} ({exc}); check that "
                               "TMPDIR names a writable folder") from None
        self._closing = threading.Lock()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "core.sandbox.worker", "--folder", self.home,
                 *(["--uid", str(self.uid)] if self.uid is not None else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                env=scrubbed_env(self.home), cwd=self.home, start_new_session=True,
            )
        except OSError as exc:  # out of processes or memory: every later worker would fail the same way
            self.stderr.close()
            shutil.rmtree(self.home, ignore_errors=True)
            raise SandboxFault(f"cannot start a sandbox worker ({exc}); this machine is out of processes or "
                               "memory: run fewer --workers, or free some") from None
        self._buf = b""

    def run(self, job: Job) -> Outcome:
        request = job.request(self.limits)
        try:
            self.proc.stdin.write(encode_request(request).encode())
            self.proc.stdin.flush()
            # The worker enforces the test case's own timeout; this is the safety net if the worker itself hangs
            # (first job: importing torch and starting servers): each program (and a batch's shared part) may take
            # the whole time limit.
            steps = len(request.programs) * (2 if any(request.shared) else 1) if job.batch is not None else 1
            line = self._readline(time.monotonic() + self.limits.timeout_s * steps + 120)
        except (BrokenPipeError, OSError) as exc:
            line, err = None, str(exc)
        else:
            err = "the sandbox worker stopped answering"
        if line is None:
            self.close()
            return Outcome(job.key, CRASH, error=f"{err}; it was restarted")
        try:
            reply = decode_reply(line, batch=job.batch is not None)
        except (ValueError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
            self.close(kill=True)
            return Outcome(job.key, CRASH, error=f"the sandbox worker sent a malformed reply ({str(exc)[:80]}); "
                                                   "it was restarted")
        # The worker failed outside the program (its disk, its own code): a new one. A world that lost a part (its
        # service) brings it back at the next reset, in the same worker.
        if reply.status == CRASH and "world_lost" not in reply.extra:
            self.close(kill=True)
            if reply.errno in DISK_FULL:
                raise DiskFull(tempdirs.root())
        batch = None if reply.batch is None else [_outcome(job.key, r, {}) for r in reply.batch][:len(job.batch)]
        return _outcome(job.key, reply, reply.extra, batch)

    def run_safely(self, job: Job) -> Outcome:
        """`run`, with a harness bug reported as that job's crash (the worker killed and left for replacement)
        rather than a hole in the results. A full disk is no job's crash: it stops the run (`DiskFull`)."""
        try:
            return self.run(job)
        except SandboxFault:
            raise
        except Exception as exc:  # noqa: BLE001
            self.close(kill=True)
            return Outcome(job.key, CRASH, error=f"sandbox error: {type(exc).__name__}: {exc}")

    def _readline(self, deadline: float) -> bytes | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def reap(self) -> bool:
        """Whether the worker is alive; if not, close it and remove what it left (its test case's folder, its
        worlds' files: `tempdirs.sweep`), as whoever replaces a lost worker must."""
        if self.alive:
            return True
        self.close()
        tempdirs.sweep()
        return False

    def close(self, kill: bool = False) -> None:
        """Stop the worker (asking it to finish first unless `kill`); if it did not end cleanly, kill its uid.

        Closing twice, or from two threads at once (a crashed worker, then the whole sandbox), closes it once."""
        with self._closing:
            if not self.stderr.closed:
                self._close(kill)

    def _close(self, kill: bool) -> None:
        if kill:
            self.proc.kill()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.uid is not None and self.proc.returncode != 0:
            kill_uid(self.uid)
        self.stderr.close()
        shutil.rmtree(self.home, ignore_errors=True)


# How many more times a job runs, each on a fresh worker, when its worker dies, closes its pipe, passes the safety
# deadline or fails outside the program. A program cannot tell a retry from a first run: each starts from the test
# case's world in a fresh child. After the last, the job's outcome is INFRA_ERROR: no verdict.
RETRIES = 2
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class ExecutorError(RuntimeError):
    """An executor that cannot be had (ray not installed, a cluster without CPUs): one line naming the fix."""


class SandboxFault(RuntimeError):
    """A fault of this machine that no retry mends and that would make every later job fail: the run stops with
    this one line (what is already done is kept: generations are cached, a build resumes)."""


class DiskFull(SandboxFault):
    def __init__(self, folder: str):
        super().__init__(f"no space left on the device of {folder}, where the sandbox workers keep their files: "
                         "free some space there (or point TMPDIR at a larger disk), then run the same command "
                         "again; nothing was scored from the jobs it stopped")


class NoVerdict(SandboxFault):
    """Jobs still without a verdict after their retries where each must have one: the builder's reference and
    mutant runs, whose outcomes decide the dataset's bytes (a task dropped or a probe added because a worker died
    would make a build differ from the same build undisturbed)."""


def require_verdicts(outcomes: list[Outcome], lost_worlds: bool = False) -> list[Outcome]:
    """`outcomes`, unless one is INFRA_ERROR: then `NoVerdict`, naming how many and the last error. With
    `lost_worlds`, those whose world lost a part on every try (`extra["world_lost"]`, what died) are returned too."""
    unscored = [o for o in outcomes if o.status == INFRA_ERROR and not (lost_worlds and o.extra.get("world_lost"))]
    if unscored:
        raise NoVerdict(f"{len(unscored)} sandbox job(s) got no verdict, their workers lost {RETRIES + 1} times each "
                        f"({unscored[0].error}); is this machine short of memory? Run the same command again to go on "
                        "from what is done")
    return outcomes


def run_retrying(job: Job, worker: Callable[[], "_Worker | None"], release: Callable[["_Worker"], None]) -> Outcome:
    """Run `job` on `worker()` (a warm worker, a fresh one after a death), again on a fresh one each time its
    worker is lost (or on any, when only its world lost a part), at most RETRIES more times; then its outcome is
    INFRA_ERROR. `release` hands a worker back.
    `worker()` answering None (the executor is stopping) ends the job as INFRA_ERROR too."""
    outcome, tries = None, 0
    while tries <= RETRIES:
        w = worker()
        if w is None:
            break
        try:
            outcome = w.run_safely(job)
        finally:
            release(w)
        tries += 1
        if outcome.status != CRASH:
            if tries > 1:
                outcome.extra["retried"] = tries - 1
            return outcome
    if outcome is None:
        return lost(job, tries, "the run was stopped")
    return lost(job, tries, outcome.error, outcome.extra.get("world_lost"))


def lost(job: Job, tries: int, error: str, world_lost: str | None = None) -> Outcome:
    """The outcome of a job that ran `tries` times without a verdict (`INFRA_ERROR`); `world_lost`: what of its
    world died on the last try (see `core.sandbox.worker._world_lost`)."""
    if world_lost:
        return Outcome(job.key, INFRA_ERROR, error=f"no verdict: its world lost a part {tries} time(s); last: "
                                                   f"{world_lost}",
                       extra={"retried": max(0, tries - 1), "world_lost": world_lost})
    return Outcome(job.key, INFRA_ERROR, error=f"no verdict: its sandbox worker was lost {tries} time(s); last: "
                                               f"{error}", extra={"retried": max(0, tries - 1)})


def _outcome(key: Any, reply: Reply, extra: dict, batch: list[Outcome] | None = None) -> Outcome:
    return Outcome(key, reply.status, reply.result, reply.state, reply.error, reply.output, reply.seconds, extra,
                   reply.trace, batch)


JOIN_POLL_S = 0.2  # how often the harness thread wakes while workers run: a signal delivered to a thread other
# than this one does not interrupt a wait without a timeout, so Ctrl-C would wait for every job in flight


class Executor:
    """Where jobs run: an executor runs `Job`s and returns one `Outcome` per job, in job order.

    Two implementations: `Sandbox` (this machine's warm workers, the default) and
    `core.sandbox.ray_executor.RayExecutor` (the same worker program on a Ray cluster's nodes); `core.sandbox.executor.make_executor` picks one by name. The
    builder and scoring see only this interface, so where the work runs changes no step and no verdict.
    A subclass gives `run_untrusted` and `close`; batching and the context manager are shared.
    """

    retried = 0  # how many times a job ran again because its worker was lost, over this executor's life

    def _count_retries(self, outcomes: list) -> None:
        self.retried += sum(o.extra.get("retried", 0) for o in outcomes if o is not None)

    def run_untrusted(self, jobs: Iterable[Job], desc: str | None = None) -> list[Outcome]:
        raise NotImplementedError

    def close(self, kill: bool = False) -> None:
        """Stop every worker (`kill`: at once, without letting a job in flight finish) and remove their folders."""
        raise NotImplementedError

    def restart_workers(self) -> None:
        """Stop every worker between runs; the next run starts fresh ones. A worker keeps every world it loaded,
        and each test case forks it: the build calls this between scenarios so that the session and voice test
        cases do not fork a worker that holds torch (a fork and an exit cost about 8 ms more there)."""
        raise NotImplementedError

    def run_batched(self, jobs: list[Job], desc: str | None = None) -> list[Outcome]:
        """Like `run_untrusted`, for the builder's own programs only (references, their mutants): jobs on the same
        test case (the same `case` object), or of the same `Job.group` on any of its test cases, run as one batch,
        in one child with the world reset between them (see `Job.batch`, `Job.cases`), which saves a fork and a
        setup per program. The programs a batch did not reach (one ran out
        of time, the child died) run alone afterwards. Untrusted answers never share a child: score them with
        `run_untrusted`."""
        groups: dict[tuple, list[int]] = {}
        for i, job in enumerate(jobs):
            together = ("group", job.group) if job.group is not None else ("case", id(job.case))
            groups.setdefault((job.scenario, together), []).append(i)
        cases: dict[int, int] = {}  # test cases in order of first appearance
        for job in jobs:
            cases.setdefault(id(job.case), len(cases))
        for g in groups.values():  # by test case, then the statements shared by most programs run once, last
            g.sort(key=lambda i: (cases[id(jobs[i].case)], jobs[i].shared))
        batches = [Job(tuple(g), jobs[g[0]].scenario, "", jobs[g[0]].case, batch=[jobs[i].code for i in g],
                       record=any(jobs[i].record for i in g), shared=[jobs[i].shared for i in g],
                       cases=[jobs[i].case for i in g] if len({id(jobs[i].case) for i in g}) > 1 else None)
                   if len(g) > 1 else jobs[g[0]] for g in groups.values()]
        results: list[Outcome | None] = [None] * len(jobs)
        for g, outcome in zip(groups.values(), self.run_untrusted(batches, desc)):
            if len(g) == 1:
                results[g[0]] = outcome
                continue
            for i, one in zip(g, outcome.batch or []):
                results[i] = dataclasses.replace(one, key=jobs[i].key, extra=dict(outcome.extra))
        rest = [i for i, r in enumerate(results) if r is None]
        for i, outcome in zip(rest, self.run_untrusted([jobs[i] for i in rest], f"{desc} (one by one)" if rest and desc
                                                       else None)):
            results[i] = outcome
        return results  # type: ignore[return-value]

    def _interruptible(self, wait: Callable[[], None], bar) -> None:
        """`wait()` for the jobs in flight, in bounded steps so that Ctrl-C is acted on even if it reached another
        thread; interrupted, stop every worker now rather than after those jobs, and re-raise."""
        try:
            wait()
        except BaseException:
            self.close(kill=True)
            raise
        finally:
            bar.close()

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(kill=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))


class Sandbox(Executor):
    """A pool of warm workers. `run_untrusted(jobs)` returns one Outcome per job, in order.

    Interrupted (Ctrl-C) while it runs jobs, it kills its workers at once, starts no new one and re-raises; every
    exit path removes the workers' folders, and a new sandbox first removes those that killed runs left behind.
    """

    def __init__(self, workers: int | None = None, limits: Limits | None = None):
        if os.geteuid() != 0:
            # Jobs run as this same user: keep them out of /proc/<harness>/fd, the pipes that carry every
            # worker's verdicts. Side effects: no core dumps, and attaching a debugger to the harness needs root.
            prctl(PR_SET_DUMPABLE, 0)
        tempdirs.sweep()
        self.size = max(1, workers or os.cpu_count() or 1)
        self.limits = limits or Limits()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def _worker(self) -> _Worker | None:
        """An idle worker, or a new one; None once the sandbox is stopping."""
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            with self._lock:  # so that `close` never misses a worker started while it runs
                if self._stopping.is_set():
                    return None
                worker = _Worker(self.limits)
                self._all.append(worker)
            return worker

    def _release(self, worker: _Worker) -> None:
        if worker.reap():
            self._idle.put(worker)

    def run_untrusted(self, jobs: Iterable[Job], desc: str | None = None) -> list[Outcome]:
        if self._stopping.is_set():
            raise RuntimeError("this sandbox is closed; open a new one")
        jobs = list(jobs)
        results: list[Outcome | None] = [None] * len(jobs)
        todo: queue.Queue[int] = queue.Queue()
        for i in range(len(jobs)):
            todo.put(i)
        bar = progress(len(jobs), desc, unit="run")
        fault: list[SandboxFault] = []

        def drain() -> None:
            while not self._stopping.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = run_retrying(jobs[i], self._worker, self._release)
                except SandboxFault as exc:
                    fault.append(exc)
                    self._stopping.set()
                    return
                bar.update(1)

        threads = [threading.Thread(target=drain, daemon=True) for _ in range(min(self.size, len(jobs)))]

        def wait() -> None:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(JOIN_POLL_S)

        self._interruptible(wait, bar)
        if fault:
            self.close(kill=True)
            raise fault[0]
        self._count_retries(results)
        return results  # type: ignore[return-value]

    def restart_workers(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], queue.Queue()
        for w in workers:
            w.close()

    def close(self, kill: bool = False) -> None:
        """Stop every worker (`kill`: at once, without letting a job in flight finish) and remove their folders."""
        with self._lock:
            self._stopping.set()
            workers, self._all = self._all, []
        for w in workers:
            w.close(kill=kill)
        tempdirs.sweep()  # the test-case folders of workers that were killed mid-job
