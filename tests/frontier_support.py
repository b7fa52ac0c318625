"""What the frontier tier's tests share: scoring a dataset through the real command line, and a build's content
hash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pass_at_1(dataset: Path, out: Path, *args: str) -> float:
    """Overall pass@1 of `python -m evaluate --dataset DATASET --out OUT ARGS...` (two workers), which must exit 0."""
    proc = subprocess.run([sys.executable, "-m", "evaluate", "--dataset", str(dataset), "--out", str(out),
                           "--workers", "2", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(next(Path(out).rglob("results*.json")).read_text())["summary"]["overall"]["pass@1"]


def content_hash(dataset: Path) -> str:
    return json.loads((Path(dataset) / "MANIFEST.json").read_text())["content_hash"]


def samples_file(path: Path, codes: dict[str, str]) -> Path:
    """A `--samples` file with one program per task id."""
    path.write_text("".join(json.dumps({"task_id": task_id, "code": code}) + "\n" for task_id, code in codes.items()))
    return path
