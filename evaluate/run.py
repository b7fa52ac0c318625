"""One evaluation run: load tasks, obtain code (a backend or a samples file), score in the sandbox, report."""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import os
import sys
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.backends import BackendError, Request, Sampling, Usage, get_backend, resolve
from core.backends.cache import GenerationCache, prompt_key
from core.backends.tokens import estimate, prompt_tokens
from core.errors import check_writable, writing
from core.names import slug
from core.progress import progress
from core.provenance import library_versions
from core.records import DatasetError, TaskRecord, created_after, load_tasks, results_name, run_suffix, sample_lines, \
    with_doc
from core.sandbox.executor import LOCAL, check_reachable, make_executor
from core.sandbox.harness import Executor, Job, Limits, require_verdicts
from core.statuses import INFRA_ERROR, STATUSES
from evaluate.diagnosis import format_causes, format_metric
from evaluate.episodes import (CODE, CORRECT, DEFAULT_MAX_TURNS, TESTS, TOOLS, Driver, answers, conversation_usage,
                               lost_samples, turns_used)
from evaluate import tests_mode
from evaluate.intervals import format_rate
from evaluate.mutation_score import reference_test, score_answers
from evaluate.prompts import extract_code
from evaluate.runlock import exclusive
from evaluate.scoring import CI, answer_hash, every_k, from_row, has_verdict, run_containment, levers_of, score, summarize
from evaluate.usage import Price, sample_tokens, summarize_usage


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
    executor: str = LOCAL  # where the sandbox runs: local (this machine's workers) or ray (a Ray cluster)
    ray_address: str | None = None  # the Ray cluster for executor "ray"; None = a local Ray instance
    timeout_s: float = 10.0
    sampling: Sampling = field(default_factory=Sampling)
    backend_options: dict = field(default_factory=dict)  # base_url, concurrency, tensor_parallel_size, ...
    plot: bool = False
    since: str | None = None  # YYYY-MM-DD: score only tasks created after it (a fresh split's window)
    variant: str = "natural"  # which instruction the model is shown: natural, steps or vague
    doc: str = "spec"  # which documentation: the task's api_doc (spec) or api_doc_enriched (enriched)
    price: Price | None = None  # USD per million prompt / completion tokens: the run's cost is reported
    mode: str = CODE  # code (one program, blind), tools (native tool calls), explore (try code, then answer)
    # model turns per conversation (tools; explore, tests: runs before the answer); None: the mode's default,
    # DEFAULT_MAX_TURNS, or none in tests mode (one reply, as in code mode)
    max_turns: int | None = None
    refine_on: str = CORRECT  # tests mode with max_turns: the world the model's tests run on, correct or mutated

    def __post_init__(self) -> None:
        if self.max_turns is None:
            self.max_turns = 0 if self.mode == TESTS else DEFAULT_MAX_TURNS

    @property
    def model_name(self) -> str:
        if self.model:
            return self.model
        return Path(self.samples).stem if self.samples else "model"


def run_dir(config: EvalConfig) -> Path:
    return Path(config.out) / slug(config.model_name, "--") / slug(config.revision or "local", "--")


def read_samples(path: str, task_ids: set[str], selected: bool = False) -> dict[str, list[str | None]]:
    """{"task_id": ..., "code": ...} per line; several lines for one task are several samples. A file without
    a line is refused: a run that scores nothing is no result. `selected`: the run scores a selection of the
    dataset (--scenario, --limit, --since), so lines for tasks outside it are left out rather than refused."""
    codes: dict[str, list[str | None]] = defaultdict(list)
    for n, task_id, code in sample_lines(path):
        if task_id not in task_ids:
            if selected:
                continue
            raise DatasetError(f"{path}:{n}: task_id {task_id!r} is not in the dataset (wrong --dataset?)")
        codes[task_id].append(code if isinstance(code, str) and code.strip() else None)
    if not codes:
        among = " for the tasks selected (--scenario, --limit, --since; or a wrong --dataset?)" if selected else ""
        raise DatasetError(f"{path} holds no answers{among}, so there is nothing to score; pass a JSONL file with "
                           'one {"task_id": ..., "code": ...} line per answer')
    return dict(codes)


def selected(config: EvalConfig) -> bool:
    """Whether the run scores part of the dataset only."""
    return bool(config.scenarios or config.limit is not None or config.since)


def first_of_each_scenario(tasks: list[TaskRecord], limit: int) -> list[TaskRecord]:
    """`--limit`: the first `limit` tasks of each scenario, in the dataset's order."""
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for t in tasks:
        if taken[t.scenario] < limit:
            taken[t.scenario] += 1
            kept.append(t)
    return kept


def messages_for(config: EvalConfig, task: TaskRecord) -> list[dict]:
    """The prompt a task is shown in this run's mode and variant (a test's in tests mode, else a program's)."""
    return tests_mode.messages_in(config.mode, task, config.variant)


def references(config: EvalConfig, tasks: list[TaskRecord]) -> dict[str, str]:
    """What `--model reference` answers each task with: its reference program, or in tests mode its reference
    test (`evaluate.mutation_score.reference_test`)."""
    if config.mode == TESTS:
        return {t.task_id: reference_test(t) for t in tasks}
    return {t.task_id: t.reference_program for t in tasks}


def generate(config: EvalConfig, tasks: list[TaskRecord]) -> tuple[dict[str, list[str | None]],
                                                              dict[tuple[str, int], Usage | None]]:
    """Replies for every task and sample, and the tokens each cost: from the cache where possible (a cached
    reply keeps its usage), else from the backend."""
    options = dict(config.backend_options)
    if resolve(config.model, config.backend)[1] == "reference":  # it replays the references of these tasks
        options["references"] = references(config, tasks)
    backend = get_backend(config.model, config.backend, **options)
    cache = GenerationCache(run_dir(config) / "generations.jsonl")
    requests, keys = [], {}
    for t in tasks:
        messages = messages_for(config, t)
        for s in range(config.n_samples):
            r = Request(t.task_id, s, messages)
            keys[(r.task_id, s)] = prompt_key(messages, config.sampling, config.model, s)
            requests.append(r)
    todo = [r for r in requests if keys[(r.task_id, r.sample)] not in cache.replies]
    if len(todo) < len(requests):
        print(f"resuming: {len(requests) - len(todo)} of {len(requests)} generations found in {cache.path}")
    if todo:
        backend.prepare()
    bar = progress(len(todo), f"generate ({config.model})", unit="answer")

    def on_reply(r: Request, reply: str) -> None:
        cache.add(keys[(r.task_id, r.sample)], r.task_id, r.sample, reply, r.usage)
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
    usage = {(r.task_id, r.sample): cache.usage.get(keys[(r.task_id, r.sample)]) for r in requests}
    return dict(replies), usage


def trace_references(tasks: list[TaskRecord], sandbox: Executor) -> dict[tuple[str, str], dict]:
    """(task id, test case name) -> the reference's API calls on that test case as tool calls, and its RESULT as
    submit_result's items: what `--model reference` replays in tools mode."""
    jobs = [Job((t.task_id, case.name), t.scenario, t.reference_program, case, trace=True)
            for t in tasks for case in t.test_cases]
    scripts = {}
    for o in require_verdicts(sandbox.run_untrusted(jobs, desc="trace references")):
        if o.status != "ok":
            raise BackendError(f"the reference of {o.key[0]} failed on its {o.key[1]} test case while being traced "
                               f"into tool calls ({o.status}: {o.error}); rebuild the dataset")
        scripts[o.key] = {"calls": o.extra["calls"], "submit": o.extra["submit"]}
    return scripts


def converse(config: EvalConfig, tasks: list[TaskRecord], sandbox: Executor):
    """Answers, usage and turns of a tools or explore run: its conversations, each turn from the cache where it
    holds it, else from the backend. Every conversation is written to conversations_<mode>.jsonl."""
    options = dict(config.backend_options)
    if resolve(config.model, config.backend)[1] == "reference":
        options.update(references=references(config, tasks), max_turns=config.max_turns)
        if config.mode == TOOLS:
            options["scripts"] = trace_references(tasks, sandbox)
    backend = get_backend(config.model, config.backend, **options)
    cache = GenerationCache(run_dir(config) / "generations.jsonl")
    driver = Driver(config.mode, backend, cache, config.sampling, config.model, sandbox, config.max_turns,
                    config.variant, config.refine_on)
    try:
        conversations = driver.run(tasks, config.n_samples)
    finally:
        cache.close()
    if driver.resumed:
        print(f"resumed: {driver.resumed} turn(s) taken from {cache.path} without asking the model")
    path = run_dir(config) / f"conversations{run_suffix(config.variant, config.mode, config.doc)}.jsonl"
    path.write_text("".join(json.dumps(c.transcript(), ensure_ascii=False) + "\n" for c in conversations))
    return (answers(tasks, conversations, config.mode, config.n_samples), conversation_usage(conversations),
            turns_used(conversations), lost_samples(conversations))


def samples_usage(config: EvalConfig, tasks: list[TaskRecord], codes: dict[str, list[str | None]]) -> dict:
    """cl100k_base estimates for pre-written code: the prompt this variant would show, and the code."""
    usage = {}
    for t in tasks:
        messages = messages_for(config, t)
        prompt = prompt_tokens(messages)
        for s, code in enumerate(codes.get(t.task_id, [])):
            usage[(t.task_id, s)] = estimate(messages, code, prompt)
    return usage


def resume_note(config: EvalConfig) -> str:
    """What an interrupted run leaves for the next one: the generations that arrived (nothing when scoring
    pre-generated samples; no report is written before the scoring ends)."""
    if config.samples:
        return "no results were written; re-run the same command to score the samples"
    cache = run_dir(config) / "generations.jsonl"
    n = len(GenerationCache(cache).replies) if cache.is_file() else 0
    return f"{n} generations cached in {cache}, re-run the same command to resume"


def run(config: EvalConfig) -> dict:
    tasks, manifest = load_tasks(config.dataset, config.revision, config.scenarios)
    if config.since:
        tasks = created_after(tasks, config.since)
    if config.limit is not None:
        tasks = first_of_each_scenario(tasks, config.limit)
    tasks = with_doc(tasks, config.doc)
    # A run that generates holds its folder (its cache and conversations) from here to its report; a --samples run
    # writes only the report, which `write_report` makes safe to race, and leaves no folder if it stops before
    # (it checks first that the folder can be made, rather than fail once everything is scored).
    if config.samples:
        check_writable(run_dir(config))
    with nullcontext() if config.samples else exclusive(run_dir(config)):
        return _run(config, tasks, manifest)


def _run(config: EvalConfig, tasks: list[TaskRecord], manifest: dict) -> dict:
    if config.mode == TESTS:
        return _run_tests(config, tasks, manifest)
    if config.plot and (finished := finished_run(config, tasks, manifest)) is not None:
        return finished
    replies, turns = None, {}
    check_reachable(config.executor, config.ray_address)  # before generating: a dead cluster is told at once
    if config.samples:
        codes = read_samples(config.samples, {t.task_id for t in tasks}, selected(config))
        backend = "samples"
        usage = samples_usage(config, tasks, codes)
    else:
        if config.mode == CODE:
            replies, usage = generate(config, tasks)
            codes = {tid: [extract_code(x) for x in rs] for tid, rs in replies.items()}
        backend = resolve(config.model, config.backend)[1]

    limits = Limits(timeout_s=config.timeout_s)
    lost: dict = {}
    with make_executor(config.executor, config.ray_address, config.workers, limits) as sandbox:
        if config.mode != CODE and not config.samples:
            codes, usage, turns, lost = converse(config, tasks, sandbox)
        n = min((len(v) for v in codes.values()), default=1)
        report = _head(config, backend, manifest, tasks, n)
        known = unfinished_verdicts(config, report, codes)
        if known:
            print(f"resuming: {len(known)} sample(s) keep the verdict the last run gave them; scoring the ones it "
                  "could not", file=sys.stderr)
        results = score(tasks, codes, sandbox, lost, known)
        report["sandbox"]["retried"] = sandbox.retried  # jobs run again after their worker was lost
    summary = summarize(results, every_k(n), levers_of(tasks))
    containment = run_containment(results)
    for r in results:
        r.tokens = sample_tokens(usage.get((r.task_id, r.sample)))
    usage_block = summarize_usage([(r.scenario, r.tokens) for r in results if has_verdict(r)],
                                  {u.counted_by for u in usage.values() if u is not None}, config.price)
    report["sandbox"]["containment"] = containment
    report.update({
        "evaluated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        # tokens and cost: outside `summary`, which holds only what re-scoring the code reproduces
        "usage": usage_block,
        "samples": [_with_turns(r.to_dict(containment), turns.get((r.task_id, r.sample))) for r in results],
    })
    if turns:
        report["turns"] = turns_summary(turns)
    out = run_dir(config)
    with writing(out, resume=f", then run the same command again ({resume_note(config)})"):
        kept, latest = write_report(out, report, results_name(config.variant, config.mode, config.doc))
    report["path"], report["run_path"] = str(latest), str(kept)
    if config.plot:
        from evaluate.plots import plot_report

        report["figures"] = [str(p) for p in plot_report(report, out)]
    return report


def _run_tests(config: EvalConfig, tasks: list[TaskRecord], manifest: dict) -> dict:
    """A tests-mode run (`evaluate.tests_mode`): the tests (a samples file, one reply each, or conversations with
    `--max-turns`), scored by their tasks' world mutants, and its report, results_tests.json beside the code
    mode's."""
    tasks = tests_mode.scored_tasks(tasks)
    check_reachable(config.executor, config.ray_address)
    turns, lost = {}, {}
    if config.samples:
        codes = read_samples(config.samples, {t.task_id for t in tasks}, selected(config))
        backend, usage = "samples", samples_usage(config, tasks, codes)
    else:
        backend = resolve(config.model, config.backend)[1]
        if not config.max_turns:
            replies, usage = generate(config, tasks)
            codes = {tid: [extract_code(x) for x in rs] for tid, rs in replies.items()}
    with make_executor(config.executor, config.ray_address, config.workers, Limits(timeout_s=config.timeout_s)) \
            as sandbox:
        if not config.samples and config.max_turns:
            codes, usage, turns, lost = converse(config, tasks, sandbox)
        n = min((len(v) for v in codes.values()), default=1)
        report = _head(config, backend, manifest, tasks, n)
        scores = score_answers(tasks, codes, sandbox, lost=lost, desc="score tests")
        report["sandbox"]["retried"] = sandbox.retried
    rows = []
    for s in scores:
        row = tests_mode.sample_row(s, codes[s.task_id][s.sample])
        row["tokens"] = sample_tokens(usage.get((s.task_id, s.sample)))
        if (s.task_id, s.sample) in turns:
            row["turns"] = sum(turns[(s.task_id, s.sample)])
        rows.append(row)
    summary = tests_mode.summarize_tests(scores)
    report.update({
        "evaluated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        "usage": summarize_usage([(r["scenario"], r["tokens"]) for r in rows if r["status"] != INFRA_ERROR],
                                 {u.counted_by for u in usage.values() if u is not None}, config.price),
        "samples": rows,
    })
    if turns:
        report["turns"] = turns_summary(turns)
    out = run_dir(config)
    with writing(out, resume=", then run the same command again"):
        kept, latest = write_report(out, report, results_name(config.variant, TESTS, config.doc))
    report["path"], report["run_path"] = str(latest), str(kept)
    return report


def finished_run(config: EvalConfig, tasks: list[TaskRecord], manifest: dict) -> dict | None:
    """--plot on a run that is already finished: its figures, drawn from the report in its folder, and that report
    (nothing generated or scored again). Finished: the report has the same settings (`settings_hash`: the model,
    the dataset content and its selection, variant, mode, sampling, time limit), the same library versions and a
    verdict for every sample, and for --samples the same programs (`answer_hash`). None otherwise: the run goes on
    as usual."""
    path = run_dir(config) / results_name(config.variant, config.mode, config.doc)
    try:
        last = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    rows = last.get("samples") if isinstance(last, dict) else None
    if not isinstance(rows, list) or not isinstance(last.get("summary"), dict) \
            or any(r.get("status") == INFRA_ERROR for r in rows):
        return None
    if config.samples:
        codes = read_samples(config.samples, {t.task_id for t in tasks}, selected(config))
        answers = sorted((t, s, answer_hash(code)) for t, cs in codes.items() for s, code in enumerate(cs))
        if answers != sorted((r.get("task_id"), r.get("sample"), r.get("answer")) for r in rows):
            return None
        head = _head(config, "samples", manifest, tasks, min((len(v) for v in codes.values()), default=1))
    else:
        head = _head(config, resolve(config.model, config.backend)[1], manifest, tasks, config.n_samples)
    if settings_hash(last) != settings_hash(head) or last.get("versions") != head["versions"]:
        return None
    from evaluate.plots import plot_report

    print(f"{path} holds this run, finished: drawing its figures without scoring again", file=sys.stderr)
    last.update(path=str(path), run_path=str(run_dir(config) / RUNS_DIR / f"{last.get('run')}.json"), reused=True)
    last["figures"] = [str(p) for p in plot_report(last, run_dir(config))]
    return last


def _head(config: EvalConfig, backend: str, manifest: dict, tasks: list[TaskRecord], n: int) -> dict:
    """results.json's settings: everything but what scoring finds (summary, usage, samples, containment)."""
    return {
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
            "scenarios": sorted({t.scenario for t in tasks}),
        },
        "variant": config.variant,
        "doc": config.doc,  # the documentation the model was shown: spec (api_doc) or enriched (api_doc_enriched)
        # how the model was evaluated: code (one program), tools (tool calls per test case) or explore; scores of
        # different modes are never ranked together
        "mode": config.mode,
        "max_turns": None if config.mode == CODE else config.max_turns,
        # tests mode refined on a live world (max_turns): the correct one, or mutated (one of the task's mutants)
        **({"refine_on": config.refine_on if config.max_turns else None} if config.mode == TESTS else {}),
        "sampling": {"n_samples": n, **asdict(config.sampling)},
        # timeout_s: what re-scoring a submission of this run uses; containment: how its programs were contained;
        # executor: where they ran (local or ray), which changes no verdict; retried: how many jobs ran again
        # because their worker was lost (`core.sandbox.harness.RETRIES`), which changes no verdict either
        "sandbox": {"timeout_s": config.timeout_s, "containment": None, "executor": config.executor},
        "versions": library_versions("stateeval", "torch", "datasets", "openai", "transformers", "vllm"),
    }


def unfinished_verdicts(config: EvalConfig, head: dict, codes: dict[str, list]) -> dict[tuple[str, int], "SampleResult"]:
    """The verdicts to keep from the last run in this folder, when it left samples without one (infra_error) and
    had the same settings on the same dataset content: (task, sample) -> its result, for every sample that has a
    verdict there for the same answer (`codes`, compared by `answer_hash`). Empty otherwise: a finished run is
    scored afresh when the command runs again (unless with --plot: see `finished_run`)."""
    path = run_dir(config) / results_name(config.variant, config.mode, config.doc)
    try:
        last = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    rows = last.get("samples") if isinstance(last, dict) else None
    if not isinstance(rows, list) or not any(r.get("status") == INFRA_ERROR for r in rows):
        return {}
    if settings_hash(last) != settings_hash(head) or last.get("mode", CODE) != head["mode"]:
        return {}
    containment = (last.get("sandbox") or {}).get("containment")
    kept = {}
    for row in rows:
        answers = codes.get(row.get("task_id")) or []
        s = row.get("sample")
        if row.get("status") != INFRA_ERROR and isinstance(s, int) and 0 <= s < len(answers) \
                and row.get("answer") is not None and row["answer"] == answer_hash(answers[s]):
            kept[(row["task_id"], s)] = from_row(row, containment)
    return kept


def _with_turns(row: dict, turns: list[int] | None) -> dict:
    """A sample's row with the model turns it used: in all, and per test case in tools mode (one conversation
    each)."""
    if turns is None:
        return row
    row["turns"] = sum(turns)
    if len(turns) == len(row.get("cases", [])) and len(turns) > 1:
        for case, n in zip(row["cases"], turns):
            case["turns"] = n
    return row


def turns_summary(turns: dict[tuple[str, int], list[int]]) -> dict:
    """Model turns per conversation over the run: how many conversations, their mean, the most, and the total."""
    every = [n for ns in turns.values() for n in ns]
    return {"conversations": len(every), "mean": sum(every) / len(every) if every else 0.0,
            "max": max(every, default=0), "total": sum(every)}


def _difficulty(build: dict) -> dict:
    """The dataset's tier (calls per path, if/else splits): scores of different tiers are never ranked together.
    A manifest written before tiers existed had one split at most."""
    if "difficulty" in build:
        return build["difficulty"]
    calls, branches = build.get("calls_per_path", 5), build.get("branches", 1)
    return {"calls": calls, "branches": branches, "tier": f"calls-{calls}-branches-{branches}"}


SETTINGS = ("model", "backend", "backend_options", "dataset", "variant", "sampling", "sandbox")
RUNS_DIR = "runs"


def settings_hash(report: dict) -> str:
    """A short hash of what decides a run's scores (model, dataset and its selection, variant, sampling, limits)."""
    settings = {k: report.get(k) for k in SETTINGS}
    if report.get("mode", CODE) != CODE:  # (a code run's hash stays what it was before modes existed)
        settings.update(mode=report["mode"], max_turns=report.get("max_turns"))
        if report["mode"] == TESTS:
            settings.update(refine_on=report.get("refine_on"))
    if report.get("doc", "spec") != "spec":  # (and a run on the spec what it was before --doc existed)
        settings.update(doc=report["doc"])
    if isinstance(settings["sandbox"], dict):  # how the sandbox contained the programs is an outcome, not a setting
        settings["sandbox"] = {"timeout_s": settings["sandbox"].get("timeout_s")}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]


def write_report(out: Path, report: dict, name: str) -> tuple[Path, Path]:
    """Keep every run: its report goes to runs/<time>-<settings hash>.json, never overwritten, and `name`
    (results.json, results_vague.json) is replaced by a copy of it, where readers of the latest run look.
    Returns (the run's own file, `name`)."""
    stamp = _dt.datetime.fromisoformat(report["evaluated_at"]).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}-{settings_hash(report)}"
    runs = out / RUNS_DIR
    runs.mkdir(parents=True, exist_ok=True)
    for attempt in itertools.count(1):  # two runs with the same settings in the same second both stay
        report["run"] = base if attempt == 1 else f"{base}-{attempt}"
        kept = runs / f"{report['run']}.json"
        try:
            f = open(kept, "x")
        except FileExistsError:
            continue
        text = json.dumps(report, indent=2) + "\n"
        with f:
            f.write(text)
        break
    tmp = out / f".{name}.tmp-{os.getpid()}"
    tmp.write_text(text)
    os.replace(tmp, out / name)  # a reader never sees a half-written latest report
    return kept, out / name


TABLE_KS = (1, 5, 10)  # the pass@k columns printed, with the largest k; results.json holds every k <= n


def format_table(summary: dict) -> str:
    """The printed table, every rate with its 95% interval; an infra_error column (samples without a verdict,
    outside every rate) and a line saying what to do about them appear only when a run has some."""
    reported = [int(k[5:]) for k in summary["overall"] if k.startswith("pass@")]
    shown = sorted({k for k in reported if k in TABLE_KS} | ({max(reported)} if reported else set()))
    ks = [f"pass@{k}" for k in shown] + [f"pass^{k}" for k in shown if k > 1 and f"pass^{k}" in summary["overall"]]
    ks += [k for k in ("success@1",) if k in summary["overall"]]
    unscored = summary["overall"].get(INFRA_ERROR, 0)
    apart = [INFRA_ERROR] if unscored else []
    head = ["scenario", "tasks", *ks, "arg_match", *STATUSES, *apart, "top causes"]
    rows = [head]
    by_lever = [(f"lever: {k}", b) for k, b in summary.get("levers", {}).items()]
    for name, block in [*summary["scenarios"].items(), ("overall", summary["overall"]), *by_lever]:
        diagnosis = block.get("diagnosis")
        cells = [name, str(block["tasks"])]
        cells += [format_rate(block[k], block.get(CI, {}).get(k)) for k in ks]
        cells.append(format_metric((diagnosis or {}).get("arg_match")))
        cells += [str(block["statuses"][s]) for s in STATUSES]
        cells += [str(block.get(INFRA_ERROR, 0)) for _ in apart]
        cells.append(format_causes(diagnosis))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if "interval" in summary:
        lines.append(f"[low, high]: the 95% interval over tasks; {summary['interval']['about']}")
    if unscored:
        lines.append(f"{unscored} sample(s) have no verdict ({INFRA_ERROR}: their sandbox workers were lost on every "
                     "retry) and are left out of every rate above; run the same command again to score them")
    return "\n".join(lines)


def format_usage(usage: dict) -> str:
    """One line: the run's tokens and, when priced, its cost."""
    o = usage["overall"]
    line = (f"tokens: {o['prompt_tokens']:,} prompt + {o['completion_tokens']:,} completion"
            f" (counted by {usage['counted_by'] or 'nothing'}")
    line += f"; {o['samples'] - o['counted']} of {o['samples']} samples unknown)" if o["counted"] < o["samples"] else ")"
    if o["cost_usd"] is not None:
        line += f"; cost ${o['cost_usd']:.4f}"
    return line
