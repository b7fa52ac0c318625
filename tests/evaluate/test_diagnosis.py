"""Diagnostics: partial credit from API-call traces, and one hand-made sample per root cause.

The task is written by hand (not fuzzed) so that each sample below is built to produce exactly one cause; its
reference traces are captured the way the builder captures them (`builder.oracles.take_oracle`).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from builder.oracles import take_oracle
from core.records import TaskRecord, TestCase
from core.sandbox.harness import Job, Limits, Sandbox
from evaluate.diagnosis import CAUSES, METRICS, case_metrics, cause_of, diagnose, first_divergence, top_causes
from evaluate.scoring import score, summarize
from scenarios.base import Asset
from scenarios.trace import FORMAT, load_stored

SETUP = """import torch
import torch.nn.functional as F

x1 = load_tensor("x1")  # float32, shape (2, 3, 3)
w1 = load_tensor("w1")  # float32, shape (3, 3)
COND = {cond}
"""
REFERENCE = """v1 = torch.transpose(x1, 1, 2)
v2 = F.linear(v1, w1)
if v2.shape[0] >= COND:
    v3 = torch.cat([v2, v1], dim=2)
else:
    v3 = torch.permute(v2, (2, 0, 1))
RESULT = [v3]
"""
THEN = """v1 = torch.transpose(x1, 1, 2)
v2 = F.linear(v1, w1)
v3 = torch.cat([v2, v1], dim=2)
"""

# One sample per cause, each a small change of the reference (None: a reply without code).
SAMPLES = {
    "no_code": None,
    "syntax": "v1 = torch.transpose(x1, 1, 2\n",
    "timeout": "while True:\n    pass\n",
    "crash": "v1 = torch.transpose(x1, 1, 2)\nsteps = 1 // 0\n",
    "api_misuse": "v1 = torch.cat([x1, w1], dim=0)\nRESULT = [v1]\n",
    "wrong_api": REFERENCE.replace("torch.transpose(x1, 1, 2)", "torch.permute(x1, (0, 1, 2))"),
    "missing_call": REFERENCE.replace("v1 = torch.transpose(x1, 1, 2)\n", "v1 = x1\n"),
    "extra_call": REFERENCE.replace("RESULT = [v3]", "RESULT = [torch.transpose(v3, 0, 1)]"),
    "wrong_order": "v0 = F.linear(x1, w1)\nv1 = torch.transpose(v0, 1, 2)\nv2 = v0\n" + REFERENCE.split("\n", 2)[2],
    "wrong_branch": THEN + "RESULT = [v3]\n",
    "broken_binding": REFERENCE.replace("torch.cat([v2, v1], dim=2)", "torch.cat([v2, x1], dim=2)"),
    "wrong_argument": REFERENCE.replace("torch.cat([v2, v1], dim=2)", "torch.cat([v2, v1], dim=1)"),
    "result_shape": REFERENCE.replace("RESULT = [v3]", "RESULT = [v3, v2]"),
}


def _asset(name: str, tensor: torch.Tensor) -> dict:
    meta = {"dtype": "float32", "shape": list(tensor.shape)}
    return Asset(name, "tensor", meta, tensor.numpy().tobytes()).to_record()


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, Limits(timeout_s=3.0)) as sb:
        yield sb


@pytest.fixture(scope="module")
def task(sandbox):
    gen = torch.Generator().manual_seed(7)
    assets = [_asset("x1", torch.randn(2, 3, 3, generator=gen)), _asset("w1", torch.randn(3, 3, generator=gen))]
    cases = [TestCase("original", "then", json.dumps({"COND": 2}), SETUP.format(cond=2), assets),
             TestCase("flipped", "else", json.dumps({"COND": 3}), SETUP.format(cond=3), assets)]
    jobs = [Job((c, run), "tensor", REFERENCE, case) for c, case in enumerate(cases) for run in range(2)]
    outcomes = sandbox.run_untrusted(jobs)
    for c, case in enumerate(cases):
        assert take_oracle(case, outcomes[2 * c], outcomes[2 * c + 1]) is None
    return TaskRecord(
        task_id="tensor-hand", scenario="tensor", instruction="", instruction_steps="", instruction_vague="",
        facts=[], setup_code=cases[0].setup_code, api_doc="", reference_program=REFERENCE, test_cases=cases,
        api_calls=["transpose", "linear", "cat", "permute"], num_api_calls=4, path_depth=3, binding_count=3,
        has_branch=True, levers=[], notes="", seed=0, created_at="2026-01-01", builder_version="", translator="hand",
        translation={})


@pytest.fixture(scope="module")
def scored(task, sandbox):
    codes = {"tensor-hand": [REFERENCE, *SAMPLES.values()]}
    results = score([task], codes, sandbox)
    return dict(zip(["reference", *SAMPLES], results))


def test_the_reference_trace_is_stored_with_each_test_case(task):
    original, flipped = (load_stored(c.trace) for c in task.test_cases)
    assert [c["api"] for c in original] == ["torch.transpose", "F.linear", "torch.cat"]
    assert [c["api"] for c in flipped] == ["torch.transpose", "F.linear", "torch.permute"]
    assert original[0]["from"] == {"input": "$x1"}
    assert original[1]["from"] == {"input": 0, "weight": "$w1"}
    assert original[2]["from"] == {"tensors.0": 1, "tensors.1": 0}
    assert original[2]["args"]["dim"] == 2


def test_the_reference_scores_one_on_every_metric_and_has_no_cause(scored):
    d = scored["reference"].diagnosis
    assert scored["reference"].status == "pass"
    assert {m: d[m] for m in METRICS} == {m: 1.0 for m in METRICS}
    assert d["first_divergence"] is None and "cause" not in d


@pytest.mark.parametrize("cause", list(SAMPLES))
def test_each_cause_comes_from_the_sample_built_for_it(scored, cause):
    r = scored[cause]
    assert r.status != "pass", r
    assert r.diagnosis["cause"] == cause, (r.status, r.error, r.diagnosis)
    assert r.diagnosis["recommendation"] == CAUSES[cause]


def test_partial_credit_is_below_the_reference_unless_only_result_was_wrong(scored):
    for cause in SAMPLES:
        d = scored[cause].diagnosis
        assert all(0.0 <= d[m] <= 1.0 for m in METRICS), (cause, d)
        if cause == "result_shape":  # every call right: full partial credit, and still a failure
            assert {d[m] for m in METRICS} == {1.0} and d["first_divergence"] is None
        else:
            assert min(d[m] for m in METRICS) < 1.0, (cause, d)


def test_a_wrong_argument_keeps_the_apis_and_the_data_flow(scored):
    d = scored["wrong_argument"].diagnosis
    assert d["api_match"] == 1.0 and d["binding_accuracy"] == 1.0
    assert d["arg_match"] == pytest.approx((2 / 3 + 1) / 2)  # the cat differs on the original case only
    first = d["first_divergence"]
    assert (first["case"], first["index"]) == ("original", 2)
    assert first["expected"] == "torch.cat(dim=2, tensors=[<call 1>, <call 0>])"
    assert first["got"] == "torch.cat(dim=1, tensors=[<call 1>, <call 0>])"


def test_a_broken_binding_is_seen_in_the_binding_accuracy(scored):
    d = scored["broken_binding"].diagnosis
    assert d["binding_accuracy"] < 1.0 and d["api_match"] == 1.0
    assert "$x1" in d["first_divergence"]["got"]


def test_no_code_scores_zero(scored):
    d = scored["no_code"].diagnosis
    assert {m: d[m] for m in METRICS} == {m: 0.0 for m in METRICS}
    assert d["first_divergence"]["got"] is None


def test_summary_holds_metric_means_and_cause_counts(scored):
    summary = summarize(list(scored.values()))
    block = summary["overall"]["diagnosis"]
    assert block["causes"] == {c: int(c in SAMPLES) for c in CAUSES}
    mean_api = sum(r.diagnosis["api_match"] for r in scored.values()) / len(scored)
    assert block["api_match"] == pytest.approx(mean_api, abs=1e-6)
    assert summary["scenarios"]["tensor"]["diagnosis"] == block


@pytest.mark.parametrize("stored", [None, json.dumps({"format": FORMAT + 1, "calls": []})])
def test_without_reference_traces_metrics_are_unknown_and_a_wrong_result_unexplained(task, scored, stored):
    """No reference trace (a test case the builder could not trace), or one in another trace format."""
    old = dataclasses.replace(task, test_cases=[dataclasses.replace(c, trace=stored) for c in task.test_cases])
    r = scored["wrong_argument"]
    d = diagnose(old, r.status, r.cases, [None] * len(r.cases), [False] * len(r.cases))
    assert all(d[m] is None for m in METRICS) and d["cause"] == "unexplained"


# ------------------------------------------------------------------------------- the metrics on hand traces


def _call(api: str, sources: dict | None = None, **args) -> dict:
    call = {"api": api, "args": args, "result": None}
    if sources:
        call["from"] = sources
    return call


REF = [_call("a", {"x": "$in"}, x=1), _call("b", {"y": 0}, y=2), _call("c", {"z": 1}, z=3), _call("d", {"w": 2}, w=4)]


def test_identical_traces_match_fully_and_empty_ones_too():
    assert case_metrics(REF, REF) == {m: 1.0 for m in METRICS}
    assert case_metrics([], []) == {m: 1.0 for m in METRICS}
    assert first_divergence(REF, REF) is None


def test_metrics_of_a_trace_with_one_call_left_out():
    got = [REF[0], _call("c", {"z": 0}, z=3), _call("d", {"w": 1}, w=4)]
    m = case_metrics(REF, got)
    assert m["api_match"] == 0.75 and m["arg_match"] == 0.75  # 3 of the longer length 4
    assert m["seq_match"] == 0.75  # a, c, d in order
    assert m["connected_match"] == 0.5  # c, d consecutively
    # edges: a<-$in kept; b<-a lost (no b); c<-b lost (c now reads a); d<-c kept
    assert m["binding_accuracy"] == 0.5
    assert first_divergence(REF, got)["index"] == 1


def test_extra_calls_cost_api_and_arg_match_but_not_seq_match():
    got = REF + [_call("e", x=9)]
    m = case_metrics(REF, got)
    assert m["api_match"] == m["arg_match"] == 0.8 and m["seq_match"] == 1.0 and m["connected_match"] == 1.0


def test_session_refusals_make_a_crash_an_api_misuse():
    refused = [_call("GET /x"), {**_call("PUT /x/{id}", id="nope"), "error": "HTTP 404"}]
    fine = [_call("GET /x"), _call("PUT /x/{id}", id="abc")]
    assert cause_of("execution_error", 0, [fine], [refused], ["main"], [False]) == "api_misuse"
    assert cause_of("execution_error", 0, [fine], [fine], ["main"], [False]) == "crash"


def test_top_causes_rank_by_count_then_by_the_documented_order():
    counts = {c: 0 for c in CAUSES} | {"crash": 2, "wrong_api": 2, "syntax": 5, "timeout": 1}
    assert top_causes(counts) == [("syntax", 5), ("crash", 2), ("wrong_api", 2)]
    assert top_causes({c: 0 for c in CAUSES}) == []
