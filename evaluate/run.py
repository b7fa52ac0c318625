"""One evaluation run: load tasks, obtain code (a backend or a samples file), score in the sandbox, report."""

from __future__ import annotations

import datetime as _dt
import json
import platform
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from evaluate.data import DatasetError, load_tasks
from evaluate.models import Request, Sampling, get_backend
from evaluate.prompts import build_messages, extract_code
from evaluate.sandbox import Limits, Sandbox
from evaluate.scoring import STATUSES, score, summarize


@dataclass
class EvalConfig:
    model: str = "reference"
    backend: str | None = None  # None: taken from the model alias table, or `reference`
    dataset: str = "stateeval"
    revision: str | None = None
    scenarios: list[str] | None = None
    n_samples: int = 1
    samples: str | None = None  # a JSONL file of pre-generated code
    out: str = "results"
    limit: int | None = None
    workers: int | None = None
    timeout_s: float = 10.0
    sampling: Sampling = field(default_factory=Sampling)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip("-") or "model"


def read_samples(path: str, task_ids: set[str]) -> dict[str, list[str | None]]:
    """{"task_id": ..., "code": ...} per line; several lines for one task are several samples."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"samples file {path} not found; pass a JSONL file with one {{task_id, code}} per line")
    codes: dict[str, list[str | None]] = defaultdict(list)
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task_id, code = row["task_id"], row["code"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}:{n}: expected a JSON object with task_id and code ({exc})") from exc
        if task_id not in task_ids:
            raise DatasetError(f"{path}:{n}: task_id {task_id!r} is not in the dataset (wrong --dataset?)")
        codes[task_id].append(code if isinstance(code, str) and code.strip() else None)
    return dict(codes)


def generate(config: EvalConfig, tasks: list[dict]) -> tuple[dict[str, list[str | None]], dict[str, list[str]]]:
    backend = get_backend(config.backend or "reference", config.model)
    requests = [Request(t["task_id"], build_messages(t), t) for t in tasks]
    replies = backend.generate(requests, config.n_samples, config.sampling)
    raw = {r.task_id: rs for r, rs in zip(requests, replies)}
    return {tid: [extract_code(x) for x in rs] for tid, rs in raw.items()}, raw


def run(config: EvalConfig) -> dict:
    tasks, manifest = load_tasks(config.dataset, config.revision, config.scenarios)
    if config.limit:
        tasks = tasks[: config.limit]
    if config.samples:
        codes = read_samples(config.samples, {t["task_id"] for t in tasks})
        raw = None
        model, backend = config.model if config.model != "reference" else Path(config.samples).stem, "samples"
    else:
        codes, raw = generate(config, tasks)
        model, backend = config.model, config.backend or "reference"

    with Sandbox(config.workers, Limits(timeout_s=config.timeout_s)) as sandbox:
        results = score(tasks, codes, sandbox)
    n = max((len(v) for v in codes.values()), default=1)
    ks = tuple(k for k in (1, 5, 10) if k <= n)
    summary = summarize(results, ks)

    report = {
        "model": model,
        "backend": backend,
        "dataset": {
            "source": config.dataset,
            "revision": config.revision,
            "content_hash": manifest["content_hash"],
            "builder_version": manifest.get("builder_version"),
            "seed": manifest.get("seed"),
            "tasks": len(tasks),
        },
        "sampling": {"n_samples": n, **asdict(config.sampling)},
        "versions": {"python": platform.python_version(), **_versions()},
        "evaluated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        "samples": [r.to_dict() for r in results],
    }
    out = Path(config.out) / _safe(model) / _safe(config.revision or "local")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    if raw is not None:
        with open(out / "generations.jsonl", "w") as f:
            for tid, replies in raw.items():
                for s, reply in enumerate(replies):
                    f.write(json.dumps({"task_id": tid, "sample": s, "reply": reply, "code": codes[tid][s]}) + "\n")
    report["path"] = str(out / "results.json")
    return report


def _versions() -> dict:
    out = {}
    for dist in ("stateeval", "torch", "datasets"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def format_table(summary: dict) -> str:
    ks = [k for k in summary["overall"] if k.startswith("pass@")]
    head = ["scenario", "tasks", *ks, *STATUSES]
    rows = [head]
    for name, block in [*summary["scenarios"].items(), ("overall", summary["overall"])]:
        cells = [name, str(block["tasks"])]
        cells += ["-" if block[k] is None else f"{100 * block[k]:.1f}%" for k in ks]
        cells += [str(block["statuses"][s]) for s in STATUSES]
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
