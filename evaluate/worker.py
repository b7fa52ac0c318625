"""A warm sandbox worker: `python -m evaluate.worker`, started by `evaluate.sandbox.Sandbox`, never by hand.

It imports each scenario's world once (torch, servers), then serves jobs read as JSON lines on stdin. Every job
runs in a forked child that starts a new session (so the whole group can be killed), moves into a private
directory, sends its output to a capped file, takes resource limits, and returns RESULT as plain JSON through a
pipe. The worker reads side effects from the world after the child is gone, and answers one JSON line per job on
the protocol descriptor it kept for itself (so a stray print can never corrupt the protocol).
"""

from __future__ import annotations

import base64
import builtins
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

from scenarios import get_scenario, load_world
from scenarios.base import canonical_json

RESULT_CAP = 64 * 1024 * 1024  # bytes of serialised RESULT a child may send back
MB = 1024 * 1024


def _limits(limits: dict) -> None:
    """Resource limits for the child. Address space, CPU time, file size, open files, processes."""
    def cap(res, value):
        try:
            soft, hard = resource.getrlimit(res)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, limits["memory_mb"] * MB)
    cap(resource.RLIMIT_CPU, limits["cpu_s"])
    cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] * MB)
    cap(resource.RLIMIT_NOFILE, limits["open_files"])
    cap(resource.RLIMIT_NPROC, limits["processes"])
    cap(resource.RLIMIT_CORE, 0)


def _error_text(exc: BaseException) -> tuple[str, str]:
    """A one-line message and a short traceback limited to the untrusted program's own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<solution>"]
    where = f" (line {frames[-1].lineno})" if frames else ""
    message = f"{type(exc).__name__}: {exc}{where}"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8))
    return message[:2000], tb[-4000:]


def execute(world, job: dict, case: dict) -> dict:
    """Run setup + program inside the child; return a plain report."""
    ns = {"__name__": "__main__", "__builtins__": builtins}
    ns.update(world.namespace(case))
    try:
        exec(compile(case["setup_code"], "<setup>", "exec"), ns)
    except BaseException as exc:  # a broken setup block is the dataset's fault, not the program's
        message, tb = _error_text(exc)
        return {"status": "setup_error", "error": message, "traceback": tb}
    try:
        program = compile(job["code"], "<solution>", "exec")
    except (SyntaxError, ValueError) as exc:
        return {"status": "syntax_error", "error": f"{type(exc).__name__}: {exc}"}
    try:
        exec(program, ns)
    except SystemExit as exc:
        return {"status": "execution_error", "error": f"the program called exit({exc.code!r})"}
    except BaseException as exc:
        message, tb = _error_text(exc)
        return {"status": "execution_error", "error": message, "traceback": tb}
    if "RESULT" not in ns:
        return {"status": "result_error", "error": "the program did not assign RESULT"}
    try:
        result = world.canonical(ns["RESULT"])
        canonical_json(result)
    except Exception as exc:  # noqa: BLE001 - any failure to serialise is a result error
        return {"status": "result_error", "error": f"RESULT cannot be serialised: {exc}"}
    try:
        recorded = world.recorded(ns)
        canonical_json(recorded)
    except Exception as exc:  # noqa: BLE001 - a program that breaks the world's record fails on it
        return {"status": "result_error", "error": f"the side effects cannot be read: {exc}"}
    return {"status": "ok", "result": result, "recorded": recorded}


def _child(world, job: dict, case: dict, workdir: str, wfd: int) -> None:
    code = 70
    try:
        os.setsid()
        os.chdir(workdir)
        out = os.open("output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        # Keep only stdio and the report pipe: the worker's protocol descriptor must be out of reach.
        os.closerange(3, wfd)
        os.closerange(wfd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        _limits(job["limits"])
        os.environ["HOME"] = workdir  # nothing written under ~ outlives this test case
        report = execute(world, job, case)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # os._exit below skips Python's buffers; small output would be lost
            except (OSError, ValueError):
                pass
        data = json.dumps(report, allow_nan=False).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(wfd, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        code = 71
    finally:
        os._exit(code)


def _collect(rfd: int, deadline: float) -> tuple[bytes, str]:
    """Read the child's report until EOF, the deadline, or the size cap."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), "timeout"
        ready, _, _ = select.select([rfd], [], [], left)
        if not ready:
            continue
        chunk = os.read(rfd, 1 << 20)
        if not chunk:
            return b"".join(chunks), "eof"
        size += len(chunk)
        if size > RESULT_CAP:
            return b"", "too_large"
        chunks.append(chunk)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(path: str, cap: int) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError:
        return ""
    text = data[:cap].decode("utf-8", "replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


def run_job(worlds: dict, job: dict) -> dict:
    scenario = job["scenario"]
    if scenario not in worlds:
        worlds[scenario] = load_world(get_scenario(scenario))
    world = worlds[scenario]
    case = dict(job["case"])
    case["assets"] = [dict(a, data=base64.b64decode(a["data"]), meta=json.loads(a["meta"])) for a in case["assets"]]
    limits = job["limits"]
    workdir = tempfile.mkdtemp(prefix="stateeval-case-")
    start = time.monotonic()
    try:
        world.reset(case)
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            _child(world, job, case, workdir, wfd)
        os.close(wfd)
        data, how = _collect(rfd, start + limits["timeout_s"])
        os.close(rfd)
        _kill_group(pid)  # also ends grandchildren the program left behind
        _, wait_status = os.waitpid(pid, 0)
        seconds = time.monotonic() - start
        output = _read_capped(os.path.join(workdir, "output.txt"), limits["output_bytes"])
        if how == "timeout":
            report = {"status": "timeout", "error": f"the program ran longer than {limits['timeout_s']} s"}
        elif how == "too_large":
            report = {"status": "result_error", "error": f"RESULT is larger than {RESULT_CAP // MB} MB"}
        elif not data:
            report = {"status": _early_exit_status(wait_status), "error": _early_exit_text(wait_status)}
        else:
            report = _checked_report(data)
        if report["status"] == "ok":
            report["state"] = world.snapshot(report.pop("recorded", None))
        report["seconds"] = round(seconds, 4)
        report["output"] = output
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


CHILD_STATUSES = {"ok", "syntax_error", "execution_error", "result_error", "setup_error"}


def _checked_report(data: bytes) -> dict:
    """The child's report, or an execution error if it is not one the child's own code could have written."""
    try:
        report = json.loads(data)
        if not isinstance(report, dict) or report.get("status") not in CHILD_STATUSES:
            raise ValueError(report.get("status") if isinstance(report, dict) else type(report).__name__)
    except (ValueError, json.JSONDecodeError) as exc:
        return {"status": "execution_error", "error": f"the program tampered with its report ({str(exc)[:80]})"}
    return {k: report[k] for k in ("status", "result", "recorded", "error", "traceback") if k in report}


def _early_exit_status(wait_status: int) -> str:
    if os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) == signal.SIGXCPU:
        return "timeout"
    return "execution_error"


def _early_exit_text(wait_status: int) -> str:
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        if sig == signal.SIGXCPU:
            return "the program used up its CPU time"
        return f"the program was killed by {signal.Signals(sig).name}"
    return f"the program ended the process early (exit code {os.WEXITSTATUS(wait_status)})"


def main() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by imports or worlds goes to stderr, never into the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness decides when workers stop
    worlds: dict = {}
    for line in sys.stdin:
        job = json.loads(line)
        try:
            reply = run_job(worlds, job)
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            reply = {"status": "crash", "error": f"worker error: {type(exc).__name__}: {exc}", "seconds": 0.0}
        proto.write(json.dumps(reply) + "\n")
    for world in worlds.values():
        world.close()


if __name__ == "__main__":
    main()
