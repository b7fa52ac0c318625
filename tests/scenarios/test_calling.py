"""The tool-calling layer: handle references are parsed (never evaluated), every scenario's tools come from the
definition its documentation comes from, and a call's failure is reported without stopping the next."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from scenarios import get_scenario
from scenarios.calling import SUBMIT_SPEC, Tools, ToolSpec, UnknownHandle, resolve, run_calls, submitted

ROOT = Path(__file__).resolve().parents[2]


def test_handle_references_reach_inside_values():
    handles = {"r1": {"body": [{"id": "abc"}]}, "r2": (10, 20), "r3": SimpleNamespace(speech="s")}
    assert resolve("r1['body'][0][\"id\"]", handles) == "abc"
    assert resolve("r2[-1]", handles) == 20
    assert resolve("r3.speech", handles) == "s"
    with pytest.raises(UnknownHandle, match="no handle named 'r9'"):
        resolve("r9", handles)
    with pytest.raises(UnknownHandle):  # not a reference: nothing is evaluated
        resolve("__import__('os').system('true')", handles)
    with pytest.raises(UnknownHandle):  # private attributes cannot be reached
        resolve("r3.__class__", handles)


def test_submitted_items_are_handles_or_literal_values():
    handles = {"r1": [1, 2], "x1": "tensor"}
    assert submitted(["r1[0]", 5, {"value": "r1"}, [1]], handles) == [1, 5, "r1", [1]]
    with pytest.raises(TypeError):
        submitted("r1", handles)


def test_a_failing_call_is_reported_and_the_next_goes_on():
    spec = ToolSpec("half", "", {"type": "object"}, ("x",))
    tools = Tools({"half": spec}, lambda ns, name, args: args["x"] / 2, lambda v: v)
    handles = {"a": 8}
    reports = run_calls(tools, {}, handles, [{"name": "half", "arguments": {"x": "a"}},
                                             {"name": "half", "arguments": {"x": "nothing"}},
                                             {"name": "nope", "arguments": {}},
                                             {"name": "half", "arguments": {"x": "r1"}}])
    assert reports[0] == {"handle": "r1", "value": 4.0}
    assert "TypeError" in reports[1]["error"] and "unknown tool 'nope'" in reports[2]["error"]
    assert reports[3] == {"handle": "r4", "value": 2.0}  # every call has its number, a failed one binds nothing
    assert "r2" not in handles and "r3" not in handles


@pytest.mark.parametrize("name", ["tensor", "session", "voice"])
def test_every_scenario_offers_its_apis_as_json_schema_tools(name):
    specs = get_scenario(name).tool_specs()
    assert specs and SUBMIT_SPEC.name not in {s.name for s in specs}
    for s in specs:
        tool = s.to_openai()
        assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
        assert set(s.handles) <= set(tool["function"]["parameters"]["properties"])


def test_the_tensor_documentation_shows_the_operation_table_the_tools_come_from():
    from scenarios.tensor.doc import OPERATIONS, operation_table

    assert operation_table() in (ROOT / "scenarios" / "tensor" / "api_doc.md").read_text()
    assert [s.name for s in get_scenario("tensor").tool_specs()] == [op.tool for op in OPERATIONS]


def test_session_tools_are_the_openapi_endpoints():
    from scenarios.session.app import create_app

    spec = create_app(":memory:").openapi()
    endpoints = sum(len(ops) for ops in spec["paths"].values())
    tools = {s.name: s for s in get_scenario("session").tool_specs()}
    assert len(tools) == endpoints
    assert set(tools["add_session"].parameters["properties"]) == {"source", "type", "body"}
    assert set(tools["query_sessions"].parameters["properties"]) == {"source", "type", "field", "value"}
    assert "main_session" in tools["get_sessions"].parameters["properties"]["type"]["enum"]


def test_voice_tools_are_the_mcp_servers_six():
    from scenarios.voice.tools import TOOL_NAMES

    specs = get_scenario("voice").tool_specs()
    assert [s.name for s in specs] == list(TOOL_NAMES)
    assert all(s.handles == ("speech_id",) for s in specs if "speech_id" in s.parameters["properties"])


@pytest.mark.parametrize("name", ["tensor", "session", "voice"])
def test_scratch_data_has_the_same_names_and_other_values(name):
    import random

    scenario = get_scenario(name)
    state = scenario.initial_state(random.Random(3))
    assets = [a.to_record() for a in state.assets.values()]
    scratch = scenario.scratch_assets([dict(a) for a in assets], random.Random(4))
    assert [(a["name"], a["kind"], a["meta"]) for a in scratch] == [(a["name"], a["kind"], a["meta"]) for a in assets]
    assert all(bytes(a["data"]) != bytes(b["data"]) for a, b in zip(scratch, assets))
