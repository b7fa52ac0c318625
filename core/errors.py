"""One-line errors the command lines share: output that cannot be written, and lists too long for one line.

Every command refuses what it cannot do in one line that names the problem and the fix (exit code 2, no
traceback). Two such lines recur across the commands and are written here once:

- `cannot_write`: an output path that cannot be written (a folder that is read-only or not this user's, a read-only
  file system, a file where a folder must go, a full disk): `cannot write PATH: why; what to do`;
- `first_few`: a list of hundreds of task ids, cut to its first few and a count of the rest.
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

DISK_FULL = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded"}
SHOWN = 5  # the items of a long list that a one-line error shows


class CannotWrite(RuntimeError):
    """An output that cannot be written; the message, from `cannot_write`, says why and what to do."""


def cannot_write(path: str | Path, exc: OSError, option: str | None = "--out", resume: str = "") -> str:
    """`cannot write PATH: why; what to do`, for `exc`, met while writing `path` or something in it.

    `option`: the option that chose `path`, so that the fix can offer another (None: no option chose it);
    `resume`: added to the fix for a full disk, what to do once there is space (', then run the same command
    again')."""
    failed = Path(os.fsdecode(exc.filename)) if exc.filename is not None else Path(path)
    found = _nearest_existing(failed)
    other = f"pass another {option}" if option else ""
    if not found.is_dir() and (found != failed or exc.errno == errno.EEXIST):
        why, fix = f"{found} is a file, not a folder", other or f"move {found} out of the way"
    elif exc.errno in DISK_FULL:
        why, fix = DISK_FULL[exc.errno], f"free some space there{resume}"
    elif exc.errno == errno.EROFS:
        why, fix = "read-only file system", other or "copy it to a writable file system"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why, fix = _lower(exc.strerror), f"make {found} writable" + (f" or {other}" if other else "")
    else:
        why, fix = _lower(exc.strerror or str(exc)), other or "fix that"
    return f"cannot write {path}: {why}; {fix}"


@contextmanager
def writing(path: str | Path, option: str | None = "--out", resume: str = "") -> Iterator[None]:
    """Around code that writes `path`: an OSError there becomes a `CannotWrite` (see `cannot_write`)."""
    try:
        yield
    except OSError as exc:
        raise CannotWrite(cannot_write(path, exc, option, resume)) from exc


def check_writable(path: str | Path, option: str | None = "--out") -> None:
    """Raise `CannotWrite` now if `path` could not be made or replaced later (a command that writes only at its
    end asks this first, rather than fail after its work). Nothing is left behind: a folder is made and removed in
    the nearest folder that exists, which is where `path` would be made (or replaced, if it is a file already)."""
    path = Path(path)
    found = _nearest_existing(path)
    if found == path and not found.is_dir():
        found = path.parent
    try:
        if not found.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
        os.rmdir(tempfile.mkdtemp(prefix=".stateeval-probe-", dir=found))
    except OSError as exc:
        raise CannotWrite(cannot_write(path, exc, option)) from exc


def first_few(items: Iterable, shown: int = SHOWN) -> str:
    """`a, b, c, d, e and 278 more`: a list as a one-line error shows it."""
    items = [str(item) for item in items]
    rest = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {rest} more" if rest > 0 else "")


def _nearest_existing(path: Path) -> Path:
    """`path` if it exists, else its nearest ancestor that does (`.` or `/` at worst)."""
    return next((p for p in (path, *path.parents) if os.path.lexists(p)), Path("."))


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]
