"""The voice MCP server answers a real MCP client (the official SDK's `ClientSession`), over stdio and HTTP.

The server runs as `python -m scenarios.voice serve`, exactly as users start it; the client lists the tools with
their JSON schemas, calls every tool, and watches the lab's state change through the tools' outputs and the
server's resources.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from scenarios.voice.tools import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60  # a bound on each whole client conversation, so a hung server fails the test instead of hanging it
ENV = {"PYTHONPATH": str(ROOT)}


def _text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _read_json(session: ClientSession, uri: str):
    result = await session.read_resource(uri)
    return json.loads(result.contents[0].text)


async def _conversation(session: ClientSession) -> dict:
    """Everything the stdio test checks, in one session (one server start)."""
    seen: dict = {}
    init = await session.initialize()
    seen["server"] = init.server_info.name
    seen["instructions"] = init.instructions
    seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}

    seen["speeches_before"] = await _read_json(session, "voice://speeches")
    found = await session.call_tool("search_voice_library", {"category": "professional", "gender": "masculine"})
    seen["search"] = found
    voice = found.structured_content["result"][0]["name"]
    seen["tts"] = await session.call_tool("text_to_speech", {"text": "Your order has shipped.", "voice_name": voice,
                                                             "stability": 0.3})
    seen["sts"] = await session.call_tool("speech_to_speech", {"speech_id": "user_speech", "voice_name": "Greta"})
    sts_id = seen["sts"].structured_content["speech_id"]
    seen["stt"] = await session.call_tool("speech_to_text", {"speech_id": sts_id, "diarize": True})
    seen["iso"] = await session.call_tool("isolate_audio", {"speech_id": sts_id})
    iso_id = seen["iso"].structured_content["speech_id"]
    seen["call"] = await session.call_tool("make_outbound_call", {"speech_id": iso_id, "to_number": "+15551234567"})
    seen["speeches_after"] = await _read_json(session, "voice://speeches")
    seen["calls"] = await _read_json(session, "voice://calls")

    seen["bad_voice"] = await session.call_tool("text_to_speech", {"text": "Hi.", "voice_name": "Nobody"})
    seen["bad_speech"] = await session.call_tool("isolate_audio", {"speech_id": "speech_99"})
    seen["bad_number"] = await session.call_tool("make_outbound_call", {"speech_id": iso_id, "to_number": "12"})
    seen["bad_setting"] = await session.call_tool("text_to_speech", {"text": "Hi.", "style": 3})
    seen["calls_after_errors"] = await _read_json(session, "voice://calls")
    return seen


@pytest.fixture(scope="module")
def stdio_session_log():
    """One real server over stdio, driven by the SDK's client; its stderr is kept for failure messages."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "scenarios.voice", "serve"], env=ENV,
                                   cwd=str(ROOT))
    out: dict = {}

    async def main():
        with tempfile.TemporaryFile("w+") as errlog:
            try:
                with anyio.fail_after(TIMEOUT_S):
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        async with ClientSession(read, write) as session:
                            out.update(await _conversation(session))
            except BaseException:
                errlog.seek(0)
                print("server stderr:\n" + errlog.read()[-4000:])
                raise

    anyio.run(main)
    return out


def test_server_lists_the_six_tools_with_json_schemas(stdio_session_log):
    log = stdio_session_log
    assert log["server"] == "stateeval-voice" and "user_speech" in log["instructions"]
    tools = log["tools"]
    assert sorted(tools) == sorted([*TOOL_NAMES, "submit_result"])
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    props = {name: tool.input_schema["properties"] for name, tool in tools.items()}
    assert set(props["search_voice_library"]) == {"search", "category", "gender"}
    assert set(props["text_to_speech"]) == {"text", "voice_name", "stability", "similarity_boost", "style"}
    assert props["text_to_speech"]["stability"]["type"] == "number"
    assert (props["text_to_speech"]["stability"]["minimum"], props["text_to_speech"]["stability"]["maximum"]) == (0, 1)
    assert props["speech_to_text"]["diarize"] == {"default": False, "title": "Diarize", "type": "boolean"}
    for name in ("speech_to_speech", "speech_to_text", "isolate_audio", "make_outbound_call"):
        assert props[name]["speech_id"]["type"] == "string"
        assert "speech_id" in tools[name].input_schema["required"]
    assert tools["make_outbound_call"].input_schema["required"] == ["speech_id", "to_number"]
    assert tools["text_to_speech"].input_schema["required"] == ["text"]
    assert "speech_id:" in tools["isolate_audio"].description  # the Python docstring, spoken in ids
    assert tools["search_voice_library"].annotations.read_only_hint is True
    assert tools["make_outbound_call"].annotations.destructive_hint is True


def test_every_tool_answers_and_changes_the_lab(stdio_session_log):
    log = stdio_session_log
    for key in ("search", "tts", "sts", "stt", "iso", "call"):
        assert not log[key].is_error, _text(log[key])
    assert [v["name"] for v in log["search"].structured_content["result"]] == ["Dorian"]
    tts = log["tts"].structured_content
    assert (tts["voice"], tts["stability"], tts["operations"]) == ("Dorian", 0.3, ["text_to_speech"])
    sts = log["sts"].structured_content
    assert sts["voice"] == "Greta" and sts["operations"] == ["recording", "speech_to_speech"]
    assert log["stt"].structured_content["result"] == "speaker_0: " + sts["text"]  # one voice speaks it all now
    iso = log["iso"].structured_content
    assert iso["operations"] == ["recording", "speech_to_speech", "isolate_audio"]
    call = log["call"].structured_content
    assert (call["to_number"], call["speech_id"], call["status"]) == ("+15551234567", iso["speech_id"], "initiated")

    before = {s["speech_id"] for s in log["speeches_before"]}
    after = {s["speech_id"]: s for s in log["speeches_after"]}
    assert before == {"user_speech"}
    assert set(after) == before | {tts["speech_id"], sts["speech_id"], iso["speech_id"]}
    assert after[iso["speech_id"]] == iso
    assert log["calls"] == [call]


def test_documented_errors_reach_the_client_and_change_nothing(stdio_session_log):
    log = stdio_session_log
    assert log["bad_voice"].is_error and "Voice with name: Nobody does not exist." in _text(log["bad_voice"])
    assert log["bad_speech"].is_error and "Speech with id: speech_99 does not exist." in _text(log["bad_speech"])
    assert log["bad_number"].is_error and "E.164" in _text(log["bad_number"])
    assert log["bad_setting"].is_error and "style" in _text(log["bad_setting"])  # refused by the input schema
    assert log["calls_after_errors"] == log["calls"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_round_trip(tmp_path):
    port = _free_port()
    errlog = open(tmp_path / "server.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "scenarios.voice", "serve", "--port", str(port)],
                            cwd=str(ROOT), env={**os.environ, **ENV}, stdout=errlog, stderr=errlog)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert proc.poll() is None, f"the server exited: {(tmp_path / 'server.log').read_text()[-2000:]}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start listening"
                time.sleep(0.1)

        out: dict = {}

        async def main():
            with anyio.fail_after(TIMEOUT_S):
                async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        out["tools"] = [t.name for t in (await session.list_tools()).tools]
                        out["tts"] = await session.call_tool("text_to_speech", {"text": "Hello over HTTP."})
                        out["speeches"] = await _read_json(session, "voice://speeches")

        anyio.run(main)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        errlog.close()
    assert sorted(out["tools"]) == sorted([*TOOL_NAMES, "submit_result"])
    assert not out["tts"].is_error and out["tts"].structured_content["voice"] == "Aria"
    assert out["tts"].structured_content["speech_id"] in {s["speech_id"] for s in out["speeches"]}


def test_serve_help_names_both_transports():
    done = subprocess.run([sys.executable, "-m", "scenarios.voice", "serve", "--help"], cwd=str(ROOT),
                          env={**os.environ, **ENV}, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0
    assert "--port" in done.stdout and "stdio" in done.stdout and "streamable HTTP" in done.stdout
