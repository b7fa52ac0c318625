"""One `python -m evaluate` at a time per run folder.

Two runs with the same --out, model and revision share the folder's generations.jsonl, conversations_*.jsonl and
results*.json: both would ask the model for the same replies and append them, and each would replace the other's
conversations and report. So the second is refused while the first runs. The lock is flock(2) on a hidden file in
the folder, held for the whole run: the kernel lets go of it when the process ends in any way (SIGKILL included),
so a killed run never blocks the next. The file stays, holding the pid of its last holder for the message; removing
it at the end would let one run lock the old file while another locks a new one of the same name. Readers of the
folder (the leaderboard, `evaluate.report`) never take the lock, and nothing packages or lists hidden files.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from evaluate.errors import cannot_write

LOCK = ".evaluate.lock"


class RunFolderError(RuntimeError):
    """The run folder cannot be written now: another run is writing it, or it cannot be made; the message says
    what to do."""


@contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Held while this process writes `folder`; refused with `RunFolderError` while another holds it."""
    lock = Path(folder) / LOCK
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)  # never truncated here: it names the holder
    except OSError as exc:
        raise RunFolderError(cannot_write(lock.parent, exc)) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _name_holder(fd)
        except BlockingIOError:
            holder = _holder(fd)
            raise RunFolderError(f"another python -m evaluate is writing {lock.parent}"
                                 f"{f' (pid {holder})' if holder else ''}; wait for it to finish or pass another "
                                 "--out") from None
        except OSError:
            pass  # a filesystem without locks (some network mounts): the run goes unguarded, as before
        yield
    finally:
        os.close(fd)


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
