"""A warm sandbox worker: `python -m core.sandbox.worker [--uid N]`, started by `core.sandbox.harness.Sandbox`,
never by hand.

It imports each scenario's world once (torch, servers), then serves jobs read as JSON lines on stdin. Every job
runs in a forked child that starts a new session (so the whole group can be killed), drops the worker's shared
memory and descriptors, sends its output to a capped file the worker holds, takes resource limits, and returns
RESULT as plain JSON through a pipe. The worker reads side effects from the world after the child is gone, kills
whatever the child left behind, and answers one JSON line per job on the protocol descriptor it kept for itself
(so a stray print can never corrupt the protocol).

Containment depends on what the worker may do (`containment` in every reply says which applied):

* ``jail`` (root with CAP_SYS_ADMIN, the normal case on a dedicated machine or a privileged container): the worker
  lives in its own network namespace (a private loopback: its jobs reach its own session service and nothing
  else), and each child gets a private mount and IPC namespace whose root is a fresh, size-capped tmpfs holding
  read-only binds of the system and Python directories and of the world packages only, a private /proc
  (hidepid=2), /tmp and /dev/shm, then drops to the worker's own unprivileged uid (no account, no groups, no new
  privileges). Datasets, oracles, results, caches, home directories and the worker's files are simply absent.
* ``uid`` (root without namespaces, e.g. a default Docker container): the same uid drop, no jail; the child can
  read whatever any user can read.
* ``none`` (not root): no uid drop; the child runs as the harness's user. See docs/trust.md, "Execution and trust".

A job may carry a `batch` of programs instead of one `code` (the builder's references and their mutants, never a
model's answers): one child runs them in turn on the same test case (or each on its own, `case_of`), each in a
fresh namespace from `World.namespace`, and between two of them the worker reads the world's side effects and
resets it (`World.reset_between`) while the child waits on a pipe, so each program sees what it would see alone,
for one fork and one jail instead of one per program. Where the world can be saved (`World.save`), statements that the
programs of a batch begin with alike run once, and each program runs the rest of its own from a copy of their
namespace, the world restored to what they left (`_run_batch`).

In every mode the worker is not dumpable (a program cannot open /proc/<worker>/fd/* to write into the protocol,
nor read its memory), is a child subreaper (what a program leaves behind comes back to it and is killed before
the reply), and each child gets PR_SET_PDEATHSIG so that it dies with its worker. The primitives behind all this
(namespaces, mounts, the jail, the uid drop, limits, reaping) are in `core.sandbox.containment`; this module is the
job protocol and the child's execution.
"""

from __future__ import annotations

import ast
import builtins
import copy
import errno
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings

from core.sandbox import tempdirs
from core.sandbox.containment import (
                                      CLONE_NEWNET,
                                      JAIL,
                                      MB,
                                      NONE,
                                      PR_SET_CHILD_SUBREAPER,
                                      PR_SET_DUMPABLE,
                                      PR_SET_NO_NEW_PRIVS,
                                      PR_SET_PDEATHSIG,
                                      UID,
                                      Jail,
                                      apply_limits,
                                      children,
                                      drop_privileges,
                                      drop_shared_memory,
                                      kill_group,
                                      loopback_up,
                                      prctl,
                                      reap_leftovers,
                                      unshare,
                                      )
from core.sandbox.protocol import (REPORT_KEYS, BatchRequest, EpisodeRequest, Limits, ProgramRequest, Request,
                                   TraceRequest, decode_request, encode_reply)
from core.statuses import (
                           CHILD_STATUSES,
                           CRASH,
                           EXECUTION_ERROR,
                           OK,
                           RESULT_ERROR,
                           SETUP_ERROR,
                           SYNTAX_ERROR,
                           TIMEOUT,
                           )
from scenarios import get_scenario, load_world
from scenarios.rest.registration import register_environment
from scenarios.base import canonical_json
from scenarios.calling import Tracer, run_calls, setup_handles, submitted
from scenarios.mutants import Mutant
from scenarios.trace import Recorder, bind



# The free space a worker needs where it and its test cases keep their files; less, and the run stops rather than
# score programs whose writes may fail for want of it (`Runner.short_of_space`).
FREE_SPACE_MB = 8


def too_large(cap_mb: int) -> str:
    return f"RESULT is larger than {cap_mb} MB"


def _error_text(exc: BaseException) -> tuple[str, str]:
    """A one-line message and a short traceback limited to the untrusted program's own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<solution>"]
    where = f" (line {frames[-1].lineno})" if frames else ""
    message = f"{type(exc).__name__}: {exc}{where}"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8))
    return message[:2000], tb[-4000:]


def _setup(world, case: dict, recorder: Recorder | None = None) -> tuple[dict, set[str], dict | None]:
    """The namespace after the setup block, the names it had before, and a setup error report (or None). With a
    recorder, the world's API reaches it (recording starts later, with `Recorder.start`)."""
    ns = {"__name__": "__main__", "__builtins__": builtins}
    ns.update(world.namespace(case))
    if recorder is not None:
        world.record_calls(ns, recorder)
    before = set(ns)
    try:
        exec(compile(case["setup_code"], "<setup>", "exec"), ns)
    except BaseException as exc:  # a broken setup block is the dataset's fault, not the model's
        message, tb = _error_text(exc)
        return ns, before, {"status": SETUP_ERROR, "error": message, "traceback": tb}
    return ns, before, None


def execute(world, code: str, case: dict, record: bool = True, test: bool = False) -> dict:
    """Run setup + program inside the child; return a plain report.

    With `record`, the program's API calls are recorded from the end of the setup block on (`scenarios.trace`):
    the report of a program that compiled carries them as `trace` (raw calls and the setup's value ids), and
    `in_api` says whether the exception that ended it was raised inside an API call. With `test` (a test of
    `--mode tests`), a program that ran carries its EXPECTED, when it assigned one, as `expected`."""
    recorder = Recorder(world.trace_value)
    recorder.mutant, recorder.altered = world.call_mutant(), world.altered
    record = record or world.mutant is not None  # a mutant is applied where the calls are recorded
    ns, before, failed = _setup(world, case, recorder if record else None)
    if failed:
        return failed
    try:
        program = compile(code, "<solution>", "exec")
    except (SyntaxError, ValueError) as exc:
        return {"status": SYNTAX_ERROR, "error": f"{type(exc).__name__}: {exc}"}
    if record:
        recorder.start(ns, [name for name in ns if name not in before])
    report = _exec_program(world, program, ns, recorder)
    if test and report["status"] == OK and "EXPECTED" in ns:
        report = _with_expected(world, ns["EXPECTED"], report)
    if record:
        report["trace"] = recorder.to_plain()
    if world.mutant is not None:
        report["mutated"] = recorder.changed
    return report


def _with_expected(world, expected, report: dict) -> dict:
    """A test's report with its EXPECTED: as written when it is plain data (the names it may hold for values a
    service makes up, `<made-1>`, stay names), else the world's plain form of it (a tensor's)."""
    try:
        canonical_json(expected)
        return {**report, "expected": expected}
    except Exception:  # noqa: BLE001 - not plain data: the world's form of it
        pass
    try:
        expected = world.canonical(expected)
        canonical_json(expected)
    except Exception as exc:  # noqa: BLE001 - as RESULT: what cannot be serialised fails the test
        return {"status": RESULT_ERROR, "error": f"EXPECTED cannot be serialised: {exc}"}
    return {**report, "expected": expected}


def _exec_program(world, program, ns: dict, recorder: Recorder) -> dict:
    try:
        exec(program, ns)
    except SystemExit as exc:
        return {"status": EXECUTION_ERROR, "error": f"the program called exit({exc.code!r})"}
    except BaseException as exc:
        message, tb = _error_text(exc)
        return {"status": EXECUTION_ERROR, "error": message, "traceback": tb, "in_api": exc is recorder.raised}
    finally:
        recorder.recording = False  # what the world does to read RESULT is not the program's
    if "RESULT" not in ns:
        return {"status": RESULT_ERROR, "error": "the program did not assign RESULT"}
    try:
        result = world.canonical(ns["RESULT"])
        canonical_json(result)
    except Exception as exc:  # noqa: BLE001 - any failure to serialise is a result error
        return {"status": RESULT_ERROR, "error": f"RESULT cannot be serialised: {exc}"}
    try:
        recorded = world.recorded(ns)
        canonical_json(recorded)
    except Exception as exc:  # noqa: BLE001 - a program that breaks the world's record fails on it
        return {"status": RESULT_ERROR, "error": f"the side effects cannot be read: {exc}"}
    return {"status": OK, "result": result, "recorded": recorded}


def execute_calls(world, calls: list[dict], submit: list | None, case: dict) -> dict:
    """A tool-calling episode on one test case (`scenarios.calling`): the setup block, then each of the job's calls
    in order, each result bound to a handle; with `submit` (submit_result's items), RESULT and side effects as a
    program's. The report carries a summary of the setup's values and of every call's result or error, and the
    calls' trace as a program's report does (the diagnosis reads tool calls and programs alike)."""
    recorder = Recorder(world.trace_value)
    ns, before, failed = _setup(world, case, recorder)
    if failed:
        return failed
    tools = world.tools()  # after the setup: a world may serve other tools on another tier of test case
    handles = setup_handles(ns, before, tools.hidden)
    report = {"setup": {k: tools.describe(v) for k, v in handles.items()}}
    recorder.start(ns, [name for name in ns if name not in before])
    report["calls"] = run_calls(tools, ns, handles, calls)
    recorder.recording = False
    report["trace"] = recorder.to_plain()
    if submit is None:
        return {"status": RESULT_ERROR, "error": "no result was submitted (submit_result was not called)", **report}
    try:
        result = world.canonical(submitted(submit, handles))
        canonical_json(result)
    except Exception as exc:  # noqa: BLE001 - a submission naming nothing, or something that cannot be compared
        return {"status": RESULT_ERROR, "error": f"submit_result: {type(exc).__name__}: {exc}"[:2000], **report}
    return {"status": OK, "result": result, "recorded": world.recorded(ns), **report}


def trace_program(world, code: str, case: dict) -> dict:
    """Run a trusted program (a task's reference) with its API calls recorded as tool calls: what `--mode tools`
    replays for `--model reference`. The report's `calls` and `submit` are that script for this test case."""
    ns, before, failed = _setup(world, case)
    if failed:
        return failed
    tracer = Tracer(setup_handles(ns, before, world.tools().hidden), world.plain)
    world.trace_as_tools(ns, tracer)
    try:
        exec(compile(code, "<reference>", "exec"), ns)
        submit = tracer.result_items(ns["RESULT"])
    except BaseException as exc:  # noqa: BLE001 - a reference that fails here is a broken task
        message, tb = _error_text(exc)
        return {"status": EXECUTION_ERROR, "error": message, "traceback": tb}
    return {"status": OK, "result": None, "recorded": world.recorded(ns), "calls": tracer.calls, "submit": submit}


def _run(world, request: Request, case: dict) -> dict:
    """One job's report: a traced reference, a tool-calling episode, or a program."""
    if isinstance(request, TraceRequest):
        return trace_program(world, request.code, case)
    if isinstance(request, EpisodeRequest):
        return execute_calls(world, request.calls, request.submit, case)
    return execute(world, request.code, case, request.record, request.test)


def _run_batch(world, batch: BatchRequest, cases: list[dict], wfd: int, gfd: int) -> None:
    """A batch's programs in turn, each on its test case (`cases`; see `Runner._batch` for the worker's half,
    which follows the same schedule).

    With `shared` (the number of leading top-level statements each program has in common with the others, in
    ascending order), the statements the programs share run once: before the first program that shares more
    than those run so far, the child runs the missing ones in one namespace kept across the batch and reports
    (the worker then saves the world), and that program runs its own statements only, from a copy of that
    namespace, in the world restored to what those statements left. Its outcome is the one it would have alone:
    the same statements ran on the same values, and a program raises on the lines it raises on alone. Statements
    are shared between programs on the same test case only."""
    shared, cap, record = batch.shared, batch.limits.result_mb, batch.record
    kept, ran = None, []  # the shared namespace and the dumps of the statements run in it
    for k, program in enumerate(batch.programs):
        if k and os.read(gfd, 1) != b"g":
            return
        case = cases[k]
        if k and case is not cases[k - 1]:
            kept, ran = None, []
        if shared[k] > len(ran):
            try:
                body = ast.parse(program).body[:shared[k]]
            except SyntaxError:
                return
            if [ast.dump(s) for s in body[:len(ran)]] != ran:
                return  # not the statements this batch ran: the worker runs the rest alone
            if kept is None:
                kept, _, failed = _setup(world, case)
                if failed:
                    return
            report = _exec_statements(world, body[len(ran):], kept)
            _send(wfd, report, cap)
            if report["status"] != OK or os.read(gfd, 1) != b"g":
                return
            ran = [ast.dump(s) for s in body]
        if not ran:
            _send(wfd, execute(world, program, case, record), cap)
            continue
        try:
            tree = ast.parse(program)
        except SyntaxError:
            return
        if [ast.dump(s) for s in tree.body[:len(ran)]] != ran:
            return
        tree.body = tree.body[len(ran):]
        try:
            ns = _copied(kept)
        except Exception:  # noqa: BLE001 - a value that cannot be copied: the worker runs the rest alone
            return
        _send(wfd, _exec_program(world, compile(tree, "<solution>", "exec"), ns, Recorder(world.trace_value)), cap)


def _exec_statements(world, body: list, ns: dict) -> dict:
    """Run top-level statements of a batch's shared part in `ns` (see `_run_batch`): an OK report or the error."""
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), "<solution>", "exec"), ns)
    except BaseException as exc:  # noqa: BLE001 - any failure ends the batch; the rest run alone
        return {"status": EXECUTION_ERROR, "error": _error_text(exc)[0]}
    return {"status": OK}


def _copied(ns: dict) -> dict:
    """A copy of a namespace whose data the next program may change without the one after seeing it: containers
    are copied deeply (in one pass, so two names for one list stay one list), modules, functions and other
    values are shared."""
    memo = {id(v): v for v in ns.values() if not isinstance(v, (dict, list, set))}
    return copy.deepcopy(ns, memo)


def _send(wfd: int, report: dict, cap_mb: int) -> None:
    """One report on the pipe: its length in 8 bytes, then its JSON (a result error instead when it is larger than
    `cap_mb`, the job's `result_mb` limit)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # os._exit skips Python's buffers; small output would be lost
        except (OSError, ValueError):
            pass
    data = json.dumps(report, allow_nan=False).encode()
    if len(data) > cap_mb * MB:  # said here, so the verdict never waits on megabytes going through a pipe
        data = json.dumps({"status": RESULT_ERROR, "error": too_large(cap_mb)}).encode()
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(wfd, view):]


def _child(world, request: Request, case: dict | list[dict], workdir: str, wfd: int, gfd: int | None, out: int,
           jail: Jail | None, uid: int | None, worker: int) -> None:
    """`gfd`: for a batch, the pipe on which the worker says go (b"g") once it has read the world after one
    program and reset it for the next; anything else ends the batch. `case`: for a batch, each program's."""
    code = 70
    try:
        os.setsid()
        drop_shared_memory()
        os.dup2(out, 1)
        os.dup2(out, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        # Keep only stdio and the report pipe: the worker's protocol descriptor, its database connections and
        # its output file must be out of reach.
        low = 3
        for fd in sorted({wfd} | ({gfd} if gfd is not None else set())):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if jail is not None:
            jail.enter(workdir, max(64, 4 * request.limits.file_size_mb))
        else:
            os.chdir(workdir)
            if uid is not None:
                drop_privileges(uid)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
        if os.getppid() != worker:  # the worker died before the line above
            os._exit(code)
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # no setuid binary gives anything back
        apply_limits(request.limits)
        os.environ.update(HOME=workdir, TMPDIR=workdir, USER="sandbox", LOGNAME="sandbox")
        if gfd is None:
            _send(wfd, _run(world, request, case), request.limits.result_mb)
        else:
            _run_batch(world, request, case, wfd, gfd)
        code = 0
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        code = 71
    finally:
        os._exit(code)


def _collect(rfd: int, pid: int, deadline: float, cap_mb: int) -> tuple[bytes, str]:
    """Read the child's report (8-byte length, then JSON) until it is complete, the child is gone, time is up, or
    it is larger than `cap_mb` (a child's own code checks that before it sends; a program could write the pipe).

    Neither EOF nor a full pipe decides: a process the program left behind keeps the pipe open, and the report
    may be larger than the pipe's buffer. The child's exit is watched through a pidfd.
    """
    buf = bytearray()
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            if len(buf) >= 8 and len(buf) >= 8 + int.from_bytes(buf[:8], "big"):
                return bytes(buf[8:8 + int.from_bytes(buf[:8], "big")]), "done"
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", "timeout"
            ready, _, _ = select.select([rfd, pidfd], [], [], left)
            if rfd in ready:
                chunk = os.read(rfd, 1 << 20)
                if not chunk:
                    return b"", "exit"
                buf += chunk
                if len(buf) > 8 + cap_mb * MB:
                    return b"", "too_large"
            elif pidfd in ready:  # gone; what it wrote is in the pipe, unless the report was incomplete
                if not select.select([rfd], [], [], 0)[0]:
                    return b"", "exit"
    finally:
        os.close(pidfd)


def _read_capped(fd: int, cap: int) -> str:
    data = os.pread(fd, cap + 1, 0)
    text = data[:cap].decode("utf-8", "replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


class Runner:
    """The worker's state between jobs: loaded worlds and the containment it applies to every child."""

    def __init__(self, uid: int | None, folder: str | None = None):
        """`folder`: the harness's folder for this worker, which holds the worker's own files so that removing it
        removes everything (None: a folder of this process's own, for use outside a sandbox)."""
        self.worlds: dict = {}
        self.home = tempfile.mkdtemp(dir=folder) if folder else tempdirs.make("worker")
        prctl(PR_SET_DUMPABLE, 0)  # /proc/<worker>/fd, mem, environ: closed to processes of the same user
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # a job's orphans come back here and are killed
        self.uid = uid if uid is not None and os.geteuid() == 0 else None
        self.jail = None
        if self.uid is not None:
            try:
                unshare(CLONE_NEWNET, "unshare(CLONE_NEWNET)")
            except OSError as exc:  # no CAP_SYS_ADMIN (e.g. a default Docker container): uid drop only
                print(f"sandbox worker: no namespaces ({exc}); jobs run as uid {self.uid} without a jail",
                      file=sys.stderr)
            else:
                loopback_up()
                self.jail = Jail(self.uid, tempfile.mkdtemp(dir=self.home))
        self.containment = JAIL if self.jail else UID if self.uid is not None else NONE

    def short_of_space(self) -> str | None:
        """Whether the disk of this worker's files or of the test cases' folders is (nearly) full, said after every
        job: there a program's own writes, its output and the session service's database fail, so its verdict
        would be the disk's. The harness stops the run on it (`core.sandbox.harness.DiskFull`); None when not."""
        for folder in {self.home, tempdirs.root()}:
            try:
                st = os.statvfs(folder)
            except OSError:
                continue
            free = st.f_bavail * st.f_frsize
            if free < FREE_SPACE_MB * MB:
                return f"{free // 1024} KiB free in {folder}, fewer than the sandbox's {FREE_SPACE_MB} MiB"
        return None

    def close(self) -> None:
        for world in self.worlds.values():
            world.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def _load(self, scenario: str):
        """A scenario's world, its temporary files (a session service's database and log) made inside this worker's
        folder: removing that folder, as the harness does after a worker it stopped or lost, removes them too."""
        tempfile.tempdir = self.home
        try:
            register_environment()  # the scenarios of the harness's service files (STATEEVAL_SERVICES)
            return load_world(get_scenario(scenario))
        finally:
            tempfile.tempdir = None

    def run_job(self, request: Request) -> dict:
        """The reply to one request, in steps: the world reset to the (first) test case, a contained child forked
        to run the request, its report read (a batch's one program at a time, `_batch`), the child and whatever it
        left killed, and the verdict completed from the world. A job during which a part of the world died
        (`World.intact`) has no verdict: the reply is a crash that says what died (`_world_lost`)."""
        world = self._world(request)
        batch = request if isinstance(request, BatchRequest) else None
        if batch is not None:  # each program's test case; the first is reset here, the others in `_batch`
            cases = [c.as_dict() for c in batch.cases]
            case: dict | list[dict] = [cases[i] for i in batch.case_of]
            first = case[0]
        else:
            case = first = request.case.as_dict()
        limits = request.limits
        workdir = tempdirs.make("case")  # in the shared temporary directory: the job's uid must reach it
        if self.uid is not None:
            os.chown(workdir, self.uid, self.uid)
        # Output goes to an unlinked file the worker holds: the program cannot swap it for a link or a pipe.
        out, path = tempfile.mkstemp(dir=self.home)
        os.unlink(path)
        pid = None
        try:
            # A program's job may be on a world mutant (`scenarios.mutants`); every other job is on the correct world.
            world.mutate(Mutant.from_json(request.mutant) if isinstance(request, ProgramRequest) else None)
            world.reset(first)
            # The wall clock starts after the reset: restoring the world (restarting a service an earlier program
            # killed or kept busy) is the worker's time, not this program's.
            start = time.monotonic()
            keep = children()  # the world's own processes (a service), never a job's
            # Shared statements need a world that can be saved after them and restored to that (`World.save`).
            saved = world.save() if batch is not None and any(batch.shared) else None
            if batch is not None and saved is None:
                batch.shared = [0] * len(batch.programs)
            pid, rfd, go = self._fork(world, request, case, workdir, out)
            if batch is None:
                data, how = _collect(rfd, pid, start + limits.timeout_s, limits.result_mb)
            else:
                reports, keep = self._batch(world, case, batch.shared, saved, rfd, go, pid, keep, limits)
                os.close(go)
                data, how = json.dumps({"status": OK}).encode(), "done"
            os.close(rfd)
            kill_group(pid)  # the program and the processes it started in its group
            _, wait_status, usage = os.wait4(pid, 0)
            pid = None
            # (A batch ends before the program under which the world died, which runs alone: `_batch`.)
            if batch is None and not world.intact():
                reap_leftovers(keep, self.uid)
                return _world_lost(world)
            leftovers = reap_leftovers(keep, self.uid)  # and those that left the group
            seconds = time.monotonic() - start
            report = _verdict(data, how, wait_status, usage.ru_utime + usage.ru_stime, limits)
            if batch is not None:
                report["batch"] = reports
            else:
                _read_world(world, report)
                if world.mutant is not None:  # the calls it changed, in the child and in front of a service
                    counted = report.get("mutated")  # (the child's count is its word: a trusted test's only)
                    report["mutated"] = (counted if type(counted) is int else 0) + world.changed()
            report["seconds"] = round(seconds, 4)
            report["output"] = _read_capped(out, limits.output_bytes)
            report["containment"] = self.containment
            if leftovers:
                report["leftovers"] = leftovers
            return report
        except Exception as exc:  # a reset or a snapshot that failed because a part of the world died
            if world.intact():
                raise
            if pid is not None:
                kill_group(pid)
                os.waitpid(pid, 0)
            return _world_lost(world, exc)
        finally:
            os.close(out)
            shutil.rmtree(workdir, ignore_errors=True)

    def _world(self, request: Request):
        """The request's scenario's world, loaded on its first job."""
        if request.scenario not in self.worlds:
            self.worlds[request.scenario] = self._load(request.scenario)
        world = self.worlds[request.scenario]
        if isinstance(request, (EpisodeRequest, TraceRequest)):
            world.tools()  # built once in the worker (a world caches its tool table), not in every child
        return world

    def _fork(self, world, request: Request, case: dict | list[dict], workdir: str, out: int
              ) -> tuple[int, int, int | None]:
        """The child that runs `request` (it never returns here): its pid, the pipe its reports come on, and for a
        batch the pipe on which the worker says go to the next program."""
        rfd, wfd = os.pipe()
        gfd, go = os.pipe() if isinstance(request, BatchRequest) else (None, None)
        me = os.getpid()
        with warnings.catch_warnings():
            # A world's own threads (a service's recording proxy) stay in the worker: the child needs none of them.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            os.close(rfd)
            if go is not None:
                os.close(go)
            _child(world, request, case, workdir, wfd, gfd, out, self.jail, self.uid, me)
        os.close(wfd)
        if gfd is not None:
            os.close(gfd)
        return pid, rfd, go

    @staticmethod
    def _batch(world, cases: list[dict], shared: list[int], saved, rfd: int, go: int, pid: int, keep: set,
               limits: Limits) -> tuple[list, set]:
        """The reports of a batch's programs, read one by one: after each, the world's side effects are read and
        the world is reset before the child may run the next, so that every program meets the test case's initial
        world exactly as when it runs alone. Each program has the whole wall-clock limit. The batch ends early
        (fewer reports than programs) when a program runs out of time or the child dies, or when the world can no
        longer be reached from the child after a reset; the caller runs the rest one by one.

        With statements the programs share (`shared`, see `_run_batch`), the child reports once more after it has
        run more of them: the world is then saved (`World.save`), and restored to that after each program instead
        of reset to the test case's initial state.

        `cases`: each program's test case; when the next program's is another, the world is reset to that one.

        Returns the reports and the processes to keep (a reset that restarted a service adds it)."""
        reports, done = [], 0

        def report() -> dict | None:
            data, how = _collect(rfd, pid, time.monotonic() + limits.timeout_s, limits.result_mb)
            return _checked_report(data) if how == "done" else None

        for k in range(len(shared)):
            if k and cases[k] is not cases[k - 1]:
                done = 0  # statements are shared on one test case only (see `_run_batch`)
            if shared[k] > done:
                ran = report()
                if ran is None or ran["status"] != OK:
                    break
                saved, done = world.save(), shared[k]
                if saved is None:
                    break
                try:
                    os.write(go, b"g")
                except OSError:
                    pass
            one = report()
            if one is None or not _world_read(world, one):
                break
            reports.append(one)
            if k + 1 == len(shared):
                break
            same = cases[k + 1] is cases[k]
            try:
                reachable = world.restore(saved) if done and same else world.reset_between(cases[k + 1])
            except Exception:  # noqa: BLE001 - a part of the world died: the next program runs alone
                if world.intact():
                    raise
                break
            keep = keep | (children() - {pid})
            if not reachable:
                break
            try:
                os.write(go, b"g")
            except OSError:  # the child is gone: the next _collect says so
                pass
        return reports, keep


def _verdict(data: bytes, how: str, wait_status: int, cpu: float, limits: Limits) -> dict:
    """What a program's run comes to, from how its report's collection ended (`_collect`) and how the child did."""
    if how == "timeout":
        return {"status": TIMEOUT, "error": f"the program ran longer than {limits.timeout_s} s"}
    if how == "too_large":
        return {"status": RESULT_ERROR, "error": too_large(limits.result_mb)}
    if not data:
        out_of_cpu = _out_of_cpu(wait_status, cpu, limits.cpu_s)
        return {"status": TIMEOUT if out_of_cpu else EXECUTION_ERROR,
                "error": "the program used up its CPU time" if out_of_cpu else _early_exit_text(wait_status)}
    return _checked_report(data)


def _world_read(world, report: dict) -> bool:
    """`_read_world` for a batch's program; False when a part of the world died under the program (before or while
    it was read): that program has no verdict here, and runs alone."""
    try:
        if world.intact():
            _read_world(world, report)
    except Exception:  # noqa: BLE001
        if world.intact():
            raise
    return world.intact()


def _world_lost(world, exc: BaseException | None = None) -> dict:
    """The reply to a job during which a part of the world died: a crash that names what died (`World.failure`,
    else the error that revealed it). The harness runs it again on this worker, whose next reset brings the world
    back, and after its retries it has no verdict for that reason (`core.sandbox.harness.run_retrying`)."""
    why = world.failure() or (f"{type(exc).__name__}: {exc}" if exc is not None else "a part of the world died")
    return {"status": CRASH, "error": why, "world_lost": why, "seconds": 0.0}


def _read_world(world, report: dict) -> None:
    """Complete a child's report from the world, in the worker, before the world is reset: the trace (the calls
    the world holds, e.g. a service's log, bound to the setup's values) and, for a program that ran, RESULT and the
    state as they are compared (`World.outcome`)."""
    child = report.pop("trace", None)
    if isinstance(child, dict):
        try:
            report["trace"] = bind(world.calls(child.get("calls")), child.get("inputs"))
        except Exception:  # noqa: BLE001 - a log the program damaged: no trace, and the verdict stands
            report["trace"] = None
    if report["status"] == OK:
        report["result"], report["state"] = world.outcome(report.get("result"), report.pop("recorded", None))


def _checked_report(data: bytes) -> dict:
    """The child's report, or an execution error if it is not one the child's own code could have written."""
    try:
        report = json.loads(data)
        if not isinstance(report, dict) or report.get("status") not in CHILD_STATUSES:
            raise ValueError(report.get("status") if isinstance(report, dict) else type(report).__name__)
    except (ValueError, json.JSONDecodeError) as exc:
        return {"status": EXECUTION_ERROR, "error": f"the program tampered with its report ({str(exc)[:80]})"}
    return {k: report[k] for k in REPORT_KEYS if k in report}


def _out_of_cpu(wait_status: int, cpu: float, cpu_s: float) -> bool:
    """Whether the kernel ended the child for its CPU time (a timeout, not an error of the program).

    RLIMIT_CPU sends SIGXCPU at the soft limit (`cpu_s`) and SIGKILL at the hard one, CPU_GRACE_S later: a
    program that ignores SIGXCPU dies of SIGKILL, told apart from any other SIGKILL by the CPU time it used. (With
    equal limits the kernel sends SIGKILL straight away, and the CPU time a multi-threaded child reports can fall
    a few ticks short of the limit that killed it.)
    """
    if not os.WIFSIGNALED(wait_status):
        return False
    sig = os.WTERMSIG(wait_status)
    return sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= cpu_s)


def _early_exit_text(wait_status: int) -> str:
    if os.WIFSIGNALED(wait_status):
        return f"the program was killed by {signal.Signals(os.WTERMSIG(wait_status)).name}"
    return f"the program ended the process early (exit code {os.WEXITSTATUS(wait_status)})"


def _errno(exc: BaseException) -> int | None:
    """The errno behind a worker's own failure, so that the harness can tell a full disk (which stops the run) from
    a crash (which is retried): an OSError's, or SQLite's "database or disk is full" (the session world's store)."""
    if isinstance(exc, OSError):
        return exc.errno
    if getattr(exc, "sqlite_errorcode", None) == 13:  # SQLITE_FULL
        return errno.ENOSPC
    return None


def main() -> None:
    uid = int(sys.argv[sys.argv.index("--uid") + 1]) if "--uid" in sys.argv else None
    folder = sys.argv[sys.argv.index("--folder") + 1] if "--folder" in sys.argv else None
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by imports or worlds goes to stderr, never into the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness decides when workers stop
    runner = Runner(uid, folder)
    try:
        for line in sys.stdin:  # EOF: the harness closed the pipe, or died
            try:
                reply = runner.run_job(decode_request(line))
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                reply = {"status": CRASH, "error": f"worker error: {type(exc).__name__}: {exc}", "seconds": 0.0,
                         "errno": _errno(exc)}
            if reply.get("errno") is None and (short := runner.short_of_space()):
                reply = {"status": CRASH, "error": f"worker error: {short}", "seconds": 0.0, "errno": errno.ENOSPC}
            try:
                proto.write(encode_reply(reply))
            except BrokenPipeError:  # the harness died while the job ran
                break
    finally:
        runner.close()
        if folder:
            # The harness removes this folder after a worker it stopped, but a harness that was killed cannot:
            # removing it here (it is this worker's alone) leaves nothing behind either way.
            shutil.rmtree(folder, ignore_errors=True)
    # Served and closed: skip the interpreter's teardown, which takes 0.4 s with torch loaded, paid by every worker
    # the harness stops (a build restarts its workers between scenarios).
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
