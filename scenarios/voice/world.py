"""The voice world inside a sandbox worker: a fresh `VoiceLab` per test case, its tools in the program's globals.

The lab lives in the forked child (it is plain Python state, nothing to start), so the side effects come back
through `recorded`, which reads the lab this world made for the child rather than anything the program can
rebind in its namespace.
"""

from __future__ import annotations

import inspect
import json

from scenarios.base import World
from scenarios.voice.tools import TOOL_NAMES, OutboundCall, Speech, Voice, VoiceLab

SPEECH_TAG, VOICE_TAG, CALL_TAG = "__speech__", "__voice__", "__call__"


class VoiceWorld(World):
    def __init__(self) -> None:
        self._lab: VoiceLab | None = None

    def namespace(self, case: dict) -> dict:
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
        for name in TOOL_NAMES:
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
        if self._lab is None:
            return None
        return self._lab.state()


def _traced(lab: VoiceLab, recorder, name: str, tool):
    signature = inspect.signature(tool)

    def arguments(*args, **kwargs) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        if isinstance(values.get("speech"), str) and values["speech"] in lab.speeches:
            values["speech"] = lab.speeches[values["speech"]]
        return values

    def traced(*args, **kwargs):
        return recorder.run(name, lambda: arguments(*args, **kwargs), lambda: tool(*args, **kwargs))

    traced.__name__, traced.__doc__, traced.__signature__ = name, tool.__doc__, signature
    return traced
