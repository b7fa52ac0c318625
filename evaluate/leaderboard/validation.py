"""Validation: a submission is trusted only when the maintainers' copy of its dataset version re-scores it.

Checks, in order; a failing stage stops before the expensive ones, since re-scoring against the wrong tasks
says nothing:

1. the files are readable and agree with each other (metadata vs results.json: model, sampling, dataset);
2. the dataset version loads from the maintainers' `--dataset` (never from a path the submission names) and its
   content hash is the one the run recorded: a run on another version or an edited dataset stops here;
3. coverage: every task of that version, no other task, samples 0..n-1 for each, and one generation per sample;
4. each reply was generated for this dataset's prompt with the recorded sampling (its prompt key, recomputed);
5. re-scoring: the code is extracted from each reply (or taken as it is, for a `--samples` submission), run in
   the sandbox, and every sample's status and test-case statuses, and every number of the summary, must equal
   what results.json says. Error texts and timings are not compared: they name paths and vary by machine.
   A `--mode tools` or `--mode explore` submission is re-scored by replaying its recorded conversations: each
   turn's key is recomputed from what this sandbox's world answered, so a turn is only used where the model saw
   exactly what it sees here, and the calls (or the final program) are scored as the run scored them.
   A `--mode tests` submission covers the tasks that store world mutants; its tests (its conversations replayed,
   with `--max-turns`) run again on the correct world and on each mutant, and every sample's outcome, the mutants
   it killed and missed, and every number of the summary must equal results_tests.json's.

A sample that timed out on one machine may not on another; validation re-runs with the run's time limit when
results.json records one (`sandbox.timeout_s`), else the default, and reports such a sample like any other.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from core.errors import check_writable, writing
from core.records import DatasetError, load_tasks
from core.statuses import INFRA_ERROR
from evaluate.episodes import CODE, CORRECT, DEFAULT_MAX_TURNS, TESTS
from evaluate.leaderboard.submission import (
    GENERATIONS,
    METADATA,
    RESULTS,
    VALIDATION,
    Submission,
    SubmissionError,
    converses,
    coverage_problems,
    expected_keys,
    file_digests,
    load_submission,
    read_generations,
    run_sampling,
    scored_by,
)
from evaluate.prompts import extract_code
from evaluate.scoring import CI, reported_ks

STAMP_FORMAT = 1


@dataclass
class Report:
    """What validation found. `ok` only when nothing differs; `format()` is what the command prints."""

    submission: Path
    version: str | None = None
    problems: list[str] = field(default_factory=list)  # stops validation before re-scoring
    tasks: dict[str, list[str]] = field(default_factory=dict)  # task_id -> how its re-scoring differs
    summary: list[str] = field(default_factory=list)  # summary numbers that differ
    rescored: int = 0

    @property
    def ok(self) -> bool:
        return not (self.problems or self.tasks or self.summary)

    def format(self) -> str:
        head = f"{self.submission}" + (f" (dataset {self.version})" if self.version else "")
        if self.ok:
            return f"valid: {head}: re-scored {self.rescored} sample(s), all equal to results.json"
        lines = [f"refused: {head}"]
        lines += [f"  - {p}" for p in self.problems]
        if self.tasks:
            lines.append(f"  {len(self.tasks)} task(s) differ from results.json:")
            for tid in sorted(self.tasks):
                lines += [f"    {tid}: {d}" for d in self.tasks[tid]]
        if self.summary:
            lines.append("  summary numbers differ from the re-scored ones:")
            lines += [f"    {d}" for d in self.summary]
        return "\n".join(lines)


def _compare_summary(submitted, rescored, path: str = "") -> list[str]:
    if isinstance(submitted, dict) and isinstance(rescored, dict):
        out = []
        for key in sorted(set(submitted) | set(rescored)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in submitted or key not in rescored:
                out.append(f"{sub}: submitted {submitted.get(key)!r}, re-scored {rescored.get(key)!r}")
            else:
                out += _compare_summary(submitted[key], rescored[key], sub)
        return out
    if isinstance(submitted, (int, float)) and isinstance(rescored, (int, float)) \
            and not isinstance(submitted, bool) and not isinstance(rescored, bool):
        if math.isclose(submitted, rescored, rel_tol=1e-9, abs_tol=1e-12):
            return []
    elif submitted == rescored:
        return []
    return [f"{path}: submitted {submitted!r}, re-scored {rescored!r}"]


def validate(folder: str | Path, dataset: str = "stateeval", sandbox=None, timeout_s: float | None = None,
             workers: int | None = None) -> Report:
    """Validate one submission folder against the maintainers' `dataset` (a folder, or a Hub id at the version).

    Writes `validation.json` into the folder when it is valid, and removes a stale one otherwise (`CannotWrite`
    where the folder cannot be written).
    `sandbox`: an open `Sandbox` to reuse (several submissions in one process); else one is started here.
    """
    folder = Path(folder)
    report = Report(folder)
    stamp_path = folder / VALIDATION
    check_writable(stamp_path, option=None)  # before the re-scoring, not after it
    try:
        sub = load_submission(folder)
        _validate(sub, dataset, sandbox, timeout_s, workers, report)
    except (SubmissionError, DatasetError) as exc:
        report.problems.append(str(exc))
    with writing(stamp_path, option=None):
        if report.ok:  # only reached with `sub` loaded: a folder that cannot be read is a problem
            stamp_path.write_text(json.dumps(_stamp(sub, report), indent=2) + "\n")
        elif stamp_path.is_file():
            stamp_path.unlink()
    return report


def _validate(sub: Submission, dataset: str, sandbox, timeout_s, workers, report: Report) -> None:
    meta, results = sub.metadata, sub.results
    report.version = sub.version
    rds = results["dataset"]
    if rds.get("content_hash") != sub.content_hash:
        report.problems.append(f"{METADATA} names content hash {sub.content_hash}, {RESULTS} was scored on "
                               f"{rds.get('content_hash')}")
    if rds.get("revision") and rds["revision"] != sub.version:
        report.problems.append(f"{METADATA} names dataset version {sub.version!r}, {RESULTS} was scored on "
                               f"revision {rds['revision']!r}")
    if meta.get("model") != results["model"] or meta.get("sampling") != results["sampling"]:
        report.problems.append(f"{METADATA} and {RESULTS} disagree on the model or the sampling parameters")
    if sub.mode != results.get("mode", CODE):
        report.problems.append(f"{METADATA} names the {sub.mode!r} mode, {RESULTS} was scored in "
                               f"{results.get('mode', CODE)!r}")
    if sub.variant != results.get("variant", "natural"):
        report.problems.append(f"{METADATA} names the {sub.variant!r} instructions, {RESULTS} was scored on "
                               f"{results.get('variant', 'natural')!r}")
    if report.problems:
        return

    try:
        tasks, manifest = load_tasks(dataset, sub.version)
    except DatasetError as exc:
        report.problems.append(f"cannot load dataset version {sub.version!r} from {dataset!r}: {exc}")
        return
    if manifest.get("version") not in (None, sub.version):
        report.problems.append(f"{dataset!r} is dataset version {manifest['version']!r}, the submission names "
                               f"{sub.version!r}")
    if manifest["content_hash"] != sub.content_hash:
        report.problems.append(
            f"the submission was scored on dataset content hash {sub.content_hash}, but version {sub.version!r} "
            f"({dataset}) has {manifest['content_hash']}: it was made on another dataset version or an edited "
            "dataset; re-run python -m evaluate on this version"
        )
    if report.problems:
        return

    tasks = scored_by(results, tasks)
    problems, per_task = coverage_problems(results, tasks)
    report.problems += problems
    unscored = sum(row.get("status") == INFRA_ERROR for row in results["samples"])
    if unscored:
        report.problems.append(f"{unscored} sample(s) in {RESULTS} have no verdict (infra_error: their sandbox "
                               "workers were lost); run the same python -m evaluate command again, which scores "
                               "them, and package that run")
        return
    report.tasks.update(per_task)
    generations = read_generations(sub.path / GENERATIONS)
    if converses(results):
        if report.problems or report.tasks:
            report.problems.append("re-scoring skipped until the submission covers exactly the dataset's tasks")
            return
        _rescore(sub, tasks, lambda sandbox: _replay(sub, tasks, generations, sandbox, report), sandbox, timeout_s,
                 workers, report)
        return
    scored = {(r["task_id"], r["sample"]) for r in results["samples"]}
    given: dict[tuple[str, int], dict] = {}
    for row in generations:
        key = (row["task_id"], row["sample"])
        if key in given:
            report.tasks.setdefault(key[0], []).append(f"sample {key[1]}: more than one line in {GENERATIONS}")
        given[key] = row
    for tid, s in sorted(scored - set(given)):
        report.tasks.setdefault(tid, []).append(f"sample {s}: scored in {RESULTS} but has no line in {GENERATIONS}")
    for tid, s in sorted(set(given) - scored):
        report.tasks.setdefault(tid, []).append(f"sample {s}: in {GENERATIONS} but not scored in {RESULTS}")
    if report.problems or report.tasks:
        report.problems.append("re-scoring skipped until the submission covers exactly the dataset's tasks")
        return

    kind = meta.get("generations", "replies")
    keys = expected_keys(results, tasks) if kind == "replies" else {}
    codes: dict[str, list[str | None]] = {}
    for t in tasks:
        tid = t.task_id
        for s in range(int(results["sampling"].get("n_samples", 1))):
            row = given[(tid, s)]
            if kind == "replies":
                if "reply" not in row:
                    report.tasks.setdefault(tid, []).append(f"sample {s}: {GENERATIONS} line has no reply")
                elif row.get("key") != keys[(tid, s)]:
                    report.tasks.setdefault(tid, []).append(
                        f"sample {s}: the reply was not generated for this dataset's prompt with the recorded "
                        "sampling (its prompt key differs)")
                code = extract_code(row.get("reply"))
            else:
                code = row.get("code")
                code = code if isinstance(code, str) and code.strip() else None
            codes.setdefault(tid, []).append(code)
    if report.tasks:
        return

    from evaluate.mutation_score import score_answers
    from evaluate.scoring import score

    scoring = score_answers if sub.mode == TESTS else score
    _rescore(sub, tasks, lambda sandbox: scoring(tasks, codes, sandbox), sandbox, timeout_s, workers, report)


def _replay(sub: Submission, tasks, generations: list[dict], sandbox, report: Report):
    """A tools, explore or refining tests submission's scores: its conversations run again with the submitted turns
    as the only replies, every tool call and snippet executed in this sandbox (a tests run's on the world it
    refined on), then scored. A conversation that asks for a turn the submission lacks (the world answered
    otherwise than the run's, or turns are missing) is a problem."""
    import types

    from core.backends import BackendError
    from evaluate.episodes import Driver, answers, lost_samples
    from evaluate.mutation_score import score_answers
    from evaluate.scoring import score

    results = sub.results
    n = int(results["sampling"].get("n_samples", 1))
    turns = types.SimpleNamespace(replies={r.get("key"): r.get("reply") for r in generations}, usage={})
    driver = Driver(sub.mode, None, turns, run_sampling(results), results["model"], sandbox,
                    int(results.get("max_turns") or DEFAULT_MAX_TURNS), results.get("variant", "natural"),
                    results.get("refine_on") or CORRECT)
    try:
        conversations = driver.run(tasks, n)
    except BackendError as exc:
        report.problems.append(f"the recorded conversations do not replay: {exc}")
        return None
    codes, lost = answers(tasks, conversations, sub.mode, n), lost_samples(conversations)
    if sub.mode == TESTS:
        return score_answers(tasks, codes, sandbox, lost=lost)
    return score(tasks, codes, sandbox, lost)


def _rescore(sub: Submission, tasks, rescore, sandbox, timeout_s, workers, report: Report) -> None:
    """Re-score with `rescore(sandbox)` (None: it found a problem) and compare every sample and the summary."""
    from core.sandbox.harness import Limits, Sandbox
    from evaluate.scoring import levers_of, summarize

    results = sub.results
    if sandbox is None:
        limit = timeout_s or (results.get("sandbox") or {}).get("timeout_s") or Limits().timeout_s
        with Sandbox(workers, Limits(timeout_s=float(limit))) as own:
            rescored = rescore(own)
    else:
        rescored = rescore(sandbox)
    if rescored is None:
        return
    unscored = [r for r in rescored if (r.unscored if sub.mode == TESTS else r.status == INFRA_ERROR)]
    if unscored:  # this machine's fault, not the submission's: say so rather than list differences
        report.problems.append(f"re-scoring got no verdict for {len(unscored)} sample(s) (infra_error: the "
                               f"sandbox workers were lost; {unscored[0].error}); validate again")
        return
    report.rescored = len(rescored)
    if sub.mode == TESTS:
        _compare_tests(results, rescored, report)
        return

    submitted = {(r["task_id"], r["sample"]): r for r in results["samples"]}
    for r in rescored:
        sub_row = submitted[(r.task_id, r.sample)]
        diffs = []
        if sub_row.get("status") != r.status:
            diffs.append(f"sample {r.sample}: submitted {sub_row.get('status')}, re-scored {r.status}"
                         + (f" ({r.error})" if r.error else ""))
        elif [(c.get("name"), c.get("status")) for c in sub_row.get("cases", [])] != \
                [(c["name"], c["status"]) for c in r.cases]:
            diffs.append(f"sample {r.sample}: test-case statuses differ: submitted "
                         f"{[(c.get('name'), c.get('status')) for c in sub_row.get('cases', [])]}, re-scored "
                         f"{[(c['name'], c['status']) for c in r.cases]}")
        if sub_row.get("scenario") != r.scenario:
            diffs.append(f"sample {r.sample}: submitted scenario {sub_row.get('scenario')!r}, the task's is "
                         f"{r.scenario!r}")
        if diffs:
            report.tasks.setdefault(r.task_id, []).extend(diffs)
    submitted = results["summary"]
    again = summarize(rescored, reported_ks(submitted), levers_of(tasks))
    report.summary = _compare_summary(submitted, _as_submitted(again, submitted))


def _compare_tests(results: dict, rescored: list, report: Report) -> None:
    """A tests-mode submission: each sample's outcome and the mutants it killed and missed, then the summary."""
    from evaluate.tests_mode import outcome, summarize_tests

    submitted = {(r["task_id"], r["sample"]): r for r in results["samples"]}
    for r in rescored:
        row, status = submitted[(r.task_id, r.sample)], outcome(r)
        if row.get("status") != status:
            report.tasks.setdefault(r.task_id, []).append(
                f"sample {r.sample}: submitted {row.get('status')}, re-scored {status}"
                + (f" ({r.error})" if r.error else ""))
        elif (row.get("killed"), row.get("missed")) != (r.killed, r.missed):
            report.tasks.setdefault(r.task_id, []).append(
                f"sample {r.sample}: submitted killed {row.get('killed')} and missed {row.get('missed')}, re-scored "
                f"killed {r.killed} and missed {r.missed}")
    report.summary = _compare_summary(results["summary"], summarize_tests(rescored))


def _as_submitted(rescored: dict, submitted: dict) -> dict:
    """The re-scored summary in the submission's format: a results.json written before success@k, the diagnosis,
    pass^k or the intervals existed has none, and is compared on what it does report (its pass@k and statuses)."""
    reported = submitted.get("overall", {})
    dropped = [k for k in rescored["overall"] if k not in reported
               and (k.startswith(("success@", "pass^")) or k in ("diagnosis", INFRA_ERROR, CI))]
    for block in [rescored["overall"], *rescored["scenarios"].values()]:
        for key in dropped:
            block.pop(key, None)
    if "interval" not in submitted:  # written before scores had intervals
        rescored.pop("interval", None)
    if "levers" not in submitted:  # written before rows had levers
        rescored.pop("levers", None)
    return rescored


def _stamp(sub: Submission, report: Report) -> dict:
    return {
        "format": STAMP_FORMAT,
        "status": "valid",
        "validated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "stateeval": stateeval_version(),
        "dataset": {"version": sub.version, "content_hash": sub.content_hash},
        "variant": sub.variant,
        "mode": sub.mode,
        "rescored_samples": report.rescored,
        "files": file_digests(sub.path),
    }


def stateeval_version() -> str | None:
    """The installed distribution's version, read from its metadata: evaluate never imports the builder."""
    try:
        return metadata.version("stateeval")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return None


def stamp_problem(folder: Path) -> str | None:
    """Why `build` must leave a submission out (None: validated, and unchanged since)."""
    path = Path(folder) / VALIDATION
    if not path.is_file():
        return "not validated (no validation.json)"
    try:
        stamp = json.loads(path.read_text())
    except json.JSONDecodeError:
        return "validation.json is not valid JSON"
    if not isinstance(stamp, dict) or stamp.get("status") != "valid":
        return "validation.json does not say valid"
    try:
        digests = file_digests(Path(folder))
    except OSError as exc:
        return f"a submitted file cannot be read ({exc})"
    changed = [name for name, digest in digests.items() if stamp.get("files", {}).get(name) != digest]
    if changed:
        return f"{', '.join(changed)} changed after validation"
    return None
