"""Coverage-guided sampling (Algorithm 1): fresh pair transitions first, rare ones next, and only legal calls."""

from __future__ import annotations

import json
import random

import pytest

from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder, NoValidCall, pairs_for, step
from builder.pipeline import make_cases
from builder.program import generate_program
from scenarios import INIT, get_scenario
from scenarios.base import State
from scenarios.tensor.world import TensorWorld


@pytest.fixture(scope="module")
def scenario():
    return get_scenario("tensor")


@pytest.fixture(scope="module")
def api_names(scenario):
    return [a.name for a in scenario.apis]


def candidate_keys(scenario, state: State) -> list[tuple[str, tuple]]:
    """(api, pairs) for every legal call in `state`: the groups the guided sampler chooses among."""
    return [(api.name, pairs_for(state, api, b)) for api in scenario.apis for b in api.bindings(state)]


def warmed_state(scenario, seed: int) -> State:
    """An initial state plus a few calls, so that inputs come from APIs as well as from the setup block."""
    rng = random.Random(f"warm/{seed}")
    state = scenario.initial_state(rng)
    scratch = CoverageRecorder()
    for _ in range(rng.randint(1, 3)):
        step(scenario, state, scratch, rng, guided=False)
    return state


def call_pairs(state_before: dict, call) -> set[tuple[str, str]]:
    """The pairs a call exercised, from the producers of its tensor inputs before it ran (new weights excluded)."""
    return {(state_before[v][0], call.api) for v in call.inputs if v in state_before and state_before[v][1] == "tensor"}


def producers(state: State) -> dict:
    return {name: (v.producer, v.type) for name, v in state.vars.items()}


# ------------------------------------------------------------------------------------------- guidance


def test_guided_step_picks_the_only_never_seen_pair(scenario):
    hits = uniform_hits = trials = 0
    for seed in range(30):
        state = warmed_state(scenario, seed)
        keys = candidate_keys(scenario, state)
        everything = sorted({p for _, pairs in keys for p in pairs})
        target = random.Random(seed).choice(everything)
        recorder = CoverageRecorder()
        recorder.record([p for p in everything if p != target] * 50)
        assert recorder.counts[target] == 0
        for r in range(3):
            twin = state.branch_copy()
            before = producers(twin)
            call = step(scenario, twin, recorder, random.Random(f"{seed}/{r}"), guided=True)
            trials += 1
            hits += target in call_pairs(before, call)
            assert recorder.counts[target] >= 1, "the chosen pair must be recorded"
            recorder.counts[target] = 0  # keep it the one unseen pair for the next rng
            # The same situation under the uniform ablation, to show the target is not trivially picked.
            twin = state.branch_copy()
            before = producers(twin)
            call = step(scenario, twin, CoverageRecorder(), random.Random(f"{seed}/{r}"), guided=False)
            uniform_hits += target in call_pairs(before, call)
    assert hits == trials, f"the never-seen pair was chosen in {hits} of {trials} guided steps"
    assert uniform_hits < trials * 0.8, "the target pair is too common for this test to mean anything"


def test_guided_step_prefers_the_rarest_pair_when_all_are_seen(scenario):
    hits = trials = 0
    for seed in range(30):
        state = warmed_state(scenario, seed)
        everything = sorted({p for _, pairs in candidate_keys(scenario, state) for p in pairs})
        target = random.Random(seed).choice(everything)
        recorder = CoverageRecorder()
        recorder.record([p for p in everything if p != target] * 1000)
        recorder.record([target])
        twin = state.branch_copy()
        before = producers(twin)
        call = step(scenario, twin, recorder, random.Random(seed), guided=True)
        trials += 1
        hits += target in call_pairs(before, call)
    assert hits >= 0.8 * trials, f"a pair seen once was chosen in only {hits} of {trials} steps"


def test_step_records_the_pairs_it_exercised(scenario):
    state = warmed_state(scenario, 0)
    before = producers(state)
    recorder = CoverageRecorder()
    call = step(scenario, state, recorder, random.Random(0), guided=True)
    assert set(recorder.counts) == call_pairs(before, call)
    assert all(c == 1 for c in recorder.counts.values())


def test_step_raises_no_valid_call_when_nothing_is_callable(scenario):
    with pytest.raises(NoValidCall):
        step(scenario, State(), CoverageRecorder(), random.Random(0), guided=True)


def test_uniform_sampling_emits_only_valid_calls(scenario):
    world = TensorWorld()
    recorder = CoverageRecorder()
    for seed in range(60):
        program = generate_program(scenario, random.Random(seed), recorder, guided=False)
        for calls in program.paths():
            assert len(calls) == 5
        for case in (c.to_row() for c in make_cases(program, BuildConfig(), 0)):
            ns = {"__name__": "__main__"}
            ns.update(world.namespace({"assets": [dict(a, meta=json.loads(a["meta"])) for a in case["assets"]]}))
            exec(case["setup_code"], ns)
            exec(program.reference_code(), ns)  # an illegal call raises here
            path = program.orelse if case["branch"] == "else" else program.then
            for var in path.state.vars.values():
                assert tuple(ns[var.name].shape) == tuple(var.value), f"seed {seed}: `{var.name}`"


def test_uniform_step_only_uses_legal_bindings(scenario):
    for seed in range(40):
        state = warmed_state(scenario, seed)
        legal = {(api.name, b) for api in scenario.apis for b in api.bindings(state)}
        before = producers(state)
        call = step(scenario, state, CoverageRecorder(), random.Random(seed), guided=False)
        tensors = tuple(v for v in call.inputs if v in before and before[v][1] == "tensor")
        assert (call.api, tensors) in legal


def coverage_area(scenario, api_names, guided: bool) -> float:
    total = 0.0
    for seed in range(5):
        recorder = CoverageRecorder()
        for i in range(40):
            generate_program(scenario, random.Random(f"auc/{seed}/{i}"), recorder, guided=guided)
            total += recorder.coverage(api_names)
    return total


def test_guidance_covers_pairs_faster_than_uniform_sampling(scenario, api_names):
    guided = coverage_area(scenario, api_names, True)
    uniform = coverage_area(scenario, api_names, False)
    assert guided > uniform, (guided, uniform)


def test_guided_build_reaches_full_pair_coverage(scenario, api_names):
    recorder = CoverageRecorder()
    for i in range(40):
        generate_program(scenario, random.Random(i), recorder)
    assert recorder.coverage(api_names) == 1.0


# ------------------------------------------------------------------------------------------- recorder


def test_coverage_counts_only_api_to_api_pairs(api_names):
    recorder = CoverageRecorder()
    recorder.record([(INIT, name) for name in api_names])
    assert recorder.coverage(api_names) == 0.0
    assert recorder.api_pairs(api_names) == set()

    recorder.record([("cat", "split"), ("cat", "split"), ("split", "cat")])
    assert recorder.api_pairs(api_names) == {("cat", "split"), ("split", "cat")}
    assert recorder.coverage(api_names) == pytest.approx(2 / len(api_names) ** 2)


def test_coverage_ignores_unknown_apis_and_zero_counts(api_names):
    recorder = CoverageRecorder()
    recorder.record([("cat", "teleport"), ("teleport", "cat")])
    recorder.counts[("cat", "cat")] = 0
    assert recorder.coverage(api_names) == 0.0
    every = [(a, b) for a in api_names for b in api_names]
    recorder.record(every)
    assert recorder.coverage(api_names) == 1.0
