"""Containment primitives for sandbox workers and the harness: Linux only, through libc.

Python 3.11 has no os.unshare, os.mount or prctl, so they are reached through ctypes here, in one place, apart
from the worker's job protocol (`core.sandbox.worker`) and the harness (`core.sandbox.harness`), which both use
them. What each primitive is for, and which containment mode (`jail`, `uid`, `none`) uses it, is said in `core.sandbox.worker`
and in docs/trust.md, "Execution and trust".
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import secrets
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

# What a worker could apply (docs/trust.md, "Execution and trust"), strongest first.
JAIL, UID, NONE = "jail", "uid", "none"
MODES = (JAIL, UID, NONE)
CPU_GRACE_S = 1  # CPU seconds between SIGXCPU (soft limit) and SIGKILL (hard limit)
MB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]  # the repository (or site-packages) holding core/ and scenarios/
WORLD_PACKAGES = ("scenarios", "core")  # the only parts of the repository a jailed child sees

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


def unshare(flags: int, what: str) -> None:
    """unshare(2): an OSError naming `what` when the kernel or the container refuses it."""
    _check(_libc.unshare(flags), what)


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


def loopback_up() -> None:
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
        unshare(CLONE_NEWNS | CLONE_NEWIPC, "unshare")
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


def drop_shared_memory() -> None:
    """Unmap the worker's writable shared mappings (e.g. SQLite's WAL index), which a fork would otherwise share."""
    with open("/proc/self/maps") as f:
        lines = f.read().splitlines()
    for line in lines:
        span, perms = line.split()[:2]
        if perms[1] == "w" and perms[3] == "s":
            start, end = (int(x, 16) for x in span.split("-"))
            _libc.munmap(start, end - start)


def children() -> set[int]:
    """The worker's child processes, read from /proc (orphans of a job are reparented here: child subreaper)."""
    pids: set[int] = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def reap_leftovers(keep: set[int], uid: int | None) -> int:
    """Kill every process a job left behind, even one that escaped its process group; return how many.

    The worker is a child subreaper, so each leftover is (or becomes, once its parent dies) a child of the
    worker. With a job uid one process of that uid kills all the others at once (`kill(-1)` as that uid is
    atomic with respect to fork, so a fork bomb cannot outrun it); without one, rounds of SIGKILL follow the
    orphans as they are reparented.
    """
    killed = 0
    for _ in range(1000):
        left = children() - keep
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


def apply_limits(limits) -> None:
    """Resource limits for the child (an `core.sandbox.protocol.Limits`): address space, CPU time, file size, open
    files, processes."""
    def cap(res, value, grace=0):
        try:
            soft, hard = resource.getrlimit(res)
            top = value + grace if hard == resource.RLIM_INFINITY else min(value + grace, hard)
            resource.setrlimit(res, (min(value, top), top))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, limits.memory_mb * MB)
    cap(resource.RLIMIT_CPU, limits.cpu_s, CPU_GRACE_S)
    cap(resource.RLIMIT_FSIZE, limits.file_size_mb * MB)
    cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_NPROC, limits.processes)
    cap(resource.RLIMIT_CORE, 0)


def kill_uid(uid: int) -> None:
    """Kill every process of a dead worker's job uid (its child died with it; grandchildren may not have).

    `kill -9 -1` run as that uid reaches exactly its processes; the shell is started by `subprocess` as root
    and becomes the uid before it runs, so nothing in the harness changes identity.
    """
    subprocess.run(["/bin/sh", "-c", "kill -9 -1"], user=uid, group=uid, extra_groups=[], env={},
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
                   check=False)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def weakest(modes) -> str | None:
    """The least containment among `modes` (None when there is none: no program ran)."""
    known = [m for m in modes if m in MODES]
    return max(known, key=MODES.index) if known else None
