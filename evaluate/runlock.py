"""One `python -m evaluate` at a time per run folder.

Two runs with the same --out, model and revision share the folder's generations.jsonl, conversations_*.jsonl and
results*.json: both would ask the model for the same replies and append them, and each would replace the other's
conversations and report. So the second is refused while the first runs. The lock is flock(2) on a hidden file in
the folder, held for the whole run: the kernel lets go of it when the process ends in any way (SIGKILL included),
so a killed run never blocks the next. The file stays, holding the pid of its last holder for the message, except
after a run that made the folder and wrote nothing else in it (an unknown model, a missing package or key: it
stopped before its first reply): that run removes the file and the folders it made, so that it leaves nothing
behind. A run that locks the file then checks that the name still leads to the file it locked, and starts over
on the new one if not, so that a removal never lets two runs hold the folder at once. Readers of the folder (the
leaderboard, `evaluate.report`) never take the lock, and nothing packages or lists hidden files.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core.errors import cannot_write

LOCK = ".evaluate.lock"
TRIES = 5  # a lock file removed under us this many times in a row: other runs keep replacing it


class RunFolderError(RuntimeError):
    """The run folder cannot be written now: another run is writing it, or it cannot be made; the message says
    what to do."""


@contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Held while this process writes `folder`; refused with `RunFolderError` while another holds it."""
    folder = Path(folder)
    made = []  # the folders this run makes, deepest first
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        made.append(path)
    fd = _lock(folder)
    try:
        yield
    finally:
        try:
            if made and _only_the_lock(folder):
                _remove(folder / LOCK, made)
        finally:
            os.close(fd)


def _lock(folder: Path) -> int:
    """A descriptor of `folder`'s lock file, locked by this process (the folder made if need be)."""
    lock = folder / LOCK
    for _ in range(TRIES):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)  # never truncated here: it names the holder
        except FileNotFoundError:  # the folder went between the two steps (a run that wrote nothing removed it)
            continue
        except OSError as exc:
            raise RunFolderError(cannot_write(folder, exc)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunFolderError(f"another python -m evaluate is writing {folder}"
                                 f"{f' (pid {holder})' if holder else ''}; wait for it to finish or pass another "
                                 "--out") from None
        except OSError:
            return fd  # a filesystem without locks (some network mounts): the run goes unguarded, as before
        if _same_file(fd, lock):
            _name_holder(fd)
            return fd
        os.close(fd)  # the run that held it removed it meanwhile: lock the file now at that name
    raise RunFolderError(f"other runs of python -m evaluate keep replacing {lock}; wait for them to finish or pass "
                         "another --out")


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _only_the_lock(folder: Path) -> bool:
    try:
        return [p.name for p in folder.iterdir()] == [LOCK]
    except OSError:
        return False


def _remove(lock: Path, made: list[Path]) -> None:
    """The lock file, then the folders this run made, deepest first, as long as each is empty."""
    try:
        lock.unlink()
        for folder in made:
            folder.rmdir()
    except OSError:
        pass  # another run has put something there meanwhile: it stays


def _holder(fd: int) -> str:
    """The pid the holder wrote, or "" while it has not written it yet."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return text if text.isdigit() else ""


def _name_holder(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the lock holds all the same, and the message goes without the pid
        pass
