"""The voice frontier over MCP: `python -m scenarios.voice serve --platform FILE` serves a test case's speech platform
to the official SDK's client, the reference's tool calls done there pass the harness's scoring, and the server keeps
the episode's secrets (the library a task must page through) until submit_result ends it."""

from __future__ import annotations

import json
import random
import sys

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from builder.config import BuildConfig
from builder.pipeline import build
from core.records import load_tasks
from evaluate.episodes import score_reported
from evaluate.run import trace_references
from core.sandbox.harness import Sandbox
from core.statuses import PASS
from scenarios.voice.episode import ROOT, TIMEOUT_S, run_episode, server_command
from scenarios.voice.platform import TOOLS, draw_population
from scenarios.voice.platform import tool_specs as platform_specs


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("voice-frontier") / "ds"
    build(BuildConfig(out=str(out), scenarios=["voice"], tier="frontier", n=3, seed=5, created_at="2026-01-01",
                      workers=1, world_mutants=False))
    tasks, _ = load_tasks(str(out))
    with Sandbox(1) as sandbox:
        return tasks, trace_references(tasks, sandbox)


def _episode(case, folder, calls, submit) -> dict:
    out: dict = {}

    async def main():
        out.update(await run_episode(server_command(case, folder, case.name), calls, submit))

    anyio.run(main)
    return out


@pytest.mark.e2e  # an MCP client completes voice tasks by default (test_mcp_episode.py)
def test_the_reference_done_over_mcp_passes_every_test_case(traced, tmp_path):
    tasks, scripts = traced
    refused = 0
    for task in tasks:
        for case in (c for c in task.test_cases if c.name in ("original", "quota")):  # quota: text1 is refused
            script = scripts[(task.task_id, case.name)]
            out = _episode(case, tmp_path, script["calls"], script["submit"])
            refused += sum(e is not None for e in out["errors"])
            assert out["reported"]["submitted"] and out["reported"]["state"]["voices"]
            assert score_reported(task, case, out["reported"]) == (PASS, ""), (task.task_id, case.name)
    assert refused == 0  # a trace holds the calls that succeeded: its fallback, not the refused text


def test_an_episode_that_stops_short_fails(traced, tmp_path):
    tasks, scripts = traced
    task = tasks[0]
    case = task.test_cases[0]
    script = scripts[(task.task_id, case.name)]
    writes = [k for k, c in enumerate(script["calls"]) if c["name"] in ("text_to_speech", "edit_voice_settings",
                                                                          "delete_history_item", "create_dubbing")]
    calls = [c for k, c in enumerate(script["calls"]) if k != writes[-1]]  # one side effect left out
    out = _episode(case, tmp_path, calls, script["submit"])
    status, message = score_reported(task, case, out["reported"])
    assert status != PASS and message


def _conversation(args: list[str], steps) -> dict:
    """One stdio session with the server started as `python ARGS`; `steps(session, seen)` does the talking."""
    params = StdioServerParameters(command=sys.executable, args=args, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    seen: dict = {}

    async def main():
        with anyio.fail_after(TIMEOUT_S):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    seen["init"] = await session.initialize()
                    await steps(session, seen)

    anyio.run(main)
    return seen


def _body(result):
    return json.loads(result.content[0].text)


def test_the_server_lists_the_same_tools_as_tools_mode_and_keeps_the_state_until_submit(tmp_path):
    population = draw_population(random.Random(4), character_limit=30)
    path = tmp_path / "platform.json"
    path.write_text(json.dumps(population))
    voice = population["voices"][0]["voice_id"]

    async def steps(session, seen):
        seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
        seen["early"] = json.loads((await session.read_resource("voice://result")).contents[0].text)
        seen["page"] = await session.call_tool("search_voices", {"page_size": 5})
        seen["speak"] = await session.call_tool("text_to_speech", {"text": "Twenty characters ok", "voice_id": voice})
        seen["refused"] = await session.call_tool("text_to_speech", {"text": "x" * 11, "voice_id": voice})
        seen["unknown"] = await session.call_tool("get_voice", {"voice_id": "nobody"})
        seen["usage"] = await session.call_tool("get_subscription", {})
        seen["refused_handle"] = await session.call_tool("submit_result", {"result": ["r3"]})  # bound nothing
        seen["submit"] = await session.call_tool("submit_result", {"result": ["r2['history_item_id']", 7]})
        seen["after"] = await session.call_tool("get_subscription", {})
        seen["again"] = await session.call_tool("submit_result", {"result": [1]})
        seen["result"] = json.loads((await session.read_resource("voice://result")).contents[0].text)

    seen = _conversation(["-m", "scenarios.voice", "serve", "--platform", str(path)], steps)
    tools = seen["tools"]
    assert sorted(tools) == sorted([*TOOLS, "submit_result"])
    for spec in platform_specs():  # what --mode tools offers: the same names, parameters and required ones
        schema = tools[spec.name].input_schema
        assert set(schema["properties"]) == set(spec.parameters["properties"]), spec.name
        assert sorted(schema.get("required", [])) == sorted(spec.parameters["required"]), spec.name
    assert tools["search_voices"].annotations.read_only_hint is True
    assert tools["delete_history_item"].annotations.destructive_hint is True
    assert "quota_exceeded" in seen["init"].instructions

    assert seen["early"] == {"result": None, "submitted": False, "state": None}  # no library to read for free
    page = _body(seen["page"])
    assert len(page["voices"]) == 5 and page["has_more"] and page["next_page_token"]
    assert not seen["speak"].is_error and _body(seen["speak"])["history_item_id"] == "hist_1"
    assert seen["refused"].is_error and "quota_exceeded" in seen["refused"].content[0].text
    assert seen["unknown"].is_error and "voice_not_found" in seen["unknown"].content[0].text
    assert _body(seen["usage"]) == {"character_count": 20, "character_limit": 30}  # the refusal used nothing
    assert seen["refused_handle"].is_error and "no handle named 'r3'" in seen["refused_handle"].content[0].text
    assert not seen["submit"].is_error
    assert seen["after"].is_error and "episode is over" in seen["after"].content[0].text
    assert seen["again"].is_error
    result = seen["result"]
    assert result["submitted"] and result["result"] == ["hist_1", 7]
    assert result["state"]["character_count"] == 20 and len(result["state"]["history"]) == 1
    assert len(result["state"]["voices"]) == len(population["voices"])


def test_serve_tier_frontier_draws_a_platform_from_the_seed():
    async def steps(session, seen):
        seen["page"] = _body(await session.call_tool("search_voices", {"page_size": 100}))

    first = _conversation(["-m", "scenarios.voice", "serve", "--tier", "frontier", "--seed", "3"], steps)
    again = _conversation(["-m", "scenarios.voice", "serve", "--tier", "frontier", "--seed", "3"], steps)
    assert first["page"] == again["page"] and len(first["page"]["voices"]) >= 40
