"""Mutation analysis in the build (builder/mutate.py): the operators, the cheap paths, and the verdicts."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import random
from collections import Counter

import pytest

import scenarios.session.machine as session_scenario
from builder.config import BuildConfig, rng_for
from builder.fuzz import CoverageRecorder
from builder.mutate import (OPERATORS, Mutant, _assigned_names, _result_items, _undefined_read, analyse_mutants,
                            mutants, reaches)
from builder.pipeline import capture_oracles, fuzz
from builder.program import generate_program
from core.sandbox.harness import Limits, Sandbox
from scenarios import get_scenario


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout_s=20)) as sb:
        yield sb


def captured(name: str, n: int, seed: int, sandbox) -> tuple[BuildConfig, list]:
    config = BuildConfig(scenarios=[name], n=n, seed=seed, created_at="2026-01-01", mutants=16, probes=2)
    rejections: Counter = Counter()
    drafts, _ = fuzz(config, name, rejections)
    return config, capture_oracles(drafts, sandbox, rejections)


def test_every_operator_makes_mutants_and_none_equals_the_reference():
    made = Counter()
    for name in ("tensor", "session", "voice"):
        scenario, recorder = get_scenario(name), CoverageRecorder()
        for seed in range(15):
            program = generate_program(scenario, random.Random(seed), recorder)
            reference = ast.unparse(ast.parse(program.reference_code()))
            ms = mutants(program, 1000, random.Random(0))
            assert len({m.code for m in ms}) == len(ms)
            assert all(ast.unparse(ast.parse(m.code)) != reference for m in ms)
            for m in ms:  # the text of the whole mutated module, and one change from the reference, in one place
                assert m.code == ast.unparse(ast.parse(m.code)) + "\n", m.describe()
                diff = difflib.SequenceMatcher(None, reference.splitlines(), m.code.splitlines()).get_opcodes()
                assert [op for op, *_ in diff if op != "equal"] in (["replace"], ["delete"]), m.describe()
            made.update(m.operator for m in ms)
    assert set(made) == set(OPERATORS), made


def test_statements_inside_nested_splits_are_mutated_and_scoped_to_their_own_path():
    scenario = get_scenario("session")
    for seed in range(40):
        program = generate_program(scenario, random.Random(seed), CoverageRecorder(), branches=3,
                                   branch_probability=1.0)
        if len(program.splits()) >= 2:
            break
    else:
        pytest.fail("no program with nested splits in 40 seeds")
    tree = ast.parse(program.reference_code())
    inner = [s for s in ast.walk(tree) if isinstance(s, ast.If) and any(isinstance(t, ast.If) for t in s.orelse + s.body)]
    assert inner, program.reference_code()
    deepest = [s for s in ast.walk(tree) if isinstance(s, ast.If) and not any(
        isinstance(t, ast.If) for t in ast.walk(s) if t is not s)]
    lines = {ast.unparse(s).strip() for s in deepest[0].body + deepest[0].orelse if not isinstance(s, ast.If)}
    ms = mutants(program, 10_000, random.Random(0))
    changed = {m.change.split(" -> ")[0] for m in ms}
    assert any(line.splitlines()[0] in changed for line in lines), (lines, changed)
    # a mutant that uses another variable only uses one assigned on its own path: none reads an undefined name
    setup = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - _assigned_names(tree.body)
    for m in ms:
        if m.operator != "drop_call":
            assert _undefined_read(ast.parse(m.code), setup) == "", m.describe()


def test_the_cap_is_spread_over_operators_and_free_mutants_are_really_undefined():
    scenario = get_scenario("tensor")
    program = generate_program(scenario, random.Random(3), CoverageRecorder())
    ms = mutants(program, 12, random.Random(0))
    run = [m for m in ms if not m.undefined]
    assert len(run) == 12 and len({m.operator for m in run}) >= 4
    for m in ms:
        if m.undefined:  # a dropped call whose output a later line reads: it raises NameError, no run needed
            assert m.operator == "drop_call"
            assert m.undefined in _assigned_names(ast.parse(program.reference_code()).body)
            assert m.undefined not in _assigned_names(ast.parse(m.code).body)


def test_undefined_read_follows_each_branch_on_its_own():
    code = "a = f(x)\nif a > COND:\n    b = g(a)\n    RESULT = [b]\nelse:\n    RESULT = [b]\n"
    assert _undefined_read(ast.parse(code), {"x", "f", "g", "COND"}) == "b"
    assert _undefined_read(ast.parse(code.replace("RESULT = [b]\n", "RESULT = [a]\n", 1).replace(
        "    RESULT = [b]\n", "    RESULT = [a]\n")), {"x", "f", "g", "COND"}) == ""


def test_result_items_are_read_off_the_reference_only_when_nothing_else_changes():
    def items(reference: str, mutant: str):
        return _result_items(ast.parse(reference), ast.parse(mutant))

    body = "a = f(x)\nb = g(a)\n"
    assert items(body + "RESULT = [a, b, a['k']]", body + "RESULT = [b, a, a['k']]") == (1, 0, 2)
    assert items(body + "RESULT = [a, b, a['k']]", body + "RESULT = [a, a['k']]") == (0, 2)
    assert items(body + "RESULT = [a, b]", "a = f(y)\nb = g(a)\nRESULT = [b, a]") is None  # another line changed
    assert items(body + "RESULT = [a, g(b)]", body + "RESULT = [g(b), a]") is None  # a call: it may change the world
    assert items(body + "RESULT = [a, b]", body + "RESULT = [a, c]") is None  # an item the reference does not have
    branch = "a = f(x)\nif a > COND:\n    RESULT = [a, x]\nelse:\n    RESULT = [x, a]\n"
    assert items(branch, branch.replace("RESULT = [a, x]", "RESULT = [x, a]")) is None  # which path ran is unknown


def test_a_result_mutant_is_killed_exactly_when_its_rearranged_result_differs():
    from builder.mutate import Mutant, _decided
    from core.records import TestCase

    case = TestCase("original", "main", "{}", "", [])
    case.expected_result = json.dumps([[1, 2], [1, 2], {"id": "a"}])

    def killed(items):
        return _decided("session", Mutant("result", "", "", result_items=items), case)

    assert killed((1, 0, 2)) is False  # two equal items swapped: the same RESULT, a survivor on this input
    assert killed((0, 2, 1)) is True
    assert killed((0, 1)) is True  # an item dropped
    assert _decided("session", Mutant("argument", "", ""), case) is None  # any other mutant runs


@pytest.mark.parametrize("name,n,seed", [("tensor", 5, 11), ("session", 4, 3), ("voice", 5, 2)])
def test_one_job_per_task_and_case_kills_exactly_what_one_job_per_mutant_kills(sandbox, monkeypatch, name, n, seed):
    """A task's mutants share a child on each test case (tensor: `shared_runs`; session and voice: a batch, the
    world reset between mutants), RESULT mutants are decided from the reference's outputs, and a mutant skips the
    test cases whose path does not pass its change; the verdicts must be those of separate runs of every mutant on
    every test case."""
    import builder.mutate as mutate

    config, drafts = captured(name, n, seed, sandbox)
    together = analyse_mutants(drafts, sandbox, config, Counter())
    shared = [(d.task_id, d.mutation, [c.name for c in d.cases]) for d in together]
    read_off = sum(m.result_items is not None for d in drafts for m in mutants(
        d.program, config.mutants, rng_for(config, d.scenario, d.index, "mutants")))
    assert read_off > 0  # RESULT mutants decided from the reference's outputs, run below
    unreached = sum(not reaches(m, c) for d in drafts for c in d.cases for m in mutants(
        d.program, config.mutants, rng_for(config, d.scenario, d.index, "mutants")))
    assert unreached > 0  # mutants skipped on a test case whose path does not pass them, run below
    config, drafts = captured(name, n, seed, sandbox)
    monkeypatch.setattr(type(get_scenario(name)), "shared_runs", False)
    monkeypatch.setattr(mutate, "BATCHES", False)
    monkeypatch.setattr(mutate, "RESULTS_FROM_REFERENCE", False)
    monkeypatch.setattr(mutate, "reaches", lambda mutant, case: True)
    apart = analyse_mutants(drafts, sandbox, config, Counter())
    assert shared == [(d.task_id, d.mutation, [c.name for c in d.cases]) for d in apart]
    assert sum(m["killed"] for _, m, _ in shared) > 0
    assert sum(m["equivalent"] for _, m, _ in shared) < sum(m["mutants"] for _, m, _ in shared)


@pytest.mark.parametrize("name", ["session", "voice"])
def test_a_batch_gives_each_program_the_world_it_would_meet_alone(sandbox, name):
    """Every program of a batch starts from the test case's initial world: the stored sessions, the lab's speech
    and call numbering. The reference runs twice in one batch, around programs that write, and each run's RESULT
    and state are exactly those of the reference run alone."""
    from core.sandbox.harness import Job

    config, drafts = captured(name, 3, 4, sandbox)
    for d in drafts:
        case = d.cases[0]
        reference = d.program.reference_code()
        programs = [reference, *(m.code for m in mutants(d.program, 6, random.Random(0)) if not m.undefined), reference]
        (batch,) = sandbox.run_untrusted([Job("b", d.scenario, "", case, batch=programs)])
        alone = sandbox.run_untrusted([Job(i, d.scenario, code, case) for i, code in enumerate(programs)])
        assert batch.status == "ok" and len(batch.batch) == len(programs)
        assert [(o.status, o.result, o.state) for o in batch.batch] == [(o.status, o.result, o.state) for o in alone]
        assert batch.batch[0].state == batch.batch[-1].state == json.loads(case.expected_state)


def test_statements_a_batch_shares_run_once_and_each_mutant_meets_the_world_it_would_alone(sandbox):
    """A session reference's mutants begin with the reference's own statements (`Mutant.shared`): a batch runs
    those once per test case and restores the stored sessions after each mutant to what they left. Every mutant's
    RESULT and state (ids minted after a restore included) must be those of its run alone."""
    from core.sandbox.harness import Job

    config, drafts = captured("session", 4, 9, sandbox)
    sharing = 0
    for d in drafts:
        for case in d.cases[:2]:
            plan = sorted((m for m in mutants(d.program, 12, random.Random(2)) if not m.undefined),
                          key=lambda m: m.shared)
            sharing += sum(m.shared > 0 for m in plan)
            (batch,) = sandbox.run_untrusted([Job("b", d.scenario, "", case, batch=[m.code for m in plan],
                                                  record=False, shared=[m.shared for m in plan])])
            alone = sandbox.run_untrusted([Job(i, d.scenario, m.code, case, record=False) for i, m in enumerate(plan)])
            assert batch.status == "ok" and len(batch.batch) == len(plan)
            assert [(o.status, o.result, o.state) for o in batch.batch] == [(o.status, o.result, o.state)
                                                                                for o in alone]
    assert sharing > 0


@pytest.mark.parametrize("name,runs", [("session", [1, -1, 1]), ("voice", [1, -2, 3]), ("tensor", [1, -2, 3])])
def test_shared_statements_run_once_only_where_the_world_can_be_saved(sandbox, name, runs):
    """The statements a batch's programs share run once where the world can be saved and restored (session);
    elsewhere (voice, tensor: `World.save` is None) every program runs whole, as alone. A program that does not
    begin with the statements the batch ran ends the batch; `run_batched` runs it alone."""
    from core.sandbox.harness import Job

    config, drafts = captured(name, 1, 9, sandbox)
    case = drafts[0].cases[0]
    count = "import sys\nsys.__dict__.setdefault('stateeval_runs', []).append(1)\n"  # survives a program
    programs = [count + "RESULT = len(sys.stateeval_runs)\n", count + "RESULT = -len(sys.stateeval_runs)\n",
                count + "x = 0\nRESULT = len(sys.stateeval_runs)\n"]
    (batch,) = sandbox.run_untrusted([Job("b", name, "", case, batch=programs, record=False, shared=[2, 2, 3])])
    assert [o.result for o in batch.batch] == runs

    other = ["import sys\nx = 1\nRESULT = 7\n", "import sys\nx = 2\nRESULT = 8\n"]
    (batch,) = sandbox.run_untrusted([Job("b", name, "", case, batch=other, record=False, shared=[2, 2])])
    assert [o.result for o in batch.batch] == ([7] if name == "session" else [7, 8])
    outcomes = sandbox.run_batched([Job(i, name, code, case, record=False, shared=2) for i, code in enumerate(other)])
    assert [(o.status, o.result) for o in outcomes] == [("ok", 7), ("ok", 8)]


def test_a_program_after_shared_statements_changes_its_own_copy_of_their_values(sandbox):
    """What one program does to a list the shared statements made is not there for the next; two names for one
    list stay one list."""
    from core.sandbox.harness import Job

    config, drafts = captured("session", 1, 9, sandbox)
    start = "a = {'k': [1]}\nb = a['k']\n"
    programs = [start + "b.append(2)\nRESULT = a\n", start + "RESULT = [a, b]\n"]
    (batch,) = sandbox.run_untrusted([Job("b", "session", "", drafts[0].cases[0], batch=programs, record=False,
                                          shared=[2, 2])])
    assert [o.result for o in batch.batch] == [{"k": [1, 2]}, [{"k": [1]}, [1]]]


@pytest.mark.parametrize("name", ["tensor", "session", "voice"])
def test_a_batch_over_several_test_cases_gives_each_run_what_it_gets_alone(sandbox, name):
    """A task's runs on all its test cases share one child (`Job.cases`, from `run_batched` for one `group`): each
    program meets its own test case's values and world, statements are shared on one test case only, and RESULT,
    state and the recorded API calls are those of the run alone."""
    from core.sandbox.harness import Job

    config, drafts = captured(name, 2, 4, sandbox)
    assert len(drafts) == 2
    for d in drafts:
        assert len(d.cases) >= 3
        reference = d.program.reference_code()
        plan = sorted((m for m in mutants(d.program, 6, random.Random(0)) if not m.undefined), key=lambda m: m.shared)
        runs = [(reference, 0, case) for case in d.cases]
        runs += [(m.code, m.shared, case) for case in d.cases for m in plan]
        jobs = [Job(i, name, code, case, record=False, shared=shared, group=0) for i, (code, shared, case) in
                enumerate(runs)]
        (batch,) = sandbox.run_untrusted([Job("b", name, "", d.cases[0], batch=[r[0] for r in runs], record=False,
                                              shared=[r[1] for r in runs], cases=[r[2] for r in runs])])
        alone = sandbox.run_untrusted(jobs)
        assert batch.status == "ok" and len(batch.batch) == len(runs)
        assert [(o.status, o.result, o.state) for o in batch.batch] == [(o.status, o.result, o.state) for o in alone]
        assert all(get_scenario(name).compare_result(json.loads(c.expected_result), o.result) is None
                   for c, o in zip(d.cases, alone))  # each run met its own test case
        assert [(o.status, o.result, o.state) for o in sandbox.run_batched(jobs)] == [
            (o.status, o.result, o.state) for o in alone]

        traced = [Job(i, name, reference, case, group=0) for i, case in enumerate(d.cases)]
        assert [(o.result, o.state, o.trace) for o in sandbox.run_batched(traced)] == [
            (o.result, o.state, o.trace) for o in sandbox.run_untrusted(traced)]


def test_a_dead_write_is_found_and_its_task_dropped(sandbox, monkeypatch):
    """With the fuzzer's liveness rule switched off, writes land on data nothing has seen; mutation analysis must
    catch the dead call and drop the task as weak_oracle. With the rule on, no task is dropped for a dead call.
    (A task whose split no input tells apart is dropped as weak_oracle too, either way.)"""
    monkeypatch.setattr(session_scenario, "_writable", lambda rec: True)
    config, drafts = captured("session", 20, 5, sandbox)
    rejections: Counter = Counter()
    kept = analyse_mutants(drafts, sandbox, config, rejections)
    dead = {k: n for k, n in rejections.items() if "weak_oracle" in k}
    assert sum(dead.values()) == len(drafts) - len(kept), rejections
    assert any("a dead call" in k for k in dead), rejections
    assert all("skip_call" in k or "drop_call" in k or "no input tells apart" in k for k in dead)

    monkeypatch.undo()
    config, drafts = captured("session", 20, 5, sandbox)
    rejections = Counter()
    kept = analyse_mutants(drafts, sandbox, config, rejections)
    assert not any("a dead call" in k for k in rejections), rejections
    assert len(kept) == len(drafts) - sum(n for k, n in rejections.items() if "no input tells apart" in k)


def test_a_batch_that_ends_early_has_the_rest_run_one_by_one(sandbox, monkeypatch):
    """A batch whose child dies after some programs (or whose world cannot be reset for the next) gives verdicts
    for those only; the rest run alone, so the build's verdicts do not change."""
    config, drafts = captured("voice", 4, 2, sandbox)
    expected = [d.mutation for d in analyse_mutants(drafts, sandbox, config, Counter())]
    config, drafts = captured("voice", 4, 2, sandbox)
    expected = [d.mutation for d in analyse_mutants(drafts, sandbox, config, Counter())]
    config, drafts = captured("voice", 4, 2, sandbox)
    run, cut = sandbox.run_untrusted, []

    def ending_early(jobs, desc=None):
        outcomes = run(jobs, desc)
        for o in outcomes:
            if o.batch:
                cut.append(len(o.batch))
                o.batch = o.batch[:len(o.batch) // 2]
        return outcomes

    monkeypatch.setattr(sandbox, "run_untrusted", ending_early)
    assert [d.mutation for d in analyse_mutants(drafts, sandbox, config, Counter())] == expected
    assert cut


def test_a_batch_that_fails_whole_is_run_one_by_one(sandbox, monkeypatch):
    """A shared child that gives no verdict (killed, out of time) must not stop the build or count as kills."""
    import builder.mutate as mutate

    config, drafts = captured("tensor", 5, 11, sandbox)
    expected = [d.mutation for d in analyse_mutants(drafts, sandbox, config, Counter())]
    config, drafts = captured("tensor", 5, 11, sandbox)
    monkeypatch.setattr(mutate, "_driver", lambda codes: "import os\nos._exit(3)\n")
    assert [d.mutation for d in analyse_mutants(drafts, sandbox, config, Counter())] == expected


def test_a_mutant_is_skipped_only_on_inputs_whose_path_does_not_pass_its_change():
    from core.records import TestCase

    def case(branch):
        return TestCase("c", branch, "{}", "", [])

    def passes(where, branch):
        return reaches(Mutant("argument", "", "", where=where), case(branch))

    assert all(passes((), b) for b in ("main", "then", "else", "then/else"))  # before any split, or a split's test
    assert passes((True,), "then") and passes((True,), "then/else") and not passes((True,), "else")
    assert passes((False, True), "else/then") and not passes((False, True), "else/else")
    # where the statements of a branching program lie: in the then-branch, the else-branch, or before the split
    scenario, recorder = get_scenario("voice"), CoverageRecorder()
    program = next(p for p in (generate_program(scenario, random.Random(s), recorder) for s in range(40))
                   if p.has_branch)
    tree = ast.parse(program.reference_code())
    split = next(s for s in tree.body if isinstance(s, ast.If))
    sides = {ast.unparse(s): side for side, body in ((True, split.body), (False, split.orelse)) for s in body}
    for m in mutants(program, 1000, random.Random(0)):
        before = m.change.split(" -> ")[0]
        side = next((v for k, v in sides.items() if k.startswith(before)), None)
        assert m.where == (() if side is None else (side,)), m.describe()


def test_a_probe_that_kills_a_survivor_becomes_a_test_case_in_probe_order(sandbox):
    """Tasks left with their original input only: survivors meet probe inputs, and each probe kept kills a mutant
    that every input before it lets pass (checked by running the mutants alone; a probe that kills nothing new is
    not kept, so the inputs before a kept probe are the original and the probes kept before it)."""
    from core.sandbox.harness import Job
    from evaluate.scoring import judge_case

    config, drafts = captured("tensor", 6, 7, sandbox)
    for d in drafts:
        del d.cases[1:]
    config = dataclasses.replace(config, probes=4)
    kept = analyse_mutants(drafts, sandbox, config, Counter())
    strengthened = [d for d in kept if len(d.cases) > 1]
    assert strengthened, "no probe was kept"
    scenario = get_scenario("tensor")
    for d in strengthened:
        names = [c.name for c in d.cases[1:]]
        assert names == sorted(names) and all(n.startswith("probe-") for n in names)
        plan = [m for m in mutants(d.program, config.mutants, rng_for(config, d.scenario, d.index, "mutants"))
                if not m.undefined]
        passes = [[judge_case(scenario, c, o)[0] == "pass"
                   for o in sandbox.run_untrusted([Job(i, d.scenario, m.code, c) for i, m in enumerate(plan)])]
                  for c in d.cases]
        for j in range(1, len(d.cases)):
            assert any(all(p[m] for p in passes[:j]) and not passes[j][m] for m in range(len(plan))), d.cases[j].name


def test_a_surviving_dropped_call_or_negated_condition_drops_the_task_and_nothing_else_does():
    from builder.mutate import _dead

    made = {(m.operator, m.change.split(" -> ")[1].startswith("if not ")): m
            for seed in range(20) for m in mutants(generate_program(get_scenario("voice"), random.Random(seed),
                                                                     CoverageRecorder()), 1000, random.Random(0))}
    assert {key for key, m in made.items() if _dead(m)} == {("drop_call", False), ("skip_call", False),
                                                           ("condition", True)}
    assert ("condition", False) in made  # a loosened comparison (> for >=) survives as an equivalent
