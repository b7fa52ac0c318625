"""Progress on long work: a bar on a terminal, a plain line every few seconds anywhere else.

tqdm redraws its bar with carriage returns several times a second; written to a file (a CI log, `> log 2>&1`)
that is thousands of partial lines in one. So `progress` shows tqdm's bar only when its stream is a terminal, and
otherwise writes one whole line every `PLAIN_EVERY_S` seconds and one when the work is done.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO

PLAIN_EVERY_S = 10.0


def progress(total: int, desc: str | None, unit: str, stream: TextIO | None = None,
             clock: Callable[[], float] = time.monotonic):
    """Something with `update(n=1)` and `close()` that reports `total` units of work named `desc` (None: silent)."""
    stream = stream or sys.stderr
    if desc is None or total == 0:
        return PlainProgress(total, desc, unit, None, clock)
    if _is_terminal(stream):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, file=stream)
    return PlainProgress(total, desc, unit, stream, clock)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class PlainProgress:
    """Whole lines, at most one every `PLAIN_EVERY_S` seconds, then one when all `total` units are done; nothing
    when `stream` is None. Safe to update from several threads (the sandbox's do)."""

    def __init__(self, total: int, desc: str | None, unit: str, stream: TextIO | None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.desc, self.unit, self.stream, self.clock = total, desc, unit, stream, clock
        self.n = 0
        self._start = self._last = clock()
        self._lock = threading.Lock()
        self._closed = False

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n
            now = self.clock()
            if self.stream is not None and self.n < self.total and now - self._last >= PLAIN_EVERY_S:
                self._last = now
                self._write(f"{self.desc}: {self.n}/{self.total} {self.unit}s ({100 * self.n // self.total}%), "
                            f"{now - self._start:.0f} s")

    def close(self) -> None:
        """Say that the work is done, if it is (an interrupted run says so itself)."""
        with self._lock:
            if self.stream is not None and not self._closed and self.n >= self.total:
                self._write(f"{self.desc}: {self.n}/{self.total} {self.unit}s in {self.clock() - self._start:.0f} s")
            self._closed = True

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()
