"""A submission: one run packaged for the board, and the files a maintainer verifies.

`leaderboard/submissions/<model>_<date>/` holds

- `results.json`      the run's report, unchanged (scores per sample, summary, dataset revision and content hash;
                      a `--variant vague` run's `results_vague.json`, submitted with `--variant vague`);
- `generations.jsonl` exactly the run's replies, one line per task and sample, in the order scored. A run made
                      with `python -m evaluate --model ...` contributes the lines of its generation cache whose
                      prompt key matches this dataset's prompts and the recorded sampling (stale lines from
                      earlier runs in the same folder are left behind). A run scored with `--samples FILE` has no
                      replies: its samples file is packaged instead, as `{"task_id", "sample", "code"}` lines;
                      validation then runs that code as it is, with no extraction step;
                      A `--mode tools` or `--mode explore` run (and a `--mode tests` run with `--max-turns`)
                      contributes every turn of its recorded conversations instead, `{"key", "task_id", "sample",
                      "case", "turn", "reply"}` (the reply: the assistant message, tool calls included), which
                      validation replays against the world. A `--mode tests` run's report is its
                      `results_tests.json`, its tests scored by the world mutants they kill; the board ranks it
                      apart (by pass@1, a test that kills every mutant of its task, with the mutation score beside);
- `metadata.json`     what the board shows about the model (display name, organisation, parameter count, open or
                      closed weights, link), the dataset version the run claims, the instruction variant and the
                      evaluation mode;
- `validation.json`   written by `validate` only when re-scoring agreed; it records the sha256 of the three files
                      above, so `build` ignores a submission edited after it was validated.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, fields
from pathlib import Path

from core.backends import Sampling
from core.backends.cache import GenerationCache, prompt_key
from core.errors import first_few, writing
from core.names import slug
from core.records import DatasetError, TaskRecord, file_sha256, load_tasks, results_name, run_suffix, sample_lines
from core.statuses import INFRA_ERROR
from evaluate.episodes import CODE, MODES, TESTS
from evaluate.tests_mode import messages_in, scored_tasks
from scenarios.base import VARIANTS

RESULTS = "results.json"
GENERATIONS = "generations.jsonl"
METADATA = "metadata.json"
VALIDATION = "validation.json"
SUBMITTED_FILES = (RESULTS, GENERATIONS, METADATA)

DEFAULT_ROOT = Path("leaderboard")
SUBMISSIONS = "submissions"
WEIGHTS = ("open", "closed", "unknown")
METADATA_FORMAT = 1


class SubmissionError(RuntimeError):
    """A run that cannot be packaged, or a submission folder that cannot be read; the message says what to fix."""


@dataclass
class Submission:
    path: Path
    metadata: dict
    results: dict

    @property
    def version(self) -> str:
        return self.metadata["dataset"]["version"]

    @property
    def content_hash(self) -> str:
        return self.metadata["dataset"]["content_hash"]

    @property
    def variant(self) -> str:
        return self.metadata.get("variant", "natural")

    @property
    def mode(self) -> str:
        return self.metadata.get("mode", CODE)


def file_digests(folder: Path) -> dict[str, str]:
    return {name: file_sha256(folder / name) for name in SUBMITTED_FILES}


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise SubmissionError(f"{path} is missing")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{path} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise SubmissionError(f"{path} must hold a JSON object")
    return data


def read_results(path: Path) -> dict:
    results = _read_json(path)
    for key in ("model", "dataset", "sampling", "summary", "samples", "evaluated_at"):
        if key not in results:
            raise SubmissionError(f"{path} has no {key!r}: it is not a results.json written by python -m evaluate")
    return results


def read_generations(path: Path) -> list[dict]:
    """The submitted lines: {"task_id", "sample", "reply"} (a model's run) or {"task_id", "sample", "code"}."""
    if not path.is_file():
        raise SubmissionError(f"{path} is missing")
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SubmissionError(f"{path}:{n}: not JSON ({exc})") from exc
        if not (isinstance(row, dict) and isinstance(row.get("task_id"), str) and isinstance(row.get("sample"), int)
                and ("reply" in row or "code" in row)):
            raise SubmissionError(f"{path}:{n}: expected an object with task_id, sample and reply (or code)")
        rows.append(row)
    return rows


def load_submission(folder: Path) -> Submission:
    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError(f"no submission folder {folder}")
    metadata = _read_json(folder / METADATA)
    for key in ("name", "dataset"):
        if key not in metadata:
            raise SubmissionError(f"{folder / METADATA} has no {key!r}; make the submission with "
                                  "python -m evaluate.leaderboard submit")
    if not {"version", "content_hash"} <= set(metadata["dataset"]):
        raise SubmissionError(f"{folder / METADATA}: dataset must name its version and content_hash")
    return Submission(folder, metadata, read_results(folder / RESULTS))


def _check_link(link: str | None) -> str | None:
    if link and not re.match(r"https?://[^\s\"'<>]+$", link):
        raise SubmissionError(f"--link {link!r} must be an http(s) URL")
    return link or None


def run_sampling(results: dict) -> Sampling:
    recorded = results.get("sampling", {})
    return Sampling(**{f.name: recorded[f.name] for f in fields(Sampling) if f.name in recorded})


def converses(results: dict) -> bool:
    """Whether the run's answers came out of conversations (tools, explore, tests with `--max-turns`), whose turns a
    submission holds, rather than one reply per sample."""
    mode = results.get("mode", CODE)
    return mode != CODE and (mode != TESTS or bool(results.get("max_turns")))


def scored_by(results: dict, tasks: list[TaskRecord]) -> list[TaskRecord]:
    """The dataset's tasks the run had to score: every task, or in tests mode those that store world mutants."""
    if results.get("mode", CODE) != TESTS:
        return tasks
    try:
        return scored_tasks(tasks)
    except DatasetError as exc:
        raise SubmissionError(str(exc)) from exc


def expected_keys(results: dict, tasks: list[TaskRecord]) -> dict[tuple[str, int], str]:
    """The generation-cache key of every (task, sample) the run asked for, recomputed as `evaluate.run` does."""
    sampling = run_sampling(results)
    n = int(results["sampling"].get("n_samples", 1))
    variant = results.get("variant", "natural")
    keys = {}
    for t in tasks:
        messages = messages_in(results.get("mode", CODE), t, variant)
        for s in range(n):
            keys[(t.task_id, s)] = prompt_key(messages, sampling, results["model"], s)
    return keys


def coverage_problems(results: dict, tasks: list[TaskRecord]) -> tuple[list[str], dict[str, list[str]]]:
    """(general problems, per-task problems) of a results.json against every task of the dataset."""
    wanted = {t.task_id: t.scenario for t in tasks}
    n = int(results["sampling"].get("n_samples", 1))
    seen: dict[str, list[int]] = {}
    problems, per_task = [], {}
    for row in results["samples"]:
        seen.setdefault(row.get("task_id"), []).append(row.get("sample"))
    missing = [tid for tid in wanted if tid not in seen]
    extra = sorted(str(tid) for tid in seen if tid not in wanted)
    if missing:
        problems.append(f"{len(missing)} of the dataset's {len(wanted)} tasks are missing from results.json: "
                        + first_few(missing))
    if extra:
        problems.append(f"results.json scores {len(extra)} task(s) the dataset does not have: " + first_few(extra))
    for tid, samples in seen.items():
        if tid in wanted and sorted(samples) != list(range(n)):
            per_task[tid] = [f"samples {sorted(samples)} in results.json, expected 0..{n - 1} (n_samples {n})"]
    return problems, per_task


def _run_generations(run_dir: Path, results: dict, tasks: list[TaskRecord]) -> list[dict]:
    """The cache lines this run scored: the prompt key of each (task, sample) is recomputed, as the run did."""
    path = run_dir / GENERATIONS
    if not path.is_file():
        raise SubmissionError(
            f"{run_dir} has no {GENERATIONS}. A run scored with --samples FILE has none: pass that file with "
            "--samples so its code is packaged as the generations."
        )
    replies = GenerationCache(path).replies  # read as the run's own cache reads it
    keys = expected_keys(results, tasks)
    missing = sorted({tid for (tid, _), key in keys.items() if key not in replies})
    if missing:
        raise SubmissionError(
            f"{path} lacks the replies of {len(missing)} task(s) ({first_few(missing)}) for this dataset's "
            "prompts and the sampling in results.json; re-run python -m evaluate with the same arguments"
        )
    return [{"key": keys[k], "task_id": k[0], "sample": k[1], "reply": replies[keys[k]]} for k in keys]


def _samples_generations(samples: Path, results: dict) -> list[dict]:
    count: dict[str, int] = {}
    rows = []
    try:
        for _, task_id, code in sample_lines(samples):
            s = count.get(task_id, 0)
            count[task_id] = s + 1
            rows.append({"task_id": task_id, "sample": s, "code": code if isinstance(code, str) else None})
    except DatasetError as exc:
        raise SubmissionError(str(exc)) from exc
    scored = {(r["task_id"], r["sample"]) for r in results["samples"]}
    if {(r["task_id"], r["sample"]) for r in rows} != scored:
        raise SubmissionError(f"{samples} does not hold the samples results.json scored (other task ids or counts); "
                              "pass the file the run was made with")
    return rows


def _conversation_generations(run_dir: Path, results: dict, mode: str) -> list[dict]:
    """Every turn of the run's recorded conversations (conversations_<mode>.jsonl), in order."""
    path = run_dir / f"conversations{run_suffix(results.get('variant', 'natural'), mode)}.jsonl"
    if not path.is_file():
        raise SubmissionError(f"{path} is missing: a --mode {mode} run records its conversations there; re-run "
                              "python -m evaluate with the same arguments")
    rows = []
    for line in path.read_text().splitlines():
        c = json.loads(line)
        replies = [m for m in c["messages"] if m.get("role") == "assistant"]
        for turn, (key, reply) in enumerate(zip(c["keys"], replies)):
            rows.append({"key": key, "task_id": c["task_id"], "sample": c["sample"], "case": c["case"],
                         "turn": turn, "reply": json.dumps(reply)})
    return rows


def submit(run_dir: str | Path, name: str, org: str | None = None, params: str | None = None,
           weights: str = "unknown", link: str | None = None, dataset_version: str | None = None,
           samples: str | Path | None = None, dataset: str | None = None, root: str | Path = DEFAULT_ROOT,
           force: bool = False, variant: str = "natural", mode: str = CODE) -> Path:
    """Package a run as `<root>/submissions/<model>_<date>/`; returns that folder."""
    run_dir = Path(run_dir)
    if variant not in VARIANTS:
        raise SubmissionError(f"--variant must be one of {', '.join(VARIANTS)}")
    if mode not in MODES:
        raise SubmissionError(f"--mode must be one of {', '.join(MODES)}")
    report_path = run_dir / results_name(variant, mode)
    if not report_path.is_file():
        others = sorted(p.name for p in run_dir.glob("results*.json"))
        raise SubmissionError(f"{report_path} is missing" + (f"; the run folder has {', '.join(others)} (pick it "
                              "with --variant)" if others else ": is this a python -m evaluate run folder?"))
    results = read_results(report_path)
    if results.get("variant", "natural") != variant:
        raise SubmissionError(f"{report_path} was scored with --variant {results.get('variant')}, not {variant}")
    if results.get("mode", CODE) != mode:
        raise SubmissionError(f"{report_path} was scored with --mode {results.get('mode', CODE)}, not {mode}")
    ds = results["dataset"]
    revision = ds.get("revision")
    if dataset_version and revision and dataset_version != revision:
        raise SubmissionError(f"the run was scored on dataset revision {revision!r}; it cannot be submitted as "
                              f"{dataset_version!r}")
    version = dataset_version or revision
    if not version:
        raise SubmissionError(
            f"the run names no dataset version (it was scored on {ds.get('source')!r} without --revision); "
            "pass --dataset-version with the released version that folder is (validation checks its content hash)"
        )
    if weights not in WEIGHTS:
        raise SubmissionError(f"--weights must be one of {', '.join(WEIGHTS)}")
    if not name.strip():
        raise SubmissionError("--name must not be empty")
    link = _check_link(link)

    is_samples = results.get("backend") == "samples"
    if samples and not is_samples:
        raise SubmissionError("--samples is for runs scored with --samples; this run generated its replies "
                              f"(backend {results.get('backend')!r}), which are taken from its {GENERATIONS}")
    if is_samples and not samples:
        raise SubmissionError(f"{run_dir} was scored with --samples FILE, which the run did not copy: pass that "
                              "file with --samples so its code is packaged as the generations")
    source = dataset or ds.get("source")
    try:
        tasks, manifest = load_tasks(source, revision)
    except DatasetError as exc:
        raise SubmissionError(f"cannot load the run's dataset ({exc}); pass its folder with --dataset") from exc
    if manifest["content_hash"] != ds.get("content_hash"):
        raise SubmissionError(f"the dataset at {source!r} has content hash {manifest['content_hash'][:12]}, the "
                              f"run was scored on {str(ds.get('content_hash'))[:12]}; pass the run's --dataset")
    tasks = scored_by(results, tasks)
    problems, per_task = coverage_problems(results, tasks)
    if problems or per_task:
        if per_task:
            problems.append(f"{len(per_task)} task(s) have other samples than results.json's n_samples asks: "
                            + first_few((f"{tid} ({'; '.join(d)})" for tid, d in sorted(per_task.items())), 2))
        raise SubmissionError("a submission scores every task of its dataset version, n samples each, and this "
                              "run does not (--limit, --scenario or --since?): " + " | ".join(problems))
    unscored = sum(row.get("status") == INFRA_ERROR for row in results["samples"])
    if unscored:
        raise SubmissionError(f"{unscored} sample(s) of this run have no verdict (infra_error: their sandbox "
                              "workers were lost); run the same python -m evaluate command again, which scores "
                              "them, then submit")
    if is_samples:
        rows = _samples_generations(Path(samples), results)
    elif converses(results):
        rows = _conversation_generations(run_dir, results, mode)
    else:
        rows = _run_generations(run_dir, results, tasks)

    date = results["evaluated_at"][:10]
    dest = Path(root) / SUBMISSIONS / f"{slug(name)}_{date}"
    if dest.exists() and not force:
        raise SubmissionError(f"{dest} already exists; pass --force to replace it")
    metadata = {
        "format": METADATA_FORMAT,
        "name": name.strip(),
        "organisation": org,
        "parameters": params,
        "weights": weights,
        "link": link,
        "model": results["model"],
        "backend": results.get("backend"),
        "generations": "code" if is_samples else "turns" if converses(results) else "replies",
        "variant": variant,
        "mode": mode,
        "max_turns": results.get("max_turns"),
        **({"refine_on": results.get("refine_on")} if mode == TESTS else {}),
        "evaluation_date": date,
        "dataset": {"version": version, "content_hash": ds.get("content_hash"), "tasks": ds.get("tasks"),
                    "scenarios": ds.get("scenarios")},
        "sampling": results["sampling"],
    }
    with writing(dest, "--root"):
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        try:
            shutil.copyfile(report_path, dest / RESULTS)
            (dest / GENERATIONS).write_text("".join(json.dumps(r) + "\n" for r in rows))
            (dest / METADATA).write_text(json.dumps(metadata, indent=2) + "\n")
        except OSError:
            shutil.rmtree(dest, ignore_errors=True)  # never half a submission
            raise
    return dest
