"""The tensor scenario: the state machine's shape solver agrees with torch, and oracles are compared soundly.

Fuzzed reference programs are trusted code, so they run here, in the test process, in the same namespace the
sandbox worker builds (`TensorWorld.namespace` over decoded assets).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import make_cases
from builder.program import Program, generate_program
from scenarios import get_scenario, scenario_names
from scenarios.base import canonical_json
from scenarios.tensor import ATOL, RTOL, Conv2d
from scenarios.tensor.compare import compare_tensors, decode
from scenarios.tensor.world import TensorWorld

SEEDS = range(150)
LIMIT = 100 * 1024  # a task's stored data must stay under 100 KB


@pytest.fixture(scope="module")
def scenario():
    return get_scenario("tensor")


@pytest.fixture(scope="module")
def world():
    return TensorWorld()


def decoded(case: dict) -> dict:
    """A test case as the sandbox worker hands it to the world: meta parsed, data as bytes."""
    return {"assets": [dict(a, meta=json.loads(a["meta"]), data=bytes(a["data"])) for a in case["assets"]]}


def run_case(world: TensorWorld, program: Program, case: dict) -> dict:
    ns = {"__name__": "__main__"}
    ns.update(world.namespace(decoded(case)))
    exec(compile(case["setup_code"], "<setup>", "exec"), ns)
    exec(compile(program.reference_code(), "<reference>", "exec"), ns)
    return ns


def path_of(program: Program, case: dict):
    return program.orelse if case["branch"] == "else" else program.then


def cases_of(program: Program, seed: int) -> list[dict]:
    """Every test case (redrawn ones too: their shapes, and so the branch each takes, are the original's)."""
    return [c.to_row() for c in make_cases(program, BuildConfig(), seed)]


def fuzzed(scenario, guided: bool = True):
    recorder = CoverageRecorder()
    for seed in SEEDS:
        yield seed, generate_program(scenario, random.Random(seed), recorder, guided=guided)


# --------------------------------------------------------------------------------------- legal programs


@pytest.mark.parametrize("guided", [True, False], ids=["guided", "uniform"])
def test_predicted_shapes_equal_torch_shapes(scenario, world, guided):
    apis_seen = set()
    for seed, program in fuzzed(scenario, guided):
        for case in cases_of(program, seed):
            ns = run_case(world, program, case)  # raises if any emitted call is illegal
            path = path_of(program, case)
            for var in path.state.vars.values():
                assert var.name in ns, f"seed {seed}: `{var.name}` was never defined"
                actual = ns[var.name]
                assert isinstance(actual, torch.Tensor)
                assert tuple(actual.shape) == tuple(var.value), (
                    f"seed {seed} ({case['name']}): `{var.name}` predicted {tuple(var.value)}, "
                    f"torch made {tuple(actual.shape)}\n{program.reference_code()}"
                )
                assert actual.dtype == torch.float32
            expected_names = path.result_vars(scenario)
            result = ns["RESULT"]
            assert len(result) == len(expected_names)
            for name, value in zip(expected_names, result):
                assert value is ns[name]
        apis_seen.update(c.api for c in program.all_calls)
    assert apis_seen == {a.name for a in scenario.apis}, "the fuzzed programs should exercise every API"


def test_stored_data_of_fuzzed_tasks_stays_small(scenario, world):
    for seed, program in fuzzed(scenario):
        cases = cases_of(program, seed)
        size = 0
        for case in cases:
            ns = run_case(world, program, case)
            size += sum(len(a["data"]) for a in case["assets"])
            size += len(canonical_json(world.canonical(ns["RESULT"])))
        assert size < LIMIT, f"seed {seed}: {size} bytes stored"


def test_stored_data_per_task_under_100kb(small_tasks):
    assert small_tasks
    for task in small_tasks:
        size = 0
        for case in task.test_cases:
            size += sum(len(a["data"]) for a in case.assets)
            size += len(case.expected_result or "") + len(case.expected_state or "")
        assert size < LIMIT, f"{task.task_id} stores {size} bytes"


# -------------------------------------------------------------------------------------- conv2d shapes


@pytest.mark.parametrize("padding", [0, 1, 2, "valid", "same"])
def test_conv2d_out_size_matches_torch(padding):
    checked = 0
    for n in range(1, 9):
        for k in range(1, 4):
            for stride in (1, 2, 3):
                if padding == "same" and stride != 1:
                    continue  # torch refuses padding='same' with a stride
                for dilation in (1, 2):
                    predicted = Conv2d.out_size(n, k, stride, padding, dilation)
                    x = torch.zeros(1, 1, n, n + 1)
                    weight = torch.zeros(1, 1, k, k)
                    if predicted < 1:
                        with pytest.raises(RuntimeError):
                            F.conv2d(x, weight, stride=stride, padding=padding, dilation=dilation)
                        continue
                    out = F.conv2d(x, weight, stride=stride, padding=padding, dilation=dilation)
                    assert out.shape[2] == predicted, (n, k, stride, padding, dilation)
                    assert out.shape[3] == Conv2d.out_size(n + 1, k, stride, padding, dilation)
                    checked += 1
    assert checked > 20


# ---------------------------------------------------------------------------------- canonical tensors


@pytest.mark.parametrize("tensor", [
    torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0)),
    torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1)),
    torch.arange(12).reshape(3, 4),
    torch.tensor([True, False, True]),
    torch.randn(4, 3, generator=torch.Generator().manual_seed(2)).t(),  # not contiguous
    torch.tensor(2.5),
    torch.zeros(0, 3),
], ids=["float32", "float64", "int64", "bool", "transposed", "scalar", "empty"])
def test_canonical_tensor_round_trips(world, tensor):
    canon = world.canonical([tensor, {"t": tensor}])
    text = canonical_json(canon)  # plain, JSON-able data
    back = json.loads(text)
    for leaf in (back[0], back[1]["t"]):
        t = leaf["__tensor__"]
        assert t["dtype"] == str(tensor.dtype).removeprefix("torch.")
        assert t["shape"] == list(tensor.shape)
        array = decode(t)
        assert array.dtype == tensor.numpy().dtype
        assert np.array_equal(array, tensor.numpy())


def test_bfloat16_keeps_its_dtype_tag(world, scenario):
    t = torch.randn(3, 3, generator=torch.Generator().manual_seed(3))
    as_bf16 = world.canonical([t.to(torch.bfloat16)])
    as_f32 = world.canonical([t.to(torch.bfloat16).to(torch.float32)])
    assert as_bf16[0]["__tensor__"]["dtype"] == "bfloat16"
    assert np.array_equal(decode(as_bf16[0]["__tensor__"]), decode(as_f32[0]["__tensor__"]))
    assert "dtype" in scenario.compare_result(as_bf16, as_f32)


def test_canonical_rejects_objects_it_cannot_compare(world):
    with pytest.raises(TypeError, match="cannot be compared"):
        world.canonical([object()])


def test_namespace_loads_stored_tensors_and_names_missing_ones(world):
    values = np.arange(6, dtype="<f4").reshape(2, 3)
    case = {"assets": [{"name": "x1", "kind": "tensor", "meta": {"dtype": "float32", "shape": [2, 3]},
                        "data": values.tobytes()}]}
    load = world.namespace(case)["load_tensor"]
    t = load("x1")
    assert t.dtype == torch.float32 and t.shape == (2, 3)
    assert np.array_equal(t.numpy(), values)
    t.add_(1)  # a program changing its input must not change the stored value
    assert np.array_equal(load("x1").numpy(), values)
    with pytest.raises(KeyError, match="x1"):
        load("x9")


# ----------------------------------------------------------------------------------------- comparison


def canon(world, t):
    return world.canonical(t)["__tensor__"]


def test_compare_accepts_values_within_tolerance(world, scenario):
    base = torch.randn(3, 4, generator=torch.Generator().manual_seed(4))
    nudged = base + ATOL / 2
    assert compare_tensors(canon(world, base), canon(world, nudged), "RESULT[0]", RTOL, ATOL) is None
    assert compare_tensors(canon(world, base), canon(world, base * (1 + RTOL / 2)), "R", RTOL, ATOL) is None
    assert scenario.compare_result(world.canonical([base]), world.canonical([nudged])) is None


def test_compare_rejects_values_outside_tolerance(world, scenario):
    base = torch.randn(3, 4, generator=torch.Generator().manual_seed(5))
    off = base.clone()
    off[1, 2] += 10 * (ATOL + RTOL * abs(float(off[1, 2])))
    reason = scenario.compare_result(world.canonical([base]), world.canonical([off]))
    assert reason and "RESULT[0]" in reason and "1 of 12" in reason


def test_compare_rejects_transpose_of_square_tensor(world, scenario):
    square = torch.randn(4, 4, generator=torch.Generator().manual_seed(6))
    assert not torch.allclose(square, square.t())
    reason = compare_tensors(canon(world, square), canon(world, square.t()), "RESULT[0]", RTOL, ATOL)
    assert reason is not None and "values differ" in reason
    assert scenario.compare_result(world.canonical([square]), world.canonical([square.t()])) is not None


def test_compare_rejects_dtype_change(world, scenario):
    t = torch.randn(2, 3, generator=torch.Generator().manual_seed(7))
    reason = compare_tensors(canon(world, t), canon(world, t.double()), "RESULT[0]", RTOL, ATOL)
    assert reason is not None and "dtype" in reason
    assert "dtype" in scenario.compare_result(world.canonical([t]), world.canonical([t.double()]))


def test_compare_rejects_shape_change(world, scenario):
    t = torch.randn(2, 3, generator=torch.Generator().manual_seed(8))
    for other in (t.reshape(3, 2), t.reshape(6), t.reshape(1, 2, 3)):
        reason = compare_tensors(canon(world, t), canon(world, other), "RESULT[0]", RTOL, ATOL)
        assert reason is not None and "shape" in reason
        assert "shape" in scenario.compare_result(world.canonical([t]), world.canonical([other]))


def test_compare_rejects_a_non_tensor_where_a_tensor_was_expected(world, scenario):
    t = torch.ones(2, 2)
    assert scenario.compare_result(world.canonical([t]), [[[1.0, 1.0], [1.0, 1.0]]]) is not None
    assert scenario.compare_result(world.canonical([t]), world.canonical([t, t])) is not None


# ------------------------------------------------------------------------------------------- registry


def test_registry_knows_tensor():
    assert "tensor" in scenario_names()
    assert get_scenario("tensor").name == "tensor"
    assert get_scenario("tensor") is get_scenario("tensor")


def test_unknown_scenario_raises_key_error_naming_known_ones():
    with pytest.raises(KeyError) as info:
        get_scenario("no-such-world")
    message = str(info.value)
    assert "no-such-world" in message
    for name in scenario_names():
        assert name in message


def test_no_convolution_has_an_output_that_sees_only_padding():
    """Such an output is the bias whatever the input, so every call feeding it would be dead."""
    import random

    from builder.fuzz import CoverageRecorder
    from builder.program import generate_program
    from scenarios import get_scenario
    from scenarios.tensor import Conv2d

    assert not Conv2d.sees_input(1, 2, 1, 1, 2)  # one row, padded by one: both taps (rows -1 and +1) are padding
    assert Conv2d.sees_input(1, 3, 1, 1, 1) and Conv2d.sees_input(4, 2, 1, "same", 1)
    scenario, recorder = get_scenario("tensor"), CoverageRecorder()
    for seed in range(150):
        program = generate_program(scenario, random.Random(seed), recorder, calls_per_path=7)
        for leaf in program.leaves():
            state = leaf.path.state
            for call in leaf.calls:
                if call.api == "conv2d":
                    a, (_, _, h, w) = call.args, tuple(state.vars[call.inputs[0]].value)
                    _, _, kh, kw = tuple(state.vars[a["weight"]].value)
                    for n, k in ((h, kh), (w, kw)):
                        assert Conv2d.sees_input(n, k, a["stride"], a["padding"], a["dilation"]), (seed, call.code)
