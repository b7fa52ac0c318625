"""The tensor scenario's frontier tier: stateful PyTorch programs (`scenarios/tensor/tasks.py`) and the world that
loads their models, optimizers and schedulers and reads back everything they hold (`scenarios/tensor/stateful.py`).
The checks every scenario's frontier tier shares (a build end to end through the real pipeline and sandbox among
them) are in `test_frontier_tiers.py`.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from builder import facts, frontier
from builder.config import BuildConfig
from builder.pipeline import make_cases
from core.sandbox.protocol import WireCase
from scenarios import get_scenario
from scenarios.base import compare_plain
from scenarios.tensor import tasks
from scenarios.tensor.world import TensorWorld

HAZARDS = {"no_zero_grad", "wrong_mode", "no_restore", "no_no_grad", "no_clone", "step_order"}


@pytest.fixture(scope="module")
def programs():
    tensor = get_scenario("tensor")
    return [frontier.generate(tensor, random.Random(seed)) for seed in range(80)]


@pytest.fixture(scope="module")
def world():
    return TensorWorld()


def decoded(case) -> dict:
    return WireCase.of(case).as_dict()


def run(world: TensorWorld, code: str, case) -> tuple[object, object]:
    """RESULT and the state read back, as the sandbox child computes them (in this process: trusted code only)."""
    case = decoded(case)
    ns = {"__name__": "__main__"}
    ns.update(world.namespace(case))
    exec(compile(case["setup_code"], "<setup>", "exec"), ns)
    exec(compile(code, "<program>", "exec"), ns)
    return world.canonical(ns["RESULT"]), world.recorded(ns)


def test_a_text_without_the_number_of_training_steps_fails_the_fact_check(programs):
    p = programs[0]
    text = p.render("natural", random.Random(2)).text
    k = p.reference_code().split("for _ in range(")[1].split(")")[0]
    assert any("train: the number of steps" in line
               for line in facts.missing(text.replace(f"for {k} steps", "for a few steps"), facts.required(p)))


def test_populations_follow_their_profile(programs):
    for p in programs[:30]:
        code = p.reference_code()
        for profile in tasks.PROFILES:
            state = p.population(profile, random.Random(4))
            meta = state.vars["model"].value
            linears = [layer for layer in meta["layers"] if layer["type"] == "Linear"]
            assert any(layer["type"] == "BatchNorm1d" for layer in meta["layers"])  # a mode always matters
            if profile == "deep":
                assert len(linears) >= 4
            if profile == "frozen" and (" if p.grad is not None" in code or "requires_grad)" in code):
                assert meta["frozen"]
            if "changed1" in code:
                line = next(x for x in code.splitlines() if "isinstance(m, nn.Linear)" in x)
                side, n = line.split("m.")[1].split("_features > ")
                hits = [layer for layer in linears if layer[side] > int(n.rstrip(":"))]
                if profile == "none":
                    assert not hits
                if profile == "original":
                    assert len(hits) >= 2
                if profile == "no_bias" and "m.weight.clamp_" in code:
                    assert any(not layer["bias"] for layer in hits)
            assert "torch.manual_seed(" in get_scenario("tensor").setup_code(state, {})


def test_the_world_builds_the_stored_model_and_reads_back_all_it_holds(programs, world):
    p = programs[0]
    case = make_cases(p, BuildConfig(), 0)[1]  # the "frozen" profile
    row = decoded(case)
    model_asset = next(a for a in row["assets"] if a["kind"] == "module")
    result, state = run(world, "RESULT = [sum(p.numel() for p in model.parameters())]\n", case)
    stored = np.frombuffer(model_asset["data"], "<f4")
    assert result == [stored.size]
    params = state["model"]["parameters"]
    assert [n for n, v in params.items() if not v["requires_grad"]] == model_asset["meta"]["frozen"]
    assert all(v["grad"] is None for v in params.values())
    assert state["model"]["training"] and all(state["model"]["training"])
    assert set(state) >= {"model", "opt", "x", "y"} and state["opt"]["state"] == {}


def test_the_state_shows_what_a_program_did_to_the_world(programs, world):
    p = programs[0]
    case = make_cases(p, BuildConfig(), 0)[0]
    _, before = run(world, "RESULT = []\n", case)
    code = ("loss = model(x).pow(2).mean()\nloss.backward()\nopt.step()\nmodel.eval()\n"
            "x[:2].fill_(0.0)\nRESULT = []\n")
    _, after = run(world, code, case)
    scenario = get_scenario("tensor")
    assert scenario.compare_state(before, before) is None
    assert all(v["grad"] is not None for v in after["model"]["parameters"].values() if v["requires_grad"])
    assert after["model"]["training"] == [False] * len(after["model"]["training"])
    assert after["opt"]["state"], "the optimizer keeps per-parameter state after a step"
    assert "x" in scenario.compare_state(before, after) or "model" in scenario.compare_state(before, after)
    x = after["x"]["__tensor__"]
    assert x["shape"][0] >= 2


def test_the_reference_is_deterministic_and_each_hazard_changes_the_outcome(programs, world):
    """Two runs give the same bytes; a dropped zero_grad, the wrong mode or a view kept as a copy are seen."""
    scenario = get_scenario("tensor")
    checked = Counter()
    for p in programs[:12]:
        cases = make_cases(p, BuildConfig(), 1)
        reference = [run(world, p.reference_code(), c) for c in cases]
        assert reference == [run(world, p.reference_code(), c) for c in cases]
        for op, _, code, _ in p.mutants():
            if op not in HAZARDS:
                continue
            seen = False
            for case, (result, state) in zip(cases, reference):
                try:
                    got = run(world, code, case)
                except Exception:  # noqa: BLE001 - a hazard that raises (in-place on a leaf) is seen too
                    seen = True
                    break
                if scenario.compare_result(result, got[0]) or scenario.compare_state(state, got[1]):
                    seen = True
                    break
            assert seen, (op, code)
            checked[op] += 1
    assert HAZARDS <= set(checked), checked


def test_floats_compare_within_the_documented_tolerance():
    scenario = get_scenario("tensor")
    assert scenario.compare_result([1.0, 2], [1.00001, 2]) is None
    assert "expected 1.0" in scenario.compare_result([1.0], [1.01])
    assert scenario.compare_result([2], [3]) is not None  # counts stay exact
    assert compare_plain([1.0], [1.00001], lambda *a: NotImplemented) is not None  # other scenarios: exact


def test_the_frontier_doc_states_semantics_without_writing_the_program():
    doc = get_scenario("tensor").api_doc("frontier")
    for semantic in ("accumulate", "set_to_none", "running_mean", "share storage", "torch.no_grad()", "StepLR"):
        assert semantic in doc
    assert "for _ in range(" not in doc and "RESULT = [" not in doc


def test_tool_calls_change_the_world_as_the_same_program_does(programs, world):
    """A training step as tool calls (`--mode tools`) leaves the state the same code leaves; a tool the tier does not
    have, or a handle that names nothing, is an error the model reads, and the episode goes on."""
    from core.sandbox.worker import execute_calls

    p = programs[0]
    case = make_cases(p, BuildConfig(), 0)[0]
    loss = "cross_entropy" if "F.cross_entropy" in p.reference_code() else "mse_loss"
    calls = [{"name": "optimizer_zero_grad", "arguments": {"optimizer": "opt"}},
             {"name": "forward", "arguments": {"module": "model", "input": "x"}},
             {"name": loss, "arguments": {"input": "r2", "target": "y"}},
             {"name": "backward", "arguments": {"tensor": "r3"}},
             {"name": "optimizer_step", "arguments": {"optimizer": "opt"}},
             {"name": "torch_cat", "arguments": {"tensors": ["x", "x"], "dim": 0}},
             {"name": "mul_", "arguments": {"tensor": "r99", "value": 2.0}},
             {"name": "item", "arguments": {"tensor": "r3"}}]
    report = execute_calls(world, calls, ["r8"], decoded(case))
    assert report["status"] == "ok", report
    assert "unknown tool" in report["calls"][5]["error"] and "no handle named 'r99'" in report["calls"][6]["error"]
    assert report["setup"]["model"] == {"module": {"type": "Sequential", "training": True}}
    fn = "F.cross_entropy" if loss == "cross_entropy" else "F.mse_loss"
    result, state = run(world, f"opt.zero_grad()\nloss = {fn}(model(x), y)\nloss.backward()\nopt.step()\n"
                               "RESULT = [loss.item()]\n", case)
    scenario = get_scenario("tensor")
    assert scenario.compare_result(result, report["result"]) is None
    assert scenario.compare_state(state, report["recorded"]) is None


def test_a_scratch_world_keeps_the_schema_with_other_values(programs, world):
    """`--mode explore`: the same model architecture, optimizer and shapes, other parameters and inputs, class
    indices still below the number of classes."""
    p = next(p for p in programs if "F.cross_entropy" in p.reference_code())
    case = make_cases(p, BuildConfig(), 0)[0].to_row()
    scratch = get_scenario("tensor").scratch_assets(case["assets"], random.Random(1))
    assert [(a["name"], a["kind"], a["meta"]) for a in scratch] == [(a["name"], a["kind"], a["meta"])
                                                                     for a in case["assets"]]
    by_name = {a["name"]: a for a in scratch}
    assert by_name["model"]["data"] != bytes(next(a for a in case["assets"] if a["name"] == "model")["data"])
    classes = max(layer["out"] for layer in json.loads(by_name["model"]["meta"])["layers"][-1:])
    assert np.frombuffer(by_name["y"]["data"], "<i8").max() < classes
    ns = {"__name__": "__main__"}
    ns.update(world.namespace({"assets": [dict(a, meta=json.loads(a["meta"]), data=bytes(a["data"])) for a in scratch]}))
    exec(compile(case["setup_code"], "<setup>", "exec"), ns)
    assert sum(p.numel() for p in ns["model"].parameters()) * 4 == len(by_name["model"]["data"])
