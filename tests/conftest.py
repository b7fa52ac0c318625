"""Shared fixtures: one small tensor dataset built once per test session (real pipeline, real sandbox)."""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# A private `datasets` cache for the test session (set before `datasets` is imported anywhere), so tests never
# read rows another build left in the user's cache; removed when the session ends (`pytest_sessionfinish`), or,
# in a process that imports this module outside pytest (a test's subprocess importing its helpers), when that
# process exits. A forked child that exits normally leaves it to the process that made it.
HF_CACHE = tempfile.mkdtemp(prefix="stateeval-hf-cache-")
os.environ["HF_DATASETS_CACHE"] = HF_CACHE
# Compiled modules are written beside the sources (in __pycache__, which git ignores) even where the environment
# says PYTHONDONTWRITEBYTECODE: the suite starts hundreds of interpreters (sandbox workers, command lines), and each
# would otherwise compile the project anew; they read what this process wrote.
sys.dont_write_bytecode = False
_MAKER = os.getpid()
atexit.register(lambda: os.getpid() == _MAKER and shutil.rmtree(HF_CACHE, ignore_errors=True))

import pytest  # noqa: E402

from builder.config import BuildConfig  # noqa: E402
from builder.pipeline import build  # noqa: E402

SMALL = dict(scenarios=["tensor"], n=12, seed=0, created_at="2026-01-01", workers=2)


@pytest.fixture(scope="session")
def small_build(tmp_path_factory):
    """(folder, build report) for a 12-program tensor build with a fixed date, so its bytes are reproducible."""
    out = tmp_path_factory.mktemp("ds") / "stateeval"
    report = build(BuildConfig(out=str(out), **SMALL))
    return out, report


@pytest.fixture(scope="session")
def sandbox():
    """Two workers with the default limits, started once for every test that only needs a sandbox to score in:
    their start-up (each imports torch for the first tensor job) is much of a small module's time. A module that
    needs other limits, or workers of its own, starts its own."""
    from core.sandbox.harness import Sandbox

    with Sandbox(2) as box:
        yield box


@pytest.fixture(scope="session")
def small_dataset(small_build):
    return small_build[0]


@pytest.fixture(scope="session")
def small_tasks(small_dataset):
    from core.records import load_tasks

    tasks, manifest = load_tasks(str(small_dataset))
    return tasks


def interruptible() -> None:
    """`preexec_fn` for a child that a test interrupts with SIGINT: a suite started in the background by a shell
    without job control (nohup, `&`, some CI runners) inherits SIGINT ignored, and so would the child; Python then
    never turns SIGINT into KeyboardInterrupt, and the Ctrl-C under test could not happen."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def running(name: str, besides: set[int] = frozenset()) -> int | None:
    """The pid of a live process called `name` (its /proc comm, which a job sets with PR_SET_NAME), other than
    `besides`, or None: how a test (or a script it runs) knows that a job it started is running."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in besides:
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() == name:
                        return int(entry)
            except OSError:
                pass
    return None


def pytest_sessionfinish(session, exitstatus) -> None:
    shutil.rmtree(HF_CACHE, ignore_errors=True)



# ------------------------------------------------------------------------------ outputs that cannot be written


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only for this process while inside: mode 555 and, for root, whom modes do not bind, the
    immutable attribute as well (chattr +i), which does. Skips the test only where neither binds this user (root on
    a file system without that attribute)."""
    mode = folder.stat().st_mode & 0o7777
    folder.chmod(0o555)
    immutable = os.geteuid() == 0 and shutil.which("chattr") is not None and subprocess.run(
        ["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        if _can_write_in(folder):
            pytest.skip("this user can write in a folder of mode 555, and chattr +i does not work here")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(mode)


def _can_write_in(folder: Path) -> bool:
    try:
        (folder / "probe").mkdir()
    except OSError:
        return False
    (folder / "probe").rmdir()
    return True


@functools.cache
def read_only_mount_problem() -> str | None:
    """Why a command cannot be run with a folder mounted read-only (None: it can; see `Unwritable`)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare(1) to mount a folder read-only in a mount namespace of the command's own"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -m is refused here ({probe.stderr.strip()})"


@dataclass
class Unwritable:
    """A folder where a command can write nothing, one of three ways (see the `unwritable` fixture)."""

    folder: Path  # give the command an output path in it
    why: str  # a regular expression for the reason its one-line error gives
    mount: bool = False  # the folder is read-only only inside a mount namespace: run the command with `argv`

    def argv(self, argv: list) -> list[str]:
        """The command line that runs `argv` where the folder cannot be written."""
        argv = [str(a) for a in argv]
        if not self.mount:
            return argv
        script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
        return ["unshare", "-m", "sh", "-c", script, str(self.folder), *argv]


@pytest.fixture(params=["read-only folder", "read-only file system", "a file in the way"])
def unwritable(request, tmp_path) -> Iterator[Unwritable]:
    """A folder where nothing can be written, for root too: read-only (mode 555, chattr +i), on a read-only bind
    mount (in the command's own mount namespace: run it with `Unwritable.argv`), or a regular file (a path under
    it cannot be made)."""
    if request.param == "a file in the way":
        (tmp_path / "a-file").write_text("not a folder\n")
        yield Unwritable(tmp_path / "a-file", f"{re.escape(str(tmp_path / 'a-file'))} is a file, not a folder")
        return
    folder = tmp_path / "locked"
    folder.mkdir()
    if request.param == "read-only file system":
        if read_only_mount_problem():
            pytest.skip(read_only_mount_problem())
        yield Unwritable(folder, "read-only file system", mount=True)
        return
    with read_only(folder):
        yield Unwritable(folder, "(permission denied|operation not permitted)")


@pytest.fixture
def under_a_file(tmp_path) -> Path:
    """A path whose parent is a regular file: nobody, root included, can make it."""
    (tmp_path / "a-file").write_text("not a folder\n")
    return tmp_path / "a-file" / "sub"
