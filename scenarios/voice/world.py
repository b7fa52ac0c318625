"""The voice world inside a sandbox worker: a fresh `VoiceLab` per test case, its tools in the program's globals.

The lab lives in the forked child (it is plain Python state, nothing to start), so the side effects come back
through `recorded`, which reads the lab this world made for the child rather than anything the program can
rebind in its namespace.
"""

from __future__ import annotations

import inspect
import json

from scenarios import get_scenario
from scenarios.base import FRONTIER, PAPER, World, canonicalize
from scenarios.calling import Tools, Tracer
from scenarios.voice.platform import TOOLS as PLATFORM_TOOLS
from scenarios.voice.platform import Platform, PlatformError
from scenarios.voice.tools import TOOL_NAMES, OutboundCall, Speech, Voice, VoiceLab

SPEECH_TAG, VOICE_TAG, CALL_TAG = "__speech__", "__voice__", "__call__"
PLATFORM = "platform"  # the asset kind of a frontier case's stored population


class VoiceWorld(World):
    def __init__(self) -> None:
        self._lab: VoiceLab | None = None
        self._platform: Platform | None = None  # a frontier case's platform (`scenarios.voice.platform`)
        self._specs: dict[str, dict] = {}  # tier -> the tools' specs by name, as the scenario declares them

    def namespace(self, case: dict) -> dict:
        stored = next((a for a in case["assets"] if a["kind"] == PLATFORM), None)
        if stored is not None:  # the frontier tier: the platform's tools and its error, nothing else
            self._lab = None
            self._platform = Platform.from_population(json.loads(bytes(stored["data"]).decode("utf-8")))
            return {**{name: getattr(self._platform, name) for name in PLATFORM_TOOLS},
                    "PlatformError": PlatformError}
        self._platform = None
        assets = {a["name"]: a for a in case["assets"] if a["kind"] == "speech"}
        lab = VoiceLab()
        self._lab = lab

        def load_speech(name: str) -> Speech:
            """The task's stored speech with that name (a recording: speakers and their words)."""
            if name not in assets:
                raise KeyError(f"no stored speech named {name!r}; stored: {sorted(assets)}")
            return lab.add_recording(json.loads(bytes(assets[name]["data"]).decode("utf-8")), name)

        return {"load_speech": load_speech, **lab.tools()}

    def record_calls(self, namespace: dict, recorder) -> None:
        """Each tool in the program's globals records its calls: arguments by parameter name with defaults filled
        in, and a speech passed by its `speech_id` recorded as the speech it names (the same call either way)."""
        lab = self._lab
        for name in PLATFORM_TOOLS if self._platform is not None else TOOL_NAMES:
            namespace[name] = _traced(lab, recorder, name, namespace[name])

    def canonical_leaf(self, obj):
        if isinstance(obj, Speech):
            return {SPEECH_TAG: obj.to_plain()}
        if isinstance(obj, Voice):
            return {VOICE_TAG: obj.to_plain()}
        if isinstance(obj, OutboundCall):
            return {CALL_TAG: obj.to_plain()}
        return super().canonical_leaf(obj)

    def recorded(self, namespace: dict):
        if self._platform is not None:
            return self._platform.state()
        if self._lab is None:
            return None
        return self._lab.state()

    # ---- tool calling (`--mode tools`): the MCP server's tools, speeches named by handle or speech_id

    def tools(self) -> Tools:
        """The lab's six tools, or on a frontier case (asked after its setup has run) the platform's."""
        tier = FRONTIER if self._platform is not None else PAPER
        if tier not in self._specs:
            self._specs[tier] = {s.name: s for s in get_scenario("voice").tool_specs(tier)}
        return Tools(self._specs[tier], self._call, self.plain if self._platform is not None else self.describe)

    def _call(self, namespace: dict, name: str, arguments: dict):
        args = dict(arguments)
        if "speech_id" in args:
            args["speech"] = args.pop("speech_id")
        return namespace[name](**args)

    def describe(self, value):
        """Records as the MCP server returns them (speeches and calls with their ids)."""
        def leaf(obj):
            if isinstance(obj, (Speech, OutboundCall)):
                return obj.to_dict()
            if isinstance(obj, Voice):
                return obj.to_plain()
            return self.canonical_leaf(obj)

        return canonicalize(value, leaf)

    def trace_as_tools(self, namespace: dict, tracer: Tracer) -> None:
        specs = self.tools().specs
        if self._platform is not None:  # ids travel as strings: every argument is a plain value
            for name in PLATFORM_TOOLS:
                namespace[name] = tracer.wrap(specs[name], namespace[name])
            return
        for name in TOOL_NAMES:
            fn = namespace[name]
            namespace[name] = tracer.wrap(specs[name], fn, inspect.signature(fn), {"speech": "speech_id"})

    def plain(self, value):
        if isinstance(value, Speech):
            return value.speech_id
        return self.canonical(value)


def _traced(lab: VoiceLab, recorder, name: str, tool):
    signature = inspect.signature(tool)

    def arguments(*args, **kwargs) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        if lab is not None and isinstance(values.get("speech"), str) and values["speech"] in lab.speeches:
            values["speech"] = lab.speeches[values["speech"]]
        return values

    def traced(*args, **kwargs):
        return recorder.run(name, lambda: arguments(*args, **kwargs), lambda: tool(*args, **kwargs))

    traced.__name__, traced.__doc__, traced.__signature__ = name, tool.__doc__, signature
    return traced
