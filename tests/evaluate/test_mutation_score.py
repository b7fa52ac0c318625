"""A test's mutation score (evaluate/mutation_score.py) on the small tensor build: the reference test kills every
mutant its task keeps; a test that asserts nothing, an empty one and a false alarm score 0; a weaker test scores
less and names what it missed; and the same test scored twice gets the same verdicts."""

from __future__ import annotations

import pytest

from evaluate.mutation_score import reference_test, score_tests, task_mutants


@pytest.fixture(scope="module")
def scored(small_tasks, sandbox):
    task = small_tasks[0]
    mutants = task_mutants(task, sandbox)
    reference = reference_test(task)
    tests = [reference, "assert True", "", "assert False, 'always'", task.reference_program, reference]
    return task, mutants, score_tests(task, tests, mutants, sandbox)


def test_the_reference_test_kills_every_mutant_its_task_keeps(scored):
    task, mutants, (reference, *_) = scored
    assert mutants, "a tensor task's operations give mutants that change its answers"
    assert reference.passed_correct and reference.score == 1.0 and reference.missed == []
    assert reference.killed == [m.name for m in mutants]


def test_tests_that_cannot_fail_or_always_fail_score_zero(scored):
    _, _, (_, trivial, empty, alarm, _, _) = scored
    assert trivial.passed_correct and trivial.score == 0.0 and trivial.killed == []
    assert empty.passed_correct and empty.score == 0.0
    assert not alarm.passed_correct and alarm.score == 0.0 and "always" in alarm.error


def test_a_weaker_test_scores_less_and_names_what_it_missed(scored):
    _, _, (reference, *_, program_only, _) = scored
    assert 0.0 < program_only.score < reference.score, "the program alone kills only the mutants it crashes on"
    assert "a wrong answer" in program_only.missed_kinds()


def test_the_same_test_scored_twice_gets_the_same_verdicts(scored):
    _, _, (first, *_, again) = scored
    assert (again.killed, again.missed) == (first.killed, first.missed)
