"""The `session` scenario: a FastAPI + SQLite session service.

`machine.py` is the builder-side state machine (its APIs, the random initial state, conditions, redrawn inputs,
the phrase tables of the instructions); `world.py` is what a test case runs against inside a sandbox worker.
"""

from scenarios.session.machine import SessionScenario
from scenarios.session.variables import ASSET, DATA, EMAIL, SESSIONS, SID, STATUS

__all__ = ["ASSET", "DATA", "EMAIL", "SESSIONS", "SessionScenario", "SID", "STATUS"]
