"""Scoring: run every sample against every test case in the sandbox, compare plain data with the oracles.

A sample passes when every test case (one per branch) runs and its RESULT and side effects match. Otherwise it
gets the status of its first failing test case, in the paper's taxonomy plus two: syntax_error, execution_error,
result_error, timeout, no_code (nothing extractable in the reply).

A sample one of whose test cases got no verdict (its sandbox worker was lost on every retry, `INFRA_ERROR`) has
the status infra_error: no verdict, no diagnosis, left out of every estimate and counted apart (`unscored`), so
that a dying machine never lowers a model's score. The same command run again scores those samples.

Three estimates per k, all unbiased, all means over tasks:
- pass@k (Chen et al., 2021): at least one of k samples passes every test case;
- pass^k (tau-bench's consistency): all k samples pass, C(c, k) / C(n, k) per task;
- success@k: at least one of k samples *runs* on every test case, i.e. each test case ends in `pass` or
  `result_error` (the program reached its end without raising and within its time limit; whether RESULT was right
  is not asked). A sample with no code, a syntax error, an exception or a timeout on any test case does not.
  ExploraCoder's Success@k ("the code runs without error"), made precise with this harness's statuses.

Every one of them carries its 95% interval over tasks (`ci95` in each block; the method, Wilson's or a bootstrap
clustered by task, is named in `summary.interval`: see evaluate/intervals.py).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from math import comb

from core.records import TaskRecord, TestCase
from core.sandbox.containment import weakest
from core.sandbox.harness import Executor, Job
from core.statuses import (
                           CRASH,
                           EXECUTION_ERROR,
                           INFRA_ERROR,
                           NO_CODE,
                           OK,
                           PASS,
                           RAN,
                           RESULT_ERROR,
                           SETUP_ERROR,
                           STATUSES,
                           SYNTAX_ERROR,
                           TIMEOUT,
                           )
from evaluate import intervals
from evaluate.diagnosis import diagnose, summarize_diagnoses
from scenarios import get_scenario

CI = "ci95"  # each summary block's intervals: rate -> [low, high]


@dataclass
class SampleResult:
    task_id: str
    scenario: str
    sample: int
    status: str
    error: str = ""
    cases: list[dict] = field(default_factory=list)  # per test case: name, status, error, seconds
    containment: str | None = None  # the weakest containment its test cases ran under (None: no program ran)
    tokens: dict | None = None  # {"prompt": ..., "completion": ...} the reply cost, when known (evaluate.usage)
    diagnosis: dict | None = None  # partial credit and, when failed, cause and recommendation (evaluate.diagnosis)
    answer: str | None = None  # a hash of the answer scored (`answer_hash`): what a later run may reuse it for

    def to_dict(self, run_containment: str | None = None) -> dict:
        """The sample's row in results.json: its containment is written only where it is not the run's."""
        row = asdict(self)
        if row["containment"] in (None, run_containment):
            del row["containment"]
        return row


def run_containment(results: list[SampleResult]) -> str | None:
    """The containment most samples ran under: the run's, recorded once in results.json. A sample whose worker
    fell back to another mode (a worker that could not build its jail) carries its own."""
    modes = Counter(r.containment for r in results if r.containment)
    return modes.most_common(1)[0][0] if modes else None


def judge_case(scenario, case: TestCase, outcome) -> tuple[str, str]:
    """Status and message for one test case, comparing canonical data only."""
    if outcome.status == SETUP_ERROR:
        # The setup block is the dataset's; it failing means the task or the world is broken, not the answer.
        return EXECUTION_ERROR, f"setup failed (report this task): {outcome.error}"
    if outcome.status == INFRA_ERROR:  # no verdict: the machine's failure, not the program's
        return INFRA_ERROR, outcome.error
    if outcome.status == CRASH:
        return EXECUTION_ERROR, outcome.error
    if outcome.status not in (OK, SYNTAX_ERROR, EXECUTION_ERROR, RESULT_ERROR, TIMEOUT):
        return EXECUTION_ERROR, f"unexpected sandbox status {outcome.status!r}: {outcome.error}"
    if outcome.status != OK:
        return outcome.status, outcome.error
    reason = scenario.compare_result(json.loads(case.expected_result), outcome.result)
    if reason is None and case.expected_state is not None:
        reason = scenario.compare_state(json.loads(case.expected_state), outcome.state)
    return (PASS, "") if reason is None else (RESULT_ERROR, reason)


def answer_job(key, scenario: str, answer: str | list[dict], case: TestCase, c: int) -> Job:
    """A program (a str) runs on every test case; a tool-calling answer (`--mode tools`) holds one episode per
    test case, {"calls", "submit"}, which is replayed on that test case's world."""
    if isinstance(answer, str):
        return Job(key, scenario, answer, case)
    return Job(key, scenario, "", case, calls=answer[c]["calls"], submit=answer[c]["submit"])


def score(tasks: list[TaskRecord], codes: dict[str, list], sandbox: Executor, lost: dict | None = None,
          known: dict | None = None) -> list[SampleResult]:
    """`codes[task_id]` holds one answer per sample: an extracted program, or a list of episodes (tools mode; see
    `answer_job`), or None (no code, no tool call).

    `lost`: (task id, sample) -> why a sample has no answer to score (its conversation lost the world it ran on):
    it is an infra_error without a run. `known`: (task id, sample) -> the SampleResult an earlier run gave the very
    same answer (the caller checks `answer_hash`), taken as it is instead of running it again (a run re-scoring
    only its infra_error samples, `evaluate.run.unfinished_verdicts`)."""
    lost, known = lost or {}, known or {}
    jobs = []
    for t in tasks:
        for s, code in enumerate(codes.get(t.task_id, [])):
            if code is None or (t.task_id, s) in lost or (t.task_id, s) in known:
                continue
            for c, case in enumerate(t.test_cases):
                jobs.append(answer_job((t.task_id, s, c), t.scenario, code, case, c))
    outcomes = {o.key: o for o in sandbox.run_untrusted(jobs, desc="score")}

    results = []
    for t in tasks:
        scenario = get_scenario(t.scenario)
        first = len(results)
        for s, code in enumerate(codes.get(t.task_id, [])):
            if (t.task_id, s) in known:
                results.append(known[(t.task_id, s)])
                continue
            if (t.task_id, s) in lost:
                results.append(SampleResult(t.task_id, t.scenario, s, INFRA_ERROR, lost[(t.task_id, s)]))
                continue
            if code is None:
                results.append(SampleResult(t.task_id, t.scenario, s, NO_CODE, "no code in the reply",
                                            diagnosis=diagnose(t, NO_CODE, [], [], [])))
                continue
            cases, status, error, modes, traces, in_api = [], PASS, "", [], [], []
            for c, case in enumerate(t.test_cases):
                o = outcomes[(t.task_id, s, c)]
                modes.append(o.extra.get("containment"))
                traces.append(o.trace)
                in_api.append(bool(o.extra.get("in_api")))
                cs, msg = judge_case(scenario, case, o)
                cases.append({"name": case.name, "status": cs, "error": msg, "seconds": o.seconds})
                if cs != PASS and status == PASS:
                    status, error = cs, f"{case.name} test case: {msg}"
            lost_case = next((c for c in cases if c["status"] == INFRA_ERROR), None)
            if lost_case is not None:  # a verdict needs every test case
                results.append(SampleResult(t.task_id, t.scenario, s, INFRA_ERROR,
                                            f"{lost_case['name']} test case: {lost_case['error']}", cases))
                continue
            results.append(SampleResult(t.task_id, t.scenario, s, status, error, cases, weakest(modes),
                                        diagnosis=diagnose(t, status, cases, traces, in_api)))
        for r in results[first:]:
            r.answer = answer_hash(codes[t.task_id][r.sample])
    return results


def has_verdict(r: SampleResult) -> bool:
    return r.status != INFRA_ERROR


def answer_hash(answer) -> str | None:
    """A short hash of a sample's answer (a program, or tools-mode episodes): a verdict is reused only for it."""
    if answer is None:
        return None
    return hashlib.sha256(json.dumps(answer, sort_keys=True).encode()).hexdigest()[:16]


def from_row(row: dict, containment: str | None) -> SampleResult:
    """A SampleResult back from its results.json row (`SampleResult.to_dict`; extra keys such as turns dropped)."""
    names = {f.name for f in fields(SampleResult)}
    r = SampleResult(**{k: v for k, v in row.items() if k in names})
    r.containment = row.get("containment", containment)
    return r


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of Chen et al. (2021): 1 - C(n - c, k) / C(n, k). With c the samples that ran
    (`succeeded`) rather than passed, the same estimator gives success@k."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def succeeded(r: SampleResult) -> bool:
    """The sample ran without error on every test case (see the module's docstring): what success@k counts."""
    return r.status in RAN and all(c.get("status") in RAN for c in r.cases)


def every_k(n: int) -> tuple[int, ...]:
    """The k reported for n samples per task: every k from 1 to n."""
    return tuple(range(1, max(1, n) + 1))


def summarize(results: list[SampleResult], ks: tuple[int, ...] = (1,), levers: dict[str, list[str]] | None = None) -> dict:
    """pass@k, success@k and pass^k overall and per scenario (means over the tasks with at least k samples that have
    a verdict) with their 95% intervals (`ci95`; `interval` names the method), the status distribution, and the
    diagnosis: partial-credit means over the samples and the count of each cause of failure
    (`evaluate.diagnosis`); `infra_error`, the samples left out for want of a verdict.

    `levers`: task id -> the row's `levers` (a frontier task's: pagination, versions, ...). When some task has one,
    `levers` in the summary holds the same block over the tasks carrying each lever (a task counts under each of its
    levers), so a score says which skill a model lacks."""
    per_task: dict[str, list[SampleResult]] = defaultdict(list)
    unscored: Counter = Counter()  # per task: samples without a verdict, left out of every estimate
    for r in results:
        if has_verdict(r):
            per_task[r.task_id].append(r)
        else:
            unscored[r.task_id] += 1
            per_task.setdefault(r.task_id, [])
    passes = {tid: sum(r.status == PASS for r in rs) for tid, rs in per_task.items()}
    successes = {tid: sum(succeeded(r) for r in rs) for tid, rs in per_task.items()}
    scenario_of = {r.task_id: r.scenario for r in results}
    by_scenario: dict[str, list[str]] = defaultdict(list)
    for task_id in per_task:
        by_scenario[scenario_of[task_id]].append(task_id)

    most = max((len(rs) for rs in per_task.values()), default=1)
    how = intervals.method(most)

    def block(task_ids: list[str]) -> dict:
        out: dict = {"tasks": len(task_ids)}
        ci: dict = {}
        resamplers: dict[int, intervals.Resampler] = {}  # by tasks counted (those with >= k samples: nested sets)
        for metric, counts, estimate in (("pass@", passes, pass_at_k), ("success@", successes, pass_at_k),
                                         ("pass^", passes, intervals.pass_hat_k)):
            for k in ks:
                vals = [estimate(len(per_task[tid]), counts[tid], k) for tid in task_ids if len(per_task[tid]) >= k]
                out[f"{metric}{k}"] = sum(vals) / len(vals) if vals else None
                if vals and how == intervals.BOOTSTRAP and len(vals) not in resamplers:
                    resamplers[len(vals)] = intervals.Resampler(len(vals))
                ci[f"{metric}{k}"] = list(intervals.interval(vals, how, resamplers.get(len(vals)))) if vals else None
        statuses = Counter(r.status for tid in task_ids for r in per_task[tid])
        out["statuses"] = {s: statuses.get(s, 0) for s in STATUSES}
        out["diagnosis"] = summarize_diagnoses([r.diagnosis for tid in task_ids for r in per_task[tid]])
        out[INFRA_ERROR] = sum(unscored[tid] for tid in task_ids)  # samples without a verdict (see module doc)
        out[CI] = ci  # the 95% interval of every rate above, [low, high] (evaluate.intervals)
        return out

    by_lever: dict[str, list[str]] = defaultdict(list)
    for task_id in per_task:
        for lever in (levers or {}).get(task_id, ()):
            by_lever[lever].append(task_id)
    return {
        "overall": block(list(per_task)),
        "scenarios": {s: block(ids) for s, ids in sorted(by_scenario.items())},
        **({"levers": {lever: block(ids) for lever, ids in sorted(by_lever.items())}} if by_lever else {}),
        "interval": {"level": intervals.LEVEL, "method": how, "about": intervals.METHODS[how]},
    }


def levers_of(tasks) -> dict[str, list[str]]:
    """task id -> its levers, for `summarize`."""
    return {t.task_id: list(t.levers) for t in tasks}


def task_counts(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """Per task, from results.json's sample rows: (samples with a verdict, samples that passed)."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        c = counts.setdefault(row["task_id"], [0, 0])
        if row.get("status") != INFRA_ERROR:
            c[0] += 1
            c[1] += row.get("status") == PASS
    return {t: (n, p) for t, (n, p) in counts.items()}


def reported_ks(summary: dict) -> tuple[int, ...]:
    """The k of every pass@k a summary reports, in order ((1,) for none)."""
    ks = [int(k[5:]) for k in summary.get("overall", {}) if k.startswith("pass@") and k[5:].isdigit()]
    return tuple(sorted(ks)) or (1,)


def with_intervals(report: dict) -> dict:
    """A results.json's summary with its intervals and pass^k: as written, or, for a run written before scores had
    intervals, recomputed from its samples (the rates it reported are kept as they are)."""
    summary = report["summary"]
    if "interval" in summary or not report.get("samples"):
        return summary
    fresh = summarize([from_row(row, None) for row in report["samples"]], reported_ks(summary))
    out = {**summary, "interval": fresh["interval"]}
    out["overall"] = {**fresh["overall"], **summary["overall"], CI: fresh["overall"][CI]}
    out["scenarios"] = {s: {**fresh["scenarios"].get(s, {}), **b, CI: fresh["scenarios"].get(s, {}).get(CI, {})}
                        for s, b in summary.get("scenarios", {}).items()}
    return out
