"""The `voice` scenario: a voice lab (speech, voices, phone calls), also served over MCP.

`machine.py` is the builder-side state machine (its APIs, the random initial state, conditions, redrawn inputs,
the phrase tables of the instructions); `world.py` is what a test case runs against inside a sandbox worker.
"""

from scenarios.voice.machine import CALL, SPEECH, VOICES, VoiceScenario

__all__ = ["CALL", "SPEECH", "VOICES", "VoiceScenario"]
