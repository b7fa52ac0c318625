"""A warm sandbox worker: `python -m evaluate.worker [--uid N]`, started by `evaluate.sandbox.Sandbox`, never by hand.

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
* ``none`` (not root): no uid drop; the child runs as the harness's user. See README, "Execution and trust".

In every mode the worker is not dumpable (a program cannot open /proc/<worker>/fd/* to write into the protocol,
nor read its memory), is a child subreaper (what a program leaves behind comes back to it and is killed before
the reply), and each child gets PR_SET_PDEATHSIG so that it dies with its worker.
"""

from __future__ import annotations

import base64
import builtins
import ctypes
import fcntl
import json
import os
import resource
import secrets
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path

from scenarios import get_scenario, load_world
from scenarios.base import canonical_json

RESULT_CAP = 64 * 1024 * 1024  # bytes of serialised RESULT a child may send back
CPU_GRACE_S = 1  # CPU seconds between SIGXCPU (soft limit) and SIGKILL (hard limit)
MB = 1024 * 1024
TOO_LARGE = f"RESULT is larger than {RESULT_CAP // MB} MB"
ROOT = Path(__file__).resolve().parents[1]
WORLD_PACKAGES = ("scenarios", "evaluate")  # the only parts of the repository a jailed child sees


# ------------------------------------------------------------------------------------------------ containment
# Linux only, through libc: Python 3.11 has no os.unshare, os.mount or prctl.

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")
UID_BASE = 2_000_000_000  # job uids are UID_BASE + random: far above any account, one per worker


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl({option}, {value})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda x: None if x is None else x.encode())
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def job_uid() -> int:
    """A uid for one worker's jobs: mapped in this user namespace, owned by no account, shared with no other worker."""
    ranges = []
    try:
        with open("/proc/self/uid_map") as f:
            ranges = [(int(first), int(count)) for first, _, count in (line.split() for line in f)]
    except OSError:
        pass
    if any(first <= UID_BASE and UID_BASE + (1 << 24) < first + count for first, count in ranges) or not ranges:
        return UID_BASE + secrets.randbelow(1 << 24)
    first, count = max(ranges, key=lambda r: r[1])  # a rootless container: the upper half of its largest range
    return first + count // 2 + secrets.randbelow(max(1, count // 2 - 1))


def _loopback_up() -> None:
    """Bring up `lo` in a fresh network namespace (ioctl SIOCSIFFLAGS), so the worker's services can listen."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, req))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP


class Jail:
    """What a child sees of the file system when the worker is root: a fresh tmpfs root with read-only binds.

    Built from an allow-list rather than by hiding known paths, because the worker does not know where the
    dataset, the oracles, the results or the caches live: whatever is not listed here does not exist for the
    program. Listed: the system directories, the Python installation and every `sys.path` entry except the
    repository, of which only the world packages are bound. Private and writable, inside the size-capped tmpfs
    that disappears with the child's mount namespace: the working directory (owned by the job uid), /tmp, /dev/shm.
    """

    def __init__(self, uid: int, mountpoint: str):
        self.uid = uid
        self.mountpoint = mountpoint  # an empty directory of the worker's; the tmpfs goes on it, in the child only
        python = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path} - {"", str(ROOT), os.getcwd()}
        wanted = [*SYSTEM_DIRS, *python, *(str(ROOT / p) for p in WORLD_PACKAGES)]
        wanted += [os.path.realpath(p) for p in wanted]  # a symlinked entry is recreated; its target is bound
        self.links, self.binds = {}, []
        for path in sorted({os.path.abspath(p) for p in wanted if os.path.exists(p)}):
            if any(path.startswith(done + "/") for done in [*self.links, *self.binds]):
                continue
            if os.path.islink(path):
                self.links[path] = os.readlink(path)
            else:
                self.binds.append(path)
        self.devices = [f"/dev/{d}" for d in DEVICES] + [f"/dev/{d}" for d in os.listdir("/dev") if d.startswith("nvidia")]
        self.private_proc = tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit()) >= (5, 8)

    def enter(self, workdir: str, size_mb: int) -> None:
        """In the forked child, as root: build the jail, enter it, and become the job uid for good."""
        os.umask(0o022)
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted below reaches the worker's namespace
        root = self.mountpoint
        _mount("stateeval-jail", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,nr_inodes=65536,mode=755")
        for path in self.binds:
            target = root + path
            if os.path.isdir(path):
                os.makedirs(target, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "w").close()
            _mount(path, target, None, MS_BIND)
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        for path, dest in self.links.items():
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(dest, root + path)
        for sub, mode in (("/tmp", 0o1777), ("/dev/shm", 0o1777), ("/proc", 0o555), ("/sys", 0o555)):
            os.makedirs(root + sub, exist_ok=True)
            os.chmod(root + sub, mode)
        for dev in self.devices:
            open(root + dev, "w").close()
            _mount(dev, root + dev, None, MS_BIND)
        for name, dest in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                           ("stderr", "/proc/self/fd/2")):
            os.symlink(dest, f"{root}/dev/{name}")
        if self.private_proc:  # its own instance: only the job's processes are visible (before 5.8: shared options)
            _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV, "hidepid=2")
        else:
            _mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
        _mount("/sys", root + "/sys", None, MS_BIND)
        _mount(None, root + "/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.makedirs(root + workdir, exist_ok=True)
        os.chown(root + workdir, self.uid, self.uid)
        os.chmod(root + workdir, 0o700)
        os.chroot(root)
        os.chdir(workdir)
        drop_privileges(self.uid)


def drop_privileges(uid: int) -> None:
    """Become `uid` (and gid) with no supplementary groups; every capability goes with root."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _drop_shared_memory() -> None:
    """Unmap the worker's writable shared mappings (e.g. SQLite's WAL index), which a fork would otherwise share."""
    with open("/proc/self/maps") as f:
        lines = f.read().splitlines()
    for line in lines:
        span, perms = line.split()[:2]
        if perms[1] == "w" and perms[3] == "s":
            start, end = (int(x, 16) for x in span.split("-"))
            _libc.munmap(start, end - start)


def _children() -> set[int]:
    """The worker's child processes, read from /proc (orphans of a job are reparented here: child subreaper)."""
    pids: set[int] = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def _reap_leftovers(keep: set[int], uid: int | None) -> int:
    """Kill every process a job left behind, even one that escaped its process group; return how many.

    The worker is a child subreaper, so each leftover is (or becomes, once its parent dies) a child of the
    worker. With a job uid one process of that uid kills all the others at once (`kill(-1)` as that uid is
    atomic with respect to fork, so a fork bomb cannot outrun it); without one, rounds of SIGKILL follow the
    orphans as they are reparented.
    """
    killed = 0
    for _ in range(1000):
        left = _children() - keep
        if not left:
            return killed
        if uid is not None and killed == 0:
            pid = os.fork()
            if pid == 0:
                try:
                    drop_privileges(uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        killed += len(left)
    return killed


def _limits(limits: dict) -> None:
    """Resource limits for the child. Address space, CPU time, file size, open files, processes."""
    def cap(res, value, grace=0):
        try:
            soft, hard = resource.getrlimit(res)
            top = value + grace if hard == resource.RLIM_INFINITY else min(value + grace, hard)
            resource.setrlimit(res, (min(value, top), top))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, limits["memory_mb"] * MB)
    cap(resource.RLIMIT_CPU, limits["cpu_s"], CPU_GRACE_S)
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


def _child(world, job: dict, case: dict, workdir: str, wfd: int, out: int, jail: Jail | None,
           uid: int | None, worker: int) -> None:
    code = 70
    try:
        os.setsid()
        _drop_shared_memory()
        os.dup2(out, 1)
        os.dup2(out, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        # Keep only stdio and the report pipe: the worker's protocol descriptor, its database connections and
        # its output file must be out of reach.
        os.closerange(3, wfd)
        os.closerange(wfd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if jail is not None:
            jail.enter(workdir, max(64, 4 * job["limits"]["file_size_mb"]))
        else:
            os.chdir(workdir)
            if uid is not None:
                drop_privileges(uid)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
        if os.getppid() != worker:  # the worker died before the line above
            os._exit(code)
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # no setuid binary gives anything back
        _limits(job["limits"])
        os.environ.update(HOME=workdir, TMPDIR=workdir, USER="sandbox", LOGNAME="sandbox")
        report = execute(world, job, case)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # os._exit below skips Python's buffers; small output would be lost
            except (OSError, ValueError):
                pass
        data = json.dumps(report, allow_nan=False).encode()
        if len(data) > RESULT_CAP:  # said here, so the verdict never waits on 64 MB going through a pipe
            data = json.dumps({"status": "result_error", "error": TOO_LARGE}).encode()
        view = memoryview(len(data).to_bytes(8, "big") + data)
        while view:
            view = view[os.write(wfd, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        code = 71
    finally:
        os._exit(code)


def _collect(rfd: int, pid: int, deadline: float) -> tuple[bytes, str]:
    """Read the child's report (8-byte length, then JSON) until it is complete, the child is gone, or time is up.

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
                if len(buf) > RESULT_CAP:
                    return b"", "too_large"
            elif pidfd in ready:  # gone; what it wrote is in the pipe, unless the report was incomplete
                if not select.select([rfd], [], [], 0)[0]:
                    return b"", "exit"
    finally:
        os.close(pidfd)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(fd: int, cap: int) -> str:
    data = os.pread(fd, cap + 1, 0)
    text = data[:cap].decode("utf-8", "replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


class Runner:
    """The worker's state between jobs: loaded worlds and the containment it applies to every child."""

    def __init__(self, uid: int | None):
        self.worlds: dict = {}
        self.home = tempfile.mkdtemp(prefix="stateeval-worker-")
        prctl(PR_SET_DUMPABLE, 0)  # /proc/<worker>/fd, mem, environ: closed to processes of the same user
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # a job's orphans come back here and are killed
        self.uid = uid if uid is not None and os.geteuid() == 0 else None
        self.jail = None
        if self.uid is not None:
            try:
                _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            except OSError as exc:  # no CAP_SYS_ADMIN (e.g. a default Docker container): uid drop only
                print(f"sandbox worker: no namespaces ({exc}); jobs run as uid {self.uid} without a jail",
                      file=sys.stderr)
            else:
                _loopback_up()
                self.jail = Jail(self.uid, tempfile.mkdtemp(dir=self.home))
        self.containment = "jail" if self.jail else "uid" if self.uid is not None else "none"

    def close(self) -> None:
        for world in self.worlds.values():
            world.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def run_job(self, job: dict) -> dict:
        scenario = job["scenario"]
        if scenario not in self.worlds:
            self.worlds[scenario] = load_world(get_scenario(scenario))
        world = self.worlds[scenario]
        case = dict(job["case"])
        case["assets"] = [dict(a, data=base64.b64decode(a["data"]), meta=json.loads(a["meta"]))
                          for a in case["assets"]]
        limits = job["limits"]
        workdir = tempfile.mkdtemp(prefix="stateeval-case-")
        if self.uid is not None:
            os.chown(workdir, self.uid, self.uid)
        # Output goes to an unlinked file the worker holds: the program cannot swap it for a link or a pipe.
        out, path = tempfile.mkstemp(dir=self.home)
        os.unlink(path)
        try:
            world.reset(case)
            # The wall clock starts after the reset: restoring the world (restarting a service an earlier program
            # killed or kept busy) is the worker's time, not this program's.
            start = time.monotonic()
            keep = _children()  # the world's own processes (a service), never a job's
            rfd, wfd = os.pipe()
            me = os.getpid()
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                _child(world, job, case, workdir, wfd, out, self.jail, self.uid, me)
            os.close(wfd)
            data, how = _collect(rfd, pid, start + limits["timeout_s"])
            os.close(rfd)
            _kill_group(pid)  # the program and the processes it started in its group
            _, wait_status, usage = os.wait4(pid, 0)
            cpu = usage.ru_utime + usage.ru_stime
            leftovers = _reap_leftovers(keep, self.uid)  # and those that left the group
            seconds = time.monotonic() - start
            output = _read_capped(out, limits["output_bytes"])
            if how == "timeout":
                report = {"status": "timeout", "error": f"the program ran longer than {limits['timeout_s']} s"}
            elif how == "too_large":
                report = {"status": "result_error", "error": TOO_LARGE}
            elif not data:
                out_of_cpu = _out_of_cpu(wait_status, cpu, limits["cpu_s"])
                report = {"status": "timeout" if out_of_cpu else "execution_error",
                          "error": "the program used up its CPU time" if out_of_cpu else _early_exit_text(wait_status)}
            else:
                report = _checked_report(data)
            if report["status"] == "ok":
                report["state"] = world.snapshot(report.pop("recorded", None))
            report["seconds"] = round(seconds, 4)
            report["output"] = output
            report["containment"] = self.containment
            if leftovers:
                report["leftovers"] = leftovers
            return report
        finally:
            os.close(out)
            shutil.rmtree(workdir, ignore_errors=True)


CHILD_STATUSES = {"ok", "syntax_error", "execution_error", "result_error", "setup_error"}
REPLY_STATUSES = CHILD_STATUSES | {"timeout", "crash"}  # what the worker may answer (timeouts and crashes are its own)


def _checked_report(data: bytes) -> dict:
    """The child's report, or an execution error if it is not one the child's own code could have written."""
    try:
        report = json.loads(data)
        if not isinstance(report, dict) or report.get("status") not in CHILD_STATUSES:
            raise ValueError(report.get("status") if isinstance(report, dict) else type(report).__name__)
    except (ValueError, json.JSONDecodeError) as exc:
        return {"status": "execution_error", "error": f"the program tampered with its report ({str(exc)[:80]})"}
    return {k: report[k] for k in ("status", "result", "recorded", "error", "traceback") if k in report}


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


def main() -> None:
    uid = int(sys.argv[sys.argv.index("--uid") + 1]) if "--uid" in sys.argv else None
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed by imports or worlds goes to stderr, never into the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness decides when workers stop
    runner = Runner(uid)
    for line in sys.stdin:
        job = json.loads(line)
        try:
            reply = runner.run_job(job)
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            reply = {"status": "crash", "error": f"worker error: {type(exc).__name__}: {exc}", "seconds": 0.0}
        proto.write(json.dumps(reply) + "\n")
    runner.close()


if __name__ == "__main__":
    main()
