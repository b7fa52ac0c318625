"""The sandbox's messages: every kind of request survives its codec whole, and a reply that is not one is refused."""

from __future__ import annotations

import json

import pytest

from core.records import TestCase
from core.sandbox.harness import Job
from core.sandbox.protocol import (BatchRequest, EpisodeRequest, Limits, ProgramRequest, TraceRequest, WireCase,
                                   decode_reply, decode_request, encode_reply, encode_request)

ASSET = {"name": "x", "kind": "tensor", "meta": json.dumps({"shape": [2]}), "data": b"\x00\x01\xff"}
CASE = TestCase("original", "main", "{}", "x = load('x')\n", [ASSET])
OTHER = TestCase("redrawn-1", "main", "{}", "x = load('x')\ny = 2\n", [])


def test_a_test_case_travels_with_its_bytes_and_meta_decoded():
    wire = WireCase.of(CASE)
    back = WireCase.from_json(json.loads(json.dumps(wire.to_json())))
    assert back.as_dict() == {"setup_code": CASE.setup_code,
                              "assets": [dict(ASSET, meta={"shape": [2]})]}


@pytest.mark.parametrize("request_", [
    ProgramRequest("tensor", WireCase.of(CASE), Limits(timeout_s=3.0), "RESULT = 1\n", record=False),
    TraceRequest("session", WireCase.of(OTHER), Limits(), "RESULT = 2\n"),
    EpisodeRequest("voice", WireCase.of(CASE), Limits(), [{"name": "f", "arguments": {"a": 1}}], ["r1"]),
    EpisodeRequest("voice", WireCase.of(CASE), Limits(), [], None),
    BatchRequest("tensor", [WireCase.of(CASE), WireCase.of(OTHER)], Limits(), ["A = 1\n", "B = 2\n"], [0, 1], [1, 0]),
])
def test_every_kind_of_request_decodes_to_what_was_encoded(request_):
    line = encode_request(request_)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert decode_request(line.encode()) == request_


def test_a_job_becomes_the_request_of_its_kind():
    limits = Limits()
    assert isinstance(Job(0, "tensor", "RESULT = 1\n", CASE).request(limits), ProgramRequest)
    assert isinstance(Job(0, "tensor", "RESULT = 1\n", CASE, trace=True).request(limits), TraceRequest)
    episode = Job(0, "tensor", "", CASE, calls=[], submit=None).request(limits)
    assert isinstance(episode, EpisodeRequest) and episode.submit is None
    batch = Job(0, "tensor", "", CASE, batch=["A = 1\n", "B = 2\n", "C = 3\n"], cases=[CASE, OTHER, CASE],
                shared=[0, 1, 1], record=False).request(limits)
    assert isinstance(batch, BatchRequest)
    assert [c.setup_code for c in batch.cases] == [CASE.setup_code, OTHER.setup_code]  # each distinct case once
    assert batch.case_of == [0, 1, 0] and batch.shared == [0, 1, 1]
    recorded = Job(0, "tensor", "", CASE, batch=["A = 1\n", "B = 2\n"], shared=[1, 1]).request(limits)
    assert recorded.shared == [0, 0] and recorded.case_of == [0, 0]  # statements are shared only when not recorded


def test_a_reply_keeps_its_verdict_extras_and_batch():
    line = encode_reply({"status": "ok", "result": [1], "state": {"a": 1}, "seconds": 0.5, "containment": "none",
                         "trace": [{"api": "f"}], "batch": [{"status": "execution_error", "error": "boom"}]})
    reply = decode_reply(line, batch=True)
    assert (reply.status, reply.result, reply.state, reply.seconds) == ("ok", [1], {"a": 1}, 0.5)
    assert reply.extra == {"containment": "none"} and reply.trace == [{"api": "f"}]
    assert [(r.status, r.error) for r in reply.batch] == [("execution_error", "boom")]


@pytest.mark.parametrize("line", ['{"status": "pass"}', '[1, 2]', '{"result": 1}', '{"status": "ok"'])
def test_a_line_that_is_no_reply_is_refused(line):
    with pytest.raises(ValueError):
        decode_reply(line, batch=False)


def test_the_worker_never_imports_the_record_type_that_holds_oracles():
    """A hostile program searches the child's memory for dicts keyed `expected_result`
    (tests/core/test_sandbox_adversarial.py, read_oracle): the worker it forks from must not even have loaded
    the record type whose fields are named so."""
    import subprocess
    import sys

    code = "import sys, core.sandbox.worker; sys.exit('core.records' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
