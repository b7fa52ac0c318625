"""World mutants (scenarios/mutants.py): what each kind does to an answer, which mutants a trace suggests, and
mutants applied in the real sandbox, in front of the session service (its proxy) and around the tensor world's
calls (the recorder): each changes what it says, is counted, leaves the next job's world correct, and gives the same
outcome every time it is applied."""

from __future__ import annotations

import pytest

from core.sandbox.harness import Job
from scenarios.mutants import (ALTERED, FIELD_ALTERED, FIELD_DROPPED, IGNORED, LAST_DROPPED, STATUS, TWICE, Mutant,
                               candidates, field_name, http_resolver, mutated_answer, other_status)


def test_field_mutants_change_the_named_field_of_every_record_and_never_the_original():
    page = {"data": [{"id": "a", "title": "x", "n": 1}, {"id": "b", "title": "y", "n": 2}], "total": 2}
    assert field_name(page, 0) == "id" and field_name(page, -1) == "title"
    assert mutated_answer(Mutant(FIELD_DROPPED, "GET /s", -1), page)["data"] == [{"id": "a", "n": 1},
                                                                               {"id": "b", "n": 2}]
    assert [r["n"] for r in mutated_answer(Mutant(FIELD_ALTERED, "GET /s", 1), page)["data"]] == [2, 3]
    assert page["data"][0] == {"id": "a", "title": "x", "n": 1}, "the answer itself is never changed"
    record = {"id": "a", "ok": True}
    assert mutated_answer(Mutant(FIELD_ALTERED, "GET /s/{id}", -1), record) == {"id": "a", "ok": False}
    assert mutated_answer(Mutant(FIELD_DROPPED, "GET /s", 0), "text") == "text", "nothing to change: unchanged"


def test_last_dropped_and_altered_and_statuses():
    assert mutated_answer(Mutant(LAST_DROPPED, "f"), (1, 2, 3)) == (1, 2)
    assert mutated_answer(Mutant(LAST_DROPPED, "GET /s"), {"data": [1, 2], "next": None}) == {"data": [1], "next": None}
    assert mutated_answer(Mutant(ALTERED, "f"), [1, "a"]) == [1, "a~"]
    assert [other_status(s) for s in (200, 201, 204, 404, 409, 500, 503)] == [201, 200, 200, 400, 404, 503, 500]
    with pytest.raises(ValueError, match="unknown world mutant kind 'flip'"):
        Mutant("flip", "f")
    assert Mutant.from_json(Mutant(FIELD_DROPPED, "GET /s", -1).to_json()) == Mutant(FIELD_DROPPED, "GET /s", -1)
    assert Mutant(TWICE, "POST /s").name == "twice(POST /s)"


def test_a_request_is_the_operation_with_the_fewest_parameters_that_matches():
    resolve = http_resolver(["GET /s/{id}", "GET /s/query", "POST /s/{source}/{type}"])
    assert resolve("GET", "/s/query") == "GET /s/query"
    assert resolve("GET", "/s/abc") == "GET /s/{id}"
    assert resolve("post", "/s/a/b") == "POST /s/{source}/{type}"
    assert resolve("DELETE", "/s/abc") is None and resolve("GET", "/s/a/b") is None


def test_candidates_follow_what_each_operation_answered():
    trace = [
        {"api": "POST /s", "result": {"status": 201, "body": {"id": "a"}}},
        {"api": "GET /s", "result": {"status": 200, "body": [{"id": "a"}]}},
        {"api": "POST /s", "result": {"status": 201, "body": {"id": "b"}}},
        {"api": "torch.cat", "result": {"__tensor__": {"dtype": "float32", "shape": [2], "#": "x"}}},
    ]
    names = [m.name for m in candidates(trace)]
    assert names[:3] == ["status(POST /s)", "ignored(POST /s)", "twice(POST /s)"]
    assert "ignored(GET /s)" not in names and "last_dropped(GET /s)" in names, "a read is never ignored"
    assert names.count("status(POST /s)") == 1, "an operation once, however often called"
    assert [n for n in names if "torch.cat" in n] == ["altered(torch.cat)", "ignored(torch.cat)", "twice(torch.cat)"]


# ---- in the sandbox

SESSION_SETUP = "import requests\n\nBASE_URL = service_url()\n"
SESSION_PROGRAM = """
body = {"title": "t", "description": "d", "owner": "a@example.org", "members": ["a@example.org"]}
made = requests.post(f"{BASE_URL}/api/sessions/tcga_portal/group", json=body)
listing = requests.get(f"{BASE_URL}/api/sessions/tcga_portal/group").json()
RESULT = [made.status_code, len(listing)]
"""
CREATE, LIST = "POST /api/sessions/{source}/{type}", "GET /api/sessions/{source}/{type}"


def _run(sandbox, scenario, code, setup, mutants):
    case = {"setup_code": setup, "assets": []}
    jobs = [Job(m, scenario, code, case, mutant=m) for m in mutants]
    return sandbox.run_untrusted(jobs)


def test_session_mutants_in_front_of_the_service(sandbox):
    mutants = [None, Mutant(IGNORED, CREATE), Mutant(STATUS, CREATE), Mutant(LAST_DROPPED, LIST), None,
               Mutant(LAST_DROPPED, LIST)]
    correct, ignored, status, short, again, short_again = _run(sandbox, "session", SESSION_PROGRAM, SESSION_SETUP,
                                                               mutants)
    assert correct.status == "ok" and correct.result == [201, 1] and len(correct.state) == 1
    assert "mutated" not in correct.extra
    assert (ignored.result, ignored.state, ignored.extra["mutated"]) == ([201, 0], {}, 1), \
        "an ignored write is answered as done and never stored"
    assert (status.result, len(status.state), status.extra["mutated"]) == ([200, 1], 1, 1)
    shown = {call["api"]: call["result"] for call in status.trace}
    assert shown[CREATE]["status"] == 200, "the trace holds what the program was answered, not what the service said"
    assert [call["result"]["body"] for call in short.trace if call["api"] == LIST] == [[]]
    assert (short.result, len(short.state), short.extra["mutated"]) == ([201, 0], 1, 1), "the service keeps it"
    assert (again.result, again.state) == (correct.result, correct.state), "the next job's world is correct"
    assert (short_again.result, short_again.state, short_again.trace) == (short.result, short.state, short.trace)


def test_tensor_mutants_around_the_recorded_calls(sandbox):
    setup = "import torch\n\nx = torch.ones(2, 2)\n"
    code = "a, b = torch.split(torch.cat([x, x]), 2)\nRESULT = float(a.sum() + b.sum())\n"
    correct, altered, short, twice = _run(sandbox, "tensor", code, setup, [
        None, Mutant(ALTERED, "torch.cat"), Mutant(LAST_DROPPED, "torch.split"), Mutant(TWICE, "torch.cat")])
    assert correct.result == 8.0
    assert (altered.result, altered.extra["mutated"]) == (16.0, 1)
    assert short.status == "execution_error" and "not enough values to unpack" in short.error
    assert (twice.result, twice.extra["mutated"]) == (8.0, 0), "a pure call made twice changes nothing"
