"""Program assembly: path lengths, the if/else on COND, RESULT on every path, and complexity measures."""

from __future__ import annotations

import ast
import json
import random

import pytest

from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import make_cases
from builder.program import COND, Path, Program, generate_program
from scenarios import get_scenario
from scenarios.base import Call, Condition, State
from scenarios.tensor.world import TensorWorld


@pytest.fixture(scope="module")
def programs(fuzzed):
    return fuzzed


@pytest.fixture(scope="module")
def branching(programs):
    found = [p for p in programs if p.has_branch]
    assert found
    return found


def namespace(program: Program, flipped: bool) -> dict:
    """Run setup + reference for one test case in this process (trusted code) and return its globals."""
    case = make_cases(program, BuildConfig(), 0)[1 if flipped else 0].to_row()
    ns = {"__name__": "__main__"}
    ns.update(TensorWorld().namespace({"assets": [dict(a, meta=json.loads(a["meta"])) for a in case["assets"]]}))
    exec(case["setup_code"], ns)
    exec(program.reference_code(), ns)
    return ns


def result_assignments(body: list[ast.stmt]) -> list[ast.Assign]:
    return [s for s in body if isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "RESULT" for t in s.targets)]


# --------------------------------------------------------------------------------------------- shape


def test_every_path_has_at_least_five_calls(programs):
    for p in programs:
        for calls in p.paths():
            assert len(calls) >= 5, p.reference_code()


def test_uniform_programs_also_have_five_calls_per_path(scenario):
    recorder = CoverageRecorder()
    for seed in range(50):
        p = generate_program(scenario, random.Random(seed), recorder, guided=False)
        assert all(len(calls) >= 5 for calls in p.paths())


def test_calls_per_path_is_respected(scenario):
    recorder = CoverageRecorder()
    for seed in range(30):
        p = generate_program(scenario, random.Random(seed), recorder, calls_per_path=7)
        assert [len(c) for c in p.paths()] == [7] * len(p.paths())


def test_about_half_of_programs_branch(programs):
    share = sum(p.has_branch for p in programs) / len(programs)
    assert 0.35 <= share <= 0.65, share


def test_branch_probability_zero_and_one(scenario):
    recorder = CoverageRecorder()
    never = [generate_program(scenario, random.Random(s), recorder, branch_probability=0.0) for s in range(20)]
    always = [generate_program(scenario, random.Random(s), recorder, branch_probability=1.0) for s in range(20)]
    assert not any(p.has_branch for p in never)
    # Always asked for; left out only where no value on the way offers a condition that no other in-scope
    # value would satisfy as well (shapes are the same on every input, so such a branch could not be checked):
    # 14 of these 20 seeds branch.
    assert sum(p.has_branch for p in always) >= 12
    assert all(p.has_branch or "no condition fits" in p.notes[0] for p in always)


def test_straight_program_assigns_result_once_at_the_end(programs):
    for p in programs:
        if p.has_branch:
            continue
        tree = ast.parse(p.reference_code())
        assert not any(isinstance(s, ast.If) for s in ast.walk(tree))
        assert result_assignments(tree.body) == [tree.body[-1]]
        assert len(tree.body) == len(p.all_calls) + 1


def test_branching_reference_has_if_else_on_cond_with_result_in_both(branching):
    for p in branching:
        tree = ast.parse(p.reference_code())
        ifs = [s for s in tree.body if isinstance(s, ast.If)]
        assert len(ifs) == 1, p.reference_code()
        node = ifs[0]
        assert tree.body[-1] is node, "the if/else closes the program"
        test = node.test
        assert isinstance(test, ast.Compare) and len(test.comparators) == 1
        assert isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == COND
        assert node.orelse, "an else branch is required"
        for body, path in ((node.body, p.then), (node.orelse, p.orelse)):
            assigned = result_assignments(body)
            assert assigned == [body[-1]], "RESULT is assigned last in each branch"
            names = [e.id for e in assigned[0].value.elts]
            assert names == path.result_vars(p.scenario)
        assert not result_assignments(tree.body[:-1]), "no RESULT before the split"


def test_result_collects_every_unconsumed_call_output(programs, scenario):
    for p in programs:
        for path in [p.then] + ([p.orelse] if p.orelse else []):
            made = {o for c in (p.prefix + path.calls) for o in c.outputs}
            used = {i for c in (p.prefix + path.calls) for i in c.inputs}
            assert set(path.result_vars(scenario)) == made - used


# ------------------------------------------------------------------------------------------ condition


def test_original_constant_makes_condition_true_and_flipped_false(branching):
    for p in branching:
        cond = p.condition
        assert cond.flipped is not None and cond.flipped != cond.value
        ns = namespace(p, flipped=False)
        check = f"{cond.left} {cond.op} {COND}"
        assert eval(check, ns, {COND: cond.value}) is True, check
        assert eval(check, ns, {COND: cond.flipped}) is False, check


def test_each_test_case_runs_its_own_branch(branching):
    for p in branching[:25]:
        then_only = {o for c in p.then.calls for o in c.outputs}
        else_only = {o for c in p.orelse.calls for o in c.outputs}
        assert then_only and else_only and not (then_only & else_only), "branches use fresh names"
        original, flipped = namespace(p, flipped=False), namespace(p, flipped=True)
        assert then_only <= set(original) and not (else_only & set(original))
        assert else_only <= set(flipped) and not (then_only & set(flipped))
        assert original["RESULT"] is not flipped["RESULT"]


def test_constants_are_only_declared_for_branching_programs(programs):
    for p in programs:
        if p.has_branch:
            assert p.constants() == {COND: p.condition.value}
            assert p.constants(flipped=True) == {COND: p.condition.flipped}
            assert f"{COND} = {p.condition.value!r}" in make_cases(p, BuildConfig(), 0)[0].setup_code
        else:
            assert p.constants() == {} and p.constants(flipped=True) == {}


# ---------------------------------------------------------------------------------------- complexity


def call(api: str, inputs: list[str], outputs: list[str]) -> Call:
    return Call(api, inputs, outputs, f"{', '.join(outputs)} = {api}({', '.join(inputs)})", {})


def test_path_depth_and_binding_count_of_a_straight_program(scenario):
    calls = [
        call("transpose", ["x1"], ["v1"]),  # depth 1
        call("permute", ["v1"], ["v2"]),  # depth 2
        call("split", ["x2"], ["v3", "v4"]),  # depth 1
        call("cat", ["v2", "v3"], ["v5"]),  # depth 3
        call("linear", ["v5", "w1"], ["v6"]),  # depth 4
    ]
    p = Program(scenario, State(), calls, Path([], State()))
    assert p.path_depth() == 4
    assert p.binding_count() == 4  # v1, v2, v3, v5 link calls; v4 and v6 are never consumed


def test_path_depth_of_independent_calls_is_one(scenario):
    calls = [call("transpose", [f"x{i}"], [f"v{i}"]) for i in range(5)]
    p = Program(scenario, State(), calls, Path([], State()))
    assert p.path_depth() == 1
    assert p.binding_count() == 0


def test_path_depth_and_binding_count_of_a_branching_program(scenario):
    prefix = [call("transpose", ["x1"], ["v1"]), call("permute", ["v1"], ["v2"])]
    then = [call("linear", ["v2", "w1"], ["v3"]), call("cat", ["v3", "v1"], ["v4"]),
            call("transpose", ["v4"], ["v5"])]  # chain of 5 on this path
    orelse = [call("split", ["x1"], ["v6", "v7"]), call("permute", ["v6"], ["v8"]),
              call("transpose", ["x2"], ["v9"])]  # at most 2 deep on this path
    cond = Condition("v2.shape[0]", "==", 1, 2, "dimension 0 of `v2` has size COND")
    p = Program(scenario, State(), prefix, Path(then, State()), Path(orelse, State()), cond)
    assert p.has_branch
    assert [len(c) for c in p.paths()] == [5, 5]
    assert p.path_depth() == 5
    # v1, v2 (prefix), v3, v4 (then), v6 (else): outputs that a later call reads
    assert p.binding_count() == 5
    swapped = Program(scenario, State(), prefix, Path(orelse, State()), Path(then, State()), cond)
    assert swapped.path_depth() == 5, "the deepest path counts, whichever branch it is"


def test_fuzzed_complexity_is_within_bounds(programs):
    for p in programs:
        longest = max(len(c) for c in p.paths())
        assert 1 <= p.path_depth() <= longest
        assert 0 <= p.binding_count() <= len(p.all_calls)


@pytest.mark.parametrize("name", ["tensor", "session", "voice"])
def test_the_two_sides_of_a_split_never_do_the_same_thing(name):
    """Sides equal up to variable names would make the condition pointless (and its test case a duplicate)."""
    from builder.program import _signature

    scenario, recorder = get_scenario(name), CoverageRecorder()
    for seed in range(200):
        p = generate_program(scenario, random.Random(seed), recorder, branch_probability=1.0, branches=2)
        for split in p.splits():
            assert _signature(split.then) != _signature(split.orelse), (seed, p.reference_code())
