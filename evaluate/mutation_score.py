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

A task's *reference test* is its reference program with its oracle on that test case as `EXPECTED`; its mutants
are the candidates of its reference's trace that change something on the reference test's run (an answer it saw,
or RESULT or the final state): a mutant that changes nothing there is one no test of the requirement could tell
apart, and is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from core.records import TaskRecord
from core.sandbox.harness import Executor, Job
from core.statuses import INFRA_ERROR, OK
from scenarios import get_scenario
from scenarios.mutants import MEANING, Mutant, candidates
from scenarios.trace import load_stored

# Appended to every test (trusted text): what the worker sends back is RESULT beside the test's own expectations.
VERDICT_LINE = '\nRESULT = [globals().get("RESULT"), globals().get("EXPECTED")]\n'
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

    @property
    def score(self) -> float:
        total = len(self.killed) + len(self.missed)
        return len(self.killed) / total if self.passed_correct and total else 0.0

    def missed_kinds(self) -> list[str]:
        """What the mutants it missed do, most missed first (`scenarios.mutants.MEANING`)."""
        kinds = [name.split("(", 1)[0] for name in self.missed]
        return [MEANING[k] for k in sorted(set(kinds), key=lambda k: (-kinds.count(k), k))]


def reference_test(task: TaskRecord) -> str:
    """The reference program followed by its oracle on the first test case, as `EXPECTED`."""
    case = task.test_cases[0]
    expected = {"result": json.loads(case.expected_result or "null")}
    if case.expected_state is not None:
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
    return [Job((key, i), task.scenario, code + VERDICT_LINE, case, mutant=m) for i, m in enumerate(worlds)]


def passes(task: TaskRecord, outcome) -> tuple[bool, str]:
    """Whether a test passed the world of this outcome, and why not."""
    if outcome.status != OK:
        return False, outcome.error or outcome.status
    result = outcome.result if isinstance(outcome.result, list) and len(outcome.result) == 2 else [None, None]
    actual, expected = result
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


def task_mutants(task: TaskRecord, sandbox: Executor) -> list[Mutant]:
    """The task's world mutants: the candidates of its reference's trace on the first test case that change
    something on the reference test's run (an answer, RESULT or the final state)."""
    trace = load_stored(task.test_cases[0].trace) or []
    tried = candidates(trace)
    outcomes = sandbox.run_untrusted(_jobs(task, reference_test(task), [CORRECT, *tried], "mutants"))
    correct = outcomes[0]
    kept = []
    for mutant, outcome in zip(tried, outcomes[1:]):
        if outcome.status == INFRA_ERROR:
            continue
        if outcome.extra.get("mutated") or (outcome.status, outcome.result, outcome.state) != \
                (correct.status, correct.result, correct.state):
            kept.append(mutant)
    return kept


def score_tests(task: TaskRecord, tests: list[str], mutants: list[Mutant], sandbox: Executor) -> list[TestScore]:
    """Each test on the correct world and on each of the task's mutants (in one run of the sandbox)."""
    worlds = [CORRECT, *mutants]
    jobs = [job for k, code in enumerate(tests) for job in _jobs(task, code, worlds, k)]
    outcomes = sandbox.run_untrusted(jobs)
    scores = []
    for k in range(len(tests)):
        mine = outcomes[k * len(worlds):(k + 1) * len(worlds)]
        if any(o.status == INFRA_ERROR for o in mine):
            scores.append(TestScore(task.task_id, False, unscored=True))
            continue
        ok, why = passes(task, mine[0])
        score = TestScore(task.task_id, ok, error=why)
        if ok:
            for mutant, outcome in zip(mutants, mine[1:]):
                (score.missed if passes(task, outcome)[0] else score.killed).append(mutant.name)
        else:
            score.missed = [m.name for m in mutants]
        scores.append(score)
    return scores
