"""A test's mutation score: how many of a task's world mutants (`scenarios.mutants`) a test tells apart from the
correct world (the scoring of a model-written test; the mode that asks models for tests builds on it).

A test is code run like a program, after the task's setup block, on the task's first test case (the requirement's
own inputs): it drives the world through its APIs and asserts what the requirement promises. It *passes* a world
when it ends without an exception (a failed `assert` included) within the time limit and, when it assigns
`EXPECTED = {"result": ..., "state": ..., "calls": ...}` (any key may be left out), its `RESULT` and the world's
final state compare equal to those as a program's compare to a task's oracle (the scenario's comparison, the ids a
service made renamed, numbers with the scenario's tolerance), and the API calls it made, each `[api, result,
error]` as its trace shows them (`scenarios.trace`), are those. It *kills* a mutant when it passes the correct world and not the
mutant's. Its score is 0 when it fails on the correct world (a false alarm), else killed / the task's mutants: a
test that asserts nothing, or nothing the mutants change, scores 0.

A task's *reference test* is its reference program with its oracle on that test case as `EXPECTED` (the final state
only where the scenario's API can read it, `Scenario.state_readable`: a test written from the documentation sees
nothing else); its mutants
are the candidates of its reference's trace that change something on the reference test's run (an answer it saw,
or RESULT or the final state) and that the reference test kills: a mutant that changes nothing there, or nothing
the reference checks, is one no test of the requirement could be asked to tell apart, and is left out. The builder
stores them in each task (`world_mutants`), none for a task whose reference test kills fewer than 90% of those that
change its run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from core.records import TaskRecord
from core.sandbox.harness import Executor, Job, require_verdicts
from core.statuses import INFRA_ERROR, OK
from scenarios import get_scenario
from scenarios.mutants import MEANING, Mutant, candidates
from scenarios.trace import load_stored

# Appended to every test (trusted text): a test need not assign RESULT, which a program must.
VERDICT_LINE = '\nRESULT = globals().get("RESULT")\n'
CORRECT = None  # the correct world, where a list of worlds names mutants


@dataclass
class TestScore:
    """One test of one task: whether it passed the correct world, the mutants it killed and missed, its score."""

    __test__ = False  # not a pytest class

    task_id: str
    passed_correct: bool
    killed: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    error: str = ""  # why it failed on the correct world
    unscored: bool = False  # a world gave no verdict (a lost worker): no score
    sample: int = 0
    scenario: str = ""
    no_code: bool = False  # the answer held no code: nothing ran, score 0

    @property
    def kills_all(self) -> bool:
        """Pass in tests mode: it passes the correct world and kills every mutant of its task."""
        return self.passed_correct and bool(self.killed) and not self.missed

    @property
    def score(self) -> float:
        total = len(self.killed) + len(self.missed)
        return len(self.killed) / total if self.passed_correct and total else 0.0

    def missed_kinds(self) -> list[str]:
        """What the mutants it missed do, most missed first (`scenarios.mutants.MEANING`)."""
        kinds = [name.split("(", 1)[0] for name in self.missed]
        return [MEANING[k] for k in sorted(set(kinds), key=lambda k: (-kinds.count(k), k))]


def reference_test(task: TaskRecord) -> str:
    """The reference program followed by its oracle on the first test case, as `EXPECTED`: RESULT, the answers its
    calls saw, and the final state where the scenario's API can read it (`Scenario.state_readable`)."""
    case = task.test_cases[0]
    expected = {"result": json.loads(case.expected_result or "null")}
    if case.expected_state is not None and get_scenario(task.scenario).state_readable:
        expected["state"] = json.loads(case.expected_state)
    trace = load_stored(case.trace)
    if trace is not None:
        expected["calls"] = calls_of(trace)
    return f"{task.reference_program.rstrip()}\n\nEXPECTED = __import__('json').loads({json.dumps(expected)!r})\n"


def calls_of(trace: list[dict]) -> list[list]:
    """A trace's calls as `EXPECTED["calls"]` names them: `[api, result, error]` each (None for what is absent)."""
    return [[c.get("api"), c.get("result"), c.get("error")] for c in trace]


def _jobs(task: TaskRecord, code: str, worlds: list[Mutant | None], key: object) -> list[Job]:
    case = task.test_cases[0]
    return [Job((key, i), task.scenario, code + VERDICT_LINE, case, mutant=m, test=True)
            for i, m in enumerate(worlds)]


def passes(task: TaskRecord, outcome) -> tuple[bool, str]:
    """Whether a test passed the world of this outcome, and why not."""
    if outcome.status != OK:
        return False, outcome.error or outcome.status
    actual, expected = outcome.result, outcome.extra.get("expected")
    if expected is None:
        return True, ""
    if not isinstance(expected, dict):
        return False, "EXPECTED is not a dict with `result` and/or `state`"
    scenario = get_scenario(task.scenario)
    reason = None
    if "result" in expected:
        reason = scenario.compare_result(expected["result"], actual)
    if reason is None and "state" in expected:
        reason = scenario.compare_state(expected["state"], outcome.state)
    if reason is None and "calls" in expected:
        made = calls_of(outcome.trace) if outcome.trace is not None else None
        if made != expected["calls"]:
            reason = "the API calls differ from EXPECTED['calls']"
    return reason is None, reason or ""


BAR = 0.9  # the share of the mutants that change its run that a task's reference test must kill


@dataclass
class WorldAnalysis:
    """A task's world mutants on its reference test's run: the candidates tried, those that changed something
    there, and those the reference test failed on (killed)."""

    candidates: list[Mutant]
    changed: list[Mutant]
    killed: list[Mutant]
    passed_correct: bool = True

    @property
    def score(self) -> float:
        """Killed / changed: the reference test's own mutation score before the unkilled are left out."""
        return len(self.killed) / len(self.changed) if self.changed else 0.0

    @property
    def kept(self) -> list[Mutant]:
        """The task's mutants: those its reference test kills (one no test of the requirement tells apart is left
        out, as equivalent program mutants are), none when it kills fewer than BAR of those that change its run
        (a requirement its own reference checks too loosely is no tests-mode task) or fails on the correct world."""
        return self.killed if self.passed_correct and self.changed and self.score >= BAR else []


def analyse_world(tasks: list[TaskRecord], sandbox: Executor, desc: str | None = None,
                  strict: bool = False) -> list[WorldAnalysis]:
    """Each task's candidates (`scenarios.mutants.candidates`, from its reference's trace on the first test case)
    on its reference test's run, every task in one run of the sandbox. `strict` (the builder, whose bytes no fault
    may change): a job without a verdict raises `NoVerdict`; else such a mutant is left out, as one whose world
    the run lost on every try is in both cases."""
    plans = [candidates(load_stored(t.test_cases[0].trace) or []) for t in tasks]
    jobs = [job for i, (task, tried) in enumerate(zip(tasks, plans))
            for job in _jobs(task, reference_test(task), [CORRECT, *tried], i)]
    outcomes = sandbox.run_untrusted(jobs, desc=desc if jobs else None)
    if strict:  # (a world a run lost on every try, a service that dies on a mutant's requests, is a verdict)
        require_verdicts(outcomes, lost_worlds=True)
    analyses, at = [], 0
    for task, tried in zip(tasks, plans):
        correct, mine = outcomes[at], outcomes[at + 1:at + 1 + len(tried)]
        at += 1 + len(tried)
        analysis = WorldAnalysis(tried, [], [], correct.status != INFRA_ERROR and passes(task, correct)[0])
        readable = get_scenario(task.scenario).state_readable
        for mutant, outcome in zip(tried, mine):
            if outcome.status == INFRA_ERROR:  # no verdict, or a world it lost (`World.intact`): left out
                continue
            if _changed(outcome, correct, readable):
                analysis.changed.append(mutant)
                if not passes(task, outcome)[0]:
                    analysis.killed.append(mutant)
        analyses.append(analysis)
    return analyses


def _changed(outcome, correct, state_readable: bool) -> bool:
    """Whether a mutant changed the reference test's run: any call it altered, RESULT or the final state; where a
    program cannot read the final state through the API (`Scenario.state_readable`), only what a test sees: RESULT
    and the answers its calls got (a write applied twice that shows nowhere else is no mutant of the requirement)."""
    if not state_readable:
        return (outcome.status, outcome.result, outcome.trace and calls_of(outcome.trace)) != \
            (correct.status, correct.result, correct.trace and calls_of(correct.trace))
    return bool(outcome.extra.get("mutated")) or (outcome.status, outcome.result, outcome.state) != \
        (correct.status, correct.result, correct.state)


def task_mutants(task: TaskRecord, sandbox: Executor) -> list[Mutant]:
    """The task's world mutants as the builder stores them (`WorldAnalysis.kept`)."""
    return analyse_world([task], sandbox)[0].kept


def stored_mutants(task: TaskRecord) -> list[Mutant]:
    """The world mutants a built task stores (`TaskRecord.world_mutants`)."""
    return [Mutant.from_json(m) for m in task.world_mutants]


def score_tests(task: TaskRecord, tests: list[str], mutants: list[Mutant], sandbox: Executor) -> list[TestScore]:
    """Each test on the correct world and on each of the given mutants of the task (in one run of the sandbox)."""
    return score_answers([task], {task.task_id: list(tests)}, sandbox, {task.task_id: mutants})


def score_answers(tasks: list[TaskRecord], tests: dict[str, list[str | None]], sandbox: Executor,
                  mutants: dict[str, list[Mutant]] | None = None, lost: dict | None = None,
                  desc: str | None = None) -> list[TestScore]:
    """Every sample's test (`tests[task_id]`, one per sample; None for no code) on the correct world and on each
    of its task's mutants (`mutants`, by default those the task stores), every job in one run of the sandbox.
    `lost`: (task id, sample) -> why a sample has no test to score (its conversation lost its world): unscored."""
    mutants = mutants if mutants is not None else {t.task_id: stored_mutants(t) for t in tasks}
    lost = lost or {}
    jobs = []
    for task in tasks:
        worlds = [CORRECT, *mutants[task.task_id]]
        for s, code in enumerate(tests.get(task.task_id, [])):
            if code is not None and (task.task_id, s) not in lost:
                jobs += _jobs(task, code, worlds, (task.task_id, s))
    outcomes: dict = {}
    for o in sandbox.run_untrusted(jobs, desc=desc if jobs else None):
        outcomes.setdefault(o.key[0], []).append(o)
    scores = []
    for task in tasks:
        names = [m.name for m in mutants[task.task_id]]
        for s, code in enumerate(tests.get(task.task_id, [])):
            score = TestScore(task.task_id, False, sample=s, scenario=task.scenario)
            if (task.task_id, s) in lost:
                score.unscored, score.error = True, lost[(task.task_id, s)]
            elif code is None:
                score.no_code, score.missed, score.error = True, names, "no code in the answer"
            else:
                mine = sorted(outcomes[(task.task_id, s)], key=lambda o: o.key[1])
                if any(o.status == INFRA_ERROR for o in mine):
                    score.unscored = True
                    score.error = next(o.error for o in mine if o.status == INFRA_ERROR)
                else:
                    score.passed_correct, score.error = passes(task, mine[0])
                    for name, outcome in zip(names, mine[1:]):
                        killed = score.passed_correct and not passes(task, outcome)[0]
                        (score.killed if killed else score.missed).append(name)
            scores.append(score)
    return scores
