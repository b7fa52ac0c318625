"""pass@k, summaries, and the verdict on one test case (comparison of canonical data, never of child objects)."""

from __future__ import annotations

import base64
import copy
import json
from types import SimpleNamespace

import numpy as np
import pytest

from core.records import TestCase
from core.sandbox.harness import Limits, Outcome, Sandbox
from evaluate.scoring import STATUSES, SampleResult, every_k, judge_case, pass_at_k, score, succeeded, summarize
from scenarios import get_scenario
from scenarios.tensor import ATOL, RTOL

TENSOR = get_scenario("tensor")


# ---------------------------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 2, 1, 0.4),  # c / n
    (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    (5, 1, 2, 0.4),  # 1 - C(4,2)/C(5,2) = 1 - 6/10
    (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    (5, 0, 1, 0.0),
    (5, 0, 5, 0.0),
    (5, 5, 1, 1.0),
    (5, 5, 5, 1.0),
    (5, 4, 2, 1.0),  # fewer than k failures: every draw of k holds a pass
    (1, 1, 1, 1.0),
    (1, 0, 1, 0.0),
])
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_needs_k_samples():
    with pytest.raises(ValueError, match="pass@6"):
        pass_at_k(5, 2, 6)


def test_pass_at_k_grows_with_k_and_c():
    values = [pass_at_k(10, 3, k) for k in range(1, 11)]
    assert values == sorted(values)
    assert [pass_at_k(10, c, 3) for c in range(11)] == sorted(pass_at_k(10, c, 3) for c in range(11))


# --------------------------------------------------------------------------------------------- summarize


def _samples(task_id: str, scenario: str, statuses: list[str]) -> list[SampleResult]:
    return [SampleResult(task_id, scenario, i, s) for i, s in enumerate(statuses)]


def test_summarize_per_lever_counts_a_task_under_each_of_its_levers():
    results = (_samples("session-0000", "session", ["pass"]) + _samples("session-0001", "session", ["result_error"])
               + _samples("session-0002", "session", ["pass"]) + _samples("tensor-0000", "tensor", ["pass"]))
    levers = {"session-0000": ["loops", "pagination"], "session-0001": ["loops", "versions"],
              "session-0002": ["loops"], "tensor-0000": []}
    summary = summarize(results, levers=levers)
    by = summary["levers"]
    assert list(by) == ["loops", "pagination", "versions"]
    assert (by["loops"]["tasks"], by["loops"]["pass@1"]) == (3, pytest.approx(2 / 3))
    assert (by["pagination"]["pass@1"], by["versions"]["pass@1"]) == (1.0, 0.0)
    assert by["versions"]["ci95"]["pass@1"][0] == 0.0 < by["versions"]["ci95"]["pass@1"][1]
    assert by["loops"]["statuses"]["result_error"] == 1
    assert "levers" not in summarize(results) and "levers" not in summarize(results, levers={"tensor-0000": []})
    from evaluate.run import format_table

    rows = format_table(summary).splitlines()
    assert [r.split()[1] for r in rows if r.startswith("lever: ")] == ["loops", "pagination", "versions"]


def test_summarize_per_scenario_and_overall():
    results = (
        _samples("tensor-0000", "tensor", ["pass", "result_error"])
        + _samples("tensor-0001", "tensor", ["timeout", "syntax_error"])
        + _samples("session-0000", "session", ["pass", "pass"])
    )
    summary = summarize(results, ks=(1, 2))

    overall = summary["overall"]
    assert overall["tasks"] == 3
    assert overall["pass@1"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert overall["pass@2"] == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    assert overall["statuses"] == {
        "pass": 3, "syntax_error": 1, "execution_error": 0, "result_error": 1, "timeout": 1, "no_code": 0,
    }

    assert set(summary["scenarios"]) == {"tensor", "session"}
    tensor = summary["scenarios"]["tensor"]
    assert tensor["tasks"] == 2
    assert tensor["pass@1"] == pytest.approx(0.25)
    assert tensor["pass@2"] == pytest.approx(0.5)
    assert tensor["statuses"]["pass"] == 1 and tensor["statuses"]["timeout"] == 1
    session = summary["scenarios"]["session"]
    assert session["tasks"] == 1
    assert session["pass@1"] == 1.0 and session["pass@2"] == 1.0
    assert session["statuses"]["pass"] == 2


def test_summarize_counts_every_status_key():
    summary = summarize(_samples("tensor-0000", "tensor", ["no_code"]))
    assert list(summary["overall"]["statuses"]) == list(STATUSES)
    assert summary["overall"]["statuses"]["no_code"] == 1
    assert summary["overall"]["pass@1"] == 0.0


def test_summarize_skips_tasks_with_fewer_than_k_samples():
    results = _samples("tensor-0000", "tensor", ["pass", "result_error"]) + _samples("tensor-0001", "tensor", ["pass"])
    summary = summarize(results, ks=(1, 2, 5))
    assert summary["overall"]["pass@1"] == pytest.approx((0.5 + 1.0) / 2)
    assert summary["overall"]["pass@2"] == pytest.approx(1.0)  # only tensor-0000 has 2 samples
    assert summary["overall"]["pass@5"] is None  # no task has 5


def _cases(*statuses: str) -> list[dict]:
    return [{"name": f"case{i}", "status": s, "error": "", "seconds": 0.0} for i, s in enumerate(statuses)]


def test_success_means_every_test_case_ran_to_its_end():
    ran = SampleResult("t", "tensor", 0, "result_error", cases=_cases("pass", "result_error"))
    assert succeeded(ran)  # a wrong RESULT still ran without error
    assert succeeded(SampleResult("t", "tensor", 0, "pass", cases=_cases("pass", "pass")))
    # the sample's status is its first failure; a later test case that raised still makes it fail to run
    assert not succeeded(SampleResult("t", "tensor", 0, "result_error", cases=_cases("result_error", "execution_error")))
    assert not succeeded(SampleResult("t", "tensor", 0, "result_error", cases=_cases("pass", "result_error", "timeout")))
    for status in ("syntax_error", "execution_error", "timeout", "no_code"):
        assert not succeeded(SampleResult("t", "tensor", 0, status))


def test_every_k_up_to_n_is_reported_for_pass_and_success():
    assert every_k(1) == (1,) and every_k(5) == (1, 2, 3, 4, 5)
    # n = 5 samples: 2 pass, 1 more ran with a wrong RESULT, 2 did not run
    statuses = ["pass", "result_error", "execution_error", "pass", "timeout"]
    summary = summarize(_samples("tensor-0000", "tensor", statuses), ks=every_k(5))
    for block in (summary["overall"], summary["scenarios"]["tensor"]):
        assert [k for k in block if "@" in k] == [f"pass@{k}" for k in range(1, 6)] + [f"success@{k}" for k in range(1, 6)]
        assert block["pass@1"] == pytest.approx(0.4)  # c = 2 of n = 5
        assert block["pass@2"] == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2)
        assert block["pass@4"] == pytest.approx(1.0)  # only 3 failures: every draw of 4 holds a pass
        assert block["pass@5"] == pytest.approx(1.0)
        assert block["success@1"] == pytest.approx(0.6)  # c = 3 ran
        assert block["success@2"] == pytest.approx(0.9)  # 1 - C(2,2)/C(5,2)
        assert block["success@3"] == pytest.approx(1.0)
        assert block["success@5"] == pytest.approx(1.0)


def test_success_at_k_per_scenario_and_overall():
    results = (
        _samples("tensor-0000", "tensor", ["result_error", "syntax_error"])
        + _samples("tensor-0001", "tensor", ["no_code", "timeout"])
        + _samples("session-0000", "session", ["pass", "result_error"])
    )
    summary = summarize(results, ks=(1, 2))
    assert summary["scenarios"]["tensor"]["success@1"] == pytest.approx(0.25)
    assert summary["scenarios"]["tensor"]["success@2"] == pytest.approx(0.5)
    assert summary["scenarios"]["session"]["success@1"] == 1.0
    assert summary["overall"]["success@1"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert summary["overall"]["pass@1"] == pytest.approx((0 + 0 + 0.5) / 3)


# -------------------------------------------------------------------------------------------- judge_case


def _decode(t: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(t["data"]), dtype=np.dtype(t["storage"]).newbyteorder("<")).reshape(
        t["shape"]).copy()


def _encode(t: dict, values: np.ndarray) -> dict:
    out = dict(t)
    out["data"] = base64.b64encode(values.astype(np.dtype(t["storage"]).newbyteorder("<")).tobytes()).decode()
    return out


def _perturbed(expected: list, item: int, delta: float) -> list:
    """A copy of a canonical RESULT whose `item`-th tensor has its largest-magnitude value moved by `delta`."""
    result = copy.deepcopy(expected)
    t = result[item]["__tensor__"]
    values = _decode(t)
    flat = values.reshape(-1)
    flat[int(np.argmax(np.abs(flat)))] += delta
    result[item]["__tensor__"] = _encode(t, values)
    return result


@pytest.fixture(scope="module")
def multi_case(small_tasks):
    """A test case whose RESULT holds at least two tensors, so the message must say which one differs."""
    for task in small_tasks:
        for case in task.test_cases:
            if len(json.loads(case.expected_result)) >= 2:
                return case
    pytest.fail("no test case with two or more RESULT tensors in the small dataset")


def test_exact_result_passes(multi_case):
    expected = json.loads(multi_case.expected_result)
    assert judge_case(TENSOR, multi_case, Outcome("k", "ok", result=expected)) == ("pass", "")


def test_value_beyond_tolerance_names_the_item(multi_case):
    expected = json.loads(multi_case.expected_result)
    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=_perturbed(expected, 1, 0.5)))
    assert status == "result_error"
    assert "RESULT[1]" in message
    assert "RESULT[0]" not in message
    assert "1 of" in message and "differ" in message


def test_value_within_tolerance_passes(multi_case):
    expected = json.loads(multi_case.expected_result)
    # well inside atol + rtol * |value|
    result = _perturbed(expected, 1, ATOL / 10)
    assert result != expected  # the bytes did change
    assert judge_case(TENSOR, multi_case, Outcome("k", "ok", result=result)) == ("pass", "")
    assert RTOL > 0


def test_wrong_shape_dtype_and_length_are_result_errors(multi_case):
    expected = json.loads(multi_case.expected_result)

    reshaped = copy.deepcopy(expected)
    reshaped[0]["__tensor__"]["shape"] = [int(np.prod(reshaped[0]["__tensor__"]["shape"]))]
    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=reshaped))
    assert status == "result_error" and "RESULT[0]" in message and "shape" in message

    retyped = copy.deepcopy(expected)
    retyped[0]["__tensor__"]["dtype"] = "float64"
    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=retyped))
    assert status == "result_error" and "dtype" in message

    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=expected[:-1]))
    assert status == "result_error" and f"expected {len(expected)} items" in message

    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=list(reversed(expected))))
    assert status == "result_error"

    status, message = judge_case(TENSOR, multi_case, Outcome("k", "ok", result=None))
    assert status == "result_error"


def test_failed_runs_keep_their_status(multi_case):
    assert judge_case(TENSOR, multi_case, Outcome("k", "timeout", error="too slow")) == ("timeout", "too slow")
    assert judge_case(TENSOR, multi_case, Outcome("k", "syntax_error", error="bad")) == ("syntax_error", "bad")
    status, message = judge_case(TENSOR, multi_case, Outcome("k", "setup_error", error="KeyError: 'x9'"))
    assert status == "execution_error" and "setup failed" in message and "KeyError" in message
    status, _ = judge_case(TENSOR, multi_case, Outcome("k", "crash", error="worker died"))
    assert status == "execution_error"


# ------------------------------------------------------------------------------------ scoring in a sandbox


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout_s=5)) as sb:
        yield sb


@pytest.fixture(scope="module")
def branching_task(small_tasks):
    for task in small_tasks:
        names = [c.name for c in task.test_cases]
        if task.has_branch and names[:2] == ["original", "flipped"]:
            original, flipped = task.test_cases[:2]
            if original.expected_result != flipped.expected_result:
                return task
    pytest.fail("no branching task with two distinct test cases in the small dataset")


def test_reference_passes_every_case_and_missing_code_is_no_code(small_tasks, sandbox):
    tasks = small_tasks[:4]
    codes = {t.task_id: [t.reference_program, None] for t in tasks}
    results = score(tasks, codes, sandbox)
    assert [(r.task_id, r.sample) for r in results] == [(t.task_id, s) for t in tasks for s in (0, 1)]
    for task, (ref, missing) in zip(tasks, zip(results[::2], results[1::2])):
        assert ref.status == "pass", ref.error
        assert [c["name"] for c in ref.cases] == [c.name for c in task.test_cases]
        assert all(c["status"] == "pass" for c in ref.cases)
        assert missing.status == "no_code" and missing.cases == []


def test_hard_coded_then_branch_fails_the_flipped_case(branching_task, sandbox):
    original, flipped = branching_task.test_cases[:2]
    assert original.branch == "then" and flipped.branch == "else"
    lines = branching_task.reference_program.splitlines()
    conditions = [i for i, line in enumerate(lines) if line.startswith("if ") and line.rstrip().endswith("COND:")]
    assert len(conditions) == 1, branching_task.reference_program
    lines[conditions[0]] = "if True:"
    then_only = "\n".join(lines) + "\n"

    (result,) = score([branching_task], {branching_task.task_id: [then_only]}, sandbox)
    by_name = {c["name"]: c for c in result.cases}
    assert by_name["original"]["status"] == "pass"
    assert by_name["flipped"]["status"] == "result_error"
    assert result.status == "result_error"
    assert result.error.startswith("flipped test case:")

    (reference,) = score([branching_task], {branching_task.task_id: [branching_task.reference_program]}, sandbox)
    assert reference.status == "pass"


def test_first_failing_case_gives_the_sample_status(branching_task, sandbox):
    # fails only when COND has the flipped value: the original case passes, the flipped one raises
    code = "if COND != {cond}:\n    raise RuntimeError('flipped')\n{ref}".format(
        cond=json.loads(branching_task.test_cases[0].constants)["COND"],
        ref=branching_task.reference_program,
    )
    (result,) = score([branching_task], {branching_task.task_id: [code]}, sandbox)
    assert [c["status"] for c in result.cases][:2] == ["pass", "execution_error"]
    assert result.status == "execution_error"
    assert "RuntimeError" in result.error and result.error.startswith("flipped test case:")


def test_forged_report_does_not_pass(small_tasks, sandbox):
    forge = (
        "import os\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    if int(fd) > 2:\n"
        "        try:\n"
        "            os.write(int(fd), b'{\"status\": \"pass\"}')\n"
        "        except OSError:\n"
        "            pass\n"
        "os._exit(0)\n"
    )
    task = small_tasks[0]
    (result,) = score([task], {task.task_id: [forge]}, sandbox)
    assert result.status != "pass"
    assert all(c["status"] in STATUSES and c["status"] != "pass" for c in result.cases)


def test_status_names_are_spelled_in_one_module():
    """A status renamed in one place and not another would silently turn verdicts into 'unexpected status'."""
    from pathlib import Path

    import evaluate
    from core import statuses

    root = Path(evaluate.__file__).parent
    # "pass", "ok", "timeout" and "crash" are ordinary words elsewhere; the compound names are not.
    names = [f'"{s}"' for s in (*statuses.STATUSES, statuses.SETUP_ERROR) if "_" in s]
    spelled = {str(p.relative_to(root)): [n for n in names if n in p.read_text()]
               for p in root.rglob("*.py") if p.name != "statuses.py"}
    assert {p: n for p, n in spelled.items() if n} == {}


class ContainedAs:
    """A stand-in for the sandbox: every test case times out, under the containment given per (sample, case)."""

    def __init__(self, modes: dict[tuple[int, int], str]):
        self.modes = modes

    def run_untrusted(self, jobs, desc=None):
        return [Outcome(j.key, "timeout", error="slow", extra={"containment": self.modes[j.key[1:]]}) for j in jobs]


def test_containment_is_recorded_for_the_run_and_for_a_sample_that_fell_back():
    from evaluate.scoring import run_containment

    task = SimpleNamespace(task_id="tensor-0000", scenario="tensor", test_cases=[
        TestCase("original", "main", "{}", "", []), TestCase("flipped", "main", "{}", "", [])])
    modes = {(0, 0): "jail", (0, 1): "jail", (1, 0): "jail", (1, 1): "uid", (2, 0): "jail", (2, 1): "jail"}
    results = score([task], {"tensor-0000": ["a", "b", "c", None]}, ContainedAs(modes))
    assert [r.containment for r in results] == ["jail", "uid", "jail", None]  # a sample: its weakest test case
    mode = run_containment(results)
    assert mode == "jail"
    rows = [r.to_dict(mode) for r in results]
    assert [row.get("containment") for row in rows] == [None, "uid", None, None]
    assert "containment" not in rows[0] and "containment" not in rows[3]
