"""The on-disk reply cache shared by evaluate's generation and the builder's translation agents."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict
from pathlib import Path

from core.backends import BackendError, Sampling, Usage
from core.errors import DISK_FULL


def prompt_key(messages: list[dict], sampling: Sampling, model: str, sample: int, extra: dict | None = None) -> str:
    """What a cached reply is valid for: the exact prompt, the sampling parameters, the model and the sample
    (`extra`: what else the model was given, e.g. a conversation's tools and test case)."""
    parts = [messages, asdict(sampling), model, sample] + ([extra] if extra is not None else [])
    data = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:24]


class CacheWriteError(BackendError):
    """A reply that cannot be recorded (a full disk, most often) stops the run in one line: going on would ask the
    model for replies that the resume pays for again. What was written before is whole and is reused."""

    def __init__(self, path: Path, exc: OSError):
        why = DISK_FULL.get(exc.errno) or exc.strerror or str(exc)
        fix = "free some space there" if exc.errno in DISK_FULL else "fix that"
        super().__init__(f"cannot write the generation cache {path}: {why}; {fix}, then run the same command "
                         "again to resume (the replies already written are kept)")


class GenerationCache:
    """generations.jsonl: one line per finished reply, appended as it arrives (unbuffered: in the file when `add`
    returns).

    A re-run reuses every line whose key matches its request, so a killed run loses at most its in-flight
    requests, and a changed prompt, dataset or sampling parameter is generated afresh rather than reused.
    A line keeps the reply's token usage beside it, so a resumed run reports what the replies cost when they were
    generated; a line written without one (an older cache) has none in `usage`.
    A line cut short (a kill, a full disk) is never read, and never swallows the next: a write that fails cuts the
    file back to where the line began, and where even that could not happen, the next append ends the half line
    first.
    """

    def __init__(self, path: Path):
        self.path = path
        self.replies: dict[str, str] = {}
        self.usage: dict[str, Usage] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    row = json.loads(line)
                    self.replies[row["key"]] = row["reply"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut short (a kill, a full disk): that request is simply generated again
                usage = Usage.from_dict(row.get("usage"))
                if usage is not None:
                    self.usage[row["key"]] = usage
                else:
                    self.usage.pop(row["key"], None)
        self._lock = threading.Lock()
        self._file = None

    def add(self, key: str, task_id: str, sample: int, reply: str, usage: Usage | None = None) -> None:
        row = {"key": key, "task_id": task_id, "sample": sample, "reply": reply}
        if usage is not None:
            row["usage"] = usage.to_dict()
        with self._lock:
            try:
                if self._file is None:
                    self._open()
                self._append((json.dumps(row) + "\n").encode())
            except OSError as exc:
                raise CacheWriteError(self.path, exc) from exc
            self.replies[key] = reply
            if usage is not None:
                self.usage[key] = usage
            else:
                self.usage.pop(key, None)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+b", buffering=0)
        size = os.fstat(self._file.fileno()).st_size
        if size and os.pread(self._file.fileno(), 1, size - 1) != b"\n":  # a half line a kill left: end it
            self._append(b"\n")

    def _append(self, data: bytes) -> None:
        """Write `data` whole, or cut the file back to its size before (any failure, Ctrl-C included)."""
        size = os.fstat(self._file.fileno()).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
        except BaseException:
            f, self._file = self._file, None  # the next add opens it again (and ends a half line left here)
            try:
                os.ftruncate(f.fileno(), size)
            except OSError:
                pass
            finally:
                f.close()
            raise

    def close(self) -> None:
        with self._lock:
            if self._file:
                self._file.close()
                self._file = None
