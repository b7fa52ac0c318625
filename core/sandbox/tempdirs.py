"""The sandbox's temporary folders, named after the process that owns them.

A harness killed with SIGKILL (or a worker killed mid-job) cannot remove its folders, and nothing else knows
whose they are. So each name carries its owner's pid and start time, `stateeval-<kind>-<pid>.<start>-<random>`,
and `sweep` removes the folders whose owner is gone (the start time tells a reused pid apart). Folders named
otherwise (another program's, or this one's older versions) are never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "stateeval-"
KINDS = ("worker", "case")  # a harness's folder for one worker; a worker's folder for one test case
OWNED = re.compile(rf"{PREFIX}(?:{'|'.join(KINDS)})-(?P<pid>\d+)\.(?P<start>\d+)-")


def start_time(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, from /proc), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # field 22; the command name before it may hold spaces


def root() -> str:
    """The temporary directory the sandbox's folders go to (TMPDIR, else the system's)."""
    return tempfile.gettempdir()


def make(kind: str, parent: str | None = None) -> str:
    """A new private folder owned by this process (in `parent`, else the temporary directory)."""
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{pid}.{start_time(pid)}-", dir=parent)


def sweep(parent: str | None = None) -> list[str]:
    """Remove the sandbox folders in `parent` (default: the temporary directory) whose owner process is gone;
    return their names."""
    removed = []
    root = Path(parent or tempfile.gettempdir())
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for path in entries:
        m = OWNED.match(path.name)
        if m and start_time(int(m["pid"])) != m["start"] and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(path.name)
    return removed
