"""The session world: one session service per sandbox worker, reset before every test case.

Life cycle (see `evaluate.worker`): the worker creates this world once, which starts the service as a separate
process on a free loopback port with its own SQLite file; `reset(case)` runs in the worker before the fork,
`namespace(case)` gives the forked child `service_url()` (what the setup block's `BASE_URL = service_url()`
calls), and `snapshot()` runs in the worker after the child has exited.

Why reset and snapshot open the database file instead of calling the service: a private admin route would sit
on the same port as the public API, so the untrusted program could call it too and rewrite the stored state
the oracle is read from. Going to the file keeps the HTTP surface exactly the original API, so through the
service a program can change the state only as any client could; it is also faster (no request round trips).
Remaining gap: the child runs as the same OS user as the worker, so a hostile program could still find and
write the SQLite file, or kill the service (the next `reset` restarts a service that died). That is the
sandbox's general same-user gap, tracked there.

RESULT needs no id rewriting: the service mints ids deterministically per reset (see `scenarios.session.store`),
salted with a hash of the test case's stored sessions, so the builder's oracle run and every later run of a
correct program see the same ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

import requests  # noqa: F401 - imported once here so that every forked child finds it loaded

from scenarios.base import World
from scenarios.session import store
from scenarios.session.server import ServiceProcess

ASSET_KIND = "sessions"


def _sessions_asset(case: dict) -> bytes:
    for a in case.get("assets", []):
        if a["kind"] == ASSET_KIND:
            return bytes(a["data"])
    return b"[]"


class SessionWorld(World):
    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="stateeval-session-")  # mode 0700
        self.db_path = os.path.join(self._dir, "sessions.sqlite3")
        self._conn = store.connect(self.db_path)
        self.service = ServiceProcess(self.db_path, os.path.join(self._dir, "service.log")).start()

    def reset(self, case: dict) -> None:
        if not self.service.alive:  # a program killed it, or it crashed: give the next test case a fresh one
            self.service.start()
        raw = _sessions_asset(case)
        salt = hashlib.sha256(raw).hexdigest()[:32]
        store.reset(self._conn, json.loads(raw), salt)

    def namespace(self, case: dict) -> dict:
        url = self.service.url

        def service_url() -> str:
            """The base URL of the session service for this test case, e.g. http://127.0.0.1:PORT."""
            return url

        return {"service_url": service_url}

    def snapshot(self, recorded):
        return store.snapshot(self._conn)

    def close(self) -> None:
        self.service.stop()
        self._conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)
