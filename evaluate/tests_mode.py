"""`--mode tests`: the model writes a test of a task's requirement, scored by the world mutants it kills.

The model sees the documentation, the setup block and the task's instruction in the chosen variant, as the
requirement (`evaluate.prompts.build_test_messages`), and answers with a test: code that drives the world through
its APIs and asserts what the requirement promises. With `--max-turns k` it may first run tests on a live world
(`run_test`): the task's first test case's, correct, or with `--refine-on mutated` with one of the task's mutants
(`evaluate.episodes.refine_world`). Its final test runs in the sandbox on the correct world and on each mutant the
task stores (`evaluate.mutation_score.score_answers`): a test that fails on the correct world is a false alarm and
scores 0, else it scores killed / the task's mutants. Only tasks that store mutants are scored (a build of this
version stores them for every task whose reference test kills at least 90% of the mutants that change its run).

`results_tests.json` (`results_vague_tests.json`, ...): per sample its score, the mutants it killed and missed and
why it failed on the correct world; per scenario and overall pass@1 (the share of tests that kill every mutant of
their task, as a mean over tasks), the mean mutation score, both with their 95% interval over tasks, the outcome
of each sample, and the mutant kinds missed most.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from core.records import DatasetError, TaskRecord
from core.statuses import INFRA_ERROR, NO_CODE
from evaluate import intervals
from evaluate.episodes import TESTS
from evaluate.mutation_score import TestScore
from evaluate.prompts import build_messages, build_test_messages
from evaluate.scoring import CI, answer_hash
from scenarios.mutants import MEANING

# Each sample's outcome: every mutant killed, some, none; failed on the correct world; no code; no verdict.
KILLS_ALL, PARTIAL, KILLS_NONE, FALSE_ALARM = "kills_all", "partial", "kills_none", "false_alarm"
UNSCORED = INFRA_ERROR
OUTCOMES = (KILLS_ALL, PARTIAL, KILLS_NONE, FALSE_ALARM, NO_CODE)
SHOWN_KINDS = 3  # missed kinds printed per row


def outcome(score: TestScore) -> str:
    if score.unscored:
        return UNSCORED
    if score.no_code:
        return NO_CODE
    if not score.passed_correct:
        return FALSE_ALARM
    return KILLS_ALL if score.kills_all else PARTIAL if score.killed else KILLS_NONE


def messages_in(mode: str, task: TaskRecord, variant: str) -> list[dict]:
    """The prompt a task is shown in an evaluation mode: a test's in tests mode, else a program's (the one place a
    run, a submission's prompt keys and the blind readers' files choose it)."""
    return (build_test_messages if mode == TESTS else build_messages)(task, variant)


def scored_tasks(tasks: list[TaskRecord]) -> list[TaskRecord]:
    """The tasks tests mode scores: those that store world mutants; DatasetError when none does."""
    kept = [t for t in tasks if t.world_mutants]
    if not kept:
        raise DatasetError("none of the selected tasks stores world mutants, which --mode tests scores a test by: "
                           "rebuild the dataset with this version (python -m builder), whose tasks store them")
    return kept


def sample_row(score: TestScore, code: str | None) -> dict:
    return {"task_id": score.task_id, "scenario": score.scenario, "sample": score.sample, "status": outcome(score),
            "score": score.score, "killed": score.killed, "missed": score.missed,
            "missed_kinds": score.missed_kinds() if score.passed_correct else [], "error": score.error,
            "answer": answer_hash(code) if code is not None else None}


def summarize_tests(scores: list[TestScore]) -> dict:
    """Per scenario and overall: pass@1 and the mean mutation score (means over tasks of each task's samples'
    values) with their 95% intervals, the outcome of every sample, and the kinds of the mutants missed by the
    tests that passed the correct world, most missed first. Samples without a verdict are left out and counted."""
    per_task: dict[str, list[TestScore]] = defaultdict(list)
    scenario_of, unscored = {}, Counter()
    for s in scores:
        scenario_of[s.task_id] = s.scenario
        if s.unscored:
            unscored[s.task_id] += 1
        else:
            per_task[s.task_id].append(s)
    most = max((len(v) for v in per_task.values()), default=1)

    def block(task_ids: list[str]) -> dict:
        samples = [s for tid in task_ids for s in per_task[tid]]
        kills = [sum(s.kills_all for s in per_task[tid]) / len(per_task[tid]) for tid in task_ids]
        means = [sum(s.score for s in per_task[tid]) / len(per_task[tid]) for tid in task_ids]
        missed = Counter(name.split("(", 1)[0] for s in samples if s.passed_correct for name in s.missed)
        out = {"tasks": len(task_ids), "samples": len(samples),
               "pass@1": sum(kills) / len(kills) if kills else None,
               "mutation_score": sum(means) / len(means) if means else None,
               "mutants_per_task": sum(len(per_task[t][0].killed) + len(per_task[t][0].missed) for t in task_ids)
               / len(task_ids) if task_ids else None,
               CI: {"pass@1": list(intervals.interval(kills, intervals.method(most))) if kills else None,
                    # a score is no 0/1 outcome: always the bootstrap (Wilson's when every task has the same)
                    "mutation_score": list(intervals.interval(means, intervals.BOOTSTRAP)) if means else None},
               "statuses": {o: sum(outcome(s) == o for s in samples) for o in OUTCOMES},
               "missed_kinds": {MEANING[k]: n for k, n in sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))}}
        return out

    scenarios: dict[str, list[str]] = defaultdict(list)
    for tid, scenario in scenario_of.items():  # (in the order the tasks were scored)
        scenarios[scenario].append(tid)
    summary = {"scenarios": {name: block([t for t in tids if t in per_task]) for name, tids in scenarios.items()},
               "overall": block(list(per_task)),
               "interval": {"method": intervals.method(most),
                            "about": f"{intervals.METHODS[intervals.method(most)]} for pass@1; "
                                     f"{intervals.METHODS[intervals.BOOTSTRAP]} for the mutation score"}}
    for name, tids in scenarios.items():
        if any(unscored[t] for t in tids):
            summary["scenarios"][name][UNSCORED] = sum(unscored[t] for t in tids)
    if unscored:
        summary["overall"][UNSCORED] = sum(unscored.values())
    return summary


def format_tests_table(summary: dict) -> str:
    """The printed table of a tests-mode run: pass@1 (kills every mutant) and the mean mutation score with their
    intervals, each outcome's count, and the mutant kinds missed most."""
    head = ["scenario", "tasks", "mutants", "pass@1 (kills all)", "mutation score", *OUTCOMES, "missed most"]
    unscored = summary["overall"].get(UNSCORED, 0)
    if unscored:
        head.insert(-1, UNSCORED)
    rows = [head]
    for name, block in [*summary["scenarios"].items(), ("overall", summary["overall"])]:
        cells = [name, str(block["tasks"]), "-" if block["mutants_per_task"] is None
                 else f"{block['mutants_per_task']:.1f}"]
        cells += [intervals.format_rate(block[k], block[CI].get(k)) for k in ("pass@1", "mutation_score")]
        cells += [str(block["statuses"][o]) for o in OUTCOMES]
        if unscored:
            cells.append(str(block.get(UNSCORED, 0)))
        cells.append(", ".join(f"{k} {n}" for k, n in list(block["missed_kinds"].items())[:SHOWN_KINDS]) or "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(f"mutants: per task, on average; [low, high]: the 95% interval over tasks "
                 f"({summary['interval']['about']})")
    if unscored:
        lines.append(f"{unscored} sample(s) have no verdict ({UNSCORED}: their sandbox workers were lost on every "
                     "retry) and are left out of every rate above; run the same command again to score them")
    return "\n".join(lines)
