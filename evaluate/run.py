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

from tqdm import tqdm

from evaluate.data import DatasetError, created_after, load_tasks, results_name, sample_lines
from evaluate.models import Request, Sampling, get_backend, resolve
from evaluate.models.cache import GenerationCache, prompt_key
from evaluate.prompts import build_messages, extract_code
from evaluate.sandbox import Limits, Sandbox
from evaluate.scoring import STATUSES, score, summarize


@dataclass
class EvalConfig:
    model: str | None = None  # an alias, a model id (with backend), or None when scoring --samples
    backend: str | None = None  # None: taken from the alias table
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
    backend_options: dict = field(default_factory=dict)  # base_url, concurrency, tensor_parallel_size, ...
    plot: bool = False
    since: str | None = None  # YYYY-MM-DD: score only tasks created after it (a fresh split's window)
    variant: str = "precise"  # which instruction the model is shown: precise or vague

    @property
    def model_name(self) -> str:
        if self.model:
            return self.model
        return Path(self.samples).stem if self.samples else "model"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip("-") or "model"


def run_dir(config: EvalConfig) -> Path:
    return Path(config.out) / _safe(config.model_name) / _safe(config.revision or "local")


def read_samples(path: str, task_ids: set[str]) -> dict[str, list[str | None]]:
    """{"task_id": ..., "code": ...} per line; several lines for one task are several samples."""
    codes: dict[str, list[str | None]] = defaultdict(list)
    for n, task_id, code in sample_lines(path):
        if task_id not in task_ids:
            raise DatasetError(f"{path}:{n}: task_id {task_id!r} is not in the dataset (wrong --dataset?)")
        codes[task_id].append(code if isinstance(code, str) and code.strip() else None)
    return dict(codes)


def generate(config: EvalConfig, tasks: list[dict]) -> dict[str, list[str | None]]:
    """Replies for every task and sample: from the cache where possible, else from the backend."""
    backend = get_backend(config.model, config.backend, **config.backend_options)
    cache = GenerationCache(run_dir(config) / "generations.jsonl")
    requests, keys = [], {}
    for t in tasks:
        messages = build_messages(t, config.variant)
        for s in range(config.n_samples):
            r = Request(t["task_id"], s, messages, t)
            keys[(r.task_id, s)] = prompt_key(messages, config.sampling, config.model, s)
            requests.append(r)
    todo = [r for r in requests if keys[(r.task_id, r.sample)] not in cache.replies]
    if len(todo) < len(requests):
        print(f"resuming: {len(requests) - len(todo)} of {len(requests)} generations found in {cache.path}")
    if todo:
        backend.prepare()
    bar = tqdm(total=len(todo), desc=f"generate ({config.model})", unit="reply", dynamic_ncols=True,
               disable=not todo)

    def on_reply(r: Request, reply: str) -> None:
        cache.add(keys[(r.task_id, r.sample)], r.task_id, r.sample, reply)
        bar.update(1)

    try:
        if todo:
            backend.generate(todo, config.sampling, on_reply)
    finally:
        bar.close()
        cache.close()
    replies: dict[str, list[str | None]] = defaultdict(list)
    for r in requests:
        replies[r.task_id].append(cache.replies[keys[(r.task_id, r.sample)]])
    return dict(replies)


def run(config: EvalConfig) -> dict:
    tasks, manifest = load_tasks(config.dataset, config.revision, config.scenarios)
    if config.since:
        tasks = created_after(tasks, config.since)
    if config.limit:
        tasks = tasks[: config.limit]
    replies = None
    if config.samples:
        codes = read_samples(config.samples, {t["task_id"] for t in tasks})
        backend = "samples"
    else:
        replies = generate(config, tasks)
        codes = {tid: [extract_code(x) for x in rs] for tid, rs in replies.items()}
        backend = resolve(config.model, config.backend)[1]

    with Sandbox(config.workers, Limits(timeout_s=config.timeout_s)) as sandbox:
        results = score(tasks, codes, sandbox)
    n = min((len(v) for v in codes.values()), default=1)
    ks = tuple(k for k in (1, 5, 10) if k <= n)
    summary = summarize(results, ks)

    report = {
        "model": config.model_name,
        "backend": backend,
        "backend_options": {k: v for k, v in config.backend_options.items() if v is not None},
        "dataset": {
            "source": config.dataset,
            "revision": config.revision,
            "content_hash": manifest["content_hash"],
            "builder_version": manifest.get("builder_version"),
            "seed": manifest.get("seed"),
            "difficulty": _difficulty(manifest.get("config") or {}),
            "since": config.since,
            "tasks": len(tasks),
            "scenarios": sorted({t["scenario"] for t in tasks}),
        },
        "variant": config.variant,
        "sampling": {"n_samples": n, **asdict(config.sampling)},
        "sandbox": {"timeout_s": config.timeout_s},  # what re-scoring a submission of this run uses
        "versions": {"python": platform.python_version(), **_versions()},
        "evaluated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        "samples": [r.to_dict() for r in results],
    }
    out = run_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    name = results_name(config.variant)
    (out / name).write_text(json.dumps(report, indent=2) + "\n")
    report["path"] = str(out / name)
    if config.plot:
        from evaluate.plots import plot_report

        report["figures"] = [str(p) for p in plot_report(report, out)]
    return report


def _difficulty(build: dict) -> dict:
    """The dataset's tier (calls per path, if/else splits): scores of different tiers are never ranked together.
    A manifest written before tiers existed had one split at most."""
    if "difficulty" in build:
        return build["difficulty"]
    calls, branches = build.get("calls_per_path", 5), build.get("branches", 1)
    return {"calls": calls, "branches": branches, "tier": f"calls-{calls}-branches-{branches}"}


def _versions() -> dict:
    out = {}
    for dist in ("stateeval", "torch", "datasets", "openai", "transformers", "vllm"):
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
