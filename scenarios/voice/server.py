"""The voice lab over the Model Context Protocol: a real MCP server (official `mcp` SDK) around one `VoiceLab`.

The tools are thin adapters: they take ids where the Python functions take records, call the lab's methods (the
one implementation), and return the records as JSON objects. An error a tool documents (an unknown voice name,
an empty text, a malformed number) reaches the client as a tool error with the documented message. Two
resources expose the lab's state, so a client can watch what its calls changed. As in `--mode tools`, the k-th
tool call's result is the handle r<k> (a `speech_id` argument may name one), and `submit_result` takes the task's
RESULT; `voice://result` holds it with the lab's side effects, so any MCP-speaking agent can be scored on a task
(`evaluate.episodes.score_reported`).

The frontier tier (`build_platform_server`) serves a `Platform` (`scenarios/voice/platform.py`) the same way: its
17 tools, each the platform's method, with a refused request reaching the client as a tool error that starts with
the documented code (`quota_exceeded: ...`). Its state (the whole library among it) would give away what a task
must page through, so `voice://result` holds the state only once `submit_result` has ended the episode, and no
tool answers after that.

Imported by `python -m scenarios.voice serve`, its tests and the paper tier's `tool_specs`; the builder never needs
`mcp`.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import random
import re
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from scenarios.voice.world import VoiceWorld

from scenarios.voice.tools import (
    DEFAULT_SIMILARITY_BOOST,
    DEFAULT_STABILITY,
    DEFAULT_STYLE,
    DEFAULT_VOICE,
    TOOL_NAMES,
    Speech,
    Voice,
    VoiceLab,
    user_conversation,
)

SERVER_NAME = "stateeval-voice"
RECORDING_ID = "user_speech"  # the id the preloaded recording is served under

INSTRUCTIONS = f"""\
A speech lab with a fixed library of ten voices (one per category and gender). Speeches are records addressed by
speech_id; a recorded user speech is preloaded as {RECORDING_ID!r}. text_to_speech, speech_to_speech and
isolate_audio each produce a new speech; speech_to_text returns a transcript; make_outbound_call places a call
that plays a speech. Read voice://speeches and voice://calls to see the lab's state. The k-th tool call's result is
the handle r<k>; submit_result takes handles (or speech ids, or literal values) as the task's RESULT, and
voice://result holds what a scorer compares."""


def _as_json(kind):
    """A record field's type as its JSON form: a tuple is a list."""
    if get_origin(kind) is tuple:
        return list[_as_json(get_args(kind)[0])]
    return kind


def _record(cls, name: str) -> type:
    """The JSON form of a record dataclass as a TypedDict (its fields, tuples as lists): what a tool returns, made
    from the dataclass so the output schema MCP clients see follows the record."""
    return TypedDict(name, {k: _as_json(t) for k, t in get_type_hints(cls).items()})


VoiceRecord = _record(Voice, "VoiceRecord")  # `Voice.to_plain()`
SpeechRecord = _record(Speech, "SpeechRecord")  # `Speech.to_dict()`


class CallRecord(TypedDict):
    call_id: str
    to_number: str
    speech_id: str
    speech: dict[str, Any]
    duration: float
    status: str


SpeechId = Annotated[str, Field(description="speech_id of a speech this server knows (a tool's output, or "
                                            f"the preloaded recording {RECORDING_ID!r})")]
VoiceName = Annotated[str, Field(description="exact name of a library voice (see search_voice_library)")]
Setting = Annotated[float, Field(ge=0, le=1)]


def _description(method) -> str:
    """The Python tool's docstring, with its `speech` argument spoken of as the `speech_id` it is over MCP."""
    doc = inspect.getdoc(method) or ""
    return re.sub(r"speech: the (.*?) \(or its speech_id\)\.", r"speech_id: the speech_id of the \1.", doc)


def _add_submit_result(server, handles: dict, answer: dict, once: bool = False) -> None:
    """The submit_result tool: RESULT from handles (or ids, or literal values), kept in `answer` for voice://result.
    With `once`, the first submission ends the episode and a second one is refused."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from scenarios.calling import SUBMIT_SPEC, submitted

    @server.tool(name=SUBMIT_SPEC.name, description=SUBMIT_SPEC.description,
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    def submit_result(result: list[Any]) -> str:
        if once and "result" in answer:
            raise ToolError("the episode is over: submit_result was called")
        try:
            answer["result"] = VoiceWorld().canonical(submitted(result, handles))
        except (KeyError, IndexError, AttributeError, TypeError) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        return "submitted"


def build_server(lab: VoiceLab | None = None, seed: int = 0, recording: list | None = None):
    """An MCPServer whose six tools act on `lab` (by default a lab preloaded with a user speech: `recording`, a
    list of (speaker, words) segments such as a task's stored speech, else the seed's)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from scenarios.calling import UnknownHandle, resolve

    if lab is None:
        lab = VoiceLab()
        lab.add_recording(recording or user_conversation(random.Random(seed)), RECORDING_ID)
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    # Handles, as in `--mode tools`: the preloaded recording by its id, the k-th tool call's result as r<k>.
    handles: dict[str, Any] = {sid: speech for sid, speech in lab.speeches.items()}
    made = [0]  # tool calls so far
    answer: dict[str, Any] = {}

    def run(fn, *args, **kwargs):
        made[0] += 1
        try:
            value = fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:  # the documented errors: the client reads their message
            raise ToolError(str(exc)) from exc
        handles[f"r{made[0]}"] = value
        return value

    def speech(ref: str):
        """A speech_id, or a handle naming a speech (r3, r5.speech)."""
        try:
            return resolve(ref, handles)
        except (UnknownHandle, LookupError, AttributeError):
            return ref

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    creates = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                              open_world_hint=False)

    @server.tool(description=_description(lab.search_voice_library), annotations=read_only)
    def search_voice_library(search: str | None = None, category: str | None = None,
                             gender: str | None = None) -> list[VoiceRecord]:
        return [v.to_plain() for v in run(lab.search_voice_library, search, category, gender)]

    @server.tool(description=_description(lab.text_to_speech), annotations=creates)
    def text_to_speech(text: str, voice_name: str | None = None, stability: Setting = DEFAULT_STABILITY,
                       similarity_boost: Setting = DEFAULT_SIMILARITY_BOOST,
                       style: Setting = DEFAULT_STYLE) -> SpeechRecord:
        return run(lab.text_to_speech, text, voice_name, stability, similarity_boost, style).to_dict()

    @server.tool(description=_description(lab.speech_to_speech), annotations=creates)
    def speech_to_speech(speech_id: SpeechId, voice_name: VoiceName = DEFAULT_VOICE) -> SpeechRecord:
        return run(lab.speech_to_speech, speech(speech_id), voice_name).to_dict()

    @server.tool(description=_description(lab.speech_to_text), annotations=read_only)
    def speech_to_text(speech_id: SpeechId, diarize: bool = False) -> str:
        return run(lab.speech_to_text, speech(speech_id), diarize)

    @server.tool(description=_description(lab.isolate_audio), annotations=creates)
    def isolate_audio(speech_id: SpeechId) -> SpeechRecord:
        return run(lab.isolate_audio, speech(speech_id)).to_dict()

    @server.tool(description=_description(lab.make_outbound_call),
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                             open_world_hint=False))
    def make_outbound_call(speech_id: SpeechId, to_number: str) -> CallRecord:
        return run(lab.make_outbound_call, speech(speech_id), to_number).to_dict()

    _add_submit_result(server, handles, answer)

    @server.resource("voice://result", name="result", mime_type="application/json",
                     description="What a scorer reads: the submitted RESULT (null before submit_result) and the "
                                 "lab's side effects, as the benchmark compares them.")
    def result() -> str:
        return json.dumps({"result": answer.get("result"), "submitted": "result" in answer, "state": lab.state()})

    @server.resource("voice://speeches", name="speeches", mime_type="application/json",
                     description="Every speech the lab knows (the recording and each tool's output), by speech_id.")
    def speeches() -> str:
        return json.dumps([s.to_dict() for s in lab.speeches.values()])

    @server.resource("voice://calls", name="calls", mime_type="application/json",
                     description="The outbound calls placed so far, in the order they were placed.")
    def calls() -> str:
        return json.dumps([c.to_dict() for c in lab.calls])

    return server


PLATFORM_INSTRUCTIONS = """\
A speech platform (the frontier tier of the StateEval voice lab): a paged voice library with stored settings, a
history of generations, a character quota, dubbing jobs, agents and phone numbers. Ids are strings that flow between
tools (voice_id, history_item_id, dubbing_id, agent_id, phone_number_id). A refused request is a tool error whose
text starts with its code (voice_not_found, quota_exceeded, not_ready, ...) and changes nothing. The k-th tool
call's result is the handle r<k>; submit_result takes handles (r3, r3['voices'][0]['name']) or literal values as
the task's RESULT and ends the episode. voice://result then holds what a scorer compares."""

_READ_ONLY = ("search_voices", "get_voice", "get_voice_settings", "get_subscription", "list_history",
              "get_history_item", "get_dubbed_audio", "list_phone_numbers")
_DESTRUCTIVE = ("delete_voice", "delete_history_item", "make_outbound_call")


def build_platform_server(platform):
    """An MCPServer whose 17 tools act on `platform` (a `scenarios.voice.platform.Platform`), plus submit_result and
    the resource voice://result."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from scenarios.voice.platform import TOOLS

    server = MCPServer(SERVER_NAME, instructions=PLATFORM_INSTRUCTIONS, log_level="WARNING")
    handles: dict[str, Any] = {}
    made = itertools.count(1)  # tool calls so far: a refused call takes its number too, as in --mode tools
    answer: dict[str, Any] = {}

    def adapter(name: str):
        method = getattr(platform, name)

        @functools.wraps(method)  # the method's own signature and docstring: its input schema and description
        def tool(**kwargs):
            if "result" in answer:
                raise ToolError("the episode is over: submit_result was called")
            handle = f"r{next(made)}"
            try:
                value = method(**kwargs)
            except (ValueError, TypeError) as exc:  # PlatformError is a ValueError: "code: message"
                raise ToolError(str(exc)) from exc  # and binds nothing, as in --mode tools
            handles[handle] = value
            return value

        return tool

    for name in TOOLS:
        server.add_tool(adapter(name), name=name, description=inspect.getdoc(getattr(platform, name)),
                        annotations=ToolAnnotations(read_only_hint=name in _READ_ONLY,
                                                    destructive_hint=name in _DESTRUCTIVE,
                                                    idempotent_hint=name in _READ_ONLY, open_world_hint=False))

    _add_submit_result(server, handles, answer, once=True)

    @server.resource("voice://result", name="result", mime_type="application/json",
                     description="What a scorer reads: the submitted RESULT and everything the platform holds, once "
                                 "submit_result has ended the episode (before that, only that nothing is submitted).")
    def result() -> str:
        done = "result" in answer
        return json.dumps({"result": answer.get("result"), "submitted": done,
                           "state": platform.state() if done else None})

    return server


def serve(port: int | None = None, host: str = "127.0.0.1", seed: int = 0, recording: list | None = None,
          platform: dict | None = None) -> None:
    """Serve over stdio, or over streamable HTTP at http://HOST:PORT/mcp when a port is given. With `platform` (a
    frontier test case's stored population), the frontier tier's platform instead of the paper tier's lab."""
    if platform is not None:
        from scenarios.voice.platform import Platform

        server = build_platform_server(Platform.from_population(platform))
    else:
        server = build_server(seed=seed, recording=recording)
    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)


def tool_specs() -> list:
    """The six tools exactly as this server lists them to an MCP client (names, descriptions, JSON schemas): the
    definition `--mode tools` gives a chat model, so both ways in see the same tools."""
    import anyio

    from scenarios.calling import ToolSpec

    async def listed():
        return await build_server(VoiceLab()).list_tools()

    return [ToolSpec(t.name, t.description or "", t.input_schema,
                     ("speech_id",) if "speech_id" in t.input_schema.get("properties", {}) else ())
            for t in anyio.run(listed) if t.name in TOOL_NAMES]
