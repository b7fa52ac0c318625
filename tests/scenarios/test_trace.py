"""API-call traces: value ids and binding (pure), and each world's recording through the real sandbox."""

from __future__ import annotations

import json

import torch

from core.sandbox.harness import Job
from scenarios.base import Asset, canonical_json
from scenarios.trace import MAX_CALLS, bind, compact, input_ids, raw_call, value_ids


# ------------------------------------------------------------------------------------------------- pure


def test_value_ids_are_equal_exactly_for_equal_values():
    assert value_ids({"a": [1, "xy"]}) == value_ids({"a": [1, "xy"]})
    assert value_ids({"a": [1, "xy"]}) != value_ids({"a": [1, "xz"]})
    assert value_ids(["1"]) != value_ids([1])
    found: list = []
    value_ids({"id": "abc", "n": 3}, found)
    assert (value_ids("abc"), 1) in found and len(found) == 2  # the string and the dict, never the number


def test_compact_keeps_small_values_and_shortens_long_ones_without_merging_them():
    assert compact([1, "a"]) == [1, "a"]
    long_a, long_b = "x" * 100 + "a", "x" * 100 + "b"
    assert compact(long_a) != compact(long_b) and len(compact(long_a)) < 60
    tensor = {"__tensor__": {"dtype": "float32", "shape": [2, 3], "data": "A" * 200}}
    short = compact(tensor)["__tensor__"]
    assert short["dtype"] == "float32" and short["shape"] == [2, 3] and "data" not in short and "#" in short


def test_bind_takes_sources_by_value_setup_first_then_the_shallowest_then_the_latest():
    inputs = input_ids({"src": "portal", "data": {"owner": "ann@x.org"}})
    calls = [
        raw_call("list", {"source": "portal"}, (), [{"id": "id-1", "source": "portal"}]),
        raw_call("add", {"source": "portal", "body": {"t": 1}}, (), {"id": "id-2"}),
        raw_call("put", {"id": "id-1", "value": "ann@x.org", "type": "group"}, ("type",), None),
        raw_call("get", {"id": "id-2", "n": 5}, (), {"id": "id-2"}),
        raw_call("del", {"id": "id-2"}, (), None),
    ]
    trace = bind(calls, inputs)
    assert [c.get("from") for c in trace] == [
        {"source": "$src"},  # "portal" is in the listing too: the setup variable wins
        {"source": "$src"},  # the body came from nowhere
        {"id": 0, "value": "$data"},  # a part of a setup value; an option (the type) never binds
        {"id": 1},  # the number is a literal
        {"id": 3},  # id-2 is in the add's and the get's answers at the same depth: the latest call wins
    ]
    assert "ids" not in trace[0] and "made" not in trace[0]


def test_bind_refuses_malformed_records_and_caps_their_length():
    assert bind([{"args": {}}], {}) is None
    assert bind("nonsense", {}) is None
    many = [raw_call("f", {}, (), None)] * (MAX_CALLS + 10)
    assert len(bind(many, {})) == MAX_CALLS


# ------------------------------------------------------------------------------------------ in the worlds


def _trace(sandbox, scenario: str, setup: str, programs: list[str], assets=()) -> list[list[dict]]:
    case = {"setup_code": setup, "assets": list(assets)}
    outcomes = sandbox.run_untrusted([Job(i, scenario, p, case) for i, p in enumerate(programs)])
    for o in outcomes:
        assert o.status == "ok", o.error
    return [json.loads(canonical_json(o.trace)) for o in outcomes]


TENSOR_SETUP = """import torch
import torch.nn.functional as F

x = load_tensor("x")  # float32, shape (1, 2, 3, 3)
w = load_tensor("w")  # float32, shape (2, 2, 1, 1)
"""


def _tensor_assets():
    gen = torch.Generator().manual_seed(0)
    out = []
    for name, shape in (("x", (1, 2, 3, 3)), ("w", (2, 2, 1, 1))):
        t = torch.randn(*shape, generator=gen)
        out.append(Asset(name, "tensor", {"dtype": "float32", "shape": list(shape)}, t.numpy().tobytes()).to_record())
    return out


def test_tensor_calls_are_recorded_the_same_however_they_are_written(sandbox):
    functions = ("a = torch.transpose(x, 0, 1)\nb = torch.permute(a, (1, 0, 3, 2))\n"
                 "c = F.conv2d(b, w, None, stride=1, padding=0)\nd, e = torch.split(c, 1, dim=1)\n"
                 "RESULT = [torch.cat([d, e], dim=0)]\n")
    methods = ("import torch\nfrom torch.nn import functional\n"
               "a = x.transpose(1, -4)\nb = a.permute(1, 0, -1, -2)\n"
               "c = functional.conv2d(b, w, stride=(1, 1), padding=(0, 0), dilation=1)\nd, e = c.split(1, 1)\n"
               "RESULT = [torch.concat((d, e))]\n")
    first, second = _trace(sandbox, "tensor", TENSOR_SETUP, [functions, methods], _tensor_assets())
    assert first == second
    assert [c["api"] for c in first] == ["torch.transpose", "torch.permute", "F.conv2d", "torch.split", "torch.cat"]
    assert first[0]["args"]["dims"] == [0, 1] and first[0]["from"] == {"input": "$x"}
    assert first[2]["from"] == {"input": 1, "weight": "$w"} and first[2]["args"]["stride"] == [1, 1]
    assert first[4]["from"] == {"tensors": 3}  # the halves of the split, in its order: the split's whole result


def test_an_api_error_is_recorded_with_the_call_and_flagged(sandbox):
    case = {"setup_code": TENSOR_SETUP, "assets": _tensor_assets()}
    (o,) = sandbox.run_untrusted([Job(0, "tensor", "a = torch.cat([x, w], dim=3)\n", case)])
    assert o.status == "execution_error" and o.extra["in_api"] is True
    assert o.trace[0]["api"] == "torch.cat" and o.trace[0]["error"].startswith("RuntimeError")
    (o,) = sandbox.run_untrusted([Job(0, "tensor", "a = torch.transpose(x, 1, 2)\nb = a[9]\n", case)])
    assert o.status == "execution_error" and o.extra["in_api"] is False and "error" not in o.trace[0]


SESSION_SETUP = """import requests

BASE_URL = service_url()  # the session service for this test case
src1 = 'tcga_portal'
"""
WITH_REQUESTS = """new = requests.post(f"{BASE_URL}/api/sessions/{src1}/group", json={"title": "T"}).json()["id"]
listing = requests.get(f"{BASE_URL}/api/sessions/{src1}/group").json()
status = requests.delete(f"{BASE_URL}/api/sessions/{src1}/group/{listing[0]['id']}").status_code
RESULT = [new, status]
"""
WITH_URLLIB = """import json, urllib.request
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE_URL + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return r.status, r.read()
new = json.loads(call("POST", f"/api/sessions/{src1}/group", {"title": "T"})[1])["id"]
listing = json.loads(call("GET", f"/api/sessions/{src1}/group")[1])
status = call("DELETE", f"/api/sessions/{src1}/group/{listing[0]['id']}")[0]
RESULT = [new, status]
"""


def test_session_calls_are_taken_at_the_service_whatever_the_http_client(sandbox):
    first, second = _trace(sandbox, "session", SESSION_SETUP, [WITH_REQUESTS, WITH_URLLIB])
    assert first == second
    assert [c["api"] for c in first] == ["POST /api/sessions/{source}/{type}", "GET /api/sessions/{source}/{type}",
                                         "DELETE /api/sessions/{source}/{type}/{id}"]
    assert first[0]["args"] == {"source": "tcga_portal", "type": "group", "body": {"title": "T"}}
    assert first[0]["from"] == {"source": "$src1"} and first[0]["result"]["status"] == 201
    assert first[2]["from"] == {"id": 0, "source": "$src1"} and first[2]["result"] == {"status": 204, "body": None}


def test_an_answer_without_a_body_is_logged_before_the_client_has_it(sandbox):
    """A 204, or a 200 with an empty body, is complete for the client with its status line: the worker must not
    read the world before the service logged it."""
    case = {"setup_code": SESSION_SETUP, "assets": []}
    update = WITH_REQUESTS.replace(  # an update answers 200 with an empty body
        'requests.delete(f"{BASE_URL}/api/sessions/{src1}/group/{listing[0][\'id\']}")',
        'requests.put(f"{BASE_URL}/api/sessions/{src1}/group/{new}", json={"title": "U"})')
    assert update != WITH_REQUESTS
    outcomes = sandbox.run_batched([Job(i, "session", program, case)
                                    for i, program in enumerate([WITH_REQUESTS, update] * 4)])
    for o, last in zip(outcomes, ["DELETE", "PUT"] * 4):
        assert o.status == "ok", o.error
        assert [c["api"].split()[0] for c in o.trace] == ["POST", "GET", last], o.trace


def test_a_refused_request_is_an_error_in_the_trace(sandbox):
    (trace,) = _trace(sandbox, "session", SESSION_SETUP,
                      ["RESULT = requests.delete(f'{BASE_URL}/api/sessions/{src1}/group/nope').status_code\n"])
    assert trace[0]["error"] == "HTTP 404" and trace[0]["result"]["status"] == 404


def test_voice_tool_calls_name_a_speech_the_same_by_object_or_by_id(sandbox):
    setup = "message = 'Your order is confirmed for Monday.'\nphone = '+15550001111'\n"
    by_object = "s = text_to_speech(message, voice_name='Hugo')\nRESULT = [make_outbound_call(s, to_number=phone)]\n"
    by_id = "s = text_to_speech(text=message, voice_name='Hugo')\nRESULT = [make_outbound_call(s.speech_id, phone)]\n"
    first, second = _trace(sandbox, "voice", setup, [by_object, by_id])
    assert first == second
    assert first[0]["args"]["stability"] == 0.5  # defaults filled in
    assert first[0]["from"] == {"text": "$message"}
    assert first[1]["from"] == {"speech": 0, "to_number": "$phone"}


def test_a_job_that_records_nothing_gives_the_same_verdict_without_a_trace(sandbox):
    """What the builder's mutants run with (`Job.record=False`): RESULT, state and errors as with recording, no
    calls come back, in a batch or alone."""
    tensor = {"setup_code": TENSOR_SETUP, "assets": _tensor_assets()}
    session = {"setup_code": SESSION_SETUP, "assets": []}
    runs = [("tensor", "a = torch.transpose(x, 1, 2)\nRESULT = [a]\n", tensor),
            ("tensor", "a = torch.cat([x, w], dim=3)\n", tensor),
            ("session", WITH_REQUESTS, session), ("session", WITH_REQUESTS, session)]
    for run in (sandbox.run_untrusted, sandbox.run_batched):
        recorded, bare = (run([Job(i, s, code, case, record=record) for i, (s, code, case) in enumerate(runs)])
                          for record in (True, False))
        for r, b in zip(recorded, bare):
            assert (b.status, b.result, b.state, b.error) == (r.status, r.result, r.state, r.error)
            assert r.trace and b.trace is None
