"""The on-disk reply cache shared by evaluate's generation and the builder's translation agents."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict
from pathlib import Path

from evaluate.models import Sampling, Usage


def prompt_key(messages: list[dict], sampling: Sampling, model: str, sample: int, extra: dict | None = None) -> str:
    """What a cached reply is valid for: the exact prompt, the sampling parameters, the model and the sample
    (`extra`: what else the model was given, e.g. a conversation's tools and test case)."""
    parts = [messages, asdict(sampling), model, sample] + ([extra] if extra is not None else [])
    data = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:24]


class GenerationCache:
    """generations.jsonl: one line per finished reply, appended and flushed as it arrives.

    A re-run reuses every line whose key matches its request, so a killed run loses at most its in-flight
    requests, and a changed prompt, dataset or sampling parameter is generated afresh rather than reused.
    A line keeps the reply's token usage beside it, so a resumed run reports what the replies cost when they were
    generated; a line written without one (an older cache) has none in `usage`.
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
                    continue  # a line cut short by a kill: that request is simply generated again
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
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a")
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()
            self.replies[key] = reply
            if usage is not None:
                self.usage[key] = usage
            else:
                self.usage.pop(key, None)

    def close(self) -> None:
        with self._lock:
            if self._file:
                self._file.close()
                self._file = None
